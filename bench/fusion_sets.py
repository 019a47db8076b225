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

from busca.crawler.store import Store
from busca.index.storage import load_index
from busca.search import core, fusion
from busca.search.evaluate import DEPTH, chunk_table, judge, outcome_of
from busca.search.golden import load_golden
from busca.search.lexical import NoSearchableTerms
from busca.search.metrics import parse_metric, value

METRICS = [parse_metric(m) for m in ("recall@1", "recall@3", "recall@10", "ndcg@10")]
WINDOW = fusion.WINDOW
LEX, DENSE = "bm25", "dense"


def _norm_minmax(s):
    lo, hi = float(s.min()), float(s.max())
    return (s - lo) / (hi - lo) if hi > lo else np.ones(s.size)


def _norm_z(s):
    sd = float(s.std())
    return (s - s.mean()) / sd if sd > 0 else np.zeros(s.size)


def weighted(norm, lexical: float, absent: str = "min"):
    """Weighted sum of normalised window scores; a chunk absent from a list gets its minimum."""
    def fuse(ranked, weights=None):
        w = weights or {LEX: lexical, DENSE: 1 - lexical}
        return _sum_with_floor(ranked, w, norm)
    return fuse


def _sum_with_floor(ranked, w, norm):
    ids = np.unique(np.concatenate([ranked[m][0] for m in w]))
    total = np.zeros(ids.size)
    for m, weight in w.items():
        c_ids, s = ranked[m]
        if c_ids.size == 0:
            continue
        z = norm(s)
        filled = np.full(ids.size, z.min())
        filled[np.searchsorted(ids, c_ids)] = z
        total += weight * filled
    return ids, total


def rrf(k: float, dense_weight: float = 1.0):
    def fuse(ranked, weights=None):
        return fusion.rrf([ranked[LEX][0], ranked[DENSE][0]], [1.0, dense_weight], k=k)
    return fuse


def confident(lexical: float, norm=_norm_minmax, power: float = 1.0):
    """Min-max sum whose weights follow each list's confidence on this query: the gap between
    its top score and its 10th, relative to the window's range (a flat list says little)."""
    def fuse(ranked, weights=None):
        base = {LEX: lexical, DENSE: 1 - lexical}
        gaps = {}
        for m in base:
            s = ranked[m][1]
            n = _norm_minmax(s) if s.size else s
            gaps[m] = float(n[0] - n[min(9, n.size - 1)]) if n.size > 1 else 0.0
        raw = {m: base[m] * (1e-3 + gaps[m]) ** power for m in base}
        total = sum(raw.values())
        return _sum_with_floor(ranked, {m: v / total for m, v in raw.items()}, norm)
    return fuse


CANDIDATES = {
    "minmax 0.6/0.4 (current default)": weighted(_norm_minmax, 0.6),
    "minmax 0.5/0.5": weighted(_norm_minmax, 0.5),
    "minmax 0.4/0.6": weighted(_norm_minmax, 0.4),
    "zscore 0.6/0.4": weighted(_norm_z, 0.6),
    "zscore 0.5/0.5": weighted(_norm_z, 0.5),
    "zscore 0.4/0.6": weighted(_norm_z, 0.4),
    "rrf k=60 1:1": rrf(60),
    "rrf k=10 1:1": rrf(10),
    "rrf k=1 1:1": rrf(1),
    "confidence minmax 0.5": confident(0.5),
    "confidence minmax 0.5 p=0.5": confident(0.5, power=0.5),
    "confidence zscore 0.5": confident(0.5, norm=_norm_z),
    "confidence zscore 0.5 p=0.5": confident(0.5, norm=_norm_z, power=0.5),
}


def rank_set(home: str, golden_path: str):
    """(judged answerable questions, chunk table, per question {method: (ids, scores)})."""
    index = load_index(home)
    golden = load_golden(golden_path)
    with Store(home) as store:
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
    encoder = index.methods[DENSE]["encoder"]
    return judged, table, ranked, encoder


def score_rows(judged, table, ranked) -> dict[str, dict[str, float]]:
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
            ids, s = fuse(r)
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
            worst_part = min(rows[LEX][key], rows[DENSE][key])
            v = rows[name][key]
            out[name][key] = ("above" if v > best else "ok" if v >= best - 0.01 else "FAIL")
            del worst_part
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
        judged, table, ranked, encoder = rank_set(home, golden_path)
        print(f"ranked {label} ({encoder}, {len(judged)} questions)", file=sys.stderr)
        groups = {label: list(range(len(judged)))}
        for tag in args.slice:
            key, _, wanted = tag.partition("=")
            picked = [i for i, j in enumerate(judged) if j.question.tags.get(key) == wanted]
            if picked:
                groups[f"{label} [{tag}]"] = picked
        for name, picked in groups.items():
            rows = score_rows([judged[i] for i in picked], table, [ranked[i] for i in picked])
            everything[name] = {"encoder": encoder, "questions": len(picked), "rows": rows,
                                "verdicts": verdicts(rows)}
            _print(name, everything[name])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(everything, f, indent=1)


def _print(name: str, result: dict) -> None:
    print(f"\n## {name} (dense = {result['encoder']}, n = {result['questions']})")
    print("| method | " + " | ".join(m.name for m in METRICS) + " | nDCG@10 | recall@3 |")
    print("|---|" + "---|" * (len(METRICS) + 2))
    for method, figures in result["rows"].items():
        v = result["verdicts"].get(method, {"ndcg@10": "", "recall@3": ""})
        print(f"| {method} | " + " | ".join(f"{figures[m.name]:.3f}" for m in METRICS)
              + f" | {v['ndcg@10']} | {v['recall@3']} |")


if __name__ == "__main__":
    main()
