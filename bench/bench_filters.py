"""Filtered search against unfiltered (issue #26): bm25 and dense top-10 query time at N chunks
with filters keeping 50 %, 5 % and 0.1 % of the chunks, beside the unfiltered query.

    python bench/bench_filters.py                      # 1,000,000 chunks (the docs' figure)
    python bench/bench_filters.py --chunks 100000      # a quick run
    python bench/bench_filters.py --chunks 100000 --numba off   # the numpy paths

- bm25: bench/zipf_corpus.py's held-out corpus (one 200-word chunk per document) stored and
  built through the real path (`build_index`, bm25 only), ranked by the index's Bm25Scorer;
  questions from zipf_corpus.py's own stream, all different.
- dense: N random unit vectors of 384 dimensions (2/3 random, 1/3 noisy copies of earlier
  ones, seeded) saved as an index's `dense.vectors.npy` and searched by DenseScorer, the
  index's own path (the int8 first pass and float64 rescoring when numba is on and N >= 100k,
  else the float32 product); queries: noisy copies of stored vectors, given as encoded (no
  model: search time alone), all different.

Both rankers are prepared as `busca serve` prepares them before its first request (window
tables and codes; the int8 copy). A filter is a boolean mask over the chunk ids (what
search/filters.py's `allowed` makes from the documents' metadata; making it is not timed),
random at each density, seeded; a few masks per density are used in turn. Every query is
asked once: the question stream is dealt out in turn to the four rows (unfiltered, 50 %,
5 %, 0.1 %), so no row meets a question another row has asked. Timed: `top(query, 10)`
unfiltered, `restricted(ranker, mask).top(query, 10)` filtered (search/filters.py), one
thread. Goal: no filtered p50 above 2x the unfiltered p50.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "NUMBA_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):  # one thread, as a query has
    os.environ.setdefault(_name, "1")
os.environ.setdefault("BUSCA_NUMBA_LOAD", "wait")  # kernels loaded before timing

import argparse  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import dense_systems  # noqa: E402
import zipf_corpus  # noqa: E402
from dense_systems import _unit  # noqa: E402
from lexical_systems import busca_store  # noqa: E402
from cli_errors import names, positive_int  # noqa: E402
from machine import cpu  # noqa: E402

DENSITIES = (1.0, 0.5, 0.05, 0.001)  # 1.0: unfiltered
MASKS = 4  # masks per density, used in turn
DIMENSION = 384


def masks(n: int, seed: int = 26) -> dict[float, list[np.ndarray]]:
    """MASKS random boolean masks over n chunk ids per density (None: unfiltered)."""
    rng = np.random.default_rng(seed)
    return {d: [None] if d == 1.0 else [rng.random(n) < d for _ in range(MASKS)]
            for d in DENSITIES}


def timed(ranker, queries: list, masks_by_density: dict) -> dict[float, np.ndarray]:
    """Query i goes to density i % 4 (each asked once); ms per query, by density."""
    from busca.index.lexical.lexical import NoSearchableTerms
    from busca.search.filters import restricted

    times: dict[float, list[float]] = {d: [] for d in DENSITIES}
    for i, query in enumerate(queries):
        density = DENSITIES[i % len(DENSITIES)]
        found = masks_by_density[density]
        mask = found[(i // len(DENSITIES)) % len(found)]
        started = time.perf_counter()
        try:
            (ranker if mask is None else restricted(ranker, mask)).top(query, 10)
        except NoSearchableTerms:
            continue  # (a question of words the index lacks: not a ranking)
        times[density].append((time.perf_counter() - started) * 1000)
    return {d: np.array(t) for d, t in times.items()}


def bm25_index(n: int, work: Path) -> Path:
    """The bm25 index of n held-out chunks (made once per --work)."""
    from busca.index import LocalHome
    from busca.index.build import build_index
    from busca.index.home.storage import current_dir

    home = work / f"busca-{n}"
    if current_dir(home) is None:
        corpus = work / f"corpus-{n}.txt"
        step(f"making {n:,} chunks of the held-out corpus")
        zipf_corpus.make_corpus(n, corpus)
        step("filling the store")
        busca_store({"work": str(work), "size": n, "corpus": str(corpus)})
        step("building bm25")
        with LocalHome(home) as store:
            build_index(store, methods=("bm25",))
        corpus.unlink()
    return home


def bm25(home: Path, count: int) -> dict[float, np.ndarray]:
    from busca import search as core
    from busca.index import compiled
    from busca.index.home.storage import load_index

    index = load_index(home)
    ranker = core.scorer(index, "bm25")
    ranker.prepare()
    compiled.wait_ready()
    questions = zipf_corpus.questions(count * len(DENSITIES) + 3)
    for q in questions[:3]:  # the kernels' first calls (not timed)
        ranker.top(q, 10)
    step(f"bm25: {count * len(DENSITIES)} questions")
    return timed(ranker, questions[3:], masks(index.manifest.chunks))


class _Given(dense_systems._Given):
    """Stands in for an encoder: the precomputed query vectors in turn."""

    dimension = DIMENSION


def dense_vectors(n: int, work: Path) -> Path:
    """The folder of n unit vectors (made once per --work)."""
    folder = work / f"dense-{n}"
    rng = np.random.default_rng(0)
    if not (folder / "dense.vectors.npy").exists():
        step(f"making {n:,} unit vectors of {DIMENSION} dimensions")
        folder.mkdir(parents=True, exist_ok=True)
        out = np.lib.format.open_memmap(folder / "dense.vectors.npy", mode="w+",
                                        dtype=np.float32, shape=(n, DIMENSION))
        for lo in range(0, n, 1 << 16):
            block = rng.standard_normal((min(1 << 16, n - lo), DIMENSION), dtype=np.float32)
            copies = np.flatnonzero(rng.random(block.shape[0]) < 1 / 3)
            if lo:  # noisy copies of earlier vectors: queries have real near neighbours
                block[copies] = out[np.sort(rng.integers(0, lo, copies.size))] + 0.5 * \
                    rng.standard_normal((copies.size, DIMENSION), dtype=np.float32) / 20
            out[lo:lo + block.shape[0]] = _unit(block)
        out.flush()
        del out
    return folder


def dense(folder: Path, count: int) -> dict[float, np.ndarray]:
    from busca.index.dense.vectors import DenseScorer
    from busca.index.home.manifest import Manifest
    from busca.index.home.storage import Index, load_array

    rng = np.random.default_rng(2)
    vectors = load_array(folder, "dense.vectors")
    n = vectors.shape[0]
    total = count * len(DENSITIES) + 3
    rows = np.random.default_rng(1).integers(0, n, total)
    queries = _unit(vectors[np.sort(rows)] + 0.7 * rng.standard_normal(
        (total, DIMENSION), dtype=np.float32) / np.sqrt(DIMENSION))
    manifest = Manifest(build=folder.name, chunker={}, documents=n, chunks=n,
                        methods={"dense": {"encoder": "given", "encoder_version": "1",
                                           "dimension": DIMENSION}})
    ranker = DenseScorer(Index(folder, folder, manifest), encoder=_Given(queries))
    ranker.prepare()  # the int8 copy, as busca serve makes it
    for _ in range(3):
        ranker.top("q", 10)
    step(f"dense: {count * len(DENSITIES)} queries")
    return timed(ranker, ["q"] * (total - 3), masks(n))


def step(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}…", file=sys.stderr, flush=True)


def configuration(n: int, numba: str) -> str:
    """CPU and its flags, numba, N, load: what the figures depend on."""
    return (f"{n:,} chunks; CPU: {cpu()};"
            f" numba {numba}; {os.cpu_count()} CPUs, load average"
            f" {os.getloadavg()[0]:.2f}; one query thread; top 10")


def numba_state(asked: str) -> str:
    if asked == "off":
        return "off (BUSCA_NUMBA=0)"
    from busca.index import compiled
    loaded = compiled.module("maxscore_numba")
    return f"on (numba {loaded.numba.__version__})" if loaded is not None else "off (not installed)"


def table(rows: dict[str, dict[float, np.ndarray]]) -> list[str]:
    """The markdown table, and the goal line per method."""
    out = ["| method | filter keeps | queries | p50 ms | p95 ms | p50 / unfiltered |",
           "|---|---|---|---|---|---|"]
    goals = []
    for method, times in rows.items():
        base = float(np.percentile(times[1.0], 50))
        worst = 0.0
        for d in DENSITIES:
            t = times[d]
            p50, p95 = float(np.percentile(t, 50)), float(np.percentile(t, 95))
            worst = max(worst, p50 / base) if d != 1.0 else worst
            label = "all (unfiltered)" if d == 1.0 else f"{d:.1%}"
            out.append(f"| {method} | {label} | {t.size} | {p50:.2f} | {p95:.2f} |"
                       f" {p50 / base:.2f}x |")
        goals.append(f"{'met' if worst <= 2 else 'NOT met'}: {method} slowest filtered p50 ="
                     f" {worst:.2f}x the unfiltered (goal <= 2x)")
    return out + [""] + goals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=positive_int, default=1_000_000)
    parser.add_argument("--queries", type=positive_int, default=200, help="Queries per row.")
    parser.add_argument("--methods", type=names(("bm25", "dense"), "method"),
                        default="bm25,dense",
                        help="bm25 and/or dense, comma-separated (default both).")
    parser.add_argument("--numba", choices=("on", "off"), default="on",
                        help="off: the numpy paths (BUSCA_NUMBA=0) for the queries.")
    parser.add_argument("--work", type=Path, default=None,
                        help="Where the corpus, index and vectors go (kept; default: a"
                             " temporary folder, removed).")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="busca-filters-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        rows = {}
        for method in args.methods:
            made = {"bm25": bm25_index, "dense": dense_vectors}[method](args.chunks, work)
            if args.numba == "off":  # after the build (which keeps its compiled loops)
                os.environ["BUSCA_NUMBA"] = "0"
            rows[method] = {"bm25": bm25, "dense": dense}[method](made, args.queries)
            os.environ.pop("BUSCA_NUMBA", None)
        print(configuration(args.chunks, numba_state(args.numba)))
        print("\n".join(table(rows)))
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    from cli_errors import guarded
    guarded(main)
