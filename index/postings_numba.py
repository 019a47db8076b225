"""Term-major postings of the lexical builders in compiled loops (numba, the `fast` extra):
the same arrays as the numpy/scipy path of tfidf.py and bm25.py, value for value (every
float is the same IEEE operation on the same operands; logarithms stay in numpy), with no
full-size temporaries. tests/test_index_postings.py compares both paths.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, error_model="numpy")
def merged_columns(indptr, indices, data, target, n_targets):
    """Chunks x java-terms counts (CSR) with each column j added into column target[j]
    (dropped when target[j] < 0), returned term-major (CSC: indptr, chunk ids increasing
    within a column, int32 counts) with each chunk's length (the sum of its kept counts).
    Two passes over the rows: count each column's chunks, then place them."""
    n_rows = indptr.size - 1
    lengths = np.zeros(n_rows, dtype=np.int64)
    mark = np.full(n_targets, -1, dtype=np.int64)
    col_ptr = np.zeros(n_targets + 1, dtype=np.int64)
    for r in range(n_rows):
        for k in range(indptr[r], indptr[r + 1]):
            t = target[indices[k]]
            if t >= 0:
                lengths[r] += data[k]
                if mark[t] != r:
                    mark[t] = r
                    col_ptr[t + 1] += 1
    for c in range(n_targets):
        col_ptr[c + 1] += col_ptr[c]
    fill = col_ptr[:-1].copy()
    rows = np.empty(col_ptr[n_targets], dtype=np.int32)
    counts = np.empty(col_ptr[n_targets], dtype=np.int32)
    mark[:] = -1
    where = np.empty(n_targets, dtype=np.int64)
    for r in range(n_rows):
        for k in range(indptr[r], indptr[r + 1]):
            t = target[indices[k]]
            if t < 0:
                continue
            if mark[t] != r:
                mark[t] = r
                p = fill[t]
                fill[t] += 1
                where[t] = p
                rows[p] = r
                counts[p] = data[k]
            else:
                counts[where[t]] += data[k]
    return lengths, col_ptr, rows, counts


@numba.njit(cache=True, nogil=True, error_model="numpy")
def bm25_fill(indptr, indices, counts, idf, length_norm):
    """float32(idf[t] * tf / (tf + length_norm[chunk])) of every posting, and each term's
    largest (bm25.bm25_scores' numbers)."""
    n_terms = indptr.size - 1
    scores = np.empty(indices.size, dtype=np.float32)
    bound = np.zeros(n_terms, dtype=np.float32)
    for t in range(n_terms):
        w = idf[t]
        top = np.float32(0.0)
        for k in range(indptr[t], indptr[t + 1]):
            tf = np.float64(counts[k])
            s = np.float32(w * tf / (tf + length_norm[indices[k]]))
            scores[k] = s
            if k == indptr[t] or s > top:
                top = s
        bound[t] = top
    return scores, bound


@numba.njit(cache=True, nogil=True, error_model="numpy")
def ratio_bounds(indptr, indices, counts, norms):
    """Per term the largest count / norm over its chunks, a non-finite ratio counted as 0
    (tfidf.column_bounds' numbers)."""
    n_terms = indptr.size - 1
    bound = np.zeros(n_terms, dtype=np.float64)
    for t in range(n_terms):
        top = 0.0
        for k in range(indptr[t], indptr[t + 1]):
            r = np.float64(counts[k]) / norms[indices[k]]
            if not np.isfinite(r):
                r = 0.0
            if k == indptr[t] or r > top:
                top = r
        bound[t] = top
    return bound
