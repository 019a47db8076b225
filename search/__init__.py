"""search: answer questions on a build of any backend — rank, fuse, floor, hits, context, log.

Names load on first use (busca/lazy.py).
"""

from ..lazy import face

EXPORTS = {
    "available_methods": ".scorers",
    "BadFloor": ".hits",
    "build_context": ".context",
    "check_floor": ".hits",
    "check_settings": ".fusion",
    "check_template": ".context",
    "collapse": ".collapse:",
    "compare_methods": ".compare#compare",
    "CompareRow": ".compare",
    "Comparison": ".compare",
    "comparison_dict": ".compare",
    "Context": ".context",
    "context_dict": ".context",
    "CONTEXT_PER_DOC": ".context#PER_DOC",
    "ContextTooSmall": ".context",
    "default_methods": ".compare",
    "describe_default": ".fusion",
    "describe_fusion": ".scorers",
    "floor_of": ".scorers",
    "FUSION": ".fusion",
    "FusionError": ".fusion",
    "FUSIONS": ".fusion",
    "FusionSettings": ".fusion",
    "highlight": ".highlight:",
    "Hit": ".hits",
    "hits_for": ".hits",
    "K": ".scorers",
    "LANGS": ".context",
    "MAX_CHARS": ".context",
    "method_settings": ".scorers",
    "NoSearchableTerms": "..index.lexical",
    "parse_weights": ".fusion",
    "querylog": ".querylog:",
    "rank": ".scorers",
    "refusal": ".answerable",
    "render": ".context",
    "require_vectors": "..index.vectors",
    "RRF_K": ".fusion",
    "scorer": ".scorers",
    "search": ".hits",
    "snippet": ".hits",
    "StaleIndex": ".hits",
    "TemplateError": ".context",
    "top_k": "..index.lexical",
    "UnknownMethod": "..index.methods",
    "WINDOW": ".fusion",
}
__all__ = sorted(EXPORTS)
face(__name__)
