"""search: answer questions on a build of any backend — rank, fuse, floor, hits, context, log."""

from ..index.lexical import NoSearchableTerms, top_k
from ..index.methods import UnknownMethod
from ..index.vectors import require_vectors
from . import querylog
from .context import (LANGS, MAX_CHARS, Context, ContextTooSmall, TemplateError, build_context,
                      check_template, context_dict, render)
from .fusion import (FUSION, FUSIONS, RRF_K, WINDOW, FusionError, FusionSettings, check_settings,
                     describe_default, parse_weights)
from .hits import Hit, StaleIndex, hits_for, search, snippet
from .scorers import K, available_methods, describe_fusion, floor_of, rank, scorer

__all__ = [
    "Context", "ContextTooSmall", "FUSION", "FUSIONS", "FusionError", "FusionSettings", "Hit",
    "K", "LANGS", "MAX_CHARS", "NoSearchableTerms", "RRF_K", "StaleIndex", "TemplateError",
    "UnknownMethod", "WINDOW", "available_methods", "build_context", "check_settings",
    "check_template", "context_dict", "describe_default", "describe_fusion", "floor_of",
    "hits_for", "parse_weights", "querylog", "rank", "render", "require_vectors", "scorer",
    "search", "snippet", "top_k",
]
