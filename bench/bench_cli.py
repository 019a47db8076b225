"""Wall time of `busca search` as a person at the terminal waits for it, per method, on the
fixture corpus (the 39 FaQuAD articles of fixtures/site, 200-word windows), computed in the
command's own process and answered by a running `busca serve` of the same home.

    python bench/bench_cli.py [--runs 7] [--dense use|none] [--work DIR] [--sizes fixture,100000]

Each figure is a whole process (`python -m busca.cli --home H search Q --method M --no-log`),
run `--runs` times after one warm-up run (file cache warm), one thread for BLAS/OpenMP;
printed: minimum and median seconds. Configurations, each on its own lines:

- `alone`: with --no-serve, the command loads the index (and for dense/hybrid the encoder)
  itself;
- `via serve`: a `busca serve --no-log` of the same home runs (started here, on 127.0.0.1,
  one BLAS thread), and the very same command asks it (serve.json in the home); the server's
  access log is counted to show that every run reached it.

`--sizes` adds synthetic corpora of N chunks (bench_session.py's: FaQuAD words, tfidf and
bm25 built for real, random unit vectors as the `use` vectors, the question encoded by the
real model), where loading the index is no longer negligible.

Beside them, the same interpreter doing only `import numpy` and only `import busca.cli`, the
floor under any command. PYTHONDONTWRITEBYTECODE is dropped, so the warm-up run writes
busca's __pycache__ as an installed package has it (with it set and no __pycache__, every
command would compile busca's modules again). The goal (issue 14): tfidf and bm25 <= 0.3 s;
dense and hybrid <= 1 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from cli_errors import guarded, positive_int, sizes_or_fixture
from machine import machine

ARTICLES = Path(__file__).resolve().parent.parent / "fixtures" / "site" / "articles.jsonl"
QUERY = "qual foi a primeira universidade do Brasil?"
ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
GOALS = {"tfidf": 0.3, "bm25": 0.3, "dense": 1.0, "hybrid": 1.0}


def environment() -> dict[str, str]:
    env = {**os.environ, **ONE_THREAD}
    for name in ("BUSCA_NO_SERVE", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    return env


def wall(args: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    """Minimum and median wall seconds of a fresh interpreter running args."""
    subprocess.run(args, env=env, check=True, capture_output=True)  # warm-up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(args, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times)


def busca(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "busca.cli", "--home", str(home), *args]


class Serve:
    """`busca serve --port 0 --no-log` on the home, its access log counted."""

    def __init__(self, home: Path, env: dict[str, str]):
        self.proc = subprocess.Popen(busca(home, "serve", "--port", "0", "--no-log"),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**env, "PYTHONUNBUFFERED": "1"})
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self.proc.kill()
            raise SystemExit(f"busca serve did not start: {self.proc.stderr.read()}")
        self.searches = 0
        threading.Thread(target=self._count, daemon=True).start()

    def _count(self) -> None:
        for line in self.proc.stderr:
            self.searches += "GET /api/search" in line

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


def build(home: Path, size: str, dense: str, env: dict[str, str], work: Path) -> str:
    """Index the corpus into `home`; its label."""
    if size != "fixture":
        import bench_session  # noqa: PLC0415

        print(f"building {int(size):,} synthetic chunks…", file=sys.stderr)
        bench_session.build_synthetic(home, int(size), work)
        return (f"{int(size):,} synthetic chunks (tfidf, bm25; random vectors as use's,"
                " the question encoded by use)")
    subprocess.run(busca(home, "add", str(ARTICLES)), check=True, capture_output=True, env=env)
    command = ["index"] + (["--dense", dense] if dense != "none" else [])
    print(f"indexing the fixture corpus ({' '.join(command)})…", file=sys.stderr)
    subprocess.run(busca(home, *command), check=True, capture_output=True, env=env)
    return f"fixture corpus (39 articles, 201 chunks; busca {' '.join(command)})"


def row(label: str, low: float, mid: float, goal: float | None = None) -> None:
    shown = f"{goal:>8.1f}" if goal is not None else f"{'':>8}"
    print(f"{label:<58}{low:>8.3f}{mid:>10.3f}{shown}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=positive_int, default=7)
    parser.add_argument("--dense", default="use", help="encoder for dense/hybrid, or none")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--sizes", type=sizes_or_fixture, default="fixture",
                        help="comma-separated: fixture and/or numbers of synthetic chunks")
    args = parser.parse_args()
    env = environment()
    work = args.work or Path(tempfile.mkdtemp(prefix="busca-cli-"))
    print(f"python {platform.python_version()}, one BLAS/OpenMP thread per process, bytecode"
          f" cached; {args.runs} runs after one warm-up; {machine()}")
    print(f"{'command (configuration)':<58}{'min s':>8}{'median s':>10}{'goal s':>8}")
    for label, code in (("python -c 'import numpy'", "import numpy"),
                        ("python -c 'import busca.cli'", "import busca.cli")):
        row(label, *wall([sys.executable, "-c", code], args.runs, env))
    try:
        for size in args.sizes:
            home = work / f"home-{size}"
            label = build(home, size, args.dense, env, work)
            print(f"\n{label}; load average {os.getloadavg()[0]:.2f}", flush=True)
            dense = args.dense != "none" or size != "fixture"
            measure(home, ["tfidf", "bm25"] + (["dense", "hybrid"] if dense else []),
                    args.runs, env)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


def measure(home: Path, methods: list[str], runs: int, env: dict[str, str]) -> None:
    medians: dict[tuple[str, str], float] = {}
    for method in methods:
        command = busca(home, "search", QUERY, "--method", method, "--no-log", "--no-serve")
        low, mid = wall(command, runs, env)
        row(f"busca search Q --method {method} (alone: --no-serve)", low, mid, GOALS[method])
        medians["alone", method] = mid
    server = Serve(home, env)
    try:
        for method in methods:
            before = server.searches
            low, mid = wall(busca(home, "search", QUERY, "--method", method, "--no-log"),
                            runs, env)
            time.sleep(0.2)  # the last access-log line
            served = server.searches - before
            row(f"busca search Q --method {method} (via serve: {served}/{runs + 1} asked)",
                low, mid, GOALS[method])
            medians["via serve", method] = mid
    finally:
        server.stop()
    for where in ("alone", "via serve"):
        met = [f"{m} {'met' if medians[where, m] <= GOALS[m] else 'MISSED'}" for m in methods]
        print(f"goals {where} (median wall <= goal): " + ", ".join(met))


if __name__ == "__main__":
    guarded(main)
