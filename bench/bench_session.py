"""Per-question latency inside `busca shell`, per method, against one-shot `busca search`.

    python bench/bench_session.py [--sizes fixture,100000] [--questions 50] [--work DIR]

What a person waits for: each method runs in a fresh process that loads the index and
starts a `shell.Session` (the very object `busca shell` drives: scorers loaded, the encoder
warmed), then asks the questions one at a time as typed lines through `Session.handle`,
output rendered as for a person (highlighted snippets) into a sink. "start" is loading the
index plus starting the session; "first" the first question; p50/p95/mean over the others.
The peer it replaces is the one-shot command: `busca search QUESTION --method M --no-log`
as a new process each time (median wall time of 3 runs), which re-imports everything and
re-loads the encoder. Every process runs with one BLAS/OpenMP thread (single-thread queries,
as in bench_lexical.py).

Corpora:
- `fixture`: the bundled site (39 articles, 201 chunks), indexed with `--dense use`; the
  bundled golden set's questions.
- `N` (e.g. 100000): bench_lexical.py's synthetic FaQuAD chunks (one 200-word window per
  document), tfidf and bm25 built for real; dense vectors are random unit vectors of USE's
  512 dimensions saved as the index's dense array (encoding 100k chunks would take 30 min
  here and does not change the per-question cost: the question is still encoded by the real
  USE model, then a 100k x 512 product, the top-k and the fusion run as they would).
  FaQuAD's questions.
Goal: hybrid <= 50 ms per question after the first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cli_errors import guarded, positive_int, sizes_or_fixture
from machine import machine

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SITE = REPO / "fixtures" / "site" / "articles.jsonl"
GOLDEN = REPO / "fixtures" / "golden" / "golden.json"
FAQUAD = REPO / "fixtures" / "faquad" / "dataset.json"
METHODS = ("tfidf", "bm25", "dense", "hybrid")
GOAL_MS = 50.0
ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                               "NUMBA_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")}
ONE_SHOT_RUNS = 3


def build_fixture(home: Path) -> list[str]:
    from busca.crawler.files import read_files
    from busca.index import LocalHome, build_index
    with LocalHome(home) as store:
        for doc in read_files([str(SITE)]):
            store.put(doc)
        build_index(store, methods=METHODS, options={"dense": "use"})
    return [q["pergunta"] for q in json.loads(GOLDEN.read_text(encoding="utf-8"))]


def build_synthetic(home: Path, n: int, work: Path) -> list[str]:
    """n synthetic chunks with tfidf and bm25, plus random 512-d vectors as `use` vectors."""
    import bench_lexical
    import lexical_systems
    from busca.index import LocalHome, build_index, get_encoder
    from busca.index.home import storage
    words, questions = bench_lexical.faquad_words_and_questions(FAQUAD)
    corpus = work / f"corpus-{n}.txt"
    bench_lexical.make_corpus(words, n, corpus)
    lexical_systems.busca_store({"work": str(work), "size": n, "corpus": str(corpus)})
    (work / f"busca-{n}").rename(home)
    with LocalHome(home) as store:
        build_index(store, methods=("tfidf", "bm25"))
        index = store.current()
    vectors = np.random.default_rng(0).standard_normal((n, 512)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    storage.save_array(index.path, "dense.vectors", vectors)
    encoder = get_encoder("use")
    storage.update_manifest(index, {"methods": {
        "dense": {"encoder": "use", "encoder_version": encoder.version, "dimension": 512,
                  "max_length": encoder.max_length, "encoded": n, "reused": 0,
                  "truncated": 0, "chunks_per_second": None, "floor": None,
                  "note": "random vectors (bench_session.py)"},
        "hybrid": {"fusion": {}, "floor": None}}})
    return questions


def worker(cfg: dict) -> dict:
    """One method in this fresh process: start the session, then ask every question."""
    started = time.perf_counter()
    from busca import display, shell
    from busca.index import LocalHome
    store = LocalHome(cfg["home"])
    index = store.current()
    out: list[str] = []
    session = shell.Session(index, store, shell.Settings(method=cfg["method"], k=3),
                            style=display.Style(), log=False,
                            echo=lambda text="", **_: out.append(text))
    start = time.perf_counter() - started
    times = []
    for question in cfg["questions"]:
        t = time.perf_counter()
        session.handle(question)
        times.append((time.perf_counter() - t) * 1000)
    rest = times[1:]
    return {"start_s": start, "first_ms": times[0], "p50": statistics.median(rest),
            "p95": float(np.percentile(rest, 95)), "mean": statistics.fmean(rest),
            "questions": len(times), "answered": session.answered}


def one_shot(home: Path, method: str, question: str) -> float:
    """Median wall time of `busca search` as a new process."""
    env = {**os.environ, **ONE_THREAD, "BUSCA_HOME": str(home)}
    times = []
    for _ in range(ONE_SHOT_RUNS):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "from busca.cli import main; main()", "search",
                        question, "--method", method, "--no-log"], env=env, check=True,
                       capture_output=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run_worker(home: Path, method: str, questions: list[str]) -> dict:
    cfg = {"home": str(home), "method": method, "questions": questions}
    done = subprocess.run([sys.executable, __file__, "--worker"], input=json.dumps(cfg),
                          capture_output=True, text=True, env={**os.environ, **ONE_THREAD})
    if done.returncode:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"the {method} session failed")
    return json.loads(done.stdout.splitlines()[-1])


def measure(label: str, home: Path, questions: list[str]) -> None:
    print(f"\n{label}  (k=3, {len(questions)} questions per method, one process each;"
          f" peer: `busca search QUESTION --method M --no-log` as a new process, median of"
          f" {ONE_SHOT_RUNS} runs)")
    print(f"{'method':<8} {'start s':>8} {'first ms':>9} {'p50 ms':>8} {'p95 ms':>8}"
          f" {'mean ms':>8}   {'one-shot busca search s':>23}")
    for method in METHODS:
        print(f"[{label}] {method}…", file=sys.stderr, flush=True)
        r = run_worker(home, method, questions)
        shot = one_shot(home, method, questions[0])
        goal = ("  goal <= 50 ms: " + ("met" if r["p50"] <= GOAL_MS else "MISSED")
                if method == "hybrid" else "")
        print(f"{method:<8} {r['start_s']:>8.2f} {r['first_ms']:>9.1f} {r['p50']:>8.1f}"
              f" {r['p95']:>8.1f} {r['mean']:>8.1f}   {shot:>23.2f}{goal}", flush=True)


def corpora(sizes, work: Path):
    """(size, home, questions, label) for each of `sizes`: the fixture site, or that many
    synthetic chunks, built in a new home under `work` (shared with bench_serve.py)."""
    for size in sizes:
        home = work / f"home-{size}"
        if home.exists():
            raise SystemExit(f"{home} exists; remove it or pick another --work")
        if size == "fixture":
            yield size, home, build_fixture(home), "fixture site (201 chunks, real USE vectors)"
        else:
            yield (size, home, build_synthetic(home, int(size), work),
                   f"{int(size):,} synthetic chunks (random vectors, real USE query encoding)")


def main() -> None:
    if "--worker" in sys.argv:
        print(json.dumps(worker(json.loads(sys.stdin.read()))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=sizes_or_fixture, default="fixture,100000",
                        help="comma-separated: fixture and/or numbers of synthetic chunks")
    parser.add_argument("--questions", type=positive_int, default=50)
    parser.add_argument("--work", default=None, help="Folder for the corpora (default: temp).")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="busca-bench-session-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"python {sys.version.split()[0]}, one BLAS/OpenMP thread per process; {machine()};"
          f" corpora in {work}" + ("" if args.work else " (removed at the end)"))
    try:
        for _size, home, questions, label in corpora(args.sizes, work):
            measure(label, home, questions[:args.questions])
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    guarded(main)
