"""Dense backend speed: encoding chunks/s, and exact-search latency at 10k and 100k chunks.

    python bench/bench_dense.py [--encoders use,e5-small] [--threads 1] [--chunks 120]
                                [--sizes 10000,100000] [--queries 200] [--site ARTICLES.jsonl]

Encoding: the first `--chunks` 200-word windows (40 overlap) of the fixture site (FaQuAD
articles, CC BY 4.0), encoded in batches as `busca index --dense` does; chunks/s is
wall-clock over the whole set, after one warm-up batch (model loading, with a first
encode for lazily loaded weights, is timed apart).
Search: random unit float32 vectors of the encoder's dimension saved as an index folder's
`dense.vectors.npy`, memory-mapped and searched through busca's DenseScorer + top_k (k=3),
one query at a time after one warm-up query — first with precomputed query vectors (the
matrix-vector product and top-k alone), then end to end with each query encoded by the real
encoder.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from busca.index import storage
from busca.index.chunking import chunk_words
from busca.index.dense import BATCH
from busca.index.encoders import get_encoder
from busca.index.manifest import Manifest
from busca.index.storage import Index
from busca import search as core
from busca.index.vectors import DenseScorer

SITE = Path(__file__).resolve().parent.parent / "fixtures" / "site" / "articles.jsonl"
QUESTIONS = ["a IA inventou uma biblioteca que não existe", "quanto tempo dura o estágio?",
             "quem foi a primeira programadora", "onde guardar a senha do banco de dados"]


def windows(site: Path, n: int) -> list[str]:
    texts = []
    for line in site.read_text(encoding="utf-8").splitlines():
        texts += [c.text for c in chunk_words(json.loads(line)["text"])]
        if len(texts) >= n:
            break
    return texts[:n]


def bench_encoding(name: str, threads: int, texts: list[str]) -> tuple[object, dict]:
    started = time.perf_counter()
    encoder = get_encoder(name, threads=threads)
    encoder.encode(["aquecimento"], query=True)  # some models load their weights lazily
    loaded = time.perf_counter() - started
    encoder.encode(texts[:BATCH])  # warm-up
    started = time.perf_counter()
    for lo in range(0, len(texts), BATCH):
        encoder.encode(texts[lo:lo + BATCH])
    seconds = time.perf_counter() - started
    return encoder, {"encoder": name, "threads": threads, "load_s": round(loaded, 2),
                     "chunks": len(texts), "chunks_per_s": round(len(texts) / seconds, 1)}


class _Given:
    """Stands in for an encoder: returns precomputed query vectors in turn."""

    def __init__(self, encoder, vectors: np.ndarray):
        self.name, self.version, self.dimension = encoder.name, encoder.version, encoder.dimension
        self.vectors, self.at = vectors, 0

    def encode(self, texts, *, query=False):
        self.at += 1
        return self.vectors[(self.at - 1) % len(self.vectors)][None, :]


def bench_search(encoder, size: int, queries: int, folder: Path) -> dict:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((size, encoder.dimension), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    storage.save_array(folder, "dense.vectors", vectors)
    entry = {"encoder": encoder.name, "encoder_version": encoder.version,
             "dimension": encoder.dimension}
    manifest = Manifest(build=folder.name, chunker={}, documents=size, chunks=size,
                        methods={"dense": entry})
    index = Index(folder, folder, manifest)
    given = vectors[rng.integers(0, size, queries)]
    scorer = DenseScorer(index, encoder=_Given(encoder, given))
    row = {"chunks": size, "queries": queries,
           "vectors_mb": round(vectors.nbytes / 2**20, 1)}
    row["search_ms"] = _per_query_ms(scorer, ["x"] * queries)
    scorer.encoder = encoder
    texts = [QUESTIONS[i % len(QUESTIONS)] for i in range(max(20, queries // 10))]
    row["with_encoding_ms"] = _per_query_ms(scorer, texts)
    return row


def _per_query_ms(scorer, texts: list[str]) -> float:
    core.top_k(*scorer.score(texts[0]), 3)  # warm-up: page the memory-mapped vectors in
    started = time.perf_counter()
    for text in texts:
        core.top_k(*scorer.score(text), 3)
    return round(1000 * (time.perf_counter() - started) / len(texts), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoders", default="use", help="comma-separated (default: use)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--chunks", type=int, default=120, help="chunks to encode (default 120)")
    parser.add_argument("--sizes", default="10000,100000", help="index sizes to search")
    parser.add_argument("--queries", type=int, default=200, help="queries per size")
    parser.add_argument("--site", type=Path, default=SITE, help="articles.jsonl to encode")
    args = parser.parse_args()
    texts = windows(args.site, args.chunks)
    for name in args.encoders.split(","):
        encoder, row = bench_encoding(name.strip(), args.threads, texts)
        print(json.dumps(row))
        for size in (int(s) for s in args.sizes.split(",")):
            with tempfile.TemporaryDirectory() as tmp:
                print(json.dumps({"encoder": encoder.name,
                                  **bench_search(encoder, size, args.queries, Path(tmp))}))


if __name__ == "__main__":
    main()
