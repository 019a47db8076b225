"""TF-IDF, Java-parity profile: weight = raw count in the chunk x ln(N / df).

Stored term-major (CSC: one column of chunk ids per term) so that a query touches only the
columns of its own terms:
- `tfidf.indptr` (int64, V+1), `tfidf.indices` (int32 chunk ids), `tfidf.counts` (raw counts),
- `tfidf.idf` (float64, ln(N/df) per term), `tfidf.norms` (float64, L2 norm of each chunk's
  weight vector), `tfidf.vocab.txt` (the terms, in column order),
- `tfidf.bound` (float64 per term: the largest count / norm in its column, so that a query can
  skip terms that cannot change its top k; see `index.lexical`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import compiled
from .arrays import save_arrays
from ..text.analyzers import get_term_filter
from ..text.counting import (EmptyVocabulary, TermCounts, column_blocks, count_texts,
                                  reanalyze)

if TYPE_CHECKING:  # scipy loads with the build, never for a search
    import scipy.sparse as sp

METHOD = "tfidf"
ANALYZER = "java"
ROW_BLOCK = 1 << 16

__all__ = ["EmptyVocabulary", "build", "build_counts"]


def build(texts: Sequence[str], out, *, options: dict, previous=None,
          on_progress=None) -> dict:
    """Build the TF-IDF arrays for `texts` into `out`; returns the manifest entry."""
    return build_counts(count_texts(texts), out, options=options, on_progress=on_progress)


def build_counts(counts: TermCounts, out, *, options: dict, on_progress=None) -> dict:
    """Build the TF-IDF arrays from the chunks' java-term counts; the manifest entry."""
    analyzer = options.get("tfidf_analyzer", ANALYZER)
    kernel = (compiled.for_build("postings_numba")
              if counts.arrays.nnz >= compiled.MIN_POSTINGS else None)
    if kernel is not None and get_term_filter(analyzer) is None:
        terms, column = counts.targets(analyzer)  # sorted; the columns renamed as transposed
    else:
        counts = reanalyze(counts, analyzer)  # the columns in sorted term order
        terms, column = counts.terms, np.arange(len(counts.terms))
    if not terms:
        raise EmptyVocabulary("no chunk contains a word or number to index")
    matrix = counts.matrix
    n = matrix.shape[0]
    if kernel is not None:
        indptr, indices, data = kernel.columns(matrix.indptr, matrix.indices, matrix.data,
                                               column.astype(np.int32), len(terms),
                                               kernel.BLOCK_SHIFT)
    else:
        csc = matrix.tocsc()  # chunk ids sorted within each term
        indptr, indices, data = csc.indptr, csc.indices, csc.data
        del csc
    idf = np.log(n / np.diff(indptr))
    row_ptr = matrix.indptr
    if kernel is not None and column.min(initial=0) < 0:  # number groups counted whole:
        row_ptr = np.zeros(n + 1, dtype=np.int64)  # left out, each row's terms without them
        np.cumsum(np.bincount(indices, minlength=n), out=row_ptr[1:])
    norms = row_norms(matrix, idf, (indptr, indices, data), kernel, row_ptr)
    save_arrays(out, METHOD, {
        "indices": indices.astype(np.int32, copy=False),
        "counts": data.astype(_count_dtype(data), copy=False), "indptr": indptr.astype(np.int64),
        "idf": idf, "norms": norms, "bound": column_bounds(indptr, indices, data, norms, kernel)})
    out.write_terms(METHOD, terms)
    return {"analyzer": analyzer, "vocabulary": len(terms),
            "weighting": "raw count x ln(N/df), cosine", "floor": None}


def row_norms(matrix: sp.csr_matrix, idf: np.ndarray, columns=None,
              kernel=None, row_ptr=None) -> np.ndarray:
    """L2 norm of each chunk's count x idf vector, summed exactly as scikit-learn's row sums
    (np.add.reduceat over the row's terms in column order), so the norms are bit for bit
    those of the first TF-IDF builder; a block of rows at a time (bounded memory). `kernel`:
    index/lexical/postings_numba.py, the same sums in compiled loops from the term-major
    `columns` (indptr, indices, data), whatever the order of each row's terms (the merged
    counts of a compiled tokenising pass hold them in order of first occurrence); else
    rows not sorted are sorted first. `row_ptr`: the rows' indptr of the term-major counts
    (default the matrix's), when columns were left out of them."""
    if kernel is not None:
        row_ptr = matrix.indptr if row_ptr is None else row_ptr
        return np.sqrt(kernel.row_squares(row_ptr, *columns, idf, ROW_BLOCK))
    if not matrix.has_sorted_indices:
        matrix = matrix.sorted_indices()
    indptr, indices, data = matrix.indptr, matrix.indices, matrix.data
    squares = np.zeros(matrix.shape[0], dtype=np.float64)
    for r0 in range(0, matrix.shape[0], ROW_BLOCK):
        r1 = min(r0 + ROW_BLOCK, matrix.shape[0])
        lo, hi = indptr[r0], indptr[r1]
        weights = data[lo:hi] * idf[indices[lo:hi]]
        starts = indptr[r0:r1] - lo
        filled = np.flatnonzero(indptr[r0 + 1:r1 + 1] - indptr[r0:r1])
        if filled.size:
            squares[r0 + filled] = np.add.reduceat(weights * weights, starts[filled])
    return np.sqrt(squares)


def column_bounds(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                  norms: np.ndarray, kernel=None) -> np.ndarray:
    """Per term (term-major counts), the largest count / norm over its chunks (0 for an empty
    column); `kernel`: index/lexical/postings_numba.py, the same numbers in one compiled loop."""
    if kernel is not None:
        return kernel.ratio_bounds(indptr, indices, data, norms)
    bound = np.zeros(indptr.size - 1, dtype=np.float64)
    for c0, c1 in column_blocks(indptr):
        lo, hi = indptr[c0], indptr[c1]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = data[lo:hi] / norms[indices[lo:hi]]
        ratio[~np.isfinite(ratio)] = 0.0
        filled = np.flatnonzero(np.diff(indptr[c0:c1 + 1]))
        if filled.size:
            bound[c0 + filled] = np.maximum.reduceat(ratio, indptr[c0 + filled] - lo)
    return bound


def _count_dtype(data: np.ndarray):
    return np.uint16 if data.size == 0 or data.max() <= np.iinfo(np.uint16).max else np.uint32
