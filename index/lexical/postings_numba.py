"""Term-major postings of the lexical builders in compiled loops (numba, the `fast` extra):
the same arrays as the numpy/scipy path of tfidf.py and bm25.py, value for value (every
float is the same IEEE operation on the same operands; logarithms stay in numpy), with no
full-size temporaries. tests/index/test_index_postings.py compares both paths.
"""

from __future__ import annotations

import numba
import numpy as np

BLOCK_SHIFT = 12  # the transpositions' blocks: 4,096 columns (their ids within it: uint16)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def merged_rows(indptr, indices, data, target, n_targets, r0, r1):
    """For chunks r0..r1-1 of chunks x java-terms counts (CSR) whose column j is added into
    column target[j] (dropped when target[j] < 0): each chunk's length (the sum of its kept
    counts) and each merged column's number of chunks among them. Calls on disjoint chunk
    ranges may run at once (bm25.merged_shape adds them up)."""
    lengths = np.zeros(r1 - r0, dtype=np.int64)
    mark = np.full(n_targets, -1, dtype=np.int32)  # (int32: half the cache lines of int64)
    counts = np.zeros(n_targets, dtype=np.int64)
    for r in range(r0, r1):
        for k in range(indptr[r], indptr[r + 1]):
            t = target[indices[k]]
            if t >= 0:
                lengths[r - r0] += data[k]
                if mark[t] != r:
                    mark[t] = r
                    counts[t] += 1
    return lengths, counts


@numba.njit(cache=True, nogil=True, error_model="numpy")
def bm25_scatter(indptr, indices, data, target, idf, length_norm, r0, r1, fill, rows, scores,
                 within, bound, shift):
    """The first pass of the merged columns' transposition (bm25.merged_shape) for chunks
    r0..r1-1: each posting scored float32(idf[t] * tf / (tf + length_norm[chunk])), as
    bm25.bm25_scores scores it, and written at its block's cursor `fill` with its column
    within the block (`by_blocks` then orders each block); `bound`: each term's largest
    score among these chunks (zeros before: every score is above 0). Two calls on disjoint
    chunk ranges, with cursors that do not overlap, may run at once."""
    n_targets = bound.size
    mask = (1 << shift) - 1
    mark = np.full(n_targets, -1, dtype=np.int32)  # (int32: the arrays read at random are
    slot = np.empty(n_targets, dtype=np.int32)  # kept small, for the cache)
    longest = 0
    for r in range(r0, r1):
        longest = max(longest, indptr[r + 1] - indptr[r])
    row_terms = np.empty(longest, dtype=np.int64)
    row_tf = np.empty(longest, dtype=np.int64)
    for r in range(r0, r1):
        n = 0
        for k in range(indptr[r], indptr[r + 1]):
            t = target[indices[k]]
            if t < 0:
                continue
            if mark[t] != r:
                mark[t] = r
                slot[t] = n
                row_terms[n] = t
                row_tf[n] = data[k]
                n += 1
            else:
                row_tf[slot[t]] += data[k]
        norm = length_norm[r]
        for j in range(n):
            t = row_terms[j]
            tf = np.float64(row_tf[j])
            s = np.float32(idf[t] * tf / (tf + norm))
            p = fill[t >> shift]
            fill[t >> shift] += 1
            rows[p] = r
            scores[p] = s
            within[p] = t & mask
            if s > bound[t]:
                bound[t] = s


@numba.njit(cache=True, nogil=True)
def block_starts(col_ptr, shift):
    """Where each block of 2**shift columns starts among the postings."""
    n = col_ptr.size - 1
    starts = np.empty(((max(n, 1) - 1) >> shift) + 1, dtype=np.int64)
    for b in range(starts.size):
        starts[b] = col_ptr[min(b << shift, n)]
    return starts


@numba.njit(cache=True, nogil=True)
def by_blocks(col_ptr, rows, values, within, shift, b0, b1):
    """The second pass of a transposition, for blocks b0..b1-1: each block's postings,
    written in row order by the first pass with their column within the block (`within`),
    put in column order (rows still increasing within a column). Writing a posting straight
    to its column makes every write land on another cache line (880k columns at 1M chunks);
    a block's columns fit in the cache, so both passes write to a few places at a time.
    Calls on disjoint block ranges may run at once."""
    n = col_ptr.size - 1
    size = 1 << shift
    largest = 0
    for b in range(b0, b1):
        c0 = b << shift
        largest = max(largest, col_ptr[min(c0 + size, n)] - col_ptr[c0])
    rows_out = np.empty(largest, dtype=rows.dtype)
    values_out = np.empty(largest, dtype=values.dtype)
    fill = np.empty(size, dtype=np.int64)
    for b in range(b0, b1):
        c0 = b << shift
        c1 = min(c0 + size, n)
        lo, hi = col_ptr[c0], col_ptr[c1]
        for c in range(c0, c1):
            fill[c - c0] = col_ptr[c] - lo
        for p in range(lo, hi):
            q = fill[within[p]]
            fill[within[p]] = q + 1
            rows_out[q] = rows[p]
            values_out[q] = values[p]
        rows[lo:hi] = rows_out[:hi - lo]
        values[lo:hi] = values_out[:hi - lo]


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


@numba.njit(cache=True, nogil=True, error_model="numpy")
def columns(indptr, indices, data, column, n_columns, shift):
    """A CSR matrix term-major, its column j renamed column[j] (the merged counts' ids put in
    sorted term order: one of n_columns, or -1 for a column left out, never two columns
    into one): CSC indptr, row ids increasing within a column, values; scipy's tocsc of the
    renamed matrix, as a counting sort in two passes (`by_blocks`, blocks of 2**shift)."""
    col_ptr = np.zeros(n_columns + 1, dtype=np.int64)
    for k in range(indices.size):
        c = column[indices[k]]
        if c >= 0:
            col_ptr[c + 1] += 1
    for c in range(n_columns):
        col_ptr[c + 1] += col_ptr[c]
    fill = block_starts(col_ptr, shift)
    mask = (1 << shift) - 1
    total = col_ptr[n_columns]
    rows = np.empty(total, dtype=np.int32)
    values = np.empty(total, dtype=data.dtype)
    within = np.empty(total, dtype=np.uint16)
    for r in range(indptr.size - 1):
        for k in range(indptr[r], indptr[r + 1]):
            c = column[indices[k]]
            if c < 0:
                continue
            p = fill[c >> shift]
            fill[c >> shift] = p + 1
            rows[p] = r
            values[p] = data[k]
            within[p] = c & mask
    by_blocks(col_ptr, rows, values, within, shift, 0, fill.size)
    return col_ptr, rows, values


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _pairwise(a, lo, n):
    """numpy's pairwise sum of a[lo:lo + n] (the order np.add.reduce adds float64 in): below
    8 values one by one from -0.0, up to 128 in 8 running sums, above that two halves."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[lo + i]
        return res
    if n <= 128:
        r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
        r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
        i = 8
        while i < n - n % 8:
            r0 += a[lo + i]
            r1 += a[lo + i + 1]
            r2 += a[lo + i + 2]
            r3 += a[lo + i + 3]
            r4 += a[lo + i + 4]
            r5 += a[lo + i + 5]
            r6 += a[lo + i + 6]
            r7 += a[lo + i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[lo + i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return _pairwise(a, lo, half) + _pairwise(a, lo + half, n - half)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def row_squares(row_ptr, col_ptr, rows, values, idf, block):
    """Per chunk the sum of (count x idf)^2 over its terms in column order, added as
    np.add.reduceat adds a row (tfidf.row_norms' numbers): its first square, plus the
    pairwise sum of the others. Read from the term-major counts (col_ptr, rows increasing
    within a column, values; `columns`), so the chunks' own rows may hold their terms in
    any order; `row_ptr`: each chunk's number of terms, cumulated (the CSR indptr). The
    squares of `block` chunks at a time are put in column order (one pass over the columns
    each), so the memory is that block's, not the matrix's."""
    n_rows, n_cols = row_ptr.size - 1, col_ptr.size - 1
    squares = np.zeros(n_rows, dtype=np.float64)
    cursor = col_ptr[:-1].copy()  # each column's first entry not yet read
    widest = 0
    for r0 in range(0, n_rows, block):
        widest = max(widest, row_ptr[min(r0 + block, n_rows)] - row_ptr[r0])
    row = np.empty(widest, dtype=np.float64)
    fill = np.empty(min(block, max(n_rows, 1)), dtype=np.int64)
    for r0 in range(0, n_rows, block):
        r1 = min(r0 + block, n_rows)
        base = row_ptr[r0]
        for r in range(r0, r1):
            fill[r - r0] = row_ptr[r] - base
        for c in range(n_cols):
            p, end = cursor[c], col_ptr[c + 1]
            while p < end and rows[p] < r1:
                w = np.float64(values[p]) * idf[c]
                q = rows[p] - r0
                row[fill[q]] = w * w
                fill[q] += 1
                p += 1
            cursor[c] = p
        for r in range(r0, r1):
            lo, n = np.int64(row_ptr[r] - base), np.int64(row_ptr[r + 1] - row_ptr[r])
            if n > 0:
                squares[r] = row[lo] + _pairwise(row, lo + 1, n - 1)
    return squares
