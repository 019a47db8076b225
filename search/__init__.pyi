"""Types of the lazy face busca.search (busca/lazy.py loads the names on first use)."""

from .filters import allowed as allowed
from .filters import as_built as as_built
from .scorers import available_methods as available_methods
from .filters import BadFilter as BadFilter
from .hits import BadFloor as BadFloor
from .context import build_context as build_context
from .hits import check_floor as check_floor
from .fusion import check_settings as check_settings
from .context import check_template as check_template
from . import collapse as collapse
from .scorers import COMPARE_K as COMPARE_K
from .compare import compare as compare_methods
from .compare import CompareRow as CompareRow
from .compare import Comparison as Comparison
from .compare import comparison_dict as comparison_dict
from .context import Context as Context
from .context import context_dict as context_dict
from .context import PER_DOC as CONTEXT_PER_DOC
from .context import ContextTooSmall as ContextTooSmall
from .compare import default_methods as default_methods
from .fusion import describe_default as describe_default
from .scorers import describe_fusion as describe_fusion
from .facets import facets as facets
from .filters import Filter as Filter
from .scorers import floor_of as floor_of
from .fusion import FUSION as FUSION
from .fusion import FusionError as FusionError
from .fusion import FUSIONS as FUSIONS
from .fusion import FusionSettings as FusionSettings
from .scorers import gate_floors as gate_floors
from .filters import has_groups as has_groups
from . import highlight as highlight
from .hits import Hit as Hit
from .hits import hits_for as hits_for
from .scorers import K as K
from .context import LANGS as LANGS
from .filters import left_out_of as left_out_of
from .context import MAX_CHARS as MAX_CHARS
from .scorers import method_settings as method_settings
from ..index.lexical.lexical import NoSearchableTerms as NoSearchableTerms
from .filters import parse_filters as parse_filters
from .fusion import parse_weights as parse_weights
from .context import prompt_lang as prompt_lang
from . import querylog as querylog
from .scorers import rank as rank
from .answerable import refusal as refusal
from .context import render as render
from ..index.dense.vectors import require_vectors as require_vectors
from .fusion import RRF_K as RRF_K
from .scorers import scorer as scorer
from .hits import search as search
from .hits import snippet as snippet
from .hits import StaleIndex as StaleIndex
from .filters import stored_groups as stored_groups
from .context import TemplateError as TemplateError
from ..index.lexical.lexical import top_k as top_k
from ..index.methods import UnknownMethod as UnknownMethod
from .filters import Visible as Visible
from .filters import visible_to as visible_to
from .fusion import WINDOW as WINDOW

EXPORTS: dict[str, str]
__all__ = [
    "BadFilter",
    "BadFloor",
    "COMPARE_K",
    "CONTEXT_PER_DOC",
    "CompareRow",
    "Comparison",
    "Context",
    "ContextTooSmall",
    "FUSION",
    "FUSIONS",
    "Filter",
    "FusionError",
    "FusionSettings",
    "Hit",
    "K",
    "LANGS",
    "MAX_CHARS",
    "NoSearchableTerms",
    "RRF_K",
    "StaleIndex",
    "TemplateError",
    "UnknownMethod",
    "Visible",
    "WINDOW",
    "allowed",
    "as_built",
    "available_methods",
    "build_context",
    "check_floor",
    "check_settings",
    "check_template",
    "collapse",
    "compare_methods",
    "comparison_dict",
    "context_dict",
    "default_methods",
    "describe_default",
    "describe_fusion",
    "facets",
    "floor_of",
    "gate_floors",
    "has_groups",
    "highlight",
    "hits_for",
    "left_out_of",
    "method_settings",
    "parse_filters",
    "parse_weights",
    "prompt_lang",
    "querylog",
    "rank",
    "refusal",
    "render",
    "require_vectors",
    "scorer",
    "search",
    "snippet",
    "stored_groups",
    "top_k",
    "visible_to",
]
