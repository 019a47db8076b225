"""The question use cases on one build: search, context and compare, with the floor (given or
calibrated), hybrid's fusion, the per-document cap and the query-log policy decided once."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .. import index as indexing
from ..errors import BuscaError
from .. import search as searching
from ..search.context import Context
from ..search.fusion import FusionSettings
from ..search.scorers import COMPARE_K
from .specs import (HYBRID_AS_SEARCH, BadSpec, ContextSpec, Result, SearchSpec, check_rerank,
                    check_whole)

if TYPE_CHECKING:
    from ..index.dense.rerank_api import RerankSettings
    from ..search.compare import Comparison

WARM_UP = "aquecimento"  # encoded when a dense ranker loads, so no question waits for it

Remote = Callable[[str, SearchSpec, str], "Result | Context | None"]
Notify = Callable[[str, Any], None]

log = logging.getLogger(__name__)


def asked(question: object) -> str:
    """The question as every search reads it (`as_asked`: NFC, a lone surrogate as U+FFFD);
    BadSpec when it is not a string."""
    if not isinstance(question, str):
        raise BadSpec(f"the question must be a string, not {type(question).__name__}")
    if not question.strip():  # it was logged as a miss, and busca misses --golden wrote it
        raise BadSpec("the question is empty: ask something, e.g. 'qual o prazo do reembolso?'")
    return indexing.as_asked(question)


def search_build(build, home, question: str, spec: SearchSpec, *,
                 remote: Remote | None = None, notify: Notify | None = None) -> Result:
    """The search use case on one build: the floor (given or calibrated), hybrid's fusion,
    the per-document cap, the query log; `remote(question, spec, build_id)` may answer
    instead (a running busca serve), or give None. `notify(what, value)` hears, as they
    happen, ("floor", the calibrated floor used), ("unlogged", why: "the home is
    read-only", or the log write's error) and ("left out", the documents removed or changed
    since the build that the search left out: `_as_built`)."""
    question = asked(question)
    floor, calibrated, fusion = _prepare(build, spec, notify)
    spec, unlogged = _log_policy(home, spec, notify)
    described = searching.describe_fusion(build, fusion, spec.method) if fusion else None
    found = remote(question, spec, build.manifest.build) if remote else None
    if isinstance(found, Result):
        _told_left_out(found.left_out, notify)
        return replace(found, calibrated=calibrated, fusion=described, unlogged=unlogged)
    started, note = time.perf_counter(), ""
    rerank, want = reranker(spec.rerank), spec.k + spec.offset  # the pages before, skipped
    filtered = allowed = _allowed(build, home, spec.filters)
    try:
        hits, allowed, gone = _as_built(build, home, filtered, notify, lambda mask: (
            searching.collapse.search(build, home, question, method=spec.method,
                                      k=rerank.depth(want) if rerank else want,
                                      per_doc=spec.per_doc, fusion=fusion, allowed=mask)))
    except searching.NoSearchableTerms as e:
        hits, note, gone = [], str(e), 0
    note = _why_filtered(filtered, spec.filters, hits, note, gone) or _why_gone(gone, hits)
    kept = tuple(h for h in hits if floor is None or h.score >= floor)
    refused = bool(kept) and searching.refusal(build, question, spec.method, spec.min_score,
                                               allowed)
    if refused:
        kept, note = (), refused.reason  # the stored answerability model (issue 30)
    if rerank and kept:  # the re-ranker's scores, or its server's error: never a silent skip
        kept = tuple(rerank(question, kept, want))
    if spec.offset and len(kept) <= spec.offset and kept:
        note = (f"nothing past offset {spec.offset}: the question has {len(kept)} hits in all"
                " (give a smaller offset)")
    page, seconds = kept[spec.offset:], time.perf_counter() - started
    unlogged = _log(home, spec, "search", question,
                    hits[spec.offset:want] if page else hits[:want], floor, started, notify,
                    refused=bool(refused)) or unlogged
    kept = page
    return Result(question, spec.method, kept, floor, note, build.manifest.build, calibrated,
                  described, unlogged, seconds, len(hits), rerank.label if rerank else "",
                  refused=bool(refused), best=max((h.score for h in hits), default=None),
                  left_out=gone)


def _as_built(build, home, allowed, notify: Notify | None, find: Callable):
    """(`find(allowed)`, the mask it ran on, the documents left out). A hit whose document
    was removed from the store or changed since the build (StaleIndex) is left out, not an
    error: `find` runs again among the chunks of the documents stored as the build chunked
    them (a search never cites text the store no longer holds, nor fails until `busca
    index`), and `notify` hears ("left out", how many documents). A document changed after
    the mask was read (a crawl storing it meanwhile) makes it read again, a few times."""
    try:
        return find(allowed), allowed, 0
    except searching.StaleIndex:
        pass
    for attempt in range(AS_BUILT_TRIES):
        current, gone = searching.as_built(build, home)
        if allowed is not None:  # those the question may see: never a hidden one's count
            gone = searching.left_out_of(build, current, allowed)
        mask = current if allowed is None else allowed & current
        try:
            found = find(mask)
        except searching.StaleIndex:  # a document stored (a crawl, a POST) since the mask
            if attempt == AS_BUILT_TRIES - 1:
                raise
            continue
        _told_left_out(gone, notify)
        return found, mask, gone
    raise AssertionError("unreachable")  # pragma: no cover


AS_BUILT_TRIES = 5  # masks read again while documents keep changing under a search


def _told_left_out(gone: int, notify: Notify | None) -> None:
    """`notify` hears ("left out", how many documents) when a search left some out, here
    or in the running server that answered (its answer's `left_out`)."""
    if notify and gone:
        notify("left out", gone)


def _why_gone(gone: int, hits) -> str:
    """Why nothing was found when every match was a document left out by `_as_built`."""
    if not gone or hits:
        return ""
    return ("the documents that match were removed or changed since the index was built: run"
            " busca index to search their present text")


def _allowed(build, home, filters):
    """The mask of the chunks the filters allow (None without filters)."""
    if not filters:
        return None
    return searching.allowed(build, home, filters)


def _why_filtered(allowed, filters, hits, reason: str, gone: int = 0) -> str:
    """Why a question found nothing, the filters first: filters that allow no document at
    all, else `reason` (no word of the question in the index…), else filters whose documents
    hold none of the question's words (said as the filters', not the corpus's: "no passage
    matches the question" sent a user to rephrase what the filters had left out) — unless
    their matches were `gone` (left out as changed since the build: `_why_gone` says so)."""
    if allowed is not None and not allowed.any():
        shown = searching.highlight.strip_controls(" ".join(map(str, filters)))
        return "no document matches the filters " + shown  # a terminal shows it
    given = [f for f in filters if isinstance(f, searching.Filter)]
    if reason or hits or not given or gone:
        return reason
    shown = searching.highlight.strip_controls(" ".join(map(str, given)))
    return f"no passage of the documents that match the filters {shown} matches the question"


def context_build(build, home, question: str, spec: ContextSpec, *,
                  remote: Remote | None = None, notify: Notify | None = None) -> Context:
    """The context use case on one build: passages above the floor, fitted to max_chars
    (`remote` and `notify` as in `search_build`)."""
    question = asked(question)
    floor, _, fusion = _prepare(build, spec, notify)
    spec, _ = _log_policy(home, spec, notify)
    found = remote(question, spec, build.manifest.build) if remote else None
    if isinstance(found, Context):  # on this build: its prompt language, as build_context's
        _told_left_out(found.left_out, notify)
        return replace(found, lang=searching.prompt_lang(build.manifest.methods))
    started, filtered = time.perf_counter(), _allowed(build, home, spec.filters)
    found, _, gone = _as_built(build, home, filtered, notify, lambda mask: (
        searching.build_context(build, home, question, method=spec.method, k=spec.k,
                                max_chars=spec.max_chars, min_score=spec.min_score,
                                fusion=fusion, per_doc=spec.per_doc,
                                rerank=reranker(spec.rerank), allowed=mask)))
    why = (_why_filtered(filtered, spec.filters, found.hits, found.reason, gone)
           or _why_gone(gone, found.hits))
    found = replace(found, reason=why or found.reason, left_out=gone)
    _log(home, spec, "context", question, found.hits, floor, started, notify)
    return found


def _prepare(build, spec: SearchSpec,
             notify: Notify | None) -> tuple[float | None, bool, FusionSettings | None]:
    """The floor, whether it is the calibrated one, and hybrid's settings (checked)."""
    method = indexing.resolve(build.manifest.methods, spec.method)
    if spec.min_score is not None:
        floor, calibrated = searching.check_floor(spec.min_score), False
    else:
        floor = searching.floor_of(build, spec.method)
        calibrated = floor is not None
        if calibrated and notify:
            notify("floor", floor)
    if indexing.is_dense(method) or method == indexing.HYBRID:
        searching.require_vectors(build, method if indexing.is_dense(method) else "dense")
    return floor, calibrated, spec.fusion_settings(floor)


def reranker(settings: RerankSettings | None):
    """The re-ranking stage of these settings (a search.rerank.Reranker), or None."""
    if settings is None:
        return None
    from ..search.rerank import Reranker

    return Reranker.of(settings)


def _log_policy(home, spec: SearchSpec, notify: Notify | None) -> tuple[SearchSpec, str]:
    """The spec with `log` off when the home cannot log, and why ("read-only")."""
    if not spec.log:
        return spec, ""
    querylog = searching.querylog  # loaded only when the question may be logged
    if querylog.read_only(home) and querylog.is_enabled(home):
        if notify:
            notify("unlogged", "the home is read-only")
        return replace(spec, log=False), "read-only"
    return spec, ""


def _log(home, spec: SearchSpec, command: str, question: str, hits, floor, started,
         notify: Notify | None, *, refused: bool = False) -> str:
    """Log the call, but not a filtered one that found nothing: the miss is the filter's, not
    the corpus's (busca misses listed it, and --golden made a question of it). A write that
    fails (a full disk, a lock held past the timeout) never fails the answer: why the call
    went unlogged is told to `notify` (or logged as a warning) and returned ("" if logged)."""
    if not spec.log or (spec.filters and not hits):
        return ""
    try:
        searching.querylog.log_call(home, command=command, query=question, method=spec.method,
                                    k=spec.k, scores=[h.score for h in hits], floor=floor,
                                    started=started, refused=refused)
    except BuscaError as e:
        why = f"the query log could not be written: {e}"
        if notify:
            notify("unlogged", why)
        else:
            log.warning("%s did not log a question: %s", command, why)
        return why
    return ""


def compare_build(build, home, question: str, *, methods: Sequence[str] | None = None,
                  k: int = COMPARE_K, per_doc: int = 0, include: Sequence[int] = (),
                  rerank: RerankSettings | None = None, filters: Sequence = (),
                  fusion: FusionSettings = HYBRID_AS_SEARCH) -> Comparison:
    """The compare use case on one build: hybrid as `busca search` uses it by default
    (`fusion`: as a session set it); `filters`: every method ranks only the chunks of the
    documents passing them."""
    methods = method_names(methods)
    check_whole("k", k, 1)
    check_whole("per_doc", per_doc, 0)
    if isinstance(include, (str, bytes)) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in include):
        raise BadSpec(f"include takes chunk ids (whole numbers of 0 or more), not"
                      f" {include!r:.60}")
    check_rerank(rerank)
    names = list(methods) if methods else searching.default_methods(build)
    filters = searching.parse_filters(filters)
    question, filtered = asked(question), _allowed(build, home, filters)
    found, _, gone = _as_built(build, home, filtered, None, lambda mask: searching.compare_methods(
        build, home, question, methods=names, k=k, per_doc=per_doc, include=list(include),
        fusion=fusion, rerank=reranker(rerank), allowed=mask))
    notes = dict(found.notes)  # an empty column says why, the filters first, as search does
    for method, column in found.columns.items():
        if why := _why_filtered(filtered, filters, column, notes.get(method, ""), gone):
            notes[method] = why
    return replace(found, notes=notes)


def method_names(methods: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """Method names as a caller gives them: a list, or "bm25,dense" as the command line
    writes them (None: the index's own); BadSpec for an empty list or a name not a text."""
    if methods is None:
        return None
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    methods = tuple(methods)
    if not methods:
        raise BadSpec("methods is empty: name at least one (e.g. bm25,dense), or leave it"
                      " out for the index's methods")
    if bad := [m for m in methods if not isinstance(m, str) or not m.strip()]:
        raise BadSpec(f"methods are names such as bm25 or dense, not {bad[0]!r:.40}")
    return methods


def prepare(ranker) -> None:
    """Load what a ranker (or each ranker a hybrid fuses) loads lazily, now: a large index's
    int8 copy (index/dense/vectors.py), its window tables and codes (index/lexical/maxscore.py)."""
    for part in getattr(ranker, "rankers", {}).values() or [ranker]:
        if hasattr(part, "prepare"):
            part.prepare()

