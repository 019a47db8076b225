"""`busca serve` against one-shot `busca search`: latency per method (p50, p99) and
requests/s with 1, 4 and 16 concurrent clients.

    python bench/bench_serve.py [--sizes fixture,1000,100000] [--requests 200] [--cli-runs 10]
                                [--work DIR]

Corpora (built as bench/bench_session.py builds them):
- `fixture`: the bundled site (39 articles, 201 chunks) indexed with `--dense use` (real
  vectors); the bundled golden set's questions.
- `N`: N synthetic 200-word FaQuAD chunks with tfidf and bm25 built for real, and random unit
  vectors of USE's 512 dimensions as the dense array (encoding 100k chunks would take 30 min
  here; each question is still encoded by the real USE model); FaQuAD's questions.

Peer: `busca search Q --method M --no-log --json` as a new process per question (what an
application pays today without the server), `--cli-runs` questions per method. Server: one
`busca serve --port 0 --no-log --quiet` process on 127.0.0.1 (uvicorn, Starlette's thread pool,
one BLAS/OpenMP thread, the encoder loaded once); clients are threads of this process, each with
a keep-alive `requests.Session`, cycling through the questions; `--requests` requests per
method and client count, after 5 warm-up requests. Latency is per request as a client sees it
(its own HTTP overhead included); requests/s is requests over wall time.
Goal (issue 12): hybrid p50 <= 50 ms over HTTP with one client at 1k chunks.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import requests

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import bench_session  # noqa: E402  (corpus builders)
from cli_errors import guarded, positive_int, sizes_or_fixture  # noqa: E402
from machine import machine  # noqa: E402
from serving import Server  # noqa: E402  (starts `busca serve --port 0`, reads its URL)

METHODS = ("tfidf", "bm25", "dense", "hybrid")
CLIENTS = (1, 4, 16)
WARM_UP = 5
GOAL_MS = 50.0


def cli_latencies(home: Path, method: str, questions: list[str]) -> list[float]:
    """Wall seconds of `busca search` as a new process, one per question."""
    env = {**os.environ, **bench_session.ONE_THREAD, "BUSCA_HOME": str(home)}
    times = []
    for question in questions:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "busca.cli", "search", question, "--method",
                        method, "--no-log", "--json"], env=env, check=True,
                       capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def http_latencies(url: str, method: str, questions: list[str], clients: int,
                   total: int) -> tuple[list[float], float]:
    """Per-request seconds of GET /api/search and the wall time of all `total` requests."""
    times: list[float] = []
    lock = threading.Lock()
    counter = iter(range(total))

    def client(offset: int) -> None:
        session = requests.Session()
        for n in range(WARM_UP):
            session.get(url + "api/search", params={"q": questions[n], "method": method})
        barrier.wait()
        while True:
            with lock:
                n = next(counter, None)
            if n is None:
                return
            started = time.perf_counter()
            r = session.get(url + "api/search", timeout=120,
                            params={"q": questions[(n + offset) % len(questions)],
                                    "method": method})
            elapsed = time.perf_counter() - started
            if r.status_code != 200:
                raise SystemExit(f"{method}: HTTP {r.status_code}: {r.text[:200]}")
            with lock:
                times.append(elapsed)

    barrier = threading.Barrier(clients + 1)
    threads = [threading.Thread(target=client, args=(i * 7,)) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    return times, time.perf_counter() - started


def ms(values: list[float], q: float) -> float:
    return 1000 * float(np.percentile(values, q))


def measure(label: str, home: Path, questions: list[str], args) -> None:
    print(f"\n{label}")
    head = f"{'method':<7} {'CLI p50':>8} {'CLI p99':>8}"
    for c in CLIENTS:
        head += f" | {c:>2} client{'s' if c > 1 else ' '}: {'p50':>6} {'p99':>7} {'req/s':>6}"
    print(head + "   (ms)")
    os.environ.update(bench_session.ONE_THREAD)  # the server process inherits it
    with Server(home, "--no-log", "--quiet") as server:
        for method in METHODS:
            print(f"[{label}] {method}…", file=sys.stderr, flush=True)
            cli = cli_latencies(home, method, questions[:args.cli_runs])
            row = f"{method:<7} {ms(cli, 50):>8.0f} {ms(cli, 99):>8.0f}"
            p50_one = None
            for clients in CLIENTS:
                times, wall = http_latencies(server.url, method, questions, clients,
                                             args.requests)
                p50_one = p50_one if p50_one is not None else ms(times, 50)
                row += (f" | {'':>10}{ms(times, 50):>6.1f} {ms(times, 99):>7.1f}"
                        f" {len(times) / wall:>6.0f}")
            if method == "hybrid" and args.goal:
                verdict = "met" if p50_one <= GOAL_MS else "MISSED"
                row += f"   goal p50 <= {GOAL_MS:.0f} ms: {verdict}"
            print(row, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=sizes_or_fixture, default="fixture,1000,100000",
                        help="comma-separated: fixture and/or numbers of synthetic chunks")
    parser.add_argument("--requests", type=positive_int, default=200,
                        help="HTTP requests per method and client count")
    parser.add_argument("--cli-runs", type=positive_int, default=10,
                        help="CLI processes per method")
    parser.add_argument("--work", default=None, help="Folder for the corpora (default: temp).")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="busca-bench-serve-"))
    work.mkdir(parents=True, exist_ok=True)
    versions = ", ".join(f"{p} {importlib.metadata.version(p)}"
                         for p in ("uvicorn", "starlette", "requests"))
    print(f"python {sys.version.split()[0]}, {versions}; one BLAS/OpenMP thread per process;"
          f" {machine()}; k=3; corpora in {work}"
          + ("" if args.work else " (removed at the end)"))
    try:
        for size, home, questions, label in bench_session.corpora(args.sizes, work):
            args.goal = size == "1000"
            measure(label, home, [q for q in questions if q.strip()], args)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    guarded(main)
