import pytest

from busca.search.eval.golden import Golden, Question
from busca.search.eval.metrics import Outcome, default_metrics, parse_metric
from busca.search.eval.summary import compare, default_pairs, summarize, tag_keys


def o(qid, rank, top=0.5):
    ranks = () if rank is None else (rank,)
    return Outcome(qid, ranks, (1.0,) * len(ranks), (1.0,), top,
                   top if rank is not None else None)


QUESTIONS = (
    Question("a", "A?", trecho="x", tags={"tipo": "lexical"}),
    Question("b", "B?", trecho="x", tags={"tipo": "lexical"}),
    Question("c", "C?", trecho="x", tags={"tipo": "parafrase"}),
    Question("d", "D?", trecho="x", tags={"tipo": "parafrase", "fonte": "log"}),
    Question("n", "N?", tags={"tipo": "sem_resposta"}),
)
GOLDEN = Golden("g.json", "json", QUESTIONS)
BEFORE = [o("a", 1), o("b", 4), o("c", None), o("d", 2), o("n", None, 0.1)]
AFTER = [o("a", 1), o("b", 2), o("c", 3), o("d", 5), o("n", 1, 0.2)]


def test_fixed_broken_and_wins_by_hand():
    pair = compare("antes", BEFORE[:4], "depois", AFTER[:4], default_metrics(),
                   parse_metric("recall@3"))
    assert pair.fixed == ("b", "c") and pair.broken == ("d",)
    assert (pair.wins, pair.ties, pair.losses) == (2, 1, 1)
    # recall@3: before 0.5 (a, d), after 0.75 (a, b, c)
    assert pair.differences["recall@3"].mean == pytest.approx(0.25)
    # MRR@10: before (1 + 1/4 + 0 + 1/2) / 4, after (1 + 1/2 + 1/3 + 1/5) / 4
    assert pair.differences["mrr@10"].mean == pytest.approx(
        ((1 + 1 / 2 + 1 / 3 + 1 / 5) - (1 + 1 / 4 + 0 + 1 / 2)) / 4)


def test_summary_leaves_unanswerable_questions_to_the_floor():
    ev = summarize(GOLDEN, {"antes": BEFORE, "depois": AFTER}, default_metrics())
    assert ev.summary["antes"]["recall@3"].n == 4
    assert ev.summary["antes"]["recall@3"].mean == pytest.approx(0.5)
    assert set(ev.slices) == {"tipo"}  # "fonte" has one value only
    assert set(ev.slices["tipo"]) == {"lexical", "parafrase"}
    assert ev.slices["tipo"]["parafrase"]["depois"]["recall@3"].mean == pytest.approx(0.5)
    assert [(p.a, p.b) for p in ev.pairs] == [("antes", "depois")]
    assert ev.subsets["antes"] == []  # 4 answerable questions: no subset of 5 or 10
    assert ev.floors["antes"].floor > 0


def test_tags_and_pairs():
    assert tag_keys(GOLDEN, ["fonte"]) == ["fonte"]
    assert default_pairs(["a", "b", "c"]) == [("a", "b"), ("a", "c"), ("b", "c")]
    many = [f"{m}/{c}" for m in ("tfidf", "bm25", "dense") for c in ("w", "s")]
    pairs = default_pairs(many)
    assert ("tfidf/w", "tfidf/s") in pairs and ("tfidf/w", "bm25/w") in pairs
    assert ("tfidf/w", "bm25/s") not in pairs
