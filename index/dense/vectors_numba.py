"""Int8 first pass of exact dense search, compiled with numba (the `fast` extra).

Each chunk vector v is kept as int8 codes c and a scale s (v ~ s * c, s = max|v| / 127) with
the norm r of its rounding error (r = |v - s c|); the query q as int8 codes u and scale t
(q ~ t * u, |u| <= 127). Each product c_j u_j fits in int16 and their sum in int32 (exact for
d < 2**31 / 127**2 ~ 133,000), which LLVM turns into packed multiply-adds (pmaddwd) reading
the codes at memory speed; and

    |v . q - s t (c . u)| <= |s c| |q - t u| + r |q| <= (1 + r) e + r |q|,  e = |q - t u|,

plus `floor`, the caller's allowance for rounding in the rescoring; so a chunk whose
upper bound is below the k-th best lower bound cannot be in the top k. One
pass over the rows keeps the k best lower bounds and every row whose upper bound reaches the
k-th of them so far (a superset of the survivors: that bound only rises); the survivors are
rescored exactly by the caller (index/dense/vectors.py). A filter (search/filters.py) comes
as a mask (one bool per row) or, when it keeps few rows, as their ids (only those rows are
read): the k best lower bounds and the survivors come from the allowed rows only.
"""

from __future__ import annotations

import numba
import numpy as np

MAX_DIMENSION = (2**31 - 1) // (127 * 127)  # c . u cannot overflow int32 below this


@numba.njit(cache=True, nogil=True, inline="always")
def _dot(codes, i, u):
    """c . u for row i, in int32 (see the module docstring)."""
    acc = np.int32(0)
    for j in range(codes.shape[1]):
        acc = np.int32(acc + np.int32(np.int16(np.int16(codes[i, j]) * np.int16(u[j]))))
    return acc


@numba.njit(cache=True, nogil=True)
def candidates(codes, scales, errors, u, t, e, qnorm, floor, k, mask, rows):
    """Rows whose cosine may be in the top k (ascending), among those `mask` allows (empty:
    every row) or among `rows` (ascending ids, when not empty: a sparse mask's rows, read
    alone). A mask is checked after a row's bound (most rows fall below the k-th best lower
    bound first: a branch the CPU predicts, and the rows are read in order)."""
    n = rows.size if rows.size > 0 else codes.shape[0]
    best = np.full(k, -np.inf)  # the k largest lower bounds
    low, at = -np.inf, 0
    kept = np.empty(n, dtype=np.int64)  # rows that could still make it (pages touched as used)
    upper = np.empty(n, dtype=np.float64)
    m = 0
    use_mask = mask.size > 0
    for x in range(n):
        i = rows[x] if rows.size > 0 else x
        a = scales[i] * t * _dot(codes, i, u)
        slack = ((1 + errors[i]) * e + errors[i] * qnorm) * 1.0001 + floor
        if a + slack < low or use_mask and not mask[i]:
            continue
        kept[m] = i
        upper[m] = a + slack
        m += 1
        if a - slack > low:
            best[at] = a - slack
            at = np.argmin(best)
            low = best[at]
    out = np.empty(m, dtype=np.int64)
    found = 0
    for x in range(m):
        if upper[x] >= low:
            out[found] = kept[x]
            found += 1
    return out[:found].copy()


@numba.njit(cache=True, nogil=True, fastmath={"nnan", "ninf", "nsz", "reassoc"})
def quantise_rows(vectors, codes, scales, errors, lo):
    """Rows lo.. of codes, scales and errors for the block `vectors` (float32; see the
    docstring); the largest norm of a row of the block. Codes are rounded in float32, the
    error of the codes chosen is summed in float64 (c s is exact there)."""
    most = 0.0
    d = vectors.shape[1]
    for i in range(vectors.shape[0]):
        top = np.float32(0.0)
        for j in range(d):
            top = max(top, abs(vectors[i, j]))
        scale = top / np.float32(127) if top > 0 else np.float32(1.0)
        inv = np.float32(1.0) / scale
        error, norm = 0.0, 0.0
        for j in range(d):
            c = min(np.float32(127.0), max(np.float32(-127.0), np.rint(vectors[i, j] * inv)))
            codes[lo + i, j] = np.int8(c)
            v = np.float64(vectors[i, j])
            r = v - np.float64(c) * np.float64(scale)
            error += r * r
            norm += v * v
        scales[lo + i] = scale
        errors[lo + i] = np.sqrt(error)
        most = max(most, np.sqrt(norm))
    return most
