"""Fusion candidates across corpora and dense models: one table, each set ranked once.

    python bench/fusion_sets.py LABEL=HOME=GOLDEN [LABEL=HOME=GOLDEN ...] [--slice tipo=parafrase]
                                [--json FILE]

Each HOME is a busca home indexed with bm25 and dense vectors (`busca index --dense NAME`);
GOLDEN is what `busca eval` takes (a golden JSON file or a BEIR folder). Every answerable
question is ranked once by each component (its top `window` = 100, as `hybrid` does), then
every candidate fusion re-fuses those lists. Printed per set: recall@1/3/10 and nDCG@10 of
bm25, dense and every candidate, and for each candidate whether it is within 0.01 of the
better component on nDCG@10 and recall@3 and above both. `--slice tag=value` adds a row set
for the questions with that tag (e.g. the golden set's paraphrases).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from busca import search as core
from busca.index import open_home
from busca.search import fusion
from busca.search.scorers import dense_share
from busca.search.eval.golden import load_golden
from busca.search.eval.judge import DEPTH, chunk_table, judge, outcome_of
from busca.search.eval.metrics import parse_metric, value
from busca.search import NoSearchableTerms

METRICS = [parse_metric(m) for m in ("recall@1", "recall@3", "recall@10", "ndcg@10")]
WINDOW = fusion.WINDOW
LEX, DENSE = "bm25", "dense"


def _norm_minmax(s):
    lo, hi = float(s.min()), float(s.max())
    return (s - lo) / (hi - lo) if hi > lo else np.ones(s.size)


def shipped(how: str, dense: float | None = None, *, k: float = fusion.RRF_K):
    """busca's own fusion (search/fusion.py); `dense` None: the encoder's measured share."""
    def fuse(ranked, share):
        if how == "rrf":
            weights = {LEX: 1.0, DENSE: 1.0 if dense is None else dense}
        else:
            d = share if dense is None else dense
            weights = {LEX: round(1 - d, 6), DENSE: d}
        return fusion.fuse(ranked, weights, fusion.FusionSettings(how, k, WINDOW, weights))
    return fuse


def confident(dense: float, power: float = 2.0):
    """Not shipped: a z-score sum whose weights follow each list's confidence on this query
    (the gap between its top score and its 10th, relative to the window's range)."""
    def fuse(ranked, share):
        base = {LEX: 1 - dense, DENSE: dense}
        raw = {}
        for m, w in base.items():
            s = ranked[m][1]
            n = _norm_minmax(s) if s.size > 1 else np.zeros(1)
            raw[m] = w * (1e-3 + float(n[0] - n[min(9, n.size - 1)])) ** power
        total = sum(raw.values())
        weights = {m: v / total for m, v in raw.items()}
        return fusion.fuse(ranked, weights, fusion.FusionSettings("zscore", window=WINDOW,
                                                                  weights=weights))
    return fuse


DEFAULT = "default: minmax, encoder's share"
CANDIDATES = {
    DEFAULT: shipped("minmax"),
    "zscore, encoder's share": shipped("zscore"),
    "minmax 0.6/0.4 (old default)": shipped("minmax", 0.4),
    "minmax 0.5/0.5": shipped("minmax", 0.5),
    "zscore 0.7/0.3": shipped("zscore", 0.3),
    "zscore 0.6/0.4": shipped("zscore", 0.4),
    "zscore 0.5/0.5": shipped("zscore", 0.5),
    "zscore 0.4/0.6": shipped("zscore", 0.6),
    "zscore 0.3/0.7": shipped("zscore", 0.7),
    "rrf k=60 1:1": shipped("rrf", k=60),
    "rrf k=10 1:1": shipped("rrf", k=10),
    "rrf k=1 1:1": shipped("rrf", k=1),
    "rrf k=1 bm25 1, dense 0.3": shipped("rrf", 0.3, k=1),
    "confidence zscore 0.5/0.5 (not shipped)": confident(0.5),
    "confidence zscore, encoder's share (not shipped)": lambda r, share: confident(share)(
        r, share),
}


def rank_set(home: str, golden_path: str):
    """(judged answerable questions, chunk table, per question {method: (ids, scores)})."""
    golden = load_golden(golden_path)
    with open_home(home) as store:
        index = store.current()
        table = chunk_table(index, store)
    judged = [j for j in judge(golden, table).items if j.question.answerable]
    ranked = []
    for j in judged:
        out = {}
        for method in (LEX, DENSE):
            try:
                ids, scores = core.scorer(index, method).score(j.question.text)
            except NoSearchableTerms:
                ids, scores = np.empty(0, np.int64), np.empty(0)
            out[method] = core.top_k(ids, scores, WINDOW) if ids.size else (ids, scores)
        ranked.append(out)
    encoder = index.manifest.entry(DENSE)["encoder"]
    return judged, table, ranked, encoder, dense_share(index)


def score_rows(judged, table, ranked, share: float) -> dict[str, dict[str, float]]:
    rows = {}

    def evaluate(name, rankings):
        rows[name] = {m.name: float(np.mean([
            value(m, outcome_of(j, table, ids[:DEPTH], s[:DEPTH]))
            for j, (ids, s) in zip(judged, rankings)])) for m in METRICS}

    for method in (LEX, DENSE):
        evaluate(method, [r[method] for r in ranked])
    for name, fuse in CANDIDATES.items():
        fused = []
        for r in ranked:
            ids, s = fuse(r, share)
            fused.append(core.top_k(ids, s, DEPTH) if ids.size else (ids, s))
        evaluate(name, fused)
    return rows


def verdicts(rows: dict) -> dict[str, dict[str, str]]:
    """Per candidate and key metric: 'above' both, 'ok' (within 0.01 of the better), 'FAIL'."""
    out = {}
    for name in CANDIDATES:
        out[name] = {}
        for key in ("ndcg@10", "recall@3"):
            best = max(rows[LEX][key], rows[DENSE][key])
            v = rows[name][key]
            out[name][key] = ("above" if v > best else "ok" if v >= best - 0.01 else "FAIL")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="+", help="LABEL=HOME=GOLDEN")
    parser.add_argument("--slice", action="append", default=[], help="tag=value")
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args()
    everything = {}
    for spec in args.sets:
        label, home, golden_path = spec.split("=", 2)
        judged, table, ranked, encoder, share = rank_set(home, golden_path)
        print(f"ranked {label} ({encoder}, {len(judged)} questions)", file=sys.stderr)
        groups = {label: list(range(len(judged)))}
        for tag in args.slice:
            key, _, wanted = tag.partition("=")
            picked = [i for i, j in enumerate(judged) if j.question.tags.get(key) == wanted]
            if picked:
                groups[f"{label} [{tag}]"] = picked
        for name, picked in groups.items():
            rows = score_rows([judged[i] for i in picked], table, [ranked[i] for i in picked],
                              share)
            everything[name] = {"encoder": encoder, "share": share, "questions": len(picked),
                                "rows": rows, "whole": name == label,
                                "verdicts": verdicts(rows)}
            _print(name, everything[name])
    _print_summary(everything)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(everything, f, indent=1)


def _print_summary(everything: dict) -> None:
    """Per candidate over the whole sets: cells above both parts, worst gap to the better."""
    whole = {n: r for n, r in everything.items() if r["whole"]}
    print(f"\n## Summary over {', '.join(whole)} (nDCG@10 and recall@3 each)")
    print("| candidate | above both | within 0.01 | worst gap to the better part |")
    print("|---|---|---|---|")
    for name in CANDIDATES:
        gaps = [r["rows"][name][key] - max(r["rows"][LEX][key], r["rows"][DENSE][key])
                for r in whole.values() for key in ("ndcg@10", "recall@3")]
        print(f"| {name} | {sum(g > 0 for g in gaps)} of {len(gaps)} |"
              f" {'yes' if min(gaps) >= -0.01 else 'no'} | {min(gaps):+.3f} |")


def _print(name: str, result: dict) -> None:
    print(f"\n## {name} (dense = {result['encoder']}, share {result['share']:g},"
          f" n = {result['questions']})")
    print("| method | " + " | ".join(m.name for m in METRICS) + " | nDCG@10 | recall@3 |")
    print("|---|" + "---|" * (len(METRICS) + 2))
    for method, figures in result["rows"].items():
        v = result["verdicts"].get(method, {"ndcg@10": "", "recall@3": ""})
        print(f"| {method} | " + " | ".join(f"{figures[m.name]:.3f}" for m in METRICS)
              + f" | {v['ndcg@10']} | {v['recall@3']} |")


if __name__ == "__main__":
    from cli_errors import guarded
    guarded(main)
