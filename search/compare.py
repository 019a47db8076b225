"""Methods side by side: each method's top k, and every hit's rank under every method.

Each method ranks the question to `DEPTH` chunks (100: the depth `busca eval` judges and
hybrid's default fusion window), so a hit one method puts in its top k gets its rank under
the others as long as they rank it within their first 100; beyond that (or for a lexical
method with no known word of the question) its rank is None, shown as "—". Each dense
query is encoded once: hybrid is fused from the component rankings computed here. With
`per_doc`, every ranking is collapsed by document first (search/collapse.py) and ranks are
positions in the collapsed ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..index.lexical.lexical import NoSearchableTerms, top_k
from ..index.methods import HYBRID
from ..index.dense.embedding_api import EmbeddingServerError
from ..index.dense.rerank_api import SUFFIX
from .collapse import PER_DOC, collapse, urls_of
from .fusion import FusionSettings
from .hits import Hit, hits_for
from .scorers import COMPARE_K, available_methods, rank, scorer

if TYPE_CHECKING:  # the crawler package loads only when a command needs it
    from ..crawler.store import DocumentStore
    from .rerank import Reranker

DEPTH = 100
METHODS = ("tfidf", "bm25", "dense", "hybrid")


@dataclass(frozen=True)
class CompareRow:
    """One chunk found by at least one method, with its rank and score under each."""

    chunk_id: int
    url: str
    title: str
    text: str
    start: int
    end: int
    ranks: dict[str, int | None]
    scores: dict[str, float | None]
    meta: dict | None = field(default=None, compare=False)  # as the hit's: page, section …

    @property
    def best(self) -> int:
        return min((r for r in self.ranks.values() if r is not None), default=DEPTH + 1)


@dataclass(frozen=True)
class Comparison:
    """A question's top-k hits per method (`columns`) and the union of them (`rows`)."""

    query: str
    methods: tuple[str, ...]
    k: int
    per_doc: int
    depth: int
    columns: dict[str, list[Hit]]
    rows: list[CompareRow]
    notes: dict[str, str]  # method -> why it found nothing (e.g. no known word)

    def to_json(self, *, hits: bool = False, **extra: Any) -> dict:
        """The form of `busca compare --json`, the shell's `:compare` and the MCP compare
        tool: each column as chunk ids (look them up in `rows`); with `hits`, as GET
        /api/compare gives it: each column as whole hits with their ranks and scores under
        every method. `question` is the question; `query`, the same, is kept for the
        consumers written before it. `extra` (the server's build, took_ms) goes last."""
        rows = {r.chunk_id: r for r in self.rows}
        columns = {m: [{**h.to_json(method=False), "ranks": rows[h.chunk_id].ranks,
                        "scores": rows[h.chunk_id].scores} if hits else h.chunk_id
                       for h in column] for m, column in self.columns.items()}
        return {
            "question": self.query, "query": self.query, "methods": list(self.methods),
            "k": self.k, "per_doc": self.per_doc, "depth": self.depth, "notes": self.notes,
            "columns": columns,
            "rows": [{"chunk_id": r.chunk_id, "url": r.url, "title": r.title,
                      "start": r.start, "end": r.end, "text": r.text, "ranks": r.ranks,
                      "scores": r.scores, **({"meta": r.meta} if r.meta else {})}
                     for r in self.rows],
            **extra,
        }


def default_methods(index) -> list[str]:
    """The default columns this index can fill: tfidf, bm25, dense, hybrid."""
    have = available_methods(index)
    return [m for m in METHODS if m in have]


def compare(index, store: DocumentStore, query: str, *, methods: Sequence[str],
            k: int = COMPARE_K,
            per_doc: int = PER_DOC, depth: int = DEPTH, include: Sequence[int] = (),
            fusion: FusionSettings | None = None,
            rerank: Reranker | None = None, allowed=None) -> Comparison:
    """Rank `query` with every method to `depth`, keep each top k, align the hits by chunk.

    Chunks in `include` (e.g. the golden passage's) get a row even when no top k holds them.
    `fusion`: hybrid's settings (default: the build's). `rerank`: a column METHOD+rerank
    after each method's, its top `rerank.top` re-scored by the re-ranker. `allowed`: a mask
    over the chunk ids (search/filters.py); every method then ranks only those chunks.
    """
    depth = max(depth, k)
    methods = list(dict.fromkeys(methods))  # a method named twice is one column
    for method in methods:
        scorer(index, method, fusion)  # UnknownMethod now, naming what the index has
    ranked, notes = _rankings(index, query, methods, depth, fusion, allowed)
    if per_doc:
        urls = _url_lookup(index, ranked)
        ranked = {m: collapse(ids, s, [urls[int(i)] for i in ids], per_doc)
                  for m, (ids, s) in ranked.items()}
    if rerank is not None:
        for method in list(methods):
            ranked[method + SUFFIX] = _reranked(index, store, query, ranked[method], rerank)
        methods += [m + SUFFIX for m in methods]
    columns = {m: hits_for(index, store, ranked[m][0][:k], ranked[m][1][:k], m)
               for m in methods}
    shown = {h.chunk_id for hits in columns.values() for h in hits}
    extra = [int(c) for c in dict.fromkeys(include) if int(c) not in shown
             and (allowed is None or allowed[int(c)])]
    extra_hits = hits_for(index, store, np.array(extra, np.int64), np.zeros(len(extra)),
                          "") if extra else []
    return Comparison(query, tuple(methods), k, per_doc, depth, columns,
                      _rows(columns, {m: ranked[m] for m in methods}, extra_hits), notes)


def _reranked(index, store, query: str, ranking, rerank: Reranker):
    """A ranking's top `rerank.top` re-scored by the re-ranker: (ids, scores)."""
    ids, scores = ranking
    hits = hits_for(index, store, ids[:rerank.top], scores[:rerank.top], "")
    hits = rerank(query, hits, rerank.top) if hits else []
    return (np.array([h.chunk_id for h in hits], np.int64),
            np.array([h.score for h in hits], np.float64))


def _rankings(index, query: str, methods: Sequence[str], depth: int, fusion, allowed=None):
    """Each needed method's (ids, scores) to `depth`; hybrid fused from its components."""
    needed = [m for m in methods if m != HYBRID]
    hybrid = scorer(index, HYBRID, fusion) if HYBRID in methods else None
    deep = depth
    if hybrid is not None:
        deep = max(depth, hybrid.settings.window)
        needed += [m for m in hybrid.weights if m not in needed]
    ranked, notes, away = {}, {}, []
    for method in needed:
        try:
            ranked[method] = rank(index, query, method=method, k=deep, allowed=allowed)
        except (NoSearchableTerms, EmbeddingServerError) as e:  # (an openai: model's server
            ranked[method] = np.empty(0, np.int64), np.empty(0)  # away: the others answer)
            notes[method] = str(e)
            if isinstance(e, EmbeddingServerError):
                away.append(method)
    if hybrid is not None and any(m in away for m in hybrid.weights):
        gone = next(m for m in hybrid.weights if m in away)
        ranked[HYBRID] = np.empty(0, np.int64), np.empty(0)
        notes[HYBRID] = f"it fuses {gone}, which cannot answer: {notes[gone]}"
    elif hybrid is not None:
        window = hybrid.settings.window
        ids, scores = hybrid.fuse(query, {m: (ranked[m][0][:window], ranked[m][1][:window])
                                          for m in hybrid.weights})
        ranked[HYBRID] = top_k(ids, scores, depth) if ids.size else (ids, scores)
    return {m: (ids[:depth], s[:depth]) for m, (ids, s) in ranked.items()}, notes


def _url_lookup(index, ranked: dict) -> dict[int, str]:
    every = np.unique(np.concatenate([ids for ids, _ in ranked.values()] or [np.empty(0)]))
    return dict(zip((int(i) for i in every), urls_of(index, every)))


def _rows(columns: dict[str, list[Hit]], ranked: dict,
          extra: Sequence[Hit] = ()) -> list[CompareRow]:
    """Each chunk of any column (and of `extra`) once, best rank first (ties: column order)."""
    position = {m: {int(c): (r, float(s)) for r, (c, s) in enumerate(zip(*ranked[m]), 1)}
                for m in ranked}
    first: dict[int, Hit] = {}
    for hits in [*columns.values(), extra]:
        for hit in hits:
            first.setdefault(hit.chunk_id, hit)
    rows = []
    for chunk_id, hit in first.items():
        found = {m: position[m].get(chunk_id) for m in columns}
        rows.append(CompareRow(chunk_id, hit.url, hit.title, hit.text, hit.start, hit.end,
                               {m: f[0] if f else None for m, f in found.items()},
                               {m: f[1] if f else None for m, f in found.items()},
                               hit.meta))
    order = {c: i for i, c in enumerate(first)}
    return sorted(rows, key=lambda r: (r.best, order[r.chunk_id]))


def comparison_dict(comparison: Comparison) -> dict:
    """`comparison.to_json()` (kept for the callers written before it)."""
    return comparison.to_json()
