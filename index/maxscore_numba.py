"""Document-at-a-time MaxScore over term-major postings, compiled with numba (`fast` extra).

The query's terms come weakest bound first; a term's bound is the largest value of its
column times its weight (and the chunk factor, which `<method>.bound` already includes).
Chunks are visited in id order through the *essential* terms only: those not in the longest
prefix of weak terms whose bounds add up to less than `theta`, the k-th best score found so
far (no chunk having only non-essential terms can reach it). A visited chunk's score is
completed with the non-essential terms, strongest first, by a galloping search in each list,
and abandoned as soon as what is left cannot lift it to `theta`. As `theta` grows, more terms
become non-essential and fewer postings are read.

Every chunk whose score reached `theta` when it was scored is kept; at the end those within
rounding (SLACK) of the k-th best are returned, to be scored exactly by the caller.
"""

from __future__ import annotations

import numba
import numpy as np

SLACK = 1e-5  # relative margin on every pruning test (float32 sums in another order)
PROBE = 32  # chunks scored in full before the walk, for a first threshold


@numba.njit(cache=True, nogil=True, inline="always")
def _seek(indices, lo, hi, target):
    """The first position in indices[lo:hi] holding target or more (galloping search)."""
    step = 1
    while lo + step < hi and indices[lo + step] < target:
        lo += step
        step *= 2
    top = min(lo + step, hi)
    while lo < top:
        mid = (lo + top) // 2
        if indices[mid] < target:
            lo = mid + 1
        else:
            top = mid
    return lo


@numba.njit(cache=True, nogil=True)
def _push(heap, size, value):
    """Keep the `heap.size` largest values in a min-heap; returns the new size."""
    k = heap.size
    if size < k:
        i = size
        heap[i] = value
        while i > 0 and heap[(i - 1) // 2] > heap[i]:
            parent = (i - 1) // 2
            heap[i], heap[parent] = heap[parent], heap[i]
            i = parent
        return size + 1
    if value <= heap[0]:
        return size
    heap[0] = value
    i = 0
    while True:
        smallest, left, right = i, 2 * i + 1, 2 * i + 2
        if left < k and heap[left] < heap[smallest]:
            smallest = left
        if right < k and heap[right] < heap[smallest]:
            smallest = right
        if smallest == i:
            return size
        heap[i], heap[smallest] = heap[smallest], heap[i]
        i = smallest


@numba.njit(cache=True, nogil=True)
def candidates(indptr, indices, data, cols, weights, bounds, factor, k, found, scores):
    """Chunk ids that may be in the top k (unsorted). cols/weights/bounds: the query's terms,
    weakest bound first; factor: per-chunk factor (empty: 1); found, scores: work vectors
    of n values (ids and floats)."""
    c_count = cols.size
    use_factor = factor.size > 0
    below = np.zeros(c_count)  # below[i]: bounds of terms 0..i
    total = 0.0
    for i in range(c_count):
        total += bounds[i]
        below[i] = total
    pos = np.empty(c_count, dtype=np.int64)
    end = np.empty(c_count, dtype=np.int64)
    for i in range(c_count):
        pos[i], end[i] = indptr[cols[i]], indptr[cols[i] + 1]
    heap = np.empty(k)
    heap_size = 0
    n_found = 0
    seed = _seed(indptr, indices, data, cols, weights, factor, k)
    theta = seed
    first = 0  # terms first.. are essential
    while True:
        floor = theta * (1 - SLACK)
        while first < c_count - 1 and theta > 0 and below[first] * (1 + SLACK) < floor:
            first += 1
        doc = -1
        for i in range(first, c_count):
            if pos[i] < end[i] and (doc < 0 or indices[pos[i]] < doc):
                doc = indices[pos[i]]
        if doc < 0:
            break
        score = 0.0
        for i in range(first, c_count):
            if pos[i] < end[i] and indices[pos[i]] == doc:
                score += data[pos[i]] * weights[i]
                pos[i] += 1
        f = factor[doc] if use_factor else 1.0
        for i in range(first - 1, -1, -1):
            if (score * f + below[i] * (1 + SLACK)) < floor:
                score = -1.0
                break
            pos[i] = _seek(indices, pos[i], end[i], doc)
            if pos[i] < end[i] and indices[pos[i]] == doc:
                score += data[pos[i]] * weights[i]
        if score <= 0:
            continue
        score *= f
        if score >= floor:
            found[n_found] = doc
            scores[n_found] = score
            n_found += 1
            heap_size = _push(heap, heap_size, score)
            if heap_size == k:
                theta = max(heap[0], seed)
    floor = theta * (1 - SLACK)
    return found[:_compact(found, scores, n_found, floor)].copy()


@numba.njit(cache=True, nogil=True)
def _seed(indptr, indices, data, cols, weights, factor, k):
    """A score the k-th best cannot be below: the k-th best full score of the PROBE chunks
    where the strongest term weighs most (0 when it has fewer than k chunks)."""
    last = cols.size - 1
    lo, hi = indptr[cols[last]], indptr[cols[last] + 1]
    probe = max(PROBE, k)
    if hi - lo < probe:
        return 0.0
    best = np.full(probe, -1.0)
    docs = np.empty(probe, dtype=np.int64)
    low, at = -1.0, 0
    for p in range(lo, hi):
        v = data[p] * factor[indices[p]] if factor.size > 0 else data[p]
        if v > low:
            best[at], docs[at] = v, indices[p]
            at = np.argmin(best)
            low = best[at]
    for i in range(probe):
        doc, score = docs[i], 0.0
        for j in range(cols.size):
            a, b = indptr[cols[j]], indptr[cols[j] + 1]
            q = a + np.searchsorted(indices[a:b], doc)
            if q < b and indices[q] == doc:
                score += data[q] * weights[j]
        best[i] = score * factor[doc] if factor.size > 0 else score
    return np.sort(best)[probe - k]


@numba.njit(cache=True, nogil=True)
def exact_sums(indptr, indices, data, cols, weights, ids, out):
    """out[i] += sum_j weights[j] * column cols[j] at ids[i], columns in the given order,
    each product and sum in out's dtype: the numbers of lexical.py's numpy `lookup`."""
    for j in range(cols.size):
        a, b = indptr[cols[j]], indptr[cols[j] + 1]
        if a == b:
            continue
        column = indices[a:b]
        pos = np.searchsorted(column, ids)
        for i in range(ids.size):
            if pos[i] < b - a and column[pos[i]] == ids[i]:
                out[i] += data[a + pos[i]] * weights[j]
    return out


@numba.njit(cache=True, nogil=True)
def _compact(found, scores, n, floor):
    """Drop the kept chunks whose score fell below floor; returns how many are left."""
    kept = 0
    for i in range(n):
        if scores[i] >= floor:
            found[kept] = found[i]
            scores[kept] = scores[i]
            kept += 1
    return kept
