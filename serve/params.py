"""Request parameters: read, checked against their caps, or BadParameter naming the fix.

Caps (module constants, documented in docs/serve.md): a question of at most MAX_QUERY
characters, k at most MAX_K, at most MAX_DOCUMENTS documents per POST.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..corpus import SearchSpec
from ..index.dense_models import is_hybrid
from ..search.fusion import (FUSION, FUSIONS, RRF_K, WINDOW, FusionError, FusionSettings,
                             check_settings, parse_weights)
from ..search.filters import BadFilter, parse_filters
from .errors import BadParameter

MAX_QUERY = 1000  # characters of a question
MAX_K = 100
MAX_PER_DOC = 100
MAX_CHARS = 100_000  # context: characters of passage text
MAX_DOCUMENTS = 1000  # documents in one POST /api/documents
MAX_WINDOW = 10_000  # hybrid: top hits of each method that are fused
FUSION_FIELDS = ("fusion", "window", "rrf_k", "weights")  # hybrid only
K = 3
METHOD = "tfidf"  # as `busca search`


def search_spec(args: Mapping, known: list[str]) -> SearchSpec:
    """The options of GET /api/search, those of `busca search` (hybrid's fusion included)."""
    chosen = method(args.get("method"), known)
    given = [name for name in FUSION_FIELDS if args.get(name) not in (None, "")]
    if given and not is_hybrid(chosen):
        raise BadParameter(f"{', '.join(given)} only apply to method hybrid (this search uses"
                           f" {chosen}); drop them or add method=hybrid")
    rrf_k = number(args.get("rrf_k"), "rrf_k")
    return SearchSpec(
        method=chosen, k=integer(args.get("k"), "k", default=K, low=1, high=MAX_K),
        min_score=number(args.get("min_score"), "min_score"),
        per_doc=integer(args.get("per_doc"), "per_doc", default=0, low=0, high=MAX_PER_DOC),
        fusion=choice(args.get("fusion"), "fusion", FUSIONS, FUSION),
        window=integer(args.get("window"), "window", default=WINDOW, low=1, high=MAX_WINDOW),
        rrf_k=RRF_K if rrf_k is None else rrf_k, weights=weights(args.get("weights")),
        filters=filters(args))


def filters(args: Mapping) -> tuple:
    """The `filter=` parameters (repeatable: FIELD=a,b, !=, >=, <=, ^=), parsed once."""
    raw = args.getlist("filter") if hasattr(args, "getlist") else args.get("filter") or []
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise BadParameter('filter must be a text or a list of texts, e.g. ["category=Python"]')
    try:
        return parse_filters(texts)
    except BadFilter as e:
        raise BadParameter(f"filter: {e}") from None


def weights(raw: object) -> dict[str, float] | None:
    """hybrid's weights, "bm25=1,dense=0.5" (None when absent)."""
    if raw is None or raw == "":
        return None
    try:
        parsed = parse_weights(str(raw))
        check_settings(FusionSettings(weights=parsed))
        return parsed
    except FusionError as e:
        raise BadParameter(f"weights: {e}") from None


def question(raw: object, name: str = "q") -> str:
    """A non-empty question of at most MAX_QUERY characters."""
    if raw is None:
        raise BadParameter(f"missing {name}: give the question, e.g. ?{name}=prazo+do+reembolso")
    if not isinstance(raw, str):
        raise BadParameter(f"{name} must be a string")
    if not raw.strip():
        raise BadParameter(f"{name} is empty: give the question")
    if len(raw) > MAX_QUERY:
        raise BadParameter(f"{name} has {len(raw)} characters; at most {MAX_QUERY} are accepted")
    return raw


def integer(raw: object, name: str, *, default: int, low: int, high: int) -> int:
    """An integer between `low` and `high` (default when absent or empty)."""
    if raw is None or raw == "":
        return default
    try:
        value = int(raw) if not isinstance(raw, (bool, float)) else None
    except (TypeError, ValueError):
        value = None
    if value is None:
        raise BadParameter(f"{name} must be a whole number, got {_shown(raw)}")
    if not low <= value <= high:
        raise BadParameter(f"{name} must be between {low} and {high}, got {value}")
    return value


def number(raw: object, name: str) -> float | None:
    """A finite number, or None when absent or empty."""
    if raw is None or raw == "":
        return None
    try:
        value = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise BadParameter(f"{name} must be a finite number, got {_shown(raw)}")
    return value


def method(raw: object, known: list[str], *, default: str = METHOD) -> str:
    """A method this index has."""
    if raw is None or raw == "":
        return default
    if not isinstance(raw, str) or raw not in known:
        raise BadParameter(f"unknown method {_shown(raw)}; this index has: {', '.join(known)}")
    return raw


def methods(raw: object, known: list[str]) -> list[str] | None:
    """A comma-separated list of methods this index has (None: the default columns)."""
    if raw is None or raw == "":
        return None
    names = [m.strip() for m in str(raw).split(",") if m.strip()]
    bad = [m for m in names if m not in known]
    if bad or not names:
        raise BadParameter(f"unknown method {_shown(bad[0] if bad else raw)}; this index has:"
                           f" {', '.join(known)}")
    return list(dict.fromkeys(names))


def flag(raw: object, name: str) -> bool | None:
    """A yes/no switch: true/false in JSON, 1/0 (or true/false) in a query string; None when
    absent."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in ("1", "true", "0", "false"):
        return raw.lower() in ("1", "true")
    raise BadParameter(f"{name} must be 1 or 0 (true or false), got {_shown(raw)}")


def choice(raw: object, name: str, choices: tuple[str, ...], default: str) -> str:
    if raw is None or raw == "":
        return default
    if raw not in choices:
        raise BadParameter(f"{name} must be one of {', '.join(choices)}, got {_shown(raw)}")
    return str(raw)


def only(data: Mapping, allowed: set[str], where: str) -> None:
    """Refuse unknown keys (a typo in a field name must not pass silently)."""
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise BadParameter(f"unknown field {unknown[0]!r} in {where}; known fields:"
                           f" {', '.join(sorted(allowed))}")


def _shown(raw: object) -> str:
    text = repr(raw)
    return text if len(text) <= 60 else text[:57] + "…'"
