"""Int8 first pass of exact dense search, compiled with numba (the `fast` extra).

Each chunk vector v is kept as int8 codes c and a scale s (v ~ s * c, s = max|v| / 127) with
the norm r of its rounding error (r = |v - s c|); the query q as int16 codes u and scale t
(q ~ t * u). The product c . u is exact in int32 (|c . u| <= 127 * QMAX * d < 2**31), and

    |v . q - s t (c . u)| <= |s c| |q - t u| + r |q| <= (1 + r) e + r |q|,  e = |q - t u|,

so a chunk whose upper bound is below the k-th best lower bound cannot be in the top k. The
survivors are rescored exactly in float32 by the caller (index/vectors.py).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _dot(codes, u, i):
    acc = np.int32(0)
    for j in range(codes.shape[1]):
        acc += np.int32(codes[i, j]) * np.int32(u[j])
    return acc


@numba.njit(cache=True, nogil=True)
def candidates(codes, scales, errors, u, t, e, qnorm, k, approx):
    """Rows whose cosine may be in the top k (ascending). approx: a work vector of n."""
    n = codes.shape[0]
    best = np.full(k, -np.inf)  # the k largest lower bounds
    low, at = -np.inf, 0
    for i in range(n):
        a = scales[i] * t * _dot(codes, u, i)
        approx[i] = a
        lower = a - ((1 + errors[i]) * e + errors[i] * qnorm) * 1.0001 - 1e-6
        if lower > low:
            best[at] = lower
            at = np.argmin(best)
            low = best[at]
    kept = 0
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        upper = approx[i] + ((1 + errors[i]) * e + errors[i] * qnorm) * 1.0001 + 1e-6
        if upper >= low:
            out[kept] = i
            kept += 1
    return out[:kept].copy()


@numba.njit(cache=True, nogil=True)
def quantise_rows(vectors, codes, scales, errors, lo):
    """Rows lo.. of codes, scales and errors for the block `vectors` (see the docstring)."""
    for i in range(vectors.shape[0]):
        top = 0.0
        for j in range(vectors.shape[1]):
            top = max(top, abs(float(vectors[i, j])))
        scale = top / 127 if top > 0 else 1.0
        error = 0.0
        for j in range(vectors.shape[1]):
            v = float(vectors[i, j])
            c = np.rint(v / scale)
            codes[lo + i, j] = np.int8(c)
            error += (v - c * scale) ** 2
        scales[lo + i] = scale
        errors[lo + i] = np.sqrt(error)
