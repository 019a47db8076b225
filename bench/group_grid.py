"""Sentence-group blends x fusion settings on one set: every system's per-question values.

    python bench/group_grid.py HOME GOLDEN OUT.json --blends 1,0.75,0.5,0.25
    python bench/group_grid.py --pick OUT_hb.json OUT_site.json OUT_faquad.json \
        [--metrics recall@3,ndcg@10] [--top 25]

HOME: a busca home indexed with bm25 and dense vectors with sentence groups (`busca index
--dense e5-small --dense-groups 40`); GOLDEN: what `busca eval` takes. Every answerable
question is ranked once by bm25 and, per blend (the window vector's share beside its best
group; 1 = the window vector alone, as without groups), once by dense (top 100 each, as
`hybrid` does); then every setting of `busca eval --tune-fusion`'s grid plus min-max shares
0.35 … 0.75 re-fuses those lists with search/fusion.py. Saved: recall@1/3/10 and nDCG@10
per question and system, and each question's `tipo` tag.

`--pick` reads such files (one per set) and ranks the fused systems by their worst gap to
the better of their two parts (bm25 and dense at the same blend) over the sets and metrics.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from busca.index import open_home
from busca.index.lexical.lexical import NoSearchableTerms
from busca.search.eval.golden import load_golden
from busca.search.eval.judge import DEPTH, chunk_table, index_rankers, judge, outcome_of
from busca.search.eval.metrics import parse_metric, value
from busca.search.eval.tuning import _fused, grid
from busca.search.fusion import FusionSettings
from busca.search.scorers import rank

METRICS = ("recall@1", "recall@3", "recall@10", "ndcg@10")


def measure(home: str, golden_path: str, out: str, blends: list[float]) -> None:
    store = open_home(home)
    index = store.current()
    table = chunk_table(index, store)
    judged = [j for j in judge(load_golden(golden_path), table).items if j.question.answerable]
    index_rankers(index, ["dense", "bm25"])  # one encoding per question
    groups = index.ranker("dense").groups
    metrics = [parse_metric(m) for m in METRICS]

    def lists(method):
        out = []
        for j in judged:
            try:
                out.append(rank(index, j.question.text, method=method, k=100))
            except NoSearchableTerms:
                out.append((np.empty(0, np.int64), np.empty(0)))
        return out

    def score(rankings):
        return {m.name: [value(m, outcome_of(j, table, ids[:DEPTH], s[:DEPTH]))
                         for j, (ids, s) in zip(judged, rankings)] for m in metrics}

    bm25 = lists("bm25")
    res = {"_tags": [j.question.tags.get("tipo", "all") for j in judged], "bm25": score(bm25)}
    settings = grid(("bm25", "dense")) + [
        FusionSettings("minmax", 60.0, 100, {"bm25": round(1 - s, 2), "dense": s})
        for s in (0.35, 0.45, 0.55, 0.65, 0.75)]
    for b in blends:
        if groups is not None:
            groups.blend = b
        dense = lists("dense")
        res[f"dense b={b:g}"] = score(dense)
        for st in settings:
            w = st.weights["dense"]
            name = f"rrf k={st.rrf_k:g} w={w:g}" if st.fusion == "rrf" else f"{st.fusion} s={w:g}"
            res[f"{name} b={b:g}"] = score([_fused({"bm25": x, "dense": y}, st)
                                            for x, y in zip(bm25, dense)])
    with open(out, "w") as f:
        json.dump(res, f)


def pick(paths: list[str], metrics: list[str], top: int) -> None:
    sets = {p: json.load(open(p)) for p in paths}

    def mean(r, system, m):
        return float(np.mean(r[system][m]))

    rows = []
    for name in next(iter(sets.values())):
        if name.startswith(("_", "bm25", "dense")):
            continue
        b = name.rsplit("b=", 1)[1]
        worst = min(mean(r, name, m) - max(mean(r, "bm25", m), mean(r, f"dense b={b}", m))
                    for r in sets.values() for m in metrics)
        rows.append((worst, name, [mean(r, name, m) for r in sets.values() for m in metrics]))
    rows.sort(key=lambda r: -r[0])
    print("system | worst gap | " + " | ".join(f"{p.rsplit('/', 1)[-1]} {m}"
                                                for p in sets for m in metrics))
    for worst, name, cells in rows[:top]:
        print(f"{name} | {worst:+.3f} | " + " | ".join(f"{c:.3f}" for c in cells))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("args", nargs="+")
    p.add_argument("--blends", default="1,0.75,0.5,0.25")
    p.add_argument("--pick", action="store_true")
    p.add_argument("--metrics", default="recall@3,ndcg@10")
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args()
    if a.pick:
        pick(a.args, a.metrics.split(","), a.top)
    else:
        home, golden, out = a.args
        measure(home, golden, out, [float(b) for b in a.blends.split(",")])


if __name__ == "__main__":
    from cli_errors import guarded
    guarded(main)
