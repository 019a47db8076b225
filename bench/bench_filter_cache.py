"""Filtered HTTP searches of `busca serve --tokens` with and without the masks kept between
queries (search/filters.py `remembered`): p50 and p95 of bm25 searches of one reader's
token, of no token (the public rule) and of a token with a --filter.

    python bench/bench_filter_cache.py --docs 20000 --home /tmp/fc/home

The home is made once (documents of 100-800 words of zipf_corpus's word law, a third with a
category, a fifth with groups; added and indexed with tfidf,bm25) and reused. "before" starts
the server with every store's version taken away (the mask read from every document's
metadata at every query, as before the cache); "after" as shipped.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode
from urllib.request import Request, urlopen

sys.path.insert(0, str(Path(__file__).parent))
import zipf_corpus as z  # noqa: E402

CATEGORIES = ["Recursos Humanos", "Finanças", "Tecnologia", "Jurídico", "Comunicação"]
GROUPS = ["todos", "rh", "ti", "diretoria", "vendas"]
TOKENS = {"rh": "rh-token-0123456789abcdef", "ti": "ti-token-0123456789abcdef"}
NO_VERSION = ("from busca.index.home.documents import Store\n"
              "Store.version = lambda self: None\n")


def make_home(home: Path, n: int) -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    lengths = rng.integers(100, 801, n)
    words = [w for c in z.chunks(-(-int(lengths.sum()) // z.WINDOW)) for w in c.split(" ")]
    source, at = home.parent / "docs.jsonl", 0
    with source.open("w", encoding="utf-8") as out:
        for i, length in enumerate(lengths):
            text, at = " ".join(words[at:at + length]), at + int(length)
            doc = {"url": f"https://empresa.example/doc-{i}/", "title": text[:40], "text": text}
            if i % 3 == 0:
                doc["category"] = CATEGORIES[i % len(CATEGORIES)]
            if i % 5 == 0:
                doc["groups"] = [GROUPS[i % 5], GROUPS[(i // 5) % 5]]
            out.write(json.dumps(doc, ensure_ascii=False) + "\n")
    for args in (["add", str(source)], ["index", "-q", "--methods", "tfidf,bm25"]):
        subprocess.run([sys.executable, "-m", "busca.cli", "--home", str(home), *args],
                       check=True, stdout=subprocess.DEVNULL)


def measure(home: Path, mode: str, queries: list[str], scratch: Path) -> None:
    tokens = scratch / "tokens.txt"
    tokens.write_text("".join(f"{t} {g}\n" for g, t in TOKENS.items()), encoding="utf-8")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if mode == "before":
        (scratch / "sitecustomize.py").write_text(NO_VERSION, encoding="utf-8")
        env["PYTHONPATH"] = str(scratch)
    server = subprocess.Popen([sys.executable, "-m", "busca.cli", "--home", str(home), "serve",
                               "--port", "0", "--no-log", "--tokens", str(tokens)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env=env)
    url = server.stdout.readline().strip()
    try:
        def run(token, extra) -> str:
            times = []
            for q in queries:
                request = Request(url + "api/search?" + urlencode(
                    [("q", q), ("method", "bm25"), ("k", 10), *extra]),
                    headers={"Authorization": f"Bearer {token}"} if token else {})
                started = time.perf_counter()
                with urlopen(request, timeout=60) as response:
                    json.loads(response.read())
                times.append((time.perf_counter() - started) * 1000)
            times.sort()
            return (f"p50 {statistics.median(times):7.1f} ms   p95"
                    f" {times[int(len(times) * 0.95)]:7.1f} ms")

        run(TOKENS["rh"], [])  # warm-up
        print(f"{mode:6}  rh token           {run(TOKENS['rh'], [])}")
        print(f"{mode:6}  no token (public)  {run(None, [])}")
        print(f"{mode:6}  rh token + filter  "
              f"{run(TOKENS['rh'], [('filter', 'category=Finanças')])}")
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    if not (args.home / "busca.db").exists():
        args.home.parent.mkdir(parents=True, exist_ok=True)
        make_home(args.home, args.docs)
    queries = z.questions(args.queries)
    for mode in ("before", "after"):
        with tempfile.TemporaryDirectory() as scratch:
            measure(args.home, mode, queries, Path(scratch))


if __name__ == "__main__":
    main()
