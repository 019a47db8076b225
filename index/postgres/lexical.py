"""tfidf and bm25 of a PostgreSQL build, ranked by busca's own code on lists read from it.

Each term's posting list is one row of `<build>_<method>_postings` (index/postgres/schema.py): the
local CSR column slice — chunk ids and the method's values (bm25 impacts, tfidf counts),
packed without loss by index/postgres/lists.py — with its term id (the local column), bound and
idf. A query

1. analyzes its words as the local ranker does (index/lexical/lexical.py's `query_counts`);
2. reads the rows of its terms in one round trip (`WHERE term = ANY(...)`, binary), except the
   lists this process already holds (index/postgres/cache.py: an LRU keyed by build and term);
3. lays them out as a small CSR of only those columns, in term id order, and hands it to the
   local scorers (Bm25Scorer, TfidfScorer: MaxScore via index/lexical/maxscore.py, exact sums) —
   the same code on the same numbers in the same order, so the same ids and scores, bit for bit.

tfidf also needs every chunk's norm (the cosine's denominator, and the factor by which MaxScore
orders chunks): read once per ranker from `<build>_arrays`.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from ..text.analyzers import analysis, question_words
from ..lexical.lexical import Bm25Scorer, TfidfScorer, holds
from ..lexical.sparse import SparseScorer, question_latents
from .cache import PostingCache
from .lists import unpack_ids, unpack_values
from .schema import damaged

COLUMNS = "term, term_id, bound, idf, ids, vals"


class TermList(NamedTuple):
    """One term's posting list of one build (read-only arrays)."""

    term_id: int
    bound: float
    idf: float
    ids: np.ndarray  # int32 chunk ids, ascending
    vals: np.ndarray  # the method's values, same order

    @property
    def nbytes(self) -> int:
        return self.ids.nbytes + self.vals.nbytes


class PostingLists:
    """The posting lists of one method of one build: read by term, through the cache."""

    def __init__(self, fetch, table: str, key: tuple, dtype: np.dtype, cache: PostingCache):
        self.fetch = fetch  # (sql, params) -> rows, binary
        self.table = table
        self.key = key  # (database, corpus, build, method): the cache key's prefix
        self.dtype = np.dtype(dtype).newbyteorder("<")
        self.cache = cache

    def get(self, terms: list[str]) -> dict[str, TermList | None]:
        """Each term's list (None for a term the build does not have)."""
        keys = {term: (*self.key, term) for term in terms}
        held = self.cache.get_many(keys.values())
        out = {term: held[key] for term, key in keys.items() if key in held}
        wanted = [term for term in terms if term not in out]
        if not wanted:
            return out
        rows = self.fetch(f"SELECT {COLUMNS} FROM {self.table} WHERE term = ANY(%s)",
                          (wanted,))
        for term, *row in rows:
            item = self._term_list(row)
            out[term] = item
            self.cache.put(keys[term], item, item.nbytes)
        for term in wanted:
            if term not in out:  # unknown to this build: remembered too (a few bytes)
                out[term] = None
                self.cache.put(keys[term], None, 0)
        return out


    def every(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The whole method, term-major as a local build stores it: (indptr over term ids,
        chunk ids, values); read at once, not through the cache (a rebuild's reuse)."""
        rows = self.fetch(f"SELECT {COLUMNS} FROM {self.table} ORDER BY term_id", ())
        lists = [self._term_list(row) for _term, *row in rows]
        indptr = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum([t.ids.size for t in lists], out=indptr[1:])
        ids = np.concatenate([t.ids for t in lists]) if lists else np.empty(0, np.int32)
        values = (np.concatenate([t.vals for t in lists]) if lists
                  else np.empty(0, self.dtype))
        return indptr, ids, values

    def _term_list(self, row) -> TermList:
        """A row (term_id, bound, idf, ids, vals) as a TermList; the damaged-build error
        when it is not what busca wrote (a column changed by hand)."""
        term_id, bound, idf, ids, vals = row
        try:
            return TermList(int(term_id), float(bound), float(idf), unpack_ids(ids),
                            unpack_values(vals, self.dtype))
        except (TypeError, ValueError, struct.error) as e:
            raise damaged(self.key[1], self.key[2],
                          f"a row of {self.table} cannot be read: {e}") from e


class _QueryColumns:
    """Turns a local scorer class into one over the query's columns only: its arrays are the
    query terms' lists (columns 0..m-1 in term id order) and `column` maps only those terms.
    Everything else — analysis, weights, MaxScore, exact sums — is the local code."""

    def _fill(self, base: LexicalRanker, lists: list[tuple[str, TermList]]) -> None:
        self.analyzer, self.analyze, self.term_filter = base.analyzer, base.analyze, base.term_filter
        self.words = base.words
        self._known = {}
        self.column = {term: j for j, (term, _) in enumerate(lists)}
        lengths = [item.ids.size for _, item in lists]
        self.indptr = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.indptr[1:])
        self.indices = _concat([item.ids for _, item in lists], np.int32)
        self.data = _concat([item.vals for _, item in lists], base.lists.dtype)
        self.bound = np.array([item.bound for _, item in lists], dtype=base.bound_dtype)
        self.n_rows = base.n_rows


class _Bm25Query(_QueryColumns, Bm25Scorer):
    def __init__(self, base, lists):
        self._fill(base, lists)


class _TfidfQuery(_QueryColumns, TfidfScorer):
    def __init__(self, base, lists):
        self._fill(base, lists)
        self.counts = self.data
        self.idf = np.array([item.idf for _, item in lists], dtype=np.float64)
        self.norms, self.inverse_norms = base.norms, base.inverse_norms


class LexicalRanker:
    """tfidf or bm25 of one PostgreSQL build: score() and top() of the local scorers."""

    def __init__(self, lists: PostingLists, kind: str, entry, n_rows: int, *,
                 bound_dtype, norms: np.ndarray | None = None):
        self.lists = lists
        self.kind = kind
        self.analyzer = entry["analyzer"]
        self.analyze, self.term_filter = analysis(self.analyzer, entry.get("analyzer_version", ""))
        self.words = question_words(self.analyzer, entry.get("analyzer_version", ""))
        self.n_rows = n_rows
        self.bound_dtype = np.dtype(bound_dtype)
        if kind == "tfidf":
            self.norms = np.asarray(norms, dtype=np.float64)
            self.inverse_norms = np.zeros(self.norms.shape[0])
            np.divide(1.0, self.norms, out=self.inverse_norms, where=self.norms > 0)

    def query_terms(self, query: str) -> list[str]:
        """The distinct terms the local ranker would look up for `query`."""
        terms = {}
        for word in self.words(query):
            term = self.term_filter(word) if self.term_filter else word
            if term:
                terms[term] = None
        return list(terms)

    def scorer(self, query: str):
        """The local scorer over the query's posting lists."""
        found = self.lists.get(self.query_terms(query))
        lists = sorted(((t, item) for t, item in found.items() if item is not None),
                       key=lambda pair: pair[1].term_id)
        return (_Bm25Query if self.kind == "bm25" else _TfidfQuery)(self, lists)

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        return self.scorer(query).score(query)

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.scorer(query).top(query, k)

    def idf_terms(self, terms: list[str], chunks: list[int]
                  ) -> tuple[dict[str, int], list[set[str]]]:
        """The df of each of `terms` the build knows, and for each of `chunks` those of them
        it holds (their lists, already read by the query's ranking): what
        search/coverage.py reads."""
        found = {t: item.ids for t, item in self.lists.get(terms).items() if item is not None}
        return ({t: ids.size for t, ids in found.items()},
                [{t for t, ids in found.items() if holds(ids, chunk)} for chunk in chunks])


class _SparseQuery(SparseScorer):
    """SparseScorer over the question's latents' lists only (columns 0..m-1, ascending
    latent): the local code on the same numbers in the same order."""

    def __init__(self, base: SparseRanker, latents: np.ndarray, weights: np.ndarray, found):
        lists = [found[str(j)] for j in latents]
        self.indptr = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum([item.ids.size for item in lists], out=self.indptr[1:])
        self.indices = _concat([item.ids for item in lists], np.int32)
        self.data = _concat([item.vals for item in lists], base.lists.dtype)
        self.bound = np.array([item.bound for item in lists], dtype=np.float32)
        self.n_rows, self.encoder = base.n_rows, base.encoder
        self._query = (np.arange(len(lists), dtype=np.int64), weights)

    def _prepare(self, query: str):
        return self._query


class SparseRanker:
    """`sparse` of one PostgreSQL build: the question's latents' posting rows, ranked by the
    local SparseScorer (index/lexical/sparse.py)."""

    def __init__(self, lists: PostingLists, n_rows: int, encoder):
        self.lists, self.n_rows, self.encoder = lists, n_rows, encoder

    def scorer(self, query: str) -> _SparseQuery:
        latents, weights = question_latents(self.encoder, query)
        found = self.lists.get([str(j) for j in latents])
        keep = np.array([found[str(j)] is not None for j in latents], dtype=bool)
        return _SparseQuery(self, latents[keep], weights[keep], found)

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        return self.scorer(query).score(query)

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.scorer(query).top(query, k)


def _concat(arrays: list[np.ndarray], dtype) -> np.ndarray:
    if not arrays:
        return np.empty(0, dtype=dtype)
    return np.concatenate(arrays).astype(dtype, copy=False)
