"""Answer a query on a loaded index: rank, apply the floor, attach sources."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from busca.crawler.store import Store
from busca.index.chunking import chunk_text
from busca.index.dense_models import dense_methods, model_of, resolve
from busca.index.storage import Index
from busca.search.lexical import Bm25Scorer, TfidfScorer, kth_largest

K = 3

# method name -> scorer factory(index, method) with .score(query) -> (ids, scores)
SCORERS: dict[str, Callable] = {"tfidf": TfidfScorer, "bm25": Bm25Scorer}


class UnknownMethod(ValueError):
    """A method the index was not built with."""


class StaleIndex(Exception):
    """The store changed since the index was built."""


@dataclass(frozen=True)
class Hit:
    """One ranked chunk with its source."""

    rank: int
    score: float
    chunk_id: int
    url: str
    title: str
    start: int
    end: int
    text: str
    method: str


def top_k(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best (id, score) pairs, best first; equal scores keep chunk order."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if ids.size > k:
        keep = np.flatnonzero(scores >= kth_largest(scores, k))  # no argpartition trap
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:k]
    return ids[order], scores[order]


def available_methods(index: Index) -> list[str]:
    """Methods this index can answer with: each dense model (`dense`, `dense:NAME`) and,
    when it has `hybrid`, one hybrid per extra model (`hybrid:NAME`)."""
    methods = index.methods
    out = [m for m in SCORERS if m in methods and m != "hybrid"]
    extra = [m for m in dense_methods(methods) if m != "dense"]
    out += extra
    if "hybrid" in methods:
        out += ["hybrid"] + [f"hybrid:{model_of(m)}" for m in extra]
    return out


def scorer(index: Index, method: str):
    """The scorer of `method` (`dense:NAME` of the first model is `dense`), cached on the index."""
    method = resolve(index.methods, method)
    cache = index._arrays.setdefault("_scorers", {})
    if method not in cache:
        kind = method.partition(":")[0]
        if method not in available_methods(index) or kind not in SCORERS:
            have = ", ".join(available_methods(index)) or "none"
            raise UnknownMethod(f"this index has no method {method!r}; it has: {have}")
        cache[method] = SCORERS[kind](index, method)
    return cache[method]


def floor_of(index: Index, method: str) -> float | None:
    """The calibrated score floor stored for `method`, if any."""
    return index.methods.get(resolve(index.methods, method), {}).get("floor")


def rank(index: Index, query: str, *, method: str = "tfidf", k: int = K):
    """Top-k chunk ids and scores for `query`."""
    ranker = scorer(index, method)
    if hasattr(ranker, "top"):  # lexical scorers: the same ranking, pruned (search/lexical.py)
        return ranker.top(query, k)
    ids, scores = ranker.score(query)
    return top_k(ids, scores, k)


def search(index: Index, store: Store, query: str, *, method: str = "tfidf", k: int = K,
           min_score: float | None = None) -> list[Hit]:
    """Ranked hits with their sources; hits below `min_score` are dropped."""
    ids, scores = rank(index, query, method=method, k=k)
    if min_score is not None:
        keep = scores >= min_score
        ids, scores = ids[keep], scores[keep]
    return hits_for(index, store, ids, scores, method)


def hits_for(index: Index, store: Store, ids, scores, method: str) -> list[Hit]:
    """Attach chunk text, URL and title to ranked chunk ids."""
    rows = store.chunks(index.build, ids)
    docs = {}
    hits = []
    for rank_, (row, score) in enumerate(zip(rows, scores), start=1):
        doc = docs.get(row.url) or docs.setdefault(row.url, store.get(row.url))
        if doc is None or doc.sha256 != row.doc_sha256:
            raise StaleIndex(f"{row.url} changed in the store since the index was built —"
                             ' run "busca index" to search the current text')
        text = chunk_text(doc.text, row.start, row.end)
        hits.append(Hit(rank_, float(score), row.id, row.url, doc.title, row.start, row.end,
                        text, method))
    return hits


# Dense and hybrid register last, because search/fusion.py imports this module.
from busca.search.dense import DenseScorer  # noqa: E402
from busca.search.fusion import HybridScorer  # noqa: E402

SCORERS.update(dense=DenseScorer, hybrid=HybridScorer)
