"""busca's builds and the peers' builds alternately, on the corpus and store kept by
bench_lexical.py (`--keep`), with the same runners, to take a shared machine's swings out of
the build ratio (each round: each busca build, then every peer, each in a fresh subprocess).

    python bench/bench_lexical.py --sizes 1000000 --systems tantivy,pisa --work /work/bench/lex1m --keep
    python bench/bench_build_paired.py --work /work/bench/lex1m --size 1000000 --rounds 3

busca builds from scratch every time (the previous build of the kept store is deleted first,
so no chunk span is reused), as in bench_lexical.py: by default bm25 alone (`busca index
--methods bm25`, what the peers build, and what the goal reads) and the default `busca index`
(tfidf and bm25 from one tokenising pass); `--methods` chooses (repeat it for several).
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

from bench_lexical import PeerUnavailable, require_kept, subprocess_run  # noqa: E402
from cli_errors import guarded, names, positive_int  # noqa: E402
from machine import machine  # noqa: E402

PEERS = {"tantivy": "tantivy-build", "pisa": "pisa-build", "bm25s": "bm25s-build"}
BUILDS = ["bm25", "tfidf,bm25"]


def methods(text: str) -> str:
    """`--methods tfidf,bm25`: lexical methods only (what the peers build), checked before the
    kept store's previous build is deleted."""
    found = names(("tfidf", "bm25"), "method")(text)
    if not found:
        raise argparse.ArgumentTypeError("nothing given: give bm25, tfidf or tfidf,bm25")
    return ",".join(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="bench_lexical.py's --work.")
    parser.add_argument("--size", type=positive_int, required=True,
                        help="Chunks (a store kept there).")
    parser.add_argument("--rounds", type=positive_int, default=3, help="Rounds (default 3).")
    parser.add_argument("--peers", type=names(PEERS, "peer"), default="tantivy",
                        help=f"Among {','.join(PEERS)}, comma-separated (default tantivy).")
    parser.add_argument("--methods", action="append", type=methods,
                        help="busca's methods in one build (repeat for several builds a round)"
                             f" [default: {' and '.join(BUILDS)}].")
    args = parser.parse_args()
    corpus = args.work / f"corpus-{args.size}.txt"
    require_kept(args.work, args.size, {f"busca-{args.size}/busca.db": "busca store",
                                        corpus.name: "corpus"})
    peers = args.peers
    base = {"work": str(args.work), "corpus": str(corpus), "size": args.size}
    builds = [f"busca {m}" for m in args.methods or BUILDS]
    print(machine())
    times: dict[str, list[float]] = {name: [] for name in builds + peers}
    configs: dict[str, str] = {}
    for r in range(args.rounds):
        line = []
        for name in builds:
            built = subprocess_run({**base, "runner": "busca-build",
                                    "methods": name.removeprefix("busca ")}, one_thread=False)
            configs["busca"] = built.get("build_config", "")
            times[name].append(built["build"])
            line.append(f"{name} {built['build']:.1f} s")
        for peer in peers:
            try:
                built = subprocess_run({**base, "runner": PEERS[peer]}, one_thread=False)
            except PeerUnavailable as why:
                raise SystemExit(f"{peer} cannot build here: {why}") from None
            times[peer].append(built["build"])
            configs[peer] = built.get("build_config", "")
            line.append(f"{peer} {times[peer][-1]:.1f} s")
        print(f"round {r + 1} (load {os.getloadavg()[0]:.2f}): " + ", ".join(line), flush=True)
    print(f"configuration: busca: {configs.pop('busca', '')}"
          + "".join(f"; {config}" for config in configs.values())
          + (" (each peer's texts read before its clock starts)" if configs else ""))
    for name in builds:
        for peer in peers:
            ratios = [p / b for p, b in zip(times[peer], times[name])]
            print(f"median: {name} {statistics.median(times[name]):.1f} s, {peer}"
                  f" {statistics.median(times[peer]):.1f} s; median of round ratios"
                  f" {statistics.median(ratios):.2f}x (goal, bm25 alone: >= 1.5x for the"
                  " fastest peer)")


if __name__ == "__main__":
    guarded(main)
