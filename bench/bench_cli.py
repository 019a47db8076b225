"""Wall time of `busca search` as a person at the terminal waits for it, per method, on the
fixture corpus (the 39 FaQuAD articles of fixtures/site, 200-word windows).

    python bench/bench_cli.py [--runs 7] [--dense use|none] [--work DIR]

Each figure is a whole process (`python -m busca.cli --home H search Q --method M`), run
`--runs` times after one warm-up run (file cache warm), one thread for BLAS/OpenMP; printed:
minimum and median seconds. Beside them, the same interpreter doing only `import numpy` and
only `import busca.cli`, the floor under any command. The goal (issue 14): tfidf and bm25
<= 0.3 s; dense and hybrid <= 1 s (they load the encoder in each process).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARTICLES = Path(__file__).resolve().parent.parent / "fixtures" / "site" / "articles.jsonl"
QUERY = "qual foi a primeira universidade do Brasil?"
ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
GOALS = {"tfidf": 0.3, "bm25": 0.3, "dense": 1.0, "hybrid": 1.0}


def wall(args: list[str], runs: int) -> tuple[float, float]:
    """Minimum and median wall seconds of a fresh interpreter running args."""
    env = {**os.environ, **ONE_THREAD}
    subprocess.run(args, env=env, check=True, capture_output=True)  # warm-up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(args, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times)


def busca(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "busca.cli", "--home", str(home), *args]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--dense", default="use", help="encoder for dense/hybrid, or none")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="busca-cli-"))
    home = work / "home"
    subprocess.run(busca(home, "add", str(ARTICLES)), check=True, capture_output=True)
    build = ["index"] + (["--dense", args.dense] if args.dense != "none" else [])
    print(f"indexing the fixture corpus ({' '.join(build)})…", file=sys.stderr)
    subprocess.run(busca(home, *build), check=True, capture_output=True)
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{'command':<44}{'min s':>8}{'median s':>10}{'goal s':>8}")
    for label, code in (("python -c 'import numpy'", "import numpy"),
                        ("python -c 'import busca.cli'", "import busca.cli")):
        low, mid = wall([sys.executable, "-c", code], args.runs)
        print(f"{label:<44}{low:>8.3f}{mid:>10.3f}{'':>8}")
    methods = ["tfidf", "bm25"] + (["dense", "hybrid"] if args.dense != "none" else [])
    met = []
    for method in methods:
        low, mid = wall(busca(home, "search", QUERY, "--method", method, "--no-log"), args.runs)
        print(f"{'busca search Q --method ' + method:<44}{low:>8.3f}{mid:>10.3f}"
              f"{GOALS[method]:>8.1f}")
        met.append(f"{method} {'met' if mid <= GOALS[method] else 'MISSED'}")
    print("goals (median wall <= goal): " + ", ".join(met))


if __name__ == "__main__":
    main()
