"""search: answer questions on a build of any backend — rank, fuse, floor, hits, context, log."""

from ..index.lexical import NoSearchableTerms, top_k
from ..index.methods import UnknownMethod
from ..index.vectors import require_vectors
from . import collapse, highlight, querylog
from .compare import CompareRow, Comparison, comparison_dict, default_methods
from .compare import compare as compare_methods  # `search.compare` stays the module
from .context import PER_DOC as CONTEXT_PER_DOC
from .context import (LANGS, MAX_CHARS, Context, ContextTooSmall, TemplateError, build_context,
                      check_template, context_dict, render)
from .fusion import (FUSION, FUSIONS, RRF_K, WINDOW, FusionError, FusionSettings, check_settings,
                     describe_default, parse_weights)
from .hits import BadFloor, Hit, StaleIndex, check_floor, hits_for, search, snippet
from .scorers import (K, available_methods, describe_fusion, floor_of, method_settings, rank,
                      scorer)

__all__ = [
    "CompareRow", "Comparison", "collapse", "compare_methods", "comparison_dict",
    "default_methods", "highlight", "CONTEXT_PER_DOC", "BadFloor", "check_floor", "Context",
    "ContextTooSmall", "FUSION", "FUSIONS", "FusionError", "FusionSettings", "Hit",
    "K", "LANGS", "MAX_CHARS", "NoSearchableTerms", "RRF_K", "StaleIndex", "TemplateError",
    "UnknownMethod", "WINDOW", "available_methods", "build_context", "check_settings",
    "check_template", "context_dict", "describe_default", "describe_fusion", "floor_of",
    "hits_for", "method_settings", "parse_weights", "querylog", "rank", "render", "require_vectors", "scorer",
    "search", "snippet", "top_k",
]
