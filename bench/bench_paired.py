"""busca bm25 and PISA queries alternately on indexes kept by bench_lexical.py (`--keep`), with
the same runners and one-thread settings, to take a shared machine's swings out of the ratio.

    python bench/bench_lexical.py --sizes 100000 --systems pisa --work /work/bench/lex --keep
    python bench/bench_paired.py --work /work/bench/lex --size 100000 --rounds 3

The questions are the kept corpus's own (`--corpus`, as bench_lexical.py made it: the
held-out corpus's by default, FaQuAD's for an index of `--corpus faquad`): FaQuAD's
questions on the held-out corpus find few of their words there and measured nothing useful.
"""

from __future__ import annotations

import statistics

from bench_lexical import (FAQUAD, PASSES, TIMED, faquad_words_and_questions,  # noqa: E402
                           kept_index_parser, require_kept, subprocess_run)
import zipf_corpus
from cli_errors import guarded, positive_int
from machine import machine

MOST = 400  # questions asked per pass


def main() -> None:
    parser = kept_index_parser(__doc__)
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--passes", type=positive_int, default=PASSES,
                        help="Passes over the queries per run at least; the fastest is kept.")
    parser.add_argument("--timed", type=float, default=TIMED,
                        help="More passes (up to 20) until they take this many seconds.")
    parser.add_argument("--corpus", choices=("zipf", "faquad"), default="zipf",
                        help="The corpus the kept index was made of (bench_lexical.py's"
                             " --corpus): its questions are asked.")
    args = parser.parse_args()
    require_kept(args.work, args.size, {f"busca-{args.size}/CURRENT": "busca index",
                                        f"pisa-{args.size}": "PISA index"})
    questions = (zipf_corpus.questions(MOST) if args.corpus == "zipf"
                 else faquad_words_and_questions(FAQUAD)[1])
    base = {"work": str(args.work), "queries": questions, "budget": 5.0, "most": MOST,
            "size": args.size, "passes": args.passes, "timed": args.timed}
    print(machine())
    ratios, busca, pisa, firsts = [], [], [], []
    for r in range(args.rounds):
        b = subprocess_run({**base, "runner": "busca-query", "method": "bm25"}, one_thread=True)
        p = subprocess_run({**base, "runner": "pisa-query"}, one_thread=True)
        busca.append(b["qps"])
        pisa.append(p["qps"])
        ratios.append(b["qps"] / p["qps"])
        firsts.append(b["first_qps"] / p["first_qps"])
        if r == 0:
            print(f"busca: {b['config']}\nPISA: {p['config']}")
        print(f"round {r + 1}: busca bm25 {b['qps']:,.0f} q/s (p50 {b['p50']:.2f} ms), PISA"
              f" {p['qps']:,.0f} q/s (p50 {p['p50']:.2f} ms), ratio {ratios[-1]:.2f}x;"
              f" first passes {b['first_qps']:,.0f} and {p['first_qps']:,.0f} q/s,"
              f" {firsts[-1]:.2f}x")
    print(f"median: busca bm25 {statistics.median(busca):,.0f} q/s, PISA"
          f" {statistics.median(pisa):,.0f} q/s; median of round ratios"
          f" {statistics.median(ratios):.2f}x (first passes {statistics.median(firsts):.2f}x)")
    print(f"load average at end: {open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    guarded(main)
