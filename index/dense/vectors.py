"""Exact cosine search over the memory-mapped chunk vectors.

`score(query)`: every chunk's cosine, one float32 matrix-vector product. `top(query, k)`: the
same top k; on a large index with numba installed (the `fast` extra), an int8 copy of the
vectors (made once per loaded index, at its second search or by `prepare()`; the first search
of a one-shot command uses the float32 product) is read first, a quarter of the bytes at memory
speed, and only the chunks whose error bound lets them reach the k-th best are rescored
(index/dense/vectors_numba.py): the result is the exact top k, not an approximation. The contenders
(without numba: those within rounding of the k-th best float32 product) are rescored row by
row in float64, so equal rows score equal and ties go to the lower id. `top(query, k,
allowed=mask)` ranks only the rows of a boolean mask (a filter, search/filters.py): the int8
pass skips the other rows before reading them, the float32 product's other rows are set
aside before the k-th best is taken; then the same rescoring.
"""

from __future__ import annotations

import logging
import os
from typing import NamedTuple

import numpy as np

from ...errors import BuscaError
from .. import compiled
from .dense_groups import Groups
from .dense_models import (array_key, dense_methods, label, model_entries, models_spec,
                           server_settings)
from .embedding_api import ServerSettings
from .encoders import THREADS, Encoder, get_encoder

log = logging.getLogger(__name__)

QUANTISED_MIN_ROWS = 100_000  # below, one float32 product is as fast as the int8 pass
QUANTISE_BLOCK = 1 << 14  # rows quantised at a time (bounded memory)


class EmptyQuery(BuscaError, ValueError):
    """A query with nothing to encode."""


class EncoderMismatch(BuscaError, ValueError):
    """The index's vectors were made by another encoder or have another dimension."""


class NoVectors(BuscaError, ValueError):
    """The index was built without dense vectors."""


def check_encoder(entry: dict, encoder: Encoder) -> None:
    """Refuse an encoder other than the one that made the index's vectors."""
    made_by = f"{entry['encoder']} ({entry['dimension']} dimensions)"
    if encoder.name != entry["encoder"]:
        raise EncoderMismatch(
            f"the index's vectors were made by {made_by}, not {encoder.name} — search with"
            f" the same encoder or rebuild: busca index --dense {encoder.name}")
    if encoder.dimension != entry["dimension"]:
        raise EncoderMismatch(
            f"the index's vectors have {entry['dimension']} dimensions but {encoder.name}"
            f" now gives {encoder.dimension} — rebuild: busca index --dense {encoder.name}")
    if hasattr(encoder, "expect"):  # a server's model: checked at the first question
        encoder.expect(entry.get("probe"))
    if encoder.version != entry.get("encoder_version"):
        log.warning("the index's vectors were made by %s, this machine has %s; rebuild with"
                    " busca index --dense %s if results look wrong",
                    entry.get("encoder_version"), encoder.version, encoder.name)


def require_vectors(index, method: str = "dense") -> None:
    """NoVectors, saying how to add them, if the index was built without dense vectors."""
    methods = index.manifest.methods
    if method not in methods:
        have = [label(methods, m) for m in dense_methods(methods)]
        if have:
            raise NoVectors(f"this index has no dense model {method!r}; it has:"
                            f" {', '.join(have)} — add one with: busca index --dense"
                            f" {models_spec(model_entries(methods))},NAME=ENCODER")
        raise NoVectors("this index has no dense vectors — add them with:"
                        " busca index --dense e5-small (or use, sentence-transformers:PATH,"
                        " openai:MODEL)")


def query_encoder(index, method: str = "dense", *, threads: int = THREADS,
                  server: ServerSettings | None = None) -> Encoder:
    """The encoder that made `method`'s vectors, loaded to encode questions."""
    entry = index.manifest.entry(method)
    return get_encoder(entry["encoder"], threads=threads,
                       server=server or server_settings(entry, **getattr(index, "embed", {})),
                       dimension=entry["dimension"])


class DenseScorer:
    """Cosine between the query's vector and every chunk's vector (both L2-normalised)."""

    masked = True  # `top` takes `allowed` (search/filters.py)

    def __init__(self, index, method: str = "dense", *, encoder: Encoder | None = None,
                 threads: int = THREADS, server: ServerSettings | None = None):
        require_vectors(index, method)
        entry = index.methods[method]
        self.vectors = index.array(array_key(method), "vectors")
        if self.vectors.ndim != 2 or self.vectors.shape[1] != entry["dimension"]:
            raise EncoderMismatch(f"the dense vectors have shape {self.vectors.shape}, the"
                                  f" manifest says {entry['dimension']} dimensions — rebuild")
        self.encoder = encoder or query_encoder(index, method, threads=threads, server=server)
        check_encoder(entry, self.encoder)
        self.groups = Groups(index, array_key(method), entry["groups"], self.vectors.shape[0]) \
            if entry.get("groups") else None

    def embed(self, query: str) -> np.ndarray:
        """The query's unit vector."""
        if not query.strip():
            raise EmptyQuery("the query is empty")
        return self.encoder.encode([query], query=True)[0]

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk id and its cosine with the query."""
        q = self.embed(query)
        scores = self.vectors @ q
        if self.groups is not None:
            scores = self.groups.combine(scores, self.groups.vectors @ q)
        return np.arange(scores.size, dtype=np.int64), scores.astype(np.float64)

    def top(self, query: str, k: int,
            allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The k best chunks by cosine (among the rows of the boolean mask `allowed`, if
        given), best first (ties: lower id first). The contenders are rescored row by row in
        float64 (the products exact, the same sum for equal rows)."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        q = self.embed(query)
        ids = self.contenders(q, k, allowed)
        rows = _rows(self.vectors, ids).astype(np.float64)
        if self.groups is not None:
            scores = self.groups.exact(rows, ids, q)
        else:
            scores = (rows * q.astype(np.float64)).sum(axis=1)
        order = np.lexsort((ids, -scores))[:k]
        return ids[order], scores[order]

    def prepare(self) -> None:
        """Make the int8 copy now if searches will use it (a server, before its first request;
        otherwise it is made at the second search: a one-shot command never pays for it)."""
        if self._int8_kernel() is not None:
            self._quantised()

    def contenders(self, q: np.ndarray, k: int, allowed: np.ndarray | None = None) -> np.ndarray:
        """Sorted rows among which the top k by cosine with q are (rows of `allowed` only)."""
        n, d = self.vectors.shape
        if n <= k or allowed is not None and np.count_nonzero(allowed) <= k:
            return np.arange(n) if allowed is None else np.flatnonzero(allowed)
        kernel = self._int8_kernel()
        self._searches = getattr(self, "_searches", 0) + 1
        qnorm = float(np.linalg.norm(q))
        if self.groups is not None or kernel is None or (
                self._searches == 1 and getattr(self, "_codes", None) is None):
            scores = self.vectors @ q
            if self.groups is not None:  # max-sim: the same bound holds for each product
                scores = self.groups.combine(scores, self.groups.vectors @ q)
            if allowed is not None:
                scores[~allowed] = -np.inf
            kth = -np.partition(-scores, k - 1)[k - 1]
            # the float32 product is off by at most d rounding steps of |v| |q| (unit rows)
            slack = 1e-6 + 2 * (d + 2) * 2.0**-24 * qnorm * 1.01
            return np.flatnonzero(scores >= kth - 2 * slack)
        quantised = self._quantised()
        t = float(np.abs(q).max()) / 127 or 1.0
        u = np.rint(q / t).astype(np.int8)
        e = float(np.linalg.norm(q - t * u.astype(np.float64)))
        # rounding of the float64 rescoring (d terms of at most |v| |q| in all), with room
        floor = 1e-6 + 2 * (d + 2) * 2.0**-52 * qnorm * quantised.norm
        return kernel.candidates(quantised.codes, quantised.scales, quantised.errors, u, t, e,
                                 qnorm, floor, k, *_mask_arguments(allowed))

    def _int8_kernel(self):
        """The compiled first pass if this index is large enough for it, else None."""
        n, d = self.vectors.shape
        kernel = _kernel() if n >= QUANTISED_MIN_ROWS else None
        return kernel if kernel is not None and d <= kernel.max_dimension else None

    def _quantised(self) -> Quantised:
        """The int8 copy of the vectors (made once)."""
        if getattr(self, "_codes", None) is None:
            self._codes = quantise(self.vectors, _kernel())
        return self._codes


_NO_ROWS = np.empty(0, dtype=np.int64)
_NO_MASK = (np.empty(0, dtype=np.bool_), _NO_ROWS)
SPARSE_MASK = 8  # a mask keeping under 1/8 of the rows: the int8 pass reads those rows only


def _mask_arguments(allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The int8 pass's (mask, rows) for a boolean mask over the rows (None: every row)."""
    if allowed is None:
        return _NO_MASK
    if np.count_nonzero(allowed) * SPARSE_MASK < allowed.size:
        return _NO_MASK[0], np.flatnonzero(allowed)
    return np.ascontiguousarray(allowed, dtype=np.bool_), _NO_ROWS


class Quantised(NamedTuple):
    """Per-row int8 codes c and scales s (v ~ s c), the norms |v - s c| of the rounding errors,
    and the largest |v|."""

    codes: np.ndarray
    scales: np.ndarray
    errors: np.ndarray
    norm: float


def quantise(vectors: np.ndarray, kernel) -> Quantised:
    """The int8 copy of `vectors`, a block at a time (bounded memory)."""
    n = vectors.shape[0]
    codes = np.empty(vectors.shape, dtype=np.int8)
    scales = np.empty(n, dtype=np.float64)
    errors = np.empty(n, dtype=np.float64)
    norm = 0.0
    for lo, block in _blocks(vectors):
        norm = max(norm, kernel.quantise_rows(block, codes, scales, errors, lo))
    return Quantised(codes, scales, errors, norm)


def _blocks(vectors: np.ndarray):
    """(first row, float32 rows) of `vectors`, QUANTISE_BLOCK rows at a time. A memory-mapped
    .npy is read with plain reads into one buffer, so its pages are not mapped into this process
    (its resident memory stays that of the int8 copy)."""
    n, d = vectors.shape
    f = _open(vectors)
    if f is None:
        for lo in range(0, n, QUANTISE_BLOCK):
            yield lo, np.ascontiguousarray(vectors[lo:lo + QUANTISE_BLOCK], dtype=np.float32)
        return
    buffer = np.empty((min(n, QUANTISE_BLOCK), d), dtype=np.float32)
    with f:
        f.seek(vectors.offset)
        for lo in range(0, n, QUANTISE_BLOCK):
            block = buffer[:min(QUANTISE_BLOCK, n - lo)]
            view, read = memoryview(block).cast("B"), 0
            while read < view.nbytes:
                got = f.readinto(view[read:])
                if not got:
                    raise EOFError(f"{vectors.filename} ended early")
                read += got
            yield lo, block


def _rows(vectors: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """vectors[ids] (ascending ids); from a memory-mapped .npy by plain reads, so a server's
    resident memory does not grow by the pages around every row it rescored."""
    f = _open(vectors) if ids.size and hasattr(os, "preadv") else None
    if f is None:
        return np.asarray(vectors[ids])
    out = np.empty((ids.size, vectors.shape[1]), dtype=np.float32)
    size = out.shape[1] * 4
    flat = memoryview(out).cast("B")
    with f:
        for x, i in enumerate(ids.tolist()):
            got = os.preadv(f.fileno(), [flat[x * size:(x + 1) * size]],
                            vectors.offset + i * size)
            if got != size:
                raise EOFError(f"{vectors.filename} ended early")
    return out


def _open(vectors: np.ndarray):
    """The file under a whole memory-mapped float32 .npy, opened for plain reads; None when
    `vectors` is not one or the file is gone (a replaced build: its mapping still reads)."""
    if not _whole_file(vectors):
        return None
    try:
        return open(vectors.filename, "rb", buffering=0)
    except OSError:
        return None


def _whole_file(vectors: np.ndarray) -> bool:
    """Is `vectors` a whole memory-mapped float32 file (not a slice of one)?"""
    if not (isinstance(vectors, np.memmap) and vectors.filename and vectors.dtype == np.float32
            and vectors.flags.c_contiguous):
        return False
    try:
        return os.path.getsize(vectors.filename) == vectors.offset + vectors.nbytes
    except OSError:
        return False


def _kernel():
    """index/dense/vectors_numba.py (through compiled.py's loader), or None (numba not
    installed, or BUSCA_NUMBA=0)."""
    loaded = compiled.module("vectors_numba")
    if loaded is None:
        return None
    return _Kernel(loaded.candidates, loaded.quantise_rows, loaded.MAX_DIMENSION)


class _Kernel(NamedTuple):
    candidates: object
    quantise_rows: object
    max_dimension: int
