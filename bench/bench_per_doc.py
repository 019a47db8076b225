"""Collapse by document (`--per-doc N`): recall@k with and without, per method.

    python bench/bench_per_doc.py [--home DIR] [--per-doc 0,1,2,3]

With `--home` holding calibrated floors (`busca eval fixtures/golden/golden.json
--calibrate`), it also measures what `busca context` gathers on FaQuAD's questions: k=3
windows collapsed with backfill above each method's floor (search/collapse.py), then only
those at or above the floor; "relevant in context" = share of questions whose relevant chunk
is among them, "articles" = mean distinct articles in the context.

Corpus: the bundled fixture site (FaQuAD's 39 documents as articles, 200-word windows with
40 of overlap: 201 chunks), indexed with tfidf, bm25, dense (`use`) and hybrid; `--home`
reuses such an index (`busca add fixtures/site/articles.jsonl && busca index --dense use`).
Question sets:
- the bundled golden set (fixtures/golden/golden.json): 62 answerable questions, relevant
  chunk = one whose text holds the labelled trecho;
- FaQuAD's 900 questions on the same articles: relevant chunk = one of the question's
  article whose text holds the annotated answer (answers split across two windows are left
  out, as `busca eval` does).
Each question is ranked once per method over the whole index; the ranking is then collapsed
to at most N windows per article (search/collapse.py, order kept) and scored with busca's
metric code. recall@k = share of questions with a relevant chunk in the top k; "articles@5"
= distinct articles among the top 5 hits.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from busca import search as core
from busca.crawler.files import read_files
from busca.index import LocalHome as Store
from busca.index import build_index
from busca.index.lexical.lexical import NoSearchableTerms
from busca.search import collapse
from busca.search.eval.golden import Golden, Question, load_golden
from busca.search.eval.judge import chunk_table, judge, outcome_of
from busca.search.eval.metrics import recall

REPO = Path(__file__).resolve().parent.parent
SITE = REPO / "fixtures" / "site" / "articles.jsonl"
GOLDEN = REPO / "fixtures" / "golden" / "golden.json"
FAQUAD = REPO / "fixtures" / "faquad" / "dataset.json"
METHODS = ("tfidf", "bm25", "dense", "hybrid")
KS = (1, 3, 5, 10)


def faquad_golden(store: Store) -> Golden:
    """FaQuAD's questions with their answer as trecho and their article's URL."""
    articles = [(d.url, " ".join(d.text.split())) for d in store.documents()]
    questions = []
    for doc in json.loads(FAQUAD.read_text(encoding="utf-8"))["data"]:
        for para in doc["paragraphs"]:
            head = " ".join(para["context"].split())[:200]
            url = next((u for u, text in articles if head in text), None)
            for qa in para["qas"]:
                questions.append(Question(qa["id"], qa["question"].strip(),
                                          trecho=qa["answers"][0]["text"], url=url))
    return Golden(str(FAQUAD), "json", tuple(questions))


def _rank_all(index, judged, method: str, n: int) -> list:
    """Every question's full ranking under `method` (empty when it has no searchable term)."""
    ranked = []
    for j in judged:
        try:
            ranked.append(core.rank(index, j.question.text, method=method, k=n))
        except NoSearchableTerms:
            ranked.append((np.empty(0, np.int64), np.empty(0)))
    return ranked


def measure(index, table, golden: Golden, per_docs: list[int]) -> dict:
    judged = [j for j in judge(golden, table).items if j.gains]
    n = len(table.urls)
    rows = {}
    for method in METHODS:
        ranked = _rank_all(index, judged, method, n)
        for per_doc in per_docs:
            outcomes, spread = [], []
            for j, (ids, scores) in zip(judged, ranked):
                urls = [table.urls[int(i)] for i in ids]
                kept, kept_scores = collapse.collapse(ids, scores, urls, per_doc, k=max(KS))
                outcomes.append(outcome_of(j, table, kept, kept_scores))
                spread.append(len({table.urls[int(i)] for i in kept[:5]}))
            row = {f"recall@{k}": float(np.mean([recall(o, k) for o in outcomes])) for k in KS}
            rows[(method, per_doc)] = row | {"articles@5": float(np.mean(spread))}
    return {"questions": len(judged), "rows": rows}


def measure_context(index, table, golden: Golden, per_docs: list[int], k: int = core.K) -> dict:
    """What `busca context` gathers: k windows, collapsed with backfill above the method's
    calibrated floor, then only those at or above the floor."""
    judged = [j for j in judge(golden, table).items if j.gains]
    n = len(table.urls)
    rows = {}
    for method in METHODS:
        floor = core.floor_of(index, method)
        if floor is None:
            continue
        ranked = _rank_all(index, judged, method, n)
        for per_doc in per_docs:
            found, articles = [], []
            for j, (ids, scores) in zip(judged, ranked):
                urls = [table.urls[int(i)] for i in ids]
                kept, kept_scores = collapse.collapse(ids, scores, urls, per_doc, k=k,
                                                      backfill=True, floor=floor)
                above = kept_scores >= floor
                kept, kept_scores = kept[above], kept_scores[above]
                found.append(recall(outcome_of(j, table, kept, kept_scores), k))
                articles.append(len({table.urls[int(i)] for i in kept}))
            rows[(method, per_doc)] = {"floor": floor, f"in context@{k}": float(np.mean(found)),
                                       "articles": float(np.mean(articles))}
    return {"questions": len(judged), "rows": rows, "k": k}


def print_context(title: str, result: dict, per_docs: list[int]) -> None:
    k = result["k"]
    print(f"\n{title}, as busca context gathers it (k={k}, backfill above the calibrated floor):"
          f" {result['questions']} questions")
    print(f"{'method':<8} {'floor':>8} {'per-doc':>7} {'relevant in context':>20} {'articles':>9}")
    for (method, per_doc), r in result["rows"].items():
        label = str(per_doc) if per_doc else "0 (off)"
        print(f"{method:<8} {r['floor']:>8.4g} {label:>7} {r[f'in context@{k}']:>20.3f}"
              f" {r['articles']:>9.2f}")


def print_table(title: str, result: dict, per_docs: list[int]) -> None:
    print(f"\n{title}: {result['questions']} questions with a relevant chunk")
    cols = [f"recall@{k}" for k in KS] + ["articles@5"]
    print(f"{'method':<8} {'per-doc':>7} " + " ".join(f"{c:>10}" for c in cols))
    for method in METHODS:
        for per_doc in per_docs:
            r = result["rows"][(method, per_doc)]
            label = str(per_doc) if per_doc else "0 (off)"
            print(f"{method:<8} {label:>7} " + " ".join(f"{r[c]:>10.3f}" for c in cols))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", default=None, help="An index of the fixture site to reuse.")
    parser.add_argument("--per-doc", default="0,1,2,3")
    args = parser.parse_args()
    per_docs = [int(x) for x in args.per_doc.split(",")]
    home = Path(args.home or tempfile.mkdtemp(prefix="busca-per-doc-"))
    store = Store(home)
    if args.home is None:
        for doc in read_files([str(SITE)]):
            store.put(doc)
        build_index(store, methods=METHODS, options={"dense": "use"})
    index = store.current()
    table = chunk_table(index, store)
    print(f"fixture site: {len(set(table.urls))} articles, {len(table.urls)} chunks"
          f" ({table.label}); methods {', '.join(METHODS)}")
    print_table("bundled golden set", measure(index, table, load_golden(str(GOLDEN)), per_docs),
                per_docs)
    faquad = faquad_golden(store)
    print_table("FaQuAD on the same articles", measure(index, table, faquad, per_docs), per_docs)
    if any(core.floor_of(index, m) is not None for m in METHODS):
        print_context("FaQuAD", measure_context(index, table, faquad, per_docs), per_docs)
    else:
        print("\n(no calibrated floors in this index: run busca eval GOLDEN --calibrate and"
              " pass --home to see what busca context gathers)")
    store.close()


if __name__ == "__main__":
    from cli_errors import guarded
    guarded(main)
