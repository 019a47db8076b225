"""Where one bm25 query's time goes, on an index kept by bench_lexical.py (`--keep`): the
analyzer, the vocabulary lookup, the scorer's setup, the compiled kernel and the whole
`search.rank` call, in µs per query (CPU time, median of rounds over the same questions),
then the kernel timed query by query: as it comes, with the query's postings read just
before (in cache), and the same query a third time (branch predictors trained as well).

    python bench/bench_query_parts.py --work /work/bench/lex --size 100000

The questions are the held-out corpus's (bench/zipf_corpus.py, the index bench_lexical.py
keeps by default); `--corpus faquad` takes FaQuAD's, for an index of the earlier corpus.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import zipf_corpus
from cli_errors import positive_int
from machine import machine
from bench_lexical import FAQUAD, faquad_words_and_questions, kept_index_parser  # noqa: E402


def per_query(fn, items, rounds: int) -> float:
    """Median over rounds of the CPU µs per item of fn(item)."""
    times = []
    for _ in range(rounds):
        started = time.process_time()
        for item in items:
            fn(item)
        times.append((time.process_time() - started) / len(items) * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = kept_index_parser(__doc__)
    parser.add_argument("--queries", type=positive_int, default=400)
    parser.add_argument("--rounds", type=positive_int, default=5)
    parser.add_argument("--corpus", choices=("zipf", "faquad"), default="zipf")
    args = parser.parse_args()
    from busca import search as core
    from busca.index.lexical import maxscore
    from busca.index.text.analyzers import java_terms
    from busca.index.home.storage import load_index

    index = load_index(args.work / f"busca-{args.size}")
    scorer = core.scorer(index, "bm25")
    questions = (zipf_corpus.questions(args.queries) if args.corpus == "zipf"
                 else faquad_words_and_questions(FAQUAD)[1])
    queries = [q for q in questions if scorer.query_counts(q)[0]][:args.queries]
    for q in queries[:50]:  # window tables made, kernels loaded
        scorer.top(q, 10)
    terms = {q: scorer.query_counts(q) for q in queries}
    arrays = {q: (np.asarray(c, dtype=np.int64), np.asarray(w)) for q, (c, w) in terms.items()}
    kernel = maxscore.kernel()

    def compiled(q):
        columns, weights = arrays[q]
        blocks = maxscore.blocks_of(scorer, None)
        return kernel.top(*maxscore.walk_arguments(scorer, columns, weights, 10, None,
                                                   maxscore._NONE, 0.0, None, blocks))

    def once(q):
        started = time.process_time()
        compiled(q)
        return time.process_time() - started

    def in_cache(q):  # every posting of the query read first, then the kernel timed
        for c in arrays[q][0]:
            lo, hi = scorer.indptr[c], scorer.indptr[c + 1]
            scorer.indices[lo:hi].sum(), scorer.data[lo:hi].sum()
        return once(q)

    def repeated(q):
        compiled(q)
        compiled(q)
        return once(q)

    print(machine())
    load = open("/proc/loadavg").read().split()[0]
    print(f"{args.size:,} chunks, {len(queries)} {args.corpus} questions with a known term, load"
          f" average {load}; µs per query (CPU), median of {args.rounds} rounds")
    rows = [
        ("analyzer (java_terms)", per_query(java_terms, queries, args.rounds)),
        ("analyzer + vocabulary lookup (query_counts)",
         per_query(scorer.query_counts, queries, args.rounds)),
        ("scorer setup (window tables, work vectors)",
         per_query(lambda q: maxscore._tables(scorer, arrays[q][0], None), queries,
                   args.rounds)),
        ("kernel (maxscore_numba.top, one call)", per_query(compiled, queries, args.rounds)),
        ("whole search.rank(index, q, method='bm25', k=10)",
         per_query(lambda q: core.rank(index, q, method="bm25", k=10), queries, args.rounds)),
    ]
    for name, us in rows:
        print(f"  {name:<50} {us:8.1f}")
    for name, timed in (("kernel alone, one query after another", once),
                        ("kernel, the query's postings read just before", in_cache),
                        ("kernel, the same query a third time", repeated)):
        us = statistics.median(
            sum(timed(q) for q in queries) / len(queries) * 1e6 for _ in range(args.rounds))
        print(f"  {name:<50} {us:8.1f}")
    print(f"load average at end: {open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    from cli_errors import guarded
    guarded(main)
