"""The share of a question's idf mass that one window holds: a signal of answerability
(search/answerable.py `idf_coverage`) and what lifts the hybrid's lexical share per question
(search/fusion.py `lifted`). Read from the postings of the index's lexical method."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..index.lexical.lexical import holds
from .fusion import LEXICAL


def idf_shares(dfs: Mapping[str, int], held: Collection[str], n: int) -> tuple[float, float]:
    """(coverage, known): the shares of the idf mass of the terms `dfs` (term -> df, 0 for
    a term the corpus lacks; Lucene BM25 idf over `n` chunks) whose terms are `held` by a
    chunk, and whose terms the corpus holds; 0 with no term. Summed in term order, so every
    backend adds the same numbers in the same order."""
    idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in sorted(dfs.items())}
    total = sum(idf.values())
    if total <= 0:
        return 0.0, 0.0
    return (sum(w for t, w in idf.items() if t in held) / total,
            sum(w for t, w in idf.items() if dfs[t] > 0) / total)


class _Shares:
    """The shares of a question's idf mass, from `_held(query, chunks)`: the df of each of
    the query's analysed terms (0 for a term the corpus lacks) and, per chunk, those it holds."""

    n: int  # chunks

    def coverage(self, query: str, chunk: int) -> float:
        """The share of the query's idf mass whose terms occur in `chunk` (0 with no term)."""
        return self.coverages(query, [chunk])[0]

    def coverages(self, query: str, chunks: Sequence[int]) -> list[float]:
        """`coverage` of each of `chunks`, from one analysis of the query."""
        dfs, held = self._held(query, chunks)
        return [idf_shares(dfs, terms, self.n)[0] for terms in held]

    def known(self, query: str) -> float:
        """The share of the query's idf mass whose terms occur in the corpus (0 with no term)."""
        return self.shares(query, -1)[1]

    def shares(self, query: str, chunk: int) -> tuple[float, float]:
        """(coverage of `chunk`, known) from one analysis of the query."""
        dfs, held = self._held(query, [chunk])
        return idf_shares(dfs, held[0], self.n)

    def _held(self, query: str, chunks: Sequence[int]) -> tuple[dict[str, int], list[set[str]]]:
        raise NotImplementedError


@dataclass(frozen=True)
class Lexicon(_Shares):
    """What idf_coverage reads: a lexical method's analyzer and term-major postings."""

    analyze: object  # str -> list of terms
    column: Mapping[str, int]
    indptr: np.ndarray
    indices: np.ndarray
    n: int  # chunks

    def _held(self, query: str, chunks: Sequence[int]) -> tuple[dict[str, int], list[set[str]]]:
        lists = {}
        for term in set(self.analyze(query)):
            c = self.column.get(term)
            lists[term] = self.indices[int(self.indptr[c]):int(self.indptr[c + 1])] \
                if c is not None else self.indices[:0]
        return ({t: ids.size for t, ids in lists.items()},  # a term's chunk ids ascend
                [{t for t, ids in lists.items() if holds(ids, chunk)} for chunk in chunks])


@dataclass(frozen=True)
class StoredLexicon(_Shares):
    """The same shares read through a PostgreSQL build's lexical ranker, which answers the
    df of the query's terms and which of them each chunk holds (`idf_terms`,
    index/postgres/)."""

    ranker: object
    n: int

    def _held(self, query: str, chunks: Sequence[int]) -> tuple[dict[str, int], list[set[str]]]:
        terms = set(self.ranker.analyze(query))
        dfs, held = self.ranker.idf_terms(sorted(terms), list(chunks))
        return {t: dfs.get(t, 0) for t in terms}, held


def lexicon_of(index) -> Lexicon | StoredLexicon | None:
    """The Lexicon of the index's lexical method (bm25, else tfidf), None without one."""
    method = next((m for m in LEXICAL if m in index.manifest.methods), None)
    if method is None:
        return None
    ranker = index.ranker(method)
    n = int(index.manifest.chunks)
    if hasattr(ranker, "idf_terms"):
        return StoredLexicon(ranker, n)
    if not hasattr(ranker, "indptr"):
        return None
    return Lexicon(ranker.analyze, ranker.column, ranker.indptr, ranker.indices, n)
