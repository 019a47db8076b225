"""Exact cosine search over the memory-mapped chunk vectors.

`score(query)`: every chunk's cosine, one float32 matrix-vector product. `top(query, k)`: the
same top k; on a large index with numba installed (the `fast` extra), an int8 copy of the
vectors, made once per loaded index, is read first (a quarter of the bytes, at memory speed),
and only the chunks whose error bound lets them reach the k-th best are rescored in float32
(index/vectors_numba.py): the result is the exact top k, not an approximation.
"""

from __future__ import annotations

import logging
import os
from typing import NamedTuple

import numpy as np

from ..errors import BuscaError
from .dense_models import array_key, dense_methods, label, server_settings
from .embedding_api import ServerSettings
from .encoders import THREADS, Encoder, get_encoder

log = logging.getLogger(__name__)

QUANTISED_MIN_ROWS = 100_000  # below, one float32 product is as fast as the int8 pass
QUANTISE_BLOCK = 1 << 16  # rows quantised at a time (bounded memory)


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
                            f" {','.join(n.split(':', 1)[1] for n in have)},NAME=ENCODER")
        raise NoVectors("this index has no dense vectors — add them with:"
                        " busca index --dense use (or e5-small, sentence-transformers:PATH,"
                        " openai:MODEL)")


class DenseScorer:
    """Cosine between the query's vector and every chunk's vector (both L2-normalised)."""

    def __init__(self, index, method: str = "dense", *, encoder: Encoder | None = None,
                 threads: int = THREADS, server: ServerSettings | None = None):
        require_vectors(index, method)
        entry = index.methods[method]
        self.vectors = index.array(array_key(method), "vectors")
        if self.vectors.ndim != 2 or self.vectors.shape[1] != entry["dimension"]:
            raise EncoderMismatch(f"the dense vectors have shape {self.vectors.shape}, the"
                                  f" manifest says {entry['dimension']} dimensions — rebuild")
        self.encoder = encoder or get_encoder(
            entry["encoder"], threads=threads,
            server=server or server_settings(entry, **getattr(index, "embed", {})),
            dimension=entry["dimension"])
        check_encoder(entry, self.encoder)

    def embed(self, query: str) -> np.ndarray:
        """The query's unit vector."""
        if not query.strip():
            raise EmptyQuery("the query is empty")
        return self.encoder.encode([query], query=True)[0]

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk id and its cosine with the query."""
        scores = self.vectors @ self.embed(query)
        return np.arange(scores.size, dtype=np.int64), scores.astype(np.float64)

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best chunks by cosine, best first (ties: lower id first)."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        q = self.embed(query)
        ids = self.contenders(q, k)
        scores = (np.asarray(self.vectors[ids]) @ q).astype(np.float64)
        order = np.lexsort((ids, -scores))[:k]
        return ids[order], scores[order]

    def contenders(self, q: np.ndarray, k: int) -> np.ndarray:
        """Sorted rows among which the top k by cosine with q are."""
        n, d = self.vectors.shape
        if n <= k:
            return np.arange(n)
        kernel = _kernel() if n >= QUANTISED_MIN_ROWS else None
        if kernel is None or d > kernel.max_dimension:
            scores = self.vectors @ q
            kth = np.partition(-scores, k - 1)[k - 1]
            return np.flatnonzero(-scores <= kth + 1e-6 * max(1.0, abs(kth)))
        quantised = self._quantised()
        qnorm = float(np.linalg.norm(q))
        t = float(np.abs(q).max()) / 127 or 1.0
        u = np.rint(q / t).astype(np.int8)
        e = float(np.linalg.norm(q - t * u.astype(np.float64)))
        # float32 rounding of the rescored products (d terms of at most |v| |q| in all)
        floor = 1e-6 + 2 * (d + 2) * 2.0**-24 * qnorm * quantised.norm
        return kernel.candidates(quantised.codes, quantised.scales, quantised.errors, u, t, e,
                                 qnorm, floor, k)

    def _quantised(self) -> Quantised:
        """The int8 copy of the vectors (made on first use)."""
        if getattr(self, "_codes", None) is None:
            self._codes = quantise(self.vectors, _kernel())
        return self._codes


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
    for lo in range(0, n, QUANTISE_BLOCK):
        norm = max(norm, kernel.quantise_rows(np.asarray(vectors[lo:lo + QUANTISE_BLOCK]), codes,
                                              scales, errors, lo))
    return Quantised(codes, scales, errors, norm)


def _kernel():
    """index/vectors_numba.py, or None (numba not installed, or BUSCA_NUMBA=0)."""
    if os.environ.get("BUSCA_NUMBA", "1") == "0":
        return None
    try:
        from .vectors_numba import MAX_DIMENSION, candidates, quantise_rows
    except ImportError:
        return None
    return _Kernel(candidates, quantise_rows, MAX_DIMENSION)


class _Kernel(NamedTuple):
    candidates: object
    quantise_rows: object
    max_dimension: int
