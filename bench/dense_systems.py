"""Dense figures printed beside the lexical ones by bench_lexical.py (`--dense`), each run in a
subprocess of its own like the lexical systems:

- `dense-encode`: chunks/s of an encoder (default `use`, one thread) on the first 200-word
  windows of the bench corpus, after a warm-up batch; the load time apart;
- `dense-search`: busca's DenseScorer at n chunks of 512-d unit vectors (USE's dimension): 2/3
  random, 1/3 noisy copies of them (so that queries have real near neighbours), seeded.
  Queries: noisy copies of stored vectors, given as already encoded (search time alone).
  `prepare()` (the int8 copy a server makes at start) and a first search are timed together,
  then `top(query, 10)` (the int8 first pass with exact rescoring when numba is installed and
  n >= 100k; else the float32 product), the process's peak memory, then recall@10 of those
  results against the exhaustive float32 ranking, and the float32 product's own p50 on a few
  queries.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from measure import peak_mb, read_corpus

DIMENSION = 512


class _Given:
    """Stands in for an encoder: returns precomputed query vectors in turn."""

    name, version, dimension = "given", "1", DIMENSION

    def __init__(self, vectors: np.ndarray):
        self.vectors, self.at = vectors, 0

    def encode(self, texts, *, query=False):
        self.at += 1
        return self.vectors[(self.at - 1) % len(self.vectors)][None, :]


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _vectors(folder: Path, n: int, rng) -> np.ndarray:
    from busca.index.home import storage
    if not (folder / "dense.vectors.npy").exists():
        folder.mkdir(parents=True, exist_ok=True)
        out = np.lib.format.open_memmap(folder / "dense.vectors.npy", mode="w+",
                                        dtype=np.float32, shape=(n, DIMENSION))
        for lo in range(0, n, 1 << 16):
            m = min(1 << 16, n - lo)
            block = rng.standard_normal((m, DIMENSION), dtype=np.float32)
            copies = rng.random(m) < 1 / 3
            source = out[rng.integers(0, max(lo, 1), copies.sum())] if lo else block[:copies.sum()]
            block[copies] = source + 0.5 * rng.standard_normal(source.shape, dtype=np.float32) \
                / np.sqrt(DIMENSION)
            out[lo:lo + m] = _unit(block)
        out.flush()
        del out
    return storage.load_array(folder, "dense.vectors")


def _reset_peak() -> None:
    """Start the peak resident memory (VmHWM) over from now, where Linux allows it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def dense_search(cfg: dict) -> dict:
    from busca.index.home.manifest import Manifest
    from busca.index.home.storage import Index
    from busca.index.dense.vectors import DenseScorer
    rng = np.random.default_rng(0)
    folder = Path(cfg["work"]) / f"dense-{cfg['size']}"
    vectors = _vectors(folder, cfg["size"], rng)
    _reset_peak()  # making the vectors file is not searching
    rows = rng.integers(0, cfg["size"], 200)
    queries = _unit(vectors[rows] + 0.7 * rng.standard_normal((200, DIMENSION),
                                                                 dtype=np.float32)
                    / np.sqrt(DIMENSION))
    manifest = Manifest(build=folder.name, chunker={}, documents=cfg["size"],
                        chunks=cfg["size"], methods={"dense": {
                            "encoder": "given", "encoder_version": "1",
                            "dimension": DIMENSION}})
    index = Index(folder, folder, manifest)
    scorer = DenseScorer(index, encoder=_Given(queries))
    started = time.perf_counter()
    scorer.prepare()  # the int8 copy, as `busca serve` makes it before its first request
    scorer.top("q", 10)  # kernel loaded
    prepare = time.perf_counter() - started
    times, found = [], []
    started = time.perf_counter()
    for _ in range(min(cfg["most"], len(queries))):
        t = time.perf_counter()
        found.append(scorer.top("q", 10)[0])
        times.append(time.perf_counter() - t)
        if time.perf_counter() - started > cfg["budget"] and len(times) >= 5:
            break
    ms = np.array(times) * 1000
    search_peak = peak_mb()  # before the exhaustive products below map every float32 page
    recall, exhaustive = [], []
    for i, ids in enumerate(found[:20]):
        t = time.perf_counter()
        scores = vectors @ queries[(i + 1) % len(queries)]
        exhaustive.append(time.perf_counter() - t)
        want = np.lexsort((np.arange(scores.size), -scores))[:10]
        recall.append(len(set(ids.tolist()) & set(want.tolist())) / 10)
    return {"prepare": prepare, "queries": len(times), "qps": len(times) / (ms.sum() / 1000),
            "p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99)),
            "recall": float(np.mean(recall)), "float32_p50": float(np.median(exhaustive)) * 1000,
            "search_peak": search_peak, "vectors_mb": vectors.nbytes / 2**20}


def dense_encode(cfg: dict) -> dict:
    from busca.index.dense.encoders import get_encoder
    texts = read_corpus(cfg["corpus"], 96)
    started = time.perf_counter()
    encoder = get_encoder(cfg.get("encoder", "use"), threads=1)
    encoder.encode(texts[:4])
    load = time.perf_counter() - started
    started = time.perf_counter()
    for lo in range(32, len(texts), 32):
        encoder.encode(texts[lo:lo + 32])
    seconds = time.perf_counter() - started
    query = []
    for text in texts[:20]:
        t = time.perf_counter()
        encoder.encode([" ".join(text.split()[:12])], query=True)
        query.append(time.perf_counter() - t)
    return {"encoder": encoder.name, "load": load, "chunks_per_s": (len(texts) - 32) / seconds,
            "query_p50": float(np.median(query)) * 1000}


RUNNERS = {"dense-search": dense_search, "dense-encode": dense_encode}
