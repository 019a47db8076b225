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


def test_every_question_found_is_no_certainty_and_a_small_set_is_said():
    """Seed 001: five questions mislead. Five questions all found at rank 1 are no proof of
    1.00: the interval is the Wilson interval of 5 of 5 (the bootstrap said 1.00–1.00), for
    every metric, in the summary and in a tag's slice; none found is 0.00 to the same bound
    from the other side; and the report says the set is too small (it said nothing)."""
    from busca.search.eval.floors import wilson
    from busca.search.eval.report import render_text, to_json

    qs = tuple(Question(q, f"{q}?", trecho="x", tags={"tipo": "lexical" if q < "c"
                                                       else "parafrase"})
               for q in "abcde")
    golden = Golden("g.json", "json", qs)
    ev = summarize(golden, {"all": [o(q.id, 1) for q in qs],
                            "none": [o(q.id, None) for q in qs]}, default_metrics())
    five = wilson(5, 5)
    assert 0.5 < five.low < 0.6 and five.high == 1.0
    for m in ("recall@1", "recall@10", "mrr@10", "ndcg@10"):
        est = ev.summary["all"][m]
        assert (est.mean, est.low, est.high, est.n) == (1.0, five.low, 1.0, 5)
        nothing = ev.summary["none"][m]
        assert (nothing.mean, nothing.low) == (0.0, 0.0)
        assert nothing.high == pytest.approx(1 - five.low)
    sliced = ev.slices["tipo"]["lexical"]["all"]["recall@3"]
    assert (sliced.low, sliced.n) == (wilson(2, 2).low, 2) and sliced.low < 0.5
    text = render_text(ev)
    assert "1.000 (0.57–1.00)" in text and "(1.00–1.00)" not in text
    assert "warning: only 5 answerable questions" in text and "20–30" in text
    assert "only 5 answerable questions" in to_json(ev)["warning"]


def test_every_question_at_one_rank_below_the_first_is_no_certainty_either():
    """Every question found at rank 3 (a slice of one question, or three alike): MRR 0.333
    was printed 0.333 (0.33–0.33); the interval of a value shared by every question is the
    Wilson interval of a coin of that mean."""
    from busca.search.eval.floors import wilson
    from busca.search.eval.report import render_text

    qs = tuple(Question(q, f"{q}?", trecho="x") for q in "abc")
    ev = summarize(Golden("g.json", "json", qs), {"m": [o(q.id, 3) for q in qs]},
                   default_metrics())
    mrr = ev.summary["m"]["mrr@10"]
    third = wilson(1.0, 3)  # three questions of mean 1/3
    assert mrr.mean == pytest.approx(1 / 3) and (mrr.low, mrr.high) == (third.low, third.high)
    assert mrr.low < 0.1 and mrr.high > 0.7
    assert "0.333 (0.33–0.33)" not in render_text(ev)
    one = summarize(Golden("g.json", "json", qs[:1]), {"m": [o("a", 3)]}, default_metrics())
    assert one.summary["m"]["mrr@10"].high - one.summary["m"]["mrr@10"].low > 0.5


def test_a_mixed_set_keeps_the_bootstrap_and_twenty_questions_no_warning():
    from busca.search.eval.bootstrap import bootstrap
    from busca.search.eval.metrics import values

    qs = tuple(Question(f"q{i}", f"{i}?", trecho="x") for i in range(20))
    outs = [o(q.id, 1 if i % 4 else None) for i, q in enumerate(qs)]
    ev = summarize(Golden("g.json", "json", qs), {"m": outs}, default_metrics())
    recall = parse_metric("recall@1")
    assert ev.summary["m"]["recall@1"] == bootstrap(values(recall, outs))
    assert ev.warning is None
