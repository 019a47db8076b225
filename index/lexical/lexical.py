"""Lexical scoring over term-major sparse arrays: a query sums a few columns.

Each scorer answers in two ways, with the same ranking:
- `score(query)`: every chunk with a non-zero score (for `top_k`, fusion, calibration);
- `top(query, k)`: the exact top k, skipping the long posting lists of terms that provably
  cannot change it (MaxScore, Turtle & Flood 1995). A term's largest contribution is bounded
  by `<method>.bound`; when the bounds of the long lists ("de", "o" in a million chunks) add
  up to less than the k-th best partial score, only the few chunks that could still reach
  the top k look those lists up (binary search), instead of every chunk.
`top(query, k, allowed=mask)` is the exact top k among the chunks of a boolean mask (a
filter, search/filters.py): the mask is checked inside the compiled walk (maxscore.py) or
applied to the numpy path's sums, never a loop over chunks.
"""

from __future__ import annotations

import numpy as np

from ...errors import BuscaError
from .maxscore import exact_sums, usable, when_usable
from .maxscore import prepare as prepare_walk
from .maxscore import top as compiled_top
from ..text.analyzers import analysis, question_words

LONG = 16  # a posting list longer than 1/LONG of the chunks may be worth skipping
SKIP_SHARE = 0.5  # skip long lists whose bounds add up to less than this share of the best
SLACK = 1e-9  # relative margin on the pruning test, against rounding
LOOKUP_COST = 24  # a binary search costs about this many postings of a dense pass


class NoSearchableTerms(BuscaError, ValueError):
    """The query has no term the index knows (or only terms that weigh nothing)."""


def column_sums(indptr, indices, data, columns, weights, n_rows):
    """Rows with a non-zero sum of weights[j] * data over the given columns, and the sums."""
    spans = [(int(indptr[c]), int(indptr[c + 1])) for c in columns]
    total = sum(hi - lo for lo, hi in spans)
    if total == 0:
        return np.empty(0, np.int64), np.empty(0)
    if total * 8 < n_rows:  # few candidates: avoid touching a dense vector of n_rows
        rows = np.concatenate([indices[lo:hi] for lo, hi in spans])
        values = np.concatenate([data[lo:hi] * np.float64(w)
                                 for (lo, hi), w in zip(spans, weights)])
        ids, inverse = np.unique(rows, return_inverse=True)
        sums = np.bincount(inverse, weights=values, minlength=ids.size)
    else:
        sums = dense_sums(indptr, indices, data, columns, weights, n_rows)
        ids = np.flatnonzero(sums)
        sums = sums[ids]
    keep = sums > 0
    return ids[keep].astype(np.int64), sums[keep]


def dense_sums(indptr, indices, data, columns, weights, n_rows) -> np.ndarray:
    """sum of weights[j] * column j, as a dense float64 vector of n_rows."""
    sums = np.zeros(n_rows)
    for c, w in zip(columns, weights):
        lo, hi = int(indptr[c]), int(indptr[c + 1])
        sums[indices[lo:hi]] += data[lo:hi] * np.float64(w)  # a column lists a chunk once
    return sums


def holds(ids: np.ndarray, chunk: int) -> bool:
    """Whether a posting list's ascending chunk `ids` hold `chunk`."""
    i = int(np.searchsorted(ids, chunk))
    return i < ids.size and int(ids[i]) == chunk


def kth_largest(values: np.ndarray, k: int) -> float:
    """The k-th largest of `values` (k <= values.size). Big arrays are first cut down to the
    values above the k-th largest maximum of 1024-value blocks (a floor: k values reach it):
    a quick scan instead of a slow partition of a million scores (mostly zeros or not). When
    fewer than k lie above it, the floor is the answer: a term in every chunk of equal length
    gives them all one score, and a partition of 100k equal values took 2 ms."""
    if values.size > 1 << 16 and values.size >= 1024 * k:
        n = values.size // 1024 * 1024
        maxima = values[:n].reshape(-1, 1024).max(axis=1)
        floor = np.partition(maxima, maxima.size - k)[maxima.size - k]
        values = values[values > floor]
        if values.size < k:
            return float(floor)
    return float(np.partition(values, values.size - k)[values.size - k])


def top_k(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best (id, score) pairs, best first; equal scores keep chunk order."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return _top(ids, scores, k)


def _top(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    if ids.size > k:
        keep = np.flatnonzero(scores >= kth_largest(scores, k))
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:k]
    return ids[order], scores[order]


def _contenders(ids: np.ndarray, approx: np.ndarray, k: int) -> np.ndarray:
    """The ids whose approximate score is within rounding of the k-th best (all positive ones
    when fewer than k): the only ones that need an exact score."""
    kth = kth_largest(approx, k) if approx.size >= k else 0.0
    keep = approx >= kth * (1 - SLACK) if kth > 0 else approx > 0
    return ids[keep] if ids is not None else np.flatnonzero(keep)


class _Postings:
    """The term-major arrays of one lexical method, its query analyzer, and exact top k.

    The top k is chosen on approximate scores (sums in another order, or pruned) and the few
    contenders are then scored exactly as `score()` does (`exact`), so both give the same
    ranking and the same numbers."""

    data_name = "data"
    accumulator = np.float64  # dtype of the sums
    walk_factor: np.ndarray | None = None  # the `factor` this method's `top` ranks with
    masked = True  # `top` takes `allowed` (search/filters.py)

    def __init__(self, index, method: str):
        entry = index.methods[method]
        self.analyzer = entry["analyzer"]
        # the text's analyzer and java term -> term (None: same), as the build applied them
        self.analyze, self.term_filter = analysis(self.analyzer, entry.get("analyzer_version", ""))
        # a question's words as the build counted them (number groups whole since NUMBERS)
        self.words = question_words(self.analyzer, entry.get("analyzer_version", ""))
        self._known: dict[str, int] = {}  # java term -> column, -1 for none
        self.column = index.vocabulary(method)  # term -> column, compact (home/vocabulary.py)
        # plain views of the memory maps: slicing a np.memmap costs ~20 us, a view ~0.2 us
        self.indptr = np.asarray(index.array(method, "indptr"))
        self.indices = np.asarray(index.array(method, "indices"))
        self.data = np.asarray(index.array(method, self.data_name))
        has_bound = index.has_array(method, "bound")
        self.bound = np.asarray(index.array(method, "bound")) if has_bound else None
        self.n_rows = int(index.manifest.chunks)

    def prepare(self) -> None:
        """The compiled walk's window tables and codes made now, not on the second query
        (busca serve and busca shell, before the first question; ~2 s at 1M chunks), or as
        soon as the compiled walk has loaded (in the thread that loads it)."""
        when_usable(self.n_rows, lambda: prepare_walk(self, self.walk_factor))

    def query_counts(self, query: str) -> tuple[list[int], np.ndarray]:
        """Columns of the query's known terms, and how often each occurs in the query."""
        tf: dict[int, int] = {}
        known = self._known
        for word in self.words(query):
            col = known.get(word, -2)
            if col == -2:  # first time this word is seen: analyze it once
                if len(known) > 1 << 16:
                    known.clear()
                term = self.term_filter(word) if self.term_filter else word
                col = known[word] = self.column.get(term, -1) if term else -1
            if col >= 0:
                tf[col] = tf.get(col, 0) + 1
        columns = sorted(tf)
        return columns, np.array([tf[c] for c in columns], dtype=np.float64)

    def _span(self, column: int) -> slice:
        return slice(int(self.indptr[column]), int(self.indptr[column + 1]))

    def _weighted(self, values: np.ndarray, weight: float) -> np.ndarray:
        """weight * values in the accumulator's dtype (as every sum here adds them)."""
        dtype = self.accumulator
        if values.dtype == dtype:
            return values if weight == 1 else values * dtype(weight)
        return values.astype(dtype) * dtype(weight)

    def dense(self, columns, weights, out: np.ndarray | None = None) -> np.ndarray:
        """sum_j weights[j] * column j as a dense vector of n_rows (added to `out`)."""
        out = np.zeros(self.n_rows, dtype=self.accumulator) if out is None else out
        for c, w in zip(columns, weights):
            span = self._span(c)  # a column lists each chunk once: a plain indexed add
            out[self.indices[span]] += self._weighted(self.data[span], w)
        return out

    def lookup(self, ids: np.ndarray, columns, weights, out: np.ndarray | None = None):
        """sum_j weights[j] * column j for the sorted chunk `ids` only (binary searches), in
        column order: the same numbers as `dense`, added to `out`."""
        out = np.zeros(ids.size, dtype=self.accumulator) if out is None else out
        if usable(self.n_rows):
            return exact_sums(self, ids, columns, weights, out)
        needles = ids.astype(self.indices.dtype)  # same dtype: no copy of the haystack
        for c, w in zip(columns, weights):
            span = self._span(c)
            column = self.indices[span]
            if column.size == 0:
                continue
            pos = np.minimum(np.searchsorted(column, needles), column.size - 1)
            hit = column[pos] == needles
            out[hit] += self._weighted(self.data[span][pos[hit]], w)
        return out

    def sums(self, columns, weights) -> tuple[np.ndarray, np.ndarray]:
        """Chunks with a positive sum over the columns (sorted ids), and those sums: the
        numbers of `lookup`, whichever way they are computed."""
        total = sum(int(self.indptr[c + 1] - self.indptr[c]) for c in columns)
        if total * 8 < self.n_rows:
            ids = column_sums(self.indptr, self.indices, self.data, columns, weights,
                              self.n_rows)[0]
            return ids, self.lookup(ids, columns, weights)
        dense = self.dense(columns, weights)
        ids = np.flatnonzero(dense > 0)
        return ids, dense[ids]

    def ranked(self, columns, weights, k: int, exact, factor: np.ndarray | None = None, *,
               long: int | None = None, norms: np.ndarray | None = None,
               qnorm: float = 0.0,
               allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top k by exact(ids), whose order is that of factor[d] * sum_j weights[j] * column j
        (factor None: 1) up to rounding, among the chunks of the boolean mask `allowed` when
        given. exact(ids) must be `lookup(ids, columns, weights)` as float64, divided by
        norms[ids] * qnorm when norms are given: the compiled path computes that itself."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        columns = np.asarray(columns, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.float64)
        if usable(self.n_rows):
            return compiled_top(self, columns, weights, k, factor, norms, qnorm, allowed)
        lengths = self.indptr[columns + 1] - self.indptr[columns]
        if lengths.sum() * 8 < self.n_rows:
            ids = column_sums(self.indptr, self.indices, self.data, columns, weights,
                              self.n_rows)[0]
            ids = ids[allowed[ids]] if allowed is not None else ids
            return _top(ids, exact(ids), k)
        skip = self._skippable(lengths, weights * self._bounds(columns), long)
        kept = np.setdiff1d(np.arange(columns.size), skip)
        dense = _only(self.dense(columns[kept], weights[kept]), allowed)
        if skip.size:
            found = self._pruned(dense, columns[skip], weights[skip], lengths[skip].sum(), k,
                                 factor)
            if found is not None:
                return _top(found, exact(found), k)
            _only(self.dense(columns[skip], weights[skip], out=dense), allowed)
        ids = _contenders(None, dense * factor if factor is not None else dense, k)
        return _top(ids, exact(ids), k)

    def _bounds(self, columns: np.ndarray) -> np.ndarray:
        return self.bound[columns] if self.bound is not None else np.full(columns.size, np.inf)

    def _skippable(self, lengths, bounds, long: int | None) -> np.ndarray:
        """Long columns, lowest bound first, while their bounds add up to less than
        SKIP_SHARE of the best bound of the other columns."""
        limit = self.n_rows // LONG if long is None else long
        candidates = np.flatnonzero(lengths > limit)
        candidates = candidates[np.argsort(bounds[candidates], kind="stable")]
        for n in range(candidates.size, 0, -1):
            others = np.setdiff1d(np.arange(lengths.size), candidates[:n])
            best = bounds[others].max() if others.size else 0.0
            if np.isfinite(best) and bounds[candidates[:n]].sum() < SKIP_SHARE * best:
                return np.sort(candidates[:n])
        return np.empty(0, np.int64)

    def _pruned(self, dense, columns, weights, postings, k, factor):
        """The contenders for the top k when the skipped columns cannot lift a chunk from
        below the k-th partial score into the top k: only the chunks that might get there
        look them up. None when that cannot be shown or would not save work."""
        if k > dense.size:
            return None
        partial = dense * factor if factor is not None else dense
        theta = kth_largest(partial, k)
        rest = float((weights * self.bound[columns]).sum())
        if theta <= 0 or rest >= theta * (1 - SLACK):
            return None
        near = np.flatnonzero(partial >= theta * (1 - SLACK) - rest)
        if near.size * LOOKUP_COST > postings:
            return None
        sums = self.lookup(near, columns, weights, out=dense[near].copy())
        return _contenders(near, sums * factor[near] if factor is not None else sums, k)


def _only(sums: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
    """`sums` (a dense vector over the chunks) with those outside `allowed` set to 0."""
    if allowed is not None:
        sums[~allowed] = 0
    return sums


class TfidfScorer(_Postings):
    """Cosine between the query's and each chunk's TF-IDF vectors (the seed's `cosseno`)."""

    data_name = "counts"

    def __init__(self, index, method: str = "tfidf"):
        super().__init__(index, method)
        self.counts = self.data
        self.idf = np.asarray(index.array(method, "idf"))
        self.norms = np.asarray(index.array(method, "norms"))
        # 1 / norm (0 for a chunk without weight): orders chunks for `top` before rescoring
        self.inverse_norms = np.zeros(self.norms.shape[0])
        np.divide(1.0, self.norms, out=self.inverse_norms, where=self.norms > 0)
        self.walk_factor = self.inverse_norms

    def query_weights(self, query: str) -> tuple[list[int], np.ndarray]:
        """Columns of the query's known terms and their weights tf x idf."""
        columns, tf = self.query_counts(query)
        return columns, np.array([t * self.idf[c] for c, t in zip(columns, tf)], dtype=np.float64)

    def _prepare(self, query: str):
        columns, weights = self.query_weights(query)
        qnorm = float(np.sqrt(np.dot(weights, weights)))
        if qnorm == 0:
            raise NoSearchableTerms(why_nothing(query, self.analyzer, self.term_filter,
                                                    columns))
        scaled = np.array([w * self.idf[c] for c, w in zip(columns, weights)], dtype=np.float64)
        return columns, scaled, qnorm

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        columns, scaled, qnorm = self._prepare(query)
        ids, dots = column_sums(self.indptr, self.indices, self.counts, columns, scaled,
                                self.norms.shape[0])
        return ids, dots / (self.norms[ids] * qnorm)

    def top(self, query: str, k: int,
            allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`top_k(*score(query), k)` (among the chunks of `allowed`, if given), pruned
        (`tfidf.bound` = max count/norm of a term)."""
        columns, scaled, qnorm = self._prepare(query)

        def cosine(ids):  # bit for bit what `score` computes
            return self.lookup(ids, columns, scaled) / (self.norms[ids] * qnorm)

        return self.ranked(columns, scaled, k, cosine, self.inverse_norms, norms=self.norms,
                           qnorm=qnorm, allowed=allowed)


class Bm25Scorer(_Postings):
    """Lucene BM25: the sum of the precomputed scores of the query's terms (index/lexical/bm25.py).
    Sums are float32 like the stored scores (and bm25s), returned as float64."""

    data_name = "scores"
    accumulator = np.float32

    def _prepare(self, query: str):
        columns, tf = self.query_counts(query)
        if not columns:
            raise NoSearchableTerms(self._why_nothing(query))
        return columns, tf

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        ids, sums = self.sums(*self._prepare(query))
        return ids.astype(np.int64), sums.astype(np.float64)

    def top(self, query: str, k: int,
            allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`top_k(*score(query), k)` (among the chunks of `allowed`, if given), pruned
        (`bm25.bound` = the largest score of a term)."""
        columns, tf = self._prepare(query)
        return self.ranked(columns, tf, k,
                           lambda ids: self.lookup(ids, columns, tf).astype(np.float64),
                           allowed=allowed)

    def _why_nothing(self, query: str) -> str:
        return why_nothing(query, self.analyzer, self.term_filter)


def why_nothing(query: str, analyzer: str, term_filter, known: list[int] = ()) -> str:
    """Why a lexical method has nothing to rank for `query` (`known`: the columns of its
    terms the index holds), naming the words as typed, not as stemmed ("xilofone", not
    "xilofon"): every word a stopword, none in the index, or all in every chunk."""
    raw = question_words(analyzer)(query)  # "9.999,00" named whole where pt asks it whole
    words = [w for w in raw if term_filter is None or term_filter(w)]
    if raw and not words:
        return (f"every word of the query is a stopword for the {analyzer} analyzer"
                f" ({', '.join(raw[:8])}): ask with a content word")
    if not words:
        return "the query has no words or numbers to search for"
    if not len(known):
        return "none of the query's words occurs in the index: " + ", ".join(words[:8])
    return "the query's words occur in every chunk, so they cannot tell chunks apart"
