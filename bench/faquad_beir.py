"""FaQuAD as a BEIR retrieval task ("task A"): each of the 249 paragraphs is a document, each
of the 900 questions has its own paragraph as the one relevant document.

    python bench/faquad_beir.py [DATASET] --out faquad-beir [--baseline]

writes DIR/corpus.jsonl (`_id`, `url` = `_id`, `title`, `text`: loadable by BEIR tools and
by `busca add`), DIR/queries.jsonl (`_id`, `text`) and DIR/qrels/test.tsv. DATASET defaults
to ../shared/data/faquad/dataset.json beside the repository, else fixtures/faquad/dataset.json.
FaQuAD: Sayama et al., BRACIS 2019, CC BY 4.0 (github.com/liafacom/faquad).

`--hold-out N` (answerability, issue 30) leaves every Nth article (by position: N-1, 2N-1, …)
out of the corpus and also writes DIR/golden.json: the questions of the kept articles
(answerable, `url` = their paragraph) and those of the held-out ones (unanswerable, `trecho`
null) — questions on the site's topics whose answer the site does not hold.

`--baseline` also scores scikit-learn's TfidfVectorizer (defaults, cosine) on the task with
busca's metric code, the reference point of MEASUREMENTS.md (nDCG@10 0.852).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CANDIDATES = (REPO.parent / "shared" / "data" / "faquad" / "dataset.json",
              REPO / "fixtures" / "faquad" / "dataset.json")


def paragraphs(dataset: dict) -> list[dict]:
    """One record per paragraph: id, title, text and its questions (id, text)."""
    out = []
    for d, doc in enumerate(dataset["data"]):
        for p, para in enumerate(doc["paragraphs"]):
            questions = [(qa["id"], qa["question"].strip()) for qa in para["qas"]]
            out.append({"_id": f"d{d:02d}p{p:02d}", "title": doc["title"],
                        "text": para["context"].strip(), "questions": questions})
    return out


def write_beir(records: list[dict], out: Path) -> dict:
    """Write corpus.jsonl, queries.jsonl and qrels/test.tsv; returns the counts."""
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as corpus, \
            open(out / "queries.jsonl", "w", encoding="utf-8") as queries, \
            open(out / "qrels" / "test.tsv", "w", encoding="utf-8") as qrels:
        qrels.write("query-id\tcorpus-id\tscore\n")
        n_queries = 0
        for r in records:
            doc = {"_id": r["_id"], "url": r["_id"], "title": r["title"], "text": r["text"]}
            corpus.write(json.dumps(doc, ensure_ascii=False) + "\n")
            for qid, text in r["questions"]:
                queries.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
                qrels.write(f"{qid}\t{r['_id']}\t1\n")
                n_queries += 1
    return {"documents": len(records), "queries": n_queries}


def hold_out(records: list[dict], every: int) -> tuple[list[dict], list[dict]]:
    """(kept paragraphs, golden items): every `every`-th article (d % every == every - 1) held
    out, its questions unanswerable; deterministic."""
    held = lambda r: int(r["_id"][1:3]) % every == every - 1  # noqa: E731
    kept = [r for r in records if not held(r)]
    golden = [{"id": qid, "pergunta": text, "url": r["_id"]} if not held(r) else
              {"id": qid, "pergunta": text, "trecho": None}
              for r in records for qid, text in r["questions"]]
    return kept, golden


def sklearn_baseline(records: list[dict]) -> dict:
    """nDCG@10, MRR@10 and recall@k of TfidfVectorizer (defaults) + cosine, per busca's metrics."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    from busca.search.eval.metrics import Outcome, default_metrics, values

    vectorizer = TfidfVectorizer()
    docs = vectorizer.fit_transform([r["text"] for r in records])
    questions = [(qid, text, n) for n, r in enumerate(records) for qid, text in r["questions"]]
    scores = (vectorizer.transform([t for _, t, _ in questions]) @ docs.T).toarray()
    outcomes = []
    for row, (qid, _, relevant) in zip(scores, questions):
        order = np.lexsort((np.arange(row.size), -row))
        rank = int(np.flatnonzero(order == relevant)[0]) + 1
        outcomes.append(Outcome(qid, (rank,), (1.0,), (1.0,), float(row[order[0]]),
                                float(row[relevant])))
    return {m.name: round(float(values(m, outcomes).mean()), 4) for m in default_metrics()}


def every(text: str) -> int:
    """--hold-out N: a whole number from 2 (1 would hold out every article, 0 none)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 2:
        raise argparse.ArgumentTypeError(
            f"{text!r}: N must be a whole number from 2 (every 2nd article) to the dataset's"
            " number of articles (39 in FaQuAD)")
    return n


def load(path: Path) -> tuple[list[dict], int]:
    """The dataset's paragraph records and its number of articles; one line if it is not a
    SQuAD-style dataset."""
    fix = "give FaQuAD's dataset.json (SQuAD format)"
    try:
        dataset = json.loads(path.read_text(encoding="utf-8"))
        return paragraphs(dataset), len(dataset["data"])
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SystemExit(f"error: {path} is not JSON ({e}): {fix}") from None
    except (KeyError, TypeError, AttributeError) as e:
        what = f"no {e} field" if isinstance(e, KeyError) else e
        raise SystemExit(f"error: {path} is not a SQuAD-style dataset ({what}): {fix}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=None,
                        help="FaQuAD dataset.json (default: shared data, else fixtures)")
    parser.add_argument("--out", type=Path, default=Path("faquad-beir"),
                        help="folder to write (default: ./faquad-beir)")
    parser.add_argument("--baseline", action="store_true",
                        help="also print scikit-learn TF-IDF figures on the task")
    parser.add_argument("--hold-out", type=every, default=None, metavar="N",
                        help="leave every Nth article out (N from 2 to the number of"
                             " articles); its questions become unanswerable (writes"
                             " DIR/golden.json)")
    args = parser.parse_args()
    path = args.dataset or next((p for p in CANDIDATES if p.is_file()), CANDIDATES[-1])
    records, articles = load(path)
    if args.hold_out and args.hold_out > articles:
        parser.error(f"argument --hold-out: {args.hold_out} holds out nothing: {path} has"
                     f" {articles} articles, so N must be from 2 to {articles}")
    if args.hold_out:
        records, golden = hold_out(records, args.hold_out)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "golden.json").write_text(
            "[\n" + ",\n".join(json.dumps(g, ensure_ascii=False) for g in golden) + "\n]\n",
            encoding="utf-8")
        unanswerable = sum(g.get("url") is None for g in golden)
        print(f"held out every {args.hold_out}th article: {unanswerable} unanswerable and"
              f" {len(golden) - unanswerable} answerable questions in {args.out}/golden.json")
    counts = write_beir(records, args.out)
    print(f"wrote {args.out}: {counts['documents']} documents, {counts['queries']} queries"
          f" (from {path})")
    if args.baseline:
        print("scikit-learn TfidfVectorizer, defaults, cosine:", json.dumps(sklearn_baseline(records)))


if __name__ == "__main__":
    from cli_errors import guarded  # here: tests load this file without bench/ on sys.path
    guarded(main)
