"""Lexical search side by side: busca `tfidf` and `bm25` against bm25s, tantivy, PISA,
scikit-learn's TfidfVectorizer used naively (`X @ q.T`), rank_bm25 and a dictionary cosine like
the seed's Java program, on synthetic Portuguese corpora of 10k to 1M chunks.

    python bench/bench_lexical.py --sizes 100000,1000000            # held-out corpus, one pass
    python bench/bench_lexical.py --corpus faquad --queries repeat   # the earlier bench
    python bench/bench_lexical.py --dense-only --sizes 10000,100000,1000000 --work DIR --keep

Two corpora (`--corpus`):
- `zipf` (default), held out: bench/zipf_corpus.py's generator, nothing busca was tuned on:
  Portuguese-like stems drawn from a Zipf-Mandelbrot law, with suffixes, function words and
  topic words per chunk, a vocabulary that grows by Heaps' law (about 140k stems at 100k
  chunks, 560k at 1M); questions from another random stream, all different (`--most` of
  them, 3,000 by default).
- `faquad`, the earlier bench: chunk i is a random 200-word window of FaQuAD's 249
  paragraphs (read in order, 30,337 words, 2,884 `pt` terms in all) in which each word is,
  with probability 1/2, replaced by a word drawn at random from the same text, then shuffled
  (numpy seed 0); queries: FaQuAD's 900 questions, shuffled (seed 0).

Two ways to ask (`--queries`):
- `once` (default): every query asked once, in order, from the process's first query on (no
  warm-up), for at most `--budget` seconds: what a user meets. The goals line reads these.
- `repeat`, the earlier bench: 3 warm-up queries, then `--passes` passes over the same (up
  to 400) questions, and more passes (up to 20) until they add up to `--timed` seconds, the
  fastest kept (a shared machine's other work slows some passes by a third or more), the
  first pass's q/s printed beside it.

`--build-rounds B` (default 1) builds every system B times, in turn, each in a fresh process,
and reports each one's median build time (the goals line reads it) with each round's ratio.
`--rounds R` (default 1) runs every system's queries R times after all the builds, each in a
fresh process, the order of the systems reversed every other round: q/s is then all the
rounds' queries over all their time, p50/p99 the rounds' medians, and the table adds each
round's ratio of busca bm25 to every peer. On a machine whose speed drifts (a shared VM: the
same 3,000 questions at 6,590 to 9,938 q/s from one run to the next, docs/bm25.md) one
sequential run decides a ratio by which system met the slow minutes. (bench_paired.py does
the same for busca bm25 and PISA alone on indexes kept from the earlier bench.)

Top 10, one query at a time, in a process whose OpenMP/BLAS pools have one thread. After
every store or build step the files written are flushed to disk (`os.sync`), so that no
system's queries compete with the flush of an index (1.6 GB stayed dirty after busca's 1M
build). Every system runs in a subprocess of its own, so each peak memory is that process's
alone. busca builds through the real path (store -> `build_index`: chunk rows in SQLite, one
tokenising pass on every core), twice from nothing: bm25 alone (`busca index --methods bm25`,
one BM25 index like each peer's: the bm25 row's build and the goal), then the default tfidf
and bm25 (the tfidf row's build; both rows' queries read it); bm25s gets the same Portuguese
Snowball stemmer and stopwords as busca's `pt` analyzer; rank_bm25 gets busca's `pt` terms; the
dictionary cosine gets the Java-parity terms. rank_bm25 and the dictionary cosine run up to
100k chunks only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import zipf_corpus
from cli_errors import guarded, install_hint, names, positive_int, positive_ints
from machine import machine
from measure import WARMUP

HERE = Path(__file__).resolve().parent
FAQUAD = HERE.parent / "fixtures" / "faquad" / "dataset.json"
WINDOW = 200
SLOW_PEERS_MAX = 100_000
PASSES = 3  # passes over the questions per system at least, the fastest kept
TIMED = 2.0  # seconds of passes per system at least (up to measure.MAX_PASSES)
ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                               "NUMBA_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")}
SYSTEMS = ("bm25s", "tantivy", "pisa", "dense", "sklearn", "slow")  # slow: rank_bm25, dict
PEERS = ("bm25s numba", "bm25s numpy", "tantivy", "PISA")  # the strong BM25 peers
GOALS = ("busca bm25 q/s >= 2x the strongest peer at 100k and 1M; p99 <= 1 ms at 100k and <= 2 ms"
         " at 1M; search peak <= 1 GB at 1M; build >= 1.5x faster than the fastest peer's at"
         " 100k and 1M; dense at 1M: p50 <= 100 ms with recall@10 within 0.005 of float32")
GOALS_REPEAT = ("the earlier goals, on the fastest of repeated passes: busca bm25 q/s >= 2x the"
                " strongest peer at 100k and 1M; at 1M p50 <= 2 ms and search peak <= 1 GB;"
                " build >= 1.5x faster than the fastest peer's at 1M; dense at 1M: p50 <= 100"
                " ms with recall@10 within 0.005 of float32")
P99_MS = {100_000: 1.0, 1_000_000: 2.0}  # the one-pass p99 goals
ONCE_BUDGET, ONCE_MOST = 60.0, 3_000  # --queries once: seconds and queries per system


def faquad_words_and_questions(path: Path) -> tuple[np.ndarray, list[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    paragraphs = [p for doc in data for p in doc["paragraphs"]]
    words = " ".join(p["context"] for p in paragraphs).split()
    questions = [qa["question"] for p in paragraphs for qa in p["qas"]]
    random.Random(0).shuffle(questions)
    return np.array(words, dtype=object), questions


def make_corpus(words: np.ndarray, n: int, out: Path) -> None:
    """n synthetic chunks, one per line (see the module docstring)."""
    rng = np.random.default_rng(0)
    with out.open("w", encoding="utf-8") as f:
        for start in range(0, n, 20_000):
            m = min(20_000, n - start)
            pos = (rng.integers(0, words.size, m)[:, None] + np.arange(WINDOW)) % words.size
            pos = np.where(rng.random((m, WINDOW)) < 0.5, pos,
                           rng.integers(0, words.size, (m, WINDOW)))
            pos = np.take_along_axis(pos, rng.random((m, WINDOW)).argsort(axis=1), axis=1)
            f.write("\n".join(map(" ".join, words[pos])) + "\n")


class PeerUnavailable(Exception):
    """A peer that cannot run here (not installed, or failed): reported, not fatal."""


def kept_index_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments of a script reading an index kept by this bench (`--keep`)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="bench_lexical.py's --work.")
    parser.add_argument("--size", type=positive_int, required=True,
                        help="Chunks (an index kept there).")
    return parser


def require_kept(work: Path, size: int, kept: dict[str, str]) -> None:
    """Refuse, in one line, a --work without what a paired bench reads (`kept`: a path under
    --work -> what it is, e.g. "busca-10000/busca.db" -> "busca store"), naming the run that
    keeps it."""
    for path, what in kept.items():
        if not (work / path).exists():
            systems = ",".join(sorted({p.split("-")[0] for p in kept} - {"busca", "corpus"}))
            raise SystemExit(f"no kept {what} in {work} ({path}): run bench_lexical.py with"
                             f" --sizes {size}" + (f" --systems {systems}" if systems else "")
                             + f" --work {work} --keep first")


def subprocess_run(cfg: dict, *, one_thread: bool) -> dict:
    """Run one system in a fresh interpreter; its figures come back as JSON on stdout."""
    env = {**os.environ, **(ONE_THREAD if one_thread else {})}
    done = subprocess.run([sys.executable, str(Path(__file__)), "--worker"], env=env,
                          input=json.dumps(cfg), capture_output=True, text=True)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        if not cfg["runner"].startswith("busca"):
            raise PeerUnavailable(last)
        sys.stderr.write(done.stderr)
        raise SystemExit(f"{cfg['runner']} failed at {cfg['size']} chunks")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(n: int, base: dict, keep: bool, systems: set[str]) -> dict:
    """Every system at n chunks (those of `systems` only, busca always): the builds, then
    base["rounds"] rounds of every system's queries (each in a fresh process; the order
    reversed every other round, so that a machine whose speed drifts weighs on all alike)."""
    def step(label, runner, one_thread=True, **extra):
        print(f"[{n:,}] {label}…", file=sys.stderr, flush=True)
        found = subprocess_run({**base, "size": n, "runner": runner, **extra},
                               one_thread=one_thread)
        if not runner.endswith("-query"):
            os.sync()  # the files just written reach the disk before any query is timed
        return found

    rows: dict = {}
    jobs: list[tuple[str, str, str, dict]] = []  # (row, label, runner, extra) of the queries
    step("filling the busca store (not timed)", "busca-store")
    # bm25's row: bm25 alone (`busca index --methods bm25`), what every peer builds; tfidf's
    # row: the default `busca index` (tfidf and bm25 from one tokenising pass), which the
    # queries of both then read (it is built last in every round)
    builds = [("busca bm25", "busca index --methods bm25", "busca-build", {"methods": "bm25"}),
              ("busca tfidf", "busca index (tfidf + bm25, one pass)", "busca-build", {})]
    builds += [(name, f"{name} build", f"{runner}-build", {})
               for name, runner in (("bm25s", "bm25s"), ("tantivy", "tantivy"), ("PISA", "pisa"))
               if runner in systems]
    built = _run_builds(step, builds, base.get("build_rounds", 1))
    for method in ("tfidf", "bm25"):
        mine = built[f"busca {method}"]
        rows[f"busca {method}"] = {**mine, "size": built["busca tfidf"]["size"][method]}
        jobs.append((f"busca {method}", f"busca {method} queries", "busca-query",
                     {"method": method}))
    if "bm25s" in built:
        for backend in ("numba", "numpy"):
            rows[f"bm25s {backend}"] = dict(built["bm25s"])
            if "config" not in built["bm25s"]:
                jobs.append((f"bm25s {backend}", f"bm25s {backend} queries", "bm25s-query",
                             {"backend": backend}))
    for name, runner in (("tantivy", "tantivy"), ("PISA", "pisa")):
        if name in built:
            rows[name] = built[name]
            if "config" not in built[name]:
                jobs += _peer_jobs(name, runner, base)
    _run_queries(step, rows, jobs, base.get("rounds", 1))
    if "dense" in systems:
        try:
            rows["dense"] = step("busca dense top-10 (given query vectors)", "dense-search")
        except PeerUnavailable as why:
            print(f"dense search not measured at {n:,}: {why}")
        if not keep:
            shutil.rmtree(Path(base["work"]) / f"dense-{n}", ignore_errors=True)
    if "sklearn" in systems:
        rows["sklearn naive"] = _peer_row(step, "scikit-learn TfidfVectorizer", "sklearn")
    if n <= SLOW_PEERS_MAX and "slow" in systems:
        rows["rank_bm25"] = _peer_row(step, "rank_bm25", "rank_bm25", most=20)
        rows["dict cosine"] = _peer_row(step, "dictionary cosine", "dict-cosine", most=10)
    if not keep:
        for name in ("busca", "bm25s", "tantivy", "pisa"):
            shutil.rmtree(Path(base["work"]) / f"{name}-{n}", ignore_errors=True)
    return rows


def _peer_row(step, label: str, runner: str, **extra) -> dict:
    """A peer measured build and queries in one process; one that cannot run is reported."""
    try:
        return step(label, runner, **extra)
    except PeerUnavailable as why:
        return {"config": f"not measured: {why}"}


def _run_builds(step, builds: list, rounds: int) -> dict:
    """Each build `rounds` times, in the order given every round (busca's default build last,
    for the queries), each in a fresh process: per row the median build time, the highest
    peaks and each round's time (`round_build`); a peer that cannot build is not measured."""
    found: dict[str, list[dict]] = {}
    out: dict[str, dict] = {}
    for r in range(rounds):
        for row, label, runner, extra in builds:
            if row in out:
                continue  # unavailable
            suffix = f", round {r + 1} of {rounds}" if rounds > 1 else ""
            try:
                found.setdefault(row, []).append(
                    step(label + suffix, runner, one_thread=False, **extra))
            except PeerUnavailable as why:
                out[row] = {"config": f"not measured: {why}"}
    for row, results in found.items():
        if row in out:
            continue
        times = [r["build"] for r in results]
        out[row] = {**results[-1], "build": float(np.median(times)), "round_build": times}
        for key in ("build_peak", "workers_peak"):
            if key in results[-1]:
                out[row][key] = max(r[key] for r in results)
    return out


def _peer_jobs(name: str, runner: str, base: dict) -> list[tuple[str, str, str, dict]]:
    """A peer's query jobs; PISA's two algorithms each in a process of its own when every
    query is asked once (neither meets a query the other has asked), the faster kept."""
    if runner != "pisa" or not base.get("once"):
        return [(name, f"{name} queries", f"{runner}-query", {})]
    from lexical_peers import ALGORITHMS
    return [(f"{name}#{a}", f"{name} queries ({a})", f"{runner}-query", {"algorithm": a})
            for a in ALGORITHMS]


def _run_queries(step, rows: dict, jobs: list, rounds: int) -> None:
    """Each job's queries `rounds` times, in order then reversed, alternately; each row gets
    its rounds combined (`combined`), PISA the faster of its algorithms."""
    found: dict[str, list[dict]] = {}
    for r in range(rounds):
        for row, label, runner, extra in (jobs if r % 2 == 0 else jobs[::-1]):
            suffix = f", round {r + 1} of {rounds}" if rounds > 1 else ""
            try:
                found.setdefault(row, []).append(step(label + suffix, runner, **extra))
            except PeerUnavailable as why:
                rows[row.partition("#")[0]] = {"config": f"not measured: {why}"}
    for row, results in found.items():
        name = row.partition("#")[0]
        if "config" in rows.get(name, {}) and "build" not in rows[name]:
            continue
        mine = combined(results)
        if "#" in row and rows[name].get("qps", 0) >= mine["qps"]:
            continue  # PISA's other algorithm was faster
        rows[name] = {**rows.get(name, {}), **mine}


def combined(results: list[dict]) -> dict:
    """One system's query figures over rounds: q/s of all the queries over all their time,
    the medians of the rounds' latencies and load, the highest peak, each round's q/s."""
    if len(results) == 1:
        return results[0]
    out = dict(results[0])
    seconds = sum(r["queries"] / r["qps"] for r in results)
    out["queries"] = sum(r["queries"] for r in results)
    out["qps"] = out["queries"] / seconds
    for key in ("p50", "p99", "p99_cpu", "first_ms", "first_qps", "load"):
        if key in out:
            out[key] = float(np.median([r[key] for r in results]))
    out["search_peak"] = max(r["search_peak"] for r in results)
    out["round_qps"] = [r["qps"] for r in results]
    return out


def _cell(value, fmt: str) -> str:
    width = int(fmt.split(".")[0])
    return "—".rjust(width) if value is None else format(value, fmt)


def print_table(n: int, rows: dict, once: bool = False) -> None:
    print(f"\n{n:,} chunks")
    print(f"{'system':<14}{'build s':>9}{'index MB':>10}{'load s':>8}{'build peak MB':>15}"
          f"{'search peak MB':>16}{'q/s':>9}{'1st q ms' if once else '1st pass':>9}"
          f"{'p50 ms':>9}{'p99 ms':>9}{format('p99 CPU', '>9') if once else ''}"
          f"{'busca bm25 q/s / q/s':>22}{'build s / busca':>17}")
    bm25 = rows["busca bm25"]
    for name, r in rows.items():
        if "qps" not in r or name == "dense":
            continue
        print(f"{name:<14}{_cell(r.get('build'), '9.1f')}{_cell(r.get('size'), '10.0f')}"
              f"{_cell(r.get('load'), '8.2f')}{_cell(r.get('build_peak'), '15.0f')}"
              f"{_cell(r.get('search_peak'), '16.0f')}{_cell(r.get('qps'), '9.1f')}"
              f"{_cell(r.get('first_ms' if once else 'first_qps'), '9.1f')}"
              f"{_cell(r.get('p50'), '9.2f')}{_cell(r.get('p99'), '9.2f')}"
              f"{_cell(r.get('p99_cpu'), '9.2f') if once else ''}"
              f"{bm25['qps'] / r['qps']:>21.2f}x{r['build'] / bm25['build']:>16.2f}x")
    for name, r in rows.items():
        if r.get("config"):
            print(f"  {name}: {r['config']}")
    if "dense" in rows:
        print_dense(rows["dense"])
    _print_rounds(rows)
    workers = bm25.get("workers_peak", 0)
    print("  busca: bm25's build s is `busca index --methods bm25` (what the peers build),"
          " tfidf's the default `busca index`, which builds tfidf and bm25 with one tokenising"
          " pass" + (f" ({bm25['build_config']})" if bm25.get("build_config") else "")
          + "; build s, build peak MB: main process"
          + (f" (its tokenising workers peaked at {workers:.0f} MB)" if workers else "")
          + "; peers without an index file: search peak includes the build")


def _print_rounds(rows: dict) -> None:
    """With --rounds: each round's q/s ratio of busca bm25 to each peer; with --build-rounds,
    each round's build ratio of each peer to busca bm25 (their spread is the machine's
    drift)."""
    mine = rows["busca bm25"].get("round_qps")
    for name, r in rows.items():
        if mine and name != "busca bm25" and r.get("round_qps"):
            ratios = [b / p for b, p in zip(mine, r["round_qps"])]
            print(f"  busca bm25 / {name}, round by round: "
                  + ", ".join(f"{x:.2f}x" for x in ratios))
    mine = rows["busca bm25"].get("round_build")
    for name, r in rows.items():
        if mine and len(mine) > 1 and name != "busca bm25" and r.get("round_build"):
            ratios = [p / b for b, p in zip(mine, r["round_build"])]
            print(f"  build, {name} / busca bm25, round by round: "
                  + ", ".join(f"{x:.2f}x" for x in ratios))


def print_dense(d: dict) -> None:
    print(f"  dense, 512-d, top 10: {d['qps']:,.1f} q/s, p50 {d['p50']:.2f} ms, p99"
          f" {d['p99']:.2f} ms, recall@10 against exhaustive float32 {d['recall']:.3f};"
          f" the float32 product alone: p50 {d['float32_p50']:.1f} ms; int8 copy and first"
          f" search {d['prepare']:.1f} s; {d['vectors_mb']:.0f} MB of vectors; search peak"
          f" {d['search_peak']:.0f} MB")


def dense_goal(n: int, d: dict) -> tuple[str, bool]:
    return (f"{n:,}: dense p50 {d['p50']:.1f} ms <= 100 ms, recall@10 {d['recall']:.3f} >="
            " 0.995 of float32", d["p50"] <= 100 and d["recall"] >= 0.995)


def dense_only(sizes: list[int], base: dict, keep: bool) -> None:
    """`--dense-only`: the dense search at each size, no lexical system."""
    for n in sizes:
        print(f"[{n:,}] busca dense top-10 (given query vectors)…", file=sys.stderr, flush=True)
        d = subprocess_run({**base, "size": n, "runner": "dense-search"}, one_thread=True)
        print(f"\n{n:,} chunks")
        print_dense(d)
        if n >= 1_000_000:
            label, ok = dense_goal(n, d)
            print(f"  {'met ' if ok else 'MISSED'}  {label}")
        if not keep:
            shutil.rmtree(Path(base["work"]) / f"dense-{n}", ignore_errors=True)


def _qps_check(n: int, bm25: dict, peers: dict, first: bool) -> tuple[str, bool]:
    strongest = max(peers, key=lambda p: peers[p]["qps"])
    ratio = bm25["qps"] / peers[strongest]["qps"]
    note = ""
    if first and bm25.get("first_qps") and peers[strongest].get("first_qps"):
        note = f"; first passes {bm25['first_qps'] / peers[strongest]['first_qps']:.2f}x"
    return (f"{n:,}: busca bm25 {bm25['qps']:,.0f} q/s = {ratio:.2f}x the strongest peer"
            f" ({strongest}, {peers[strongest]['qps']:,.0f} q/s) >= 2x{note}", ratio >= 2)


def _build_check(n: int, rows: dict, peers: dict) -> tuple[str, bool]:
    """bm25 alone against the fastest peer's build; the default build's ratio beside it."""
    bm25, both = rows["busca bm25"], rows.get("busca tfidf", {})
    fastest = min(peers, key=lambda p: peers[p]["build"])
    ratio = peers[fastest]["build"] / bm25["build"]
    note = (f"; the default build (tfidf + bm25) {both['build']:.1f} s ="
            f" {peers[fastest]['build'] / both['build']:.2f}x" if both.get("build") else "")
    return (f"{n:,}: busca bm25 build {bm25['build']:.1f} s = {ratio:.2f}x faster than the"
            f" fastest peer's ({fastest}, {peers[fastest]['build']:.1f} s) >= 1.5x{note}",
            ratio >= 1.5)


def _peak_checks(n: int, rows: dict) -> list[tuple[str, bool]]:
    bm25 = rows["busca bm25"]
    checks = [(f"{n:,}: busca bm25 search peak {bm25['search_peak']:.0f} MB <= 1024 MB",
               bm25["search_peak"] <= 1024)]
    return checks + ([dense_goal(n, rows["dense"])] if "dense" in rows else [])


def check_goals_once(results: dict) -> list[tuple[str, bool]]:
    """The goals, read from the one-pass figures (`--queries once`)."""
    checks = []
    for n, rows in results.items():
        if n < 100_000:
            continue
        peers = {p: rows[p] for p in PEERS if "qps" in rows.get(p, {})}
        bm25 = rows["busca bm25"]
        if peers:
            checks += [_qps_check(n, bm25, peers, False), _build_check(n, rows, peers)]
        limit = P99_MS[1_000_000] if n >= 1_000_000 else P99_MS[100_000]
        checks.append((f"{n:,}: busca bm25 p99 {bm25['p99']:.2f} ms <= {limit:g} ms",
                       bm25["p99"] <= limit))
        if n >= 1_000_000:
            checks += _peak_checks(n, rows)
    return checks


def check_goals(results: dict) -> list[tuple[str, bool]]:
    """The earlier goals, on the fastest of repeated passes (`--queries repeat`)."""
    checks = []
    for n, rows in results.items():
        peers = {p: rows[p] for p in PEERS if "qps" in rows.get(p, {})}
        if n < 100_000 or not peers:
            continue
        bm25 = rows["busca bm25"]
        checks.append(_qps_check(n, bm25, peers, True))
        if n >= 1_000_000:
            checks += [_build_check(n, rows, peers),
                       (f"{n:,}: busca bm25 p50 {bm25['p50']:.2f} ms <= 2 ms", bm25["p50"] <= 2)]
            checks += _peak_checks(n, rows)
    return checks


LABELS = {"zipf": "held-out generated Portuguese (bench/zipf_corpus.py)",
          "faquad": "FaQuAD words (the earlier bench, 2,884 pt terms in all)",
          "once": "every query asked once, no warm-up (the goals read these)",
          "repeat": "fastest of repeated passes over the same questions (the earlier bench)"}


def _corpus(args, chunks: int, most: int, work: Path) -> tuple[Path, list[str]]:
    """The corpus file of `chunks` lines and the questions (`--corpus`)."""
    corpus = work / f"corpus-{chunks}.txt"  # the name bench_build_paired.py reads
    if args.corpus == "zipf":
        print(f"making {chunks:,} chunks of the held-out corpus…", file=sys.stderr)
        zipf_corpus.make_corpus(chunks, corpus)
        return corpus, zipf_corpus.questions(most + WARMUP)
    words, questions = faquad_words_and_questions(args.faquad)
    print(f"making {chunks:,} chunks from {words.size:,} FaQuAD words…", file=sys.stderr)
    make_corpus(words, chunks, corpus)
    return corpus, questions


def print_goals(checks: list[tuple[str, bool]]) -> None:
    for label, ok in checks:
        print(f"  {'met ' if ok else 'MISSED'}  {label}")
    if not checks:
        print("  none applies to this run (they are read at 100,000 chunks and more, the"
              " ratios against bm25s, tantivy or PISA)")


def worker(cfg: dict) -> None:
    """One system's run in this fresh process (`--worker`), its figures as JSON on stdout; a
    missing package ends it with one line naming what installs it."""
    from lexical_systems import run
    try:
        found = run(cfg)
    except ImportError as e:
        raise SystemExit(f"{e} — {install_hint(e.name)}") from None
    print(json.dumps(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=positive_ints, default="10000,100000,1000000",
                        help="Chunks, comma-separated (default 10000,100000,1000000).")
    parser.add_argument("--corpus", choices=("zipf", "faquad"), default="zipf",
                        help="zipf: the held-out generated corpus and questions (default);"
                        " faquad: the earlier bench's FaQuAD words and questions.")
    parser.add_argument("--queries", choices=("once", "repeat"), default="once",
                        help="once: every query asked once, no warm-up, the goals read from"
                        " it (default); repeat: the earlier bench's fastest of repeated"
                        " passes.")
    parser.add_argument("--faquad", type=Path, default=FAQUAD,
                        help="FaQuAD's dataset.json for --corpus faquad (default: the"
                             " bundled fixtures/faquad/dataset.json).")
    parser.add_argument("--work", type=Path, default=None,
                        help="Folder for corpora and indexes (default: a temporary one).")
    parser.add_argument("--keep", action="store_true", help="Keep the indexes in --work.")
    parser.add_argument("--budget", type=float, default=None,
                        help=f"Seconds of queries per system (default 5, {ONCE_BUDGET:g} with"
                        " --queries once).")
    parser.add_argument("--most", type=positive_int, default=None,
                        help=f"Most queries per system (default 400, {ONCE_MOST:,} with"
                        " --queries once).")
    parser.add_argument("--passes", type=positive_int, default=PASSES,
                        help="Passes over the queries per system at least; the fastest is"
                        " kept.")
    parser.add_argument("--rounds", type=positive_int, default=1,
                        help="Rounds of every system's queries, after the builds, each in a"
                        " fresh process, the order reversed every other round; q/s over all"
                        " rounds, latencies their medians (a machine whose speed drifts then"
                        " weighs on every system alike).")
    parser.add_argument("--build-rounds", type=positive_int, default=1,
                        help="Rounds of every build (each system's in turn, each in a fresh"
                        " process); build s is each system's median.")
    parser.add_argument("--timed", type=float, default=TIMED,
                        help="More passes (up to 20) until they take this many seconds.")
    parser.add_argument("--systems", type=names(SYSTEMS, "system"), default=",".join(SYSTEMS),
                        help=f"Peers to run besides busca (default: all of {','.join(SYSTEMS)}).")
    parser.add_argument("--json", type=Path, default=None, help="Also write the figures here.")
    parser.add_argument("--dense-only", action="store_true",
                        help="Only the dense encoding and search figures (no lexical system).")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(json.loads(sys.stdin.read()))
    started = time.perf_counter()
    work = args.work or Path(tempfile.mkdtemp(prefix="busca-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    once = args.queries == "once"
    most = args.most or (ONCE_MOST if once else 400)
    chunks = 1_000 if args.dense_only else max(args.sizes)  # dense encoding reads 96 chunks
    corpus, questions = _corpus(args, chunks, most, work)
    base = {"work": str(work), "corpus": str(corpus), "queries": questions,
            "budget": args.budget or (ONCE_BUDGET if once else 5.0), "most": most,
            "passes": args.passes, "timed": args.timed, "once": once,
            "rounds": max(1, args.rounds), "build_rounds": max(1, args.build_rounds)}
    print(f"corpus: {LABELS[args.corpus]}; queries: {LABELS[args.queries]}"
          + (f"; {base['rounds']} rounds of queries" if base["rounds"] > 1 else "")
          + (f"; {base['build_rounds']} rounds of builds (medians)"
             if base["build_rounds"] > 1 else ""))
    print(machine())
    if "dense" in args.systems or args.dense_only:
        try:
            e = subprocess_run({**base, "size": 0, "runner": "dense-encode"}, one_thread=True)
            print(f"dense encoding ({e['encoder']}, one thread, 200-word chunks of the corpus):"
                  f" {e['chunks_per_s']:.1f} chunks/s, a query {e['query_p50']:.1f} ms (p50),"
                  f" loading {e['load']:.1f} s")
        except PeerUnavailable as why:
            print(f"dense encoding not measured: {why}")
    if args.dense_only:
        dense_only(args.sizes, base, args.keep)
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
        return
    results = {}
    for n in args.sizes:
        results[n] = measure(n, base, args.keep, set(args.systems))
        print_table(n, results[n], once)
    seconds = time.perf_counter() - started
    print(f"\nwhole run {seconds:.0f} s; load average at the end:"
          f" {os.getloadavg()[0]:.2f}; goals ({GOALS if once else GOALS_REPEAT}):")
    print_goals((check_goals_once if once else check_goals)(results))
    if args.json:
        args.json.write_text(json.dumps({str(n): r for n, r in results.items()}, indent=1))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    guarded(main)
