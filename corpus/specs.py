"""The values a question is asked with and answered by: `SearchSpec`, `ContextSpec`, `Result`.

A search option is one field of `SearchSpec`, with the CLI's name and default; `Result` carries
its own JSON form (GET /api/search, `busca search --json`, the shell's pipe mode).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, TypeVar

from .. import index as indexing
from .. import search as searching
from ..errors import BuscaError
from ..search.collapse import PER_DOC
from ..search.context import MAX_CHARS, PER_DOC as CONTEXT_PER_DOC, why_nothing
from ..search.fusion import FUSION, RRF_K, WINDOW, FusionSettings
from ..search.hits import Hit, json_form
from ..search.scorers import K, MOST

if TYPE_CHECKING:
    from ..index.dense.rerank_api import RerankSettings

T = TypeVar("T")
METHOD = "tfidf"  # busca search's default method
HYBRID_AS_SEARCH = FusionSettings(floors=True)  # hybrid as `busca search` uses it by default


class BadSpec(BuscaError, ValueError):
    """A search or context option of the wrong type or out of range (the Python API)."""


class UnknownOption(BadSpec, TypeError):
    """A keyword the call does not take (a TypeError, as Python's own for a function)."""


_WHOLE = {"k": 1, "offset": 0, "per_doc": 0, "window": 1, "max_chars": 1}  # least value
_DEFAULTS = {"fusion": FUSION, "window": WINDOW, "rrf_k": RRF_K, "weights": None}
HYBRID_OPTIONS = tuple(_DEFAULTS)  # the options only hybrid takes




def check_embed(embed: Mapping | None) -> None:
    """BadSpec unless `embed` (busca.open's openai:MODEL server settings) is None or a dict of
    the settings busca has (UnknownOption naming them): they are used on the first dense
    question, where a misspelt one was a TypeError traceback."""
    if embed is None:
        return
    if not isinstance(embed, Mapping):
        raise BadSpec(f"embed is a dict of openai:MODEL server settings, not a"
                      f" {type(embed).__name__}: e.g. embed={{'url': 'http://127.0.0.1:8000'}}")
    from ..index.dense.embedding_api import ServerSettings

    names = [f.name for f in fields(ServerSettings)]
    if unknown := [name for name in embed if name not in names]:
        raise UnknownOption(f"embed has no setting {', '.join(map(repr, unknown))}: it takes"
                            f" {', '.join(names)}")


def with_options(spec: T, options: Mapping[str, Any]) -> T:
    """`spec` with `options` replaced (a Python caller's keyword arguments); UnknownOption
    naming the options it does not have, and those it has."""
    names = [f.name for f in fields(spec)]
    if unknown := [name for name in options if name not in names]:
        raise UnknownOption(f"unknown option {', '.join(map(repr, unknown))}: this call"
                            f" takes {', '.join(names)}")
    return replace(spec, **options)


def check_whole(name: str, value: object, least: int) -> None:
    """BadSpec unless `value` is a whole number (not a bool) from `least` to MOST (k of 2**64
    was an OverflowError when the query log stored it)."""
    if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= MOST:
        raise BadSpec(f"{name} must be a whole number from {least} to {MOST:,}, not"
                      f" {value!r:.40}")


def _check_fields(spec) -> None:
    """BadSpec for a field a caller set to a value of the wrong type, out of range, or that
    only hybrid reads given with another method (it would be ignored)."""
    if not isinstance(spec.method, str) or not spec.method.strip():
        raise BadSpec(f"method must be a method name such as bm25 or hybrid, not"
                      f" {spec.method!r}")
    for name, least in _WHOLE.items():
        check_whole(name, getattr(spec, name, least), least)
    for name in ("min_score", "rrf_k"):
        value = getattr(spec, name)
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                                  or not math.isfinite(value)):
            raise BadSpec(f"{name} must be a finite number, not {value!r}")
    if spec.rrf_k is not None and not spec.rrf_k >= 0:
        raise BadSpec(f"rrf_k must be 0 or more, not {spec.rrf_k!r}")
    if not isinstance(spec.fusion, str):
        raise BadSpec(f"fusion must be a name such as rrf, not {spec.fusion!r}")
    if not isinstance(spec.log, bool):
        raise BadSpec(f"log must be True or False, not {spec.log!r}")
    if spec.weights is not None and not _is_weights(spec.weights):
        raise BadSpec(f"weights must map method names to numbers of 0 or more, e.g."
                      f" {{'bm25': 0.3, 'dense': 0.7}}, not {spec.weights!r:.80}")
    check_rerank(spec.rerank)
    given = [n for n, default in _DEFAULTS.items() if getattr(spec, n) != default]
    check_hybrid_only(given, spec.method, "method='hybrid'")
    _check_fusion(spec)


def _check_fusion(spec) -> None:
    """BadSpec for a fusion or weights no hybrid can fuse by (search.fusion.check_settings),
    when the spec is made, not when (or if) a hybrid search runs."""
    try:
        searching.check_settings(FusionSettings(fusion=spec.fusion))
    except searching.FusionError as e:
        raise BadSpec(str(e)) from None
    if spec.weights:
        _weights(spec.weights)


def check_hybrid_only(given: Sequence[str], method: str, hybrid: str) -> None:
    """BadSpec when hybrid's options (`given`, as a front end names them) come with a method
    that fuses nothing: the one rule (hybrid and hybrid:NAME fuse) every front end words its
    own way (`hybrid`: how it asks for hybrid)."""
    if given and not indexing.is_hybrid(method):
        raise BadSpec(hybrid_only(given, method, hybrid))


def hybrid_only(given: Sequence[str], method: str, hybrid: str) -> str:
    """The one line for hybrid's options given with another method, each front end naming
    them its own way (`given`: --fusion or fusion; `hybrid`: how it asks for hybrid)."""
    one = len(given) == 1
    return (f"{', '.join(given)} only {'applies' if one else 'apply'} to {hybrid} (this"
            f" search uses {method}): drop {'it' if one else 'them'} or give {hybrid}")


def _is_weights(weights: object) -> bool:
    """A mapping of method names to finite numbers of 0 or more (not bools)."""
    return isinstance(weights, Mapping) and all(
        isinstance(name, str) and isinstance(value, numbers.Real)
        and not isinstance(value, bool) and math.isfinite(value) and value >= 0
        for name, value in weights.items())


def check_rerank(settings: object) -> None:
    """BadSpec unless `settings` is None or a re-ranker's settings (parse_rerank's)."""
    from ..index.dense.rerank_api import RerankSettings
    if settings is not None and not isinstance(settings, RerankSettings):
        raise BadSpec(f"rerank takes busca.index.parse_rerank(KIND:MODEL, URL), not"
                      f" {settings!r:.60}: e.g. rerank=busca.index.parse_rerank("
                      f"'tei:MODEL', 'http://127.0.0.1:8080')")


def fusion_weights(weights: str | Mapping[str, float]) -> dict[str, float]:
    """hybrid's weights, written as `busca search --weights` and the HTTP API take them
    ("bm25=1,dense=0.5") or a mapping, checked as a fusion takes them (two methods or more,
    not all 0): the one rule every front end translates; BadSpec saying why."""
    try:
        parsed = (searching.parse_weights(weights) if isinstance(weights, str)
                  else dict(weights))
        searching.check_settings(FusionSettings(weights=parsed))
    except searching.FusionError as e:
        raise BadSpec(str(e)) from None
    return parsed


def _weights(weights: str | Mapping[str, float]) -> dict[str, float]:
    """`fusion_weights`, its error naming the field."""
    try:
        return fusion_weights(weights)
    except BadSpec as e:
        raise BadSpec(f"weights: {e}") from None


@dataclass(frozen=True)
class SearchSpec:
    """What a search is asked with: `busca search`'s options, with its defaults."""

    method: str = METHOD
    k: int = K
    min_score: float | None = None  # None: the method's calibrated floor, if any
    per_doc: int = PER_DOC  # windows of one document at most (0 = no limit)
    offset: int = 0  # search only: skip the first N hits (the next page: offset=k)
    fusion: str = FUSION  # hybrid only: how the methods' scores are fused
    window: int = WINDOW
    rrf_k: float = RRF_K
    weights: Mapping[str, float] | None = None  # None: the default weights ("bm25=1,dense=0.5"
    #                                             as --weights: read as {"bm25": 1, …})
    log: bool = True  # record the question in the query log (if the home logs)
    filters: tuple = ()  # Filter values (search/filters.py), or their texts: "category=Python"
    rerank: RerankSettings | None = None  # re-score the top `rerank.top` with this server

    def __post_init__(self):
        if isinstance(self.weights, str):  # as --weights and the HTTP API take them
            object.__setattr__(self, "weights", _weights(self.weights))
        _check_fields(self)
        object.__setattr__(self, "filters", searching.parse_filters(self.filters))

    @classmethod
    def of(cls, **options: Any):
        """The spec of a front end's options: those named like a field (a click command's
        keyword arguments, a request's parameters); the others are the front end's own."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in options.items() if k in names})

    def fusion_settings(self, floor: float | None) -> FusionSettings | None:
        """Hybrid's settings as a value (None for other methods); a hybrid hit must pass
        one component's calibrated floor unless a floor is given."""
        if not indexing.is_hybrid(self.method):
            return None
        return searching.check_settings(FusionSettings(
            fusion=self.fusion, window=self.window, rrf_k=self.rrf_k,
            weights=dict(self.weights or {}), floors=floor is None))


@dataclass(frozen=True)
class IndexSpec:
    """What `busca index` is asked with: its options, with its defaults (None: as the
    previous build did, or the builder's default)."""

    size: int | None = None  # words per window (None: the previous build's, else 200)
    overlap: int | None = None  # words shared by consecutive windows (likewise, else 40)
    methods: tuple[str, ...] = tuple(indexing.DEFAULT)
    dense: str | None = None  # [NAME=]ENCODER,...: the dense models ("none" drops them)
    sparse: bool | None = None  # e5-small's sparse head with the vectors (None: with e5-small
    #                             as the default model, or as the previous build did)
    titles: str | None = None  # METHOD,...|all|none: methods that index the titles
    threads: int = indexing.THREADS  # of the dense encoder
    bm25_k1: float | None = None  # None: the previous build's, else indexing.K1 (1.2)
    bm25_b: float | None = None  # None: the previous build's, else indexing.B (0.75)
    bm25_analyzer: str | None = None  # None: the previous build's, else pt when PyStemmer
    #                                   is installed, else simple
    dense_groups: int | None = None  # words per sentence group of a window (0: none)
    dense_blend: float | None = None  # the window vector's share beside its best group's
    workers: int | None = None  # processes that chunk the documents
    options: Mapping = field(default_factory=dict)  # any other build option, by its key

    def __post_init__(self):
        methods = self.methods.split(",") if isinstance(self.methods, str) else self.methods
        object.__setattr__(self, "methods", tuple(m.strip() for m in methods))
        for name, least in (("size", 1), ("overlap", 0), ("threads", 0), ("workers", 1),
                            ("dense_groups", 0)):
            if getattr(self, name) is not None:
                check_whole(name, getattr(self, name), least)
        if self.size is not None and self.overlap is not None:  # (else: at the build)
            indexing.check_window(self.size, self.overlap)

    def build_options(self) -> dict:
        """The options index.build_index reads: the one place their keys are written."""
        named = {"bm25_k1": self.bm25_k1, "bm25_b": self.bm25_b,
                 "bm25_analyzer": self.bm25_analyzer, "threads": self.threads,
                 "dense_groups": self.dense_groups, "dense_blend": self.dense_blend,
                 "workers": self.workers}
        return {**self.options, **{k: v for k, v in named.items() if v is not None}}


@dataclass(frozen=True)
class ContextSpec(SearchSpec):
    """What `busca context` is asked with: a search, per_doc 2, and a character budget."""

    per_doc: int = CONTEXT_PER_DOC
    max_chars: int = MAX_CHARS

    def __post_init__(self):
        super().__post_init__()
        if self.offset:  # a prompt is built from the best passages: there is no next page
            raise BadSpec(f"offset is a search option (the next page of hits), not one of"
                          f" context, which builds its prompt from the best passages: drop"
                          f" offset={self.offset!r}")


@dataclass(frozen=True)
class Result:
    """The hits of one search after the floor, and how they were found."""

    question: str
    method: str
    hits: tuple[Hit, ...]
    floor: float | None
    note: str = ""  # why nothing could match (no word of the question is in the index)
    build: str = ""
    calibrated: bool = False  # the floor is the method's calibrated one (none was given)
    fusion: dict | None = None  # hybrid's settings, as --json prints them
    unlogged: str = ""  # why a question asked to be logged was not ("read-only", a failed write)
    seconds: float = 0.0
    ranked: int = 0  # hits ranked before the floor (0 when a server answered)
    rerank: str = ""  # the re-ranker (KIND:MODEL) whose scores the hits carry, if any
    refused: bool = False  # the answerability model refused the question (`note` says why)
    best: float | None = None  # the best score ranked, above the floor or not
    left_out: int = 0  # documents left out: removed or changed in the store since the build

    def why_nothing(self, floor_option: str = "min_score") -> str:
        """Why no hit was kept, with the fix (`search.context.why_nothing`)."""
        return why_nothing(self.method, self.floor, self.best, self.note, floor_option)

    def no_hits(self, floor_option: str = "min_score") -> str:
        """The line `busca search` and `busca shell` say when no hit was kept: "no hits: "
        and why nothing could match (no known word, filters that match no document, the
        answerability model), else "nothing found: " and the floor the best hit missed."""
        if self.note:
            return f"no hits: {self.note}"
        return f"nothing found: {self.why_nothing(floor_option)}"

    def to_json(self, **extra: Any) -> dict:
        """The form of GET /api/search (`extra` goes after the build, before the note).
        `question` is the question; `query`, the same, is kept for the consumers written
        before it."""
        out = {"question": self.question, "query": self.question, "method": self.method,
               "hits": [h.to_json(method=False) for h in self.hits],
               "floor": self.floor, "build": self.build, **extra}
        if self.rerank:
            out["rerank"] = self.rerank
        if self.note or not self.hits:  # every front end tells why nothing was kept
            out["note"] = self.why_nothing()
        if not self.hits and self.best is not None:
            out["best"] = self.best
        if self.left_out:  # `busca search` through a server says so as it does alone
            out["left_out"] = self.left_out
        return out

    @classmethod
    @json_form("Result")
    def from_json(cls, data: dict) -> Result:
        """The result `to_json` gave."""
        method = data["method"]
        hits = tuple(Hit.from_json(h, method=method) for h in data["hits"])
        question = data["question"] if "question" in data else data["query"]
        found = cls(question, method, hits, data["floor"], build=data["build"],
                    rerank=str(data.get("rerank") or ""), best=data.get("best"),
                    left_out=int(data.get("left_out") or 0))
        note = str(data.get("note") or "")  # kept unless it is the floor's, said again
        return found if note == found.why_nothing() else replace(found, note=note)

    def lines(self) -> list[dict]:
        """`busca search --json`: one object per hit (hybrid's settings on each, and the
        re-ranker whose scores they carry)."""
        extra = ({"fusion": self.fusion} if self.fusion else {}) | (
            {"rerank": self.rerank} if self.rerank else {})
        return [{**h.to_json(), **extra} for h in self.hits]
