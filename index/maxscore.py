"""The candidates for an exact top k, found by a compiled MaxScore when numba is installed.

`candidates(postings, columns, weights, k, factor)` returns the chunk ids that may be in the
top k of factor[d] * sum_j weights[j] * column j: every chunk whose score is within rounding
of the k-th best, found by document-at-a-time MaxScore (Turtle & Flood 1995) in one compiled
call (index/maxscore_numba.py). The caller scores them exactly (lexical.py's `lookup`, the
numbers of the exhaustive path), so the ranking and the scores are the same, bit for bit,
whether numba is there or not; without it, lexical.py's numpy path finds the candidates.

numba is the `fast` extra; it is imported only for indexes of COMPILED_MIN_ROWS chunks or
more (loading it costs a few hundred milliseconds, more than a small index's whole query),
and BUSCA_NUMBA=0 turns it off (tests compare both paths).
"""

from __future__ import annotations

import os
import threading
from typing import NamedTuple

import numpy as np

COMPILED_MIN_ROWS = 5_000

_scratch = threading.local()


class _Kernel(NamedTuple):
    candidates: object
    exact_sums: object

_kernel = None


def usable(n_rows: int) -> bool:
    """True when the compiled MaxScore is installed, allowed and worth loading."""
    return n_rows >= COMPILED_MIN_ROWS and kernel() is not None


def kernel():
    """The compiled module, or None (numba not installed, or BUSCA_NUMBA=0)."""
    global _kernel
    if os.environ.get("BUSCA_NUMBA", "1") == "0":
        return None
    if _kernel is None:
        try:
            from .maxscore_numba import candidates, exact_sums
            _kernel = _Kernel(candidates, exact_sums)
        except ImportError:
            _kernel = False
    return _kernel or None


def scratch(n: int) -> tuple[np.ndarray, np.ndarray]:
    """This thread's work vectors of n ids and n scores (fresh ones per query would cost the
    page faults of touching megabytes)."""
    buffers = getattr(_scratch, "buffers", None)
    if buffers is None or buffers[0].size != n:
        buffers = _scratch.buffers = (np.empty(n, dtype=np.int64), np.empty(n))
    return buffers


def candidates(postings, columns: np.ndarray, weights: np.ndarray, k: int,
               factor: np.ndarray | None) -> np.ndarray:
    """Sorted chunk ids whose score may be in the top k (see the module docstring)."""
    bounds = weights * postings.bound[columns]
    order = np.argsort(bounds, kind="stable")  # weakest first
    dtype = postings.accumulator
    found = kernel().candidates(postings.indptr, postings.indices, postings.data,
                                columns[order], weights[order].astype(dtype), bounds[order],
                                factor if factor is not None else np.empty(0), k,
                                *scratch(postings.n_rows))
    return found  # visited in id order: sorted and unique


def exact_sums(postings, ids: np.ndarray, columns, weights, out: np.ndarray) -> np.ndarray:
    """lexical.py's `lookup` compiled: the same products and sums, in the same order and
    dtype (tests compare both bit for bit)."""
    dtype = postings.accumulator
    return kernel().exact_sums(postings.indptr, postings.indices, postings.data,
                               np.asarray(columns, dtype=np.int64),
                               np.asarray(weights, dtype=np.float64).astype(dtype),
                               ids.astype(postings.indices.dtype), out)
