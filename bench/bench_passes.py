"""Whole bm25 queries (`search.rank`, tokenising included) in passes over the same questions
in one process: the first pass is what bench_lexical.py times (words stemmed for
the first time, pages faulted in), the later ones show the steady state. Several processes,
and with `--checkouts` several copies of busca run alternately (each a folder holding a
`busca` package, put first on PYTHONPATH), to take a shared machine's swings out of a
comparison. An index kept by bench_lexical.py (`--keep`).

    python bench/bench_passes.py --work /work/bench/final --size 100000 --processes 5

The questions are the kept corpus's own (`--corpus`, as bench_lexical.py made it: the
held-out corpus's by default, FaQuAD's for an index of `--corpus faquad`), as in
bench_paired.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench_lexical import (FAQUAD, ONE_THREAD, faquad_words_and_questions,  # noqa: E402
                           kept_index_parser)
from cli_errors import positive_int  # noqa: E402
from machine import machine  # noqa: E402
from measure import WARMUP  # noqa: E402
import zipf_corpus  # noqa: E402


def passes(home: str, questions: list[str], count: int) -> list[tuple[float, float]]:
    """µs per query and minor page faults per query, pass by pass."""
    import resource
    import time

    from busca import search as core
    from busca.index.lexical.lexical import NoSearchableTerms
    from busca.index.home.storage import load_index
    index = load_index(Path(home))
    for question in questions[:WARMUP]:
        try:
            core.rank(index, question, method="bm25", k=10)
        except NoSearchableTerms:
            pass
    timed, out = questions[WARMUP:], []
    for _ in range(count):
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        started = time.perf_counter()
        for question in timed:
            try:
                core.rank(index, question, method="bm25", k=10)
            except NoSearchableTerms:
                pass
        seconds = time.perf_counter() - started
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        out.append((seconds / len(timed) * 1e6, faults / len(timed)))
    return out


def main() -> None:
    parser = kept_index_parser(__doc__)
    parser.add_argument("--processes", type=positive_int, default=3)
    parser.add_argument("--passes", type=positive_int, default=4)
    parser.add_argument("--queries", type=positive_int, default=400)
    parser.add_argument("--checkouts", nargs="*", default=[],
                        help="Folders holding a `busca` package (default: the installed one).")
    parser.add_argument("--corpus", choices=("zipf", "faquad"), default="zipf",
                        help="The corpus the kept index was made of (bench_lexical.py's"
                             " --corpus): its questions are asked.")
    args = parser.parse_args()
    questions = (zipf_corpus.questions(WARMUP + args.queries) if args.corpus == "zipf"
                 else faquad_words_and_questions(FAQUAD)[1])
    job = {"home": str(args.work / f"busca-{args.size}"),
           "questions": questions[:WARMUP + args.queries], "count": args.passes}
    print(machine())
    for _ in range(args.processes):
        for checkout in args.checkouts or [None]:
            env = {**os.environ, **ONE_THREAD}
            if checkout:
                env["PYTHONPATH"] = os.pathsep.join(filter(None, [checkout,
                                                                  env.get("PYTHONPATH")]))
            done = subprocess.run([sys.executable, __file__, "--worker"], env=env,
                                  input=json.dumps(job), capture_output=True, text=True,
                                  check=True)
            figures = json.loads(done.stdout)
            shown = "  ".join(f"{us:6.1f} µs {faults:4.1f} faults" for us, faults in figures)
            print(f"{checkout or 'installed'}: {shown}", flush=True)
    print(f"load average at end: {open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        job = json.load(sys.stdin)
        print(json.dumps(passes(job["home"], job["questions"], job["count"])))
    else:
        from cli_errors import guarded
        guarded(main)
