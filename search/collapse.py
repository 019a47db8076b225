"""Collapse by document: at most `per_doc` windows of one article among the hits.

One long article often fills every top-k slot with its overlapping windows. `per_doc = N`
keeps, walking the ranking best first, at most N windows of each document (0 = no limit);
the order of the kept hits is unchanged and they are renumbered 1, 2, … The ranking is
deepened so that k hits survive: first `k * (per_doc + DEEPEN)` chunks, then doubled
until k survive or the whole index has been ranked.

`backfill=True` (what `busca context` uses) gives a set-aside window its slot back when no
window of another document at or above `floor` can take it: one article fills the k slots
only when it is the only relevant one. Hits below the floor come last.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import BuscaError
from .fusion import FusionSettings
from .hits import Hit, hits_for
from .scorers import K, rank as rank_all

if TYPE_CHECKING:  # the crawler package loads only when a command needs it
    from ..crawler.store import DocumentStore

PER_DOC = 0  # 0 = no limit: `busca search` keeps the Java-parity ranking by default
DEEPEN = 4  # first depth: k * (per_doc + DEEPEN) chunks


class BadPerDoc(BuscaError, ValueError):
    """A negative number of windows per document."""


def check_per_doc(per_doc: int) -> int:
    """`per_doc`, or BadPerDoc if it is negative."""
    if per_doc < 0:
        raise BadPerDoc(f"per_doc must be 0 (no limit) or more, got {per_doc}")
    return per_doc


def keep_mask(urls: Sequence[str], per_doc: int) -> np.ndarray:
    """True for each position whose document has fewer than `per_doc` earlier positions."""
    if per_doc == 0:
        return np.ones(len(urls), dtype=bool)
    seen: dict[str, int] = {}
    keep = np.zeros(len(urls), dtype=bool)
    for i, url in enumerate(urls):
        seen[url] = seen.get(url, 0) + 1
        keep[i] = seen[url] <= per_doc
    return keep


def collapse(ids: np.ndarray, scores: np.ndarray, urls: Sequence[str], per_doc: int, *,
             k: int | None = None, backfill: bool = False,
             floor: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ranked (ids, scores) with at most `per_doc` per URL, order kept, cut to `k`.

    With `backfill`, a set-aside hit scoring at least `floor` takes a slot that no kept hit
    at or above `floor` would fill; kept hits below the floor come last.
    """
    keep = keep_mask(urls, check_per_doc(per_doc))
    k = ids.size if k is None else k
    if not backfill:
        chosen = np.flatnonzero(keep)[:k]
        return ids[chosen], scores[chosen]
    good = np.ones(ids.size, dtype=bool) if floor is None else scores >= floor
    priority = np.where(keep & good, 0, np.where(good, 1, np.where(keep, 2, 3)))
    order = np.lexsort((np.arange(ids.size), priority))
    chosen = np.sort(order[priority[order] < 3][:k])
    return ids[chosen], scores[chosen]


def urls_of(index, ids: np.ndarray) -> list[str]:
    """The document URL of each chunk id (the build's chunk rows)."""
    rows = {r.id: r.url for r in index.chunks(ids)}
    return [rows.get(int(i), "") for i in ids]


def rank(index, query: str, *, method: str = "tfidf", k: int = K, per_doc: int = PER_DOC,
         backfill: bool = False, floor: float | None = None,
         fusion: FusionSettings | None = None,
         allowed=None) -> tuple[np.ndarray, np.ndarray]:
    """Top-k (ids, scores) with at most `per_doc` windows per document (0: `scorers.rank`),
    among the chunks of the mask `allowed` when given."""
    def ranker(depth: int):
        return rank_all(index, query, method=method, k=depth, fusion=fusion, allowed=allowed)

    return rank_with(ranker, lambda ids: urls_of(index, ids), k=k, per_doc=per_doc,
                     total=int(index.manifest.get("chunks") or 0), backfill=backfill,
                     floor=floor)


def rank_with(ranker: Callable[[int], tuple[np.ndarray, np.ndarray]],
              urls: Callable[[np.ndarray], Sequence[str]], *, k: int, per_doc: int,
              total: int, backfill: bool = False,
              floor: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`collapse` over `ranker(depth)`, deepening until k hits survive or all is ranked."""
    if check_per_doc(per_doc) == 0:
        return ranker(k)
    depth = k * (per_doc + DEEPEN)
    while True:
        ids, scores = ranker(depth)
        found = urls(ids)
        kept = int(np.count_nonzero(keep_mask(found, per_doc)
                                    & (True if floor is None else scores >= floor)))
        exhausted = ids.size < depth or depth >= total
        below = floor is not None and ids.size and scores[-1] < floor
        if kept >= k or exhausted or below:
            return collapse(ids, scores, found, per_doc, k=k, backfill=backfill, floor=floor)
        depth *= 2


def search(index, store: DocumentStore, query: str, *, method: str = "tfidf", k: int = K,
           per_doc: int = PER_DOC, backfill: bool = False, floor: float | None = None,
           fusion: FusionSettings | None = None, allowed=None) -> list[Hit]:
    """`hits.search` with at most `per_doc` windows of one document (0 = no limit), among
    the chunks of the mask `allowed` when given."""
    ids, scores = rank(index, query, method=method, k=k, per_doc=per_doc, backfill=backfill,
                       floor=floor, fusion=fusion, allowed=allowed)
    return hits_for(index, store, ids, scores, method)
