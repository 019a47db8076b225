"""Lexical scoring over term-major sparse arrays: a query sums a few columns."""

from __future__ import annotations

import numpy as np

from busca.index.analyzers import get_analyzer
from busca.index.storage import Index


class NoSearchableTerms(ValueError):
    """The query has no term the index knows (or only terms that weigh nothing)."""


def column_sums(indptr, indices, data, columns, weights, n_rows):
    """Rows with a non-zero sum of weights[j] * data over the given columns, and the sums."""
    parts = [(indices[indptr[c]:indptr[c + 1]], data[indptr[c]:indptr[c + 1]], w)
             for c, w in zip(columns, weights)]
    if not parts:
        return np.empty(0, np.int64), np.empty(0)
    rows = np.concatenate([p[0] for p in parts])
    values = np.concatenate([data * w for _, data, w in parts])
    if rows.size * 8 < n_rows:  # few candidates: avoid touching a dense vector of n_rows
        ids, inverse = np.unique(rows, return_inverse=True)
        sums = np.bincount(inverse, weights=values, minlength=ids.size)
    else:
        sums = np.bincount(rows, weights=values, minlength=n_rows)
        ids = np.flatnonzero(sums)
        sums = sums[ids]
    keep = sums > 0
    return ids[keep].astype(np.int64), sums[keep]


class TfidfScorer:
    """Cosine between the query's and each chunk's TF-IDF vectors (the seed's `cosseno`)."""

    def __init__(self, index: Index, method: str = "tfidf"):
        entry = index.methods[method]
        self.analyze = get_analyzer(entry["analyzer"])
        self.column = {t: i for i, t in enumerate(index.terms(method))}
        self.indptr = index.array(method, "indptr")
        self.indices = index.array(method, "indices")
        self.counts = index.array(method, "counts")
        self.idf = index.array(method, "idf")
        self.norms = index.array(method, "norms")

    def query_weights(self, query: str) -> tuple[list[int], np.ndarray]:
        """Columns of the query's known terms and their weights tf x idf."""
        tf: dict[int, int] = {}
        for term in self.analyze(query):
            col = self.column.get(term)
            if col is not None:
                tf[col] = tf.get(col, 0) + 1
        columns = sorted(tf)
        return columns, np.array([tf[c] * self.idf[c] for c in columns], dtype=np.float64)

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        columns, weights = self.query_weights(query)
        qnorm = float(np.sqrt(np.dot(weights, weights)))
        if qnorm == 0:
            raise NoSearchableTerms(_why_no_terms(self.analyze(query), columns))
        scaled = [w * self.idf[c] for c, w in zip(columns, weights)]
        ids, dots = column_sums(self.indptr, self.indices, self.counts, columns, scaled,
                                self.norms.shape[0])
        return ids, dots / (self.norms[ids] * qnorm)


def _why_no_terms(terms: list[str], known: list[int]) -> str:
    if not terms:
        return "the query has no words or numbers to search for"
    if not known:
        return "none of the query's words occurs in the index: " + ", ".join(terms[:8])
    return "the query's words occur in every chunk, so they cannot tell chunks apart"
