"""Dense vectors of the chunks, one L2-normalised float32 row per chunk.

Files in the index folder:
- `dense.vectors.npy` — float32 (chunks x dimension), loaded memory-mapped;
- `dense.hashes.npy` — uint8 (chunks x 16), BLAKE2b-128 of each chunk's text, so the next
  build re-encodes only chunks whose text changed (with the same encoder and version).
The manifest entry names the encoder, its version and dimension; `hybrid` has an entry of its
own holding only fusion settings that differ from the defaults in search/fusion.py.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import BuscaError
from .encoders import DEFAULT_ENCODER, THREADS, Encoder, get_encoder

log = logging.getLogger(__name__)

METHOD = "dense"
BATCH = 32


class BadVectors(BuscaError, ValueError):
    """An encoder returned vectors that cannot be searched (NaN, wrong shape)."""


def text_hashes(texts: Sequence[str]) -> np.ndarray:
    """BLAKE2b-128 digest of each text, as a (n, 16) uint8 array."""
    digests = b"".join(hashlib.blake2b(t.encode("utf-8"), digest_size=16).digest() for t in texts)
    return np.frombuffer(digests, dtype=np.uint8).reshape(len(texts), 16)


def build(texts: Sequence[str], out, *, options: dict, previous=None,
          on_progress: Callable | None = None, encoder: Encoder | None = None) -> dict:
    """Encode `texts` into `out` (reusing unchanged chunks of `previous`); the manifest entry."""
    progress = on_progress or (lambda stage, done, total: None)
    if encoder is None:
        encoder = get_encoder(options.get("dense", DEFAULT_ENCODER),
                              threads=options.get("threads", THREADS))
    hashes = text_hashes(texts)
    vectors = np.zeros((len(texts), encoder.dimension), dtype=np.float32)
    todo = _reuse(vectors, hashes, encoder, previous)
    truncated = encoder.count_truncated([texts[i] for i in todo])
    if truncated:
        log.info("%d of %d chunks (%.0f%%) are longer than %s's %d tokens and were truncated",
                 truncated, len(todo), 100 * truncated / len(todo), encoder.name,
                 encoder.max_length)
    seconds = _encode_into(vectors, texts, todo, encoder, progress)
    out.save_array(METHOD, "vectors", vectors)
    out.save_array(METHOD, "hashes", hashes)
    return {"encoder": encoder.name, "encoder_version": encoder.version,
            "dimension": encoder.dimension, "max_length": encoder.max_length,
            "encoded": len(todo), "reused": len(texts) - len(todo),
            "truncated": truncated,
            "chunks_per_second": round(len(todo) / seconds, 1) if seconds > 0 else None,
            "floor": None}


def _reuse(vectors: np.ndarray, hashes: np.ndarray, encoder: Encoder,
           previous) -> list[int]:
    """Copy vectors of unchanged chunks from the previous build; the rows left to encode."""
    old = _previous_vectors(previous, encoder)
    if old is None:
        return list(range(len(vectors)))
    old_vectors, old_hashes = old
    where = {h.tobytes(): i for i, h in enumerate(old_hashes)}
    todo = []
    for row, h in enumerate(hashes):
        i = where.get(h.tobytes())
        if i is None:
            todo.append(row)
        else:
            vectors[row] = old_vectors[i]
    return todo


def _previous_vectors(previous, encoder: Encoder):
    """The vectors and text hashes of the previous build (a Build), if the same encoder made them."""
    if previous is None:
        return None
    try:
        entry = previous.manifest.entry(METHOD)
        if not entry or (entry["encoder"], entry["encoder_version"], entry["dimension"]) != (
                encoder.name, encoder.version, encoder.dimension):
            return None
        return previous.array(METHOD, "vectors"), previous.array(METHOD, "hashes")
    except (BuscaError, KeyError):
        return None


def _encode_into(vectors: np.ndarray, texts: Sequence[str], todo: list[int],
                 encoder: Encoder, progress: Callable) -> float:
    """Encode the rows `todo` in batches, checking every batch; returns the seconds spent."""
    stage = f"encoding with {encoder.name}"
    progress(stage, 0, len(todo))
    started = time.perf_counter()
    for lo in range(0, len(todo), BATCH):
        rows = todo[lo:lo + BATCH]
        batch = encoder.encode([texts[i] for i in rows])
        check_vectors(batch, rows, encoder)
        vectors[rows] = batch
        progress(stage, lo + len(rows), len(todo))
    return time.perf_counter() - started


def check_vectors(batch: np.ndarray, rows: Sequence[int], encoder: Encoder) -> None:
    """Refuse a batch (for chunk ids `rows`) of the wrong shape or with NaN / infinite values."""
    n = len(rows)
    if batch.shape != (n, encoder.dimension):
        raise BadVectors(f"the encoder {encoder.name} returned shape {batch.shape},"
                         f" expected ({n}, {encoder.dimension}) — refusing to build")
    bad = ~np.isfinite(batch).all(axis=1)
    if bad.any():
        raise BadVectors(
            f"the encoder {encoder.name} returned NaN or infinite values for {int(bad.sum())}"
            f" chunk(s), the first being chunk {rows[int(np.argmax(bad))]} — refusing to"
            " build; check the model files")


def build_hybrid(texts: Sequence[str], out, *, options: dict,
                 previous=None, on_progress: Callable | None = None) -> dict:
    """The `hybrid` entry: no arrays, only fusion settings that override the defaults."""
    return {"fusion": options.get("fusion_settings", {}), "floor": None}
