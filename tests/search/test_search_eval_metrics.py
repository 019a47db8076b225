import math
import random

import pytest

from busca.search.eval.judge import ChunkTable, Judged, outcome_of
from busca.search.eval.golden import Question
from busca.search.eval.metrics import (Metric, MetricError, Outcome, default_metrics, ndcg,
                                  parse_ks, parse_metric, recall, reciprocal_rank, value,
                                  values)


def outcome(ranks, gains=None, ideal=None, qid="q"):
    gains = tuple(gains or [1.0] * len(ranks))
    return Outcome(qid, tuple(ranks), gains, tuple(ideal or sorted(gains, reverse=True)),
                   None, None)


def test_metric_names_are_parsed_in_one_place():
    assert parse_metric("recall@3") == Metric("recall", 3)
    assert parse_metric(" NDCG@10 ").name == "ndcg@10"
    assert str(parse_metric("mrr@10")) == "mrr@10"


@pytest.mark.parametrize("name", ["recall", "recall@0", "recall@-1", "map@10", "ndcg@x", ""])
def test_unknown_metrics_name_the_valid_forms(name):
    with pytest.raises(MetricError, match="recall@K, mrr@K or ndcg@K"):
        parse_metric(name)


def test_ks_are_positive_integers():
    assert parse_ks("10,1, 3,3") == (1, 3, 10)
    assert parse_ks("1000000000") == (10 ** 9,)
    for bad in ("0", "1,a", "-1", "", "1.5", "1000000001", "73786976294838206464", "²"):
        with pytest.raises(MetricError, match="positive integers"):
            parse_ks(bad)


def test_default_metrics():
    assert [m.name for m in default_metrics()] == [
        "recall@1", "recall@3", "recall@5", "recall@10", "mrr@10", "ndcg@10"]


def test_first_hit_at_rank_2():
    o = outcome([2])
    assert reciprocal_rank(o, 10) == 0.5
    assert recall(o, 1) == 0.0 and recall(o, 3) == 1.0
    # one relevant item at rank 2: DCG = 1/log2(3), IDCG = 1
    assert ndcg(o, 10) == pytest.approx(1 / math.log2(3))
    assert ndcg(o, 1) == 0.0


def test_a_question_with_no_hit_scores_zero():
    o = outcome([], ideal=[1.0])
    assert [value(m, o) for m in default_metrics()] == [0.0] * 6


def test_beyond_the_cutoff_counts_nothing():
    o = outcome([11])
    assert reciprocal_rank(o, 10) == 0.0 and recall(o, 10) == 0.0 and ndcg(o, 10) == 0.0
    assert reciprocal_rank(o, 20) == pytest.approx(1 / 11)


def test_ndcg_linear_gain_with_two_relevant_chunks():
    # relevant at ranks 1 and 3 of two relevant: DCG = 1 + 1/2; IDCG = 1 + 1/log2(3)
    o = outcome([1, 3])
    assert ndcg(o, 10) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    # graded: gain 1 at rank 1, gain 2 at rank 3 (ideal 2, 1)
    o = outcome([1, 3], gains=[1.0, 2.0], ideal=[2.0, 1.0])
    assert ndcg(o, 10) == pytest.approx((1 + 2 / 2) / (2 + 1 / math.log2(3)))


def test_values_follow_the_outcomes_order():
    got = values(parse_metric("mrr@10"), [outcome([1]), outcome([4]), outcome([])])
    assert got.tolist() == [1.0, 0.25, 0.0]


# --- against an independent implementation (ranx) ------------------------------------------

def random_case(rng: random.Random, n_chunks: int = 40):
    scores = rng.sample(range(1, 10_000), n_chunks)  # distinct: no tie to break
    ranked = sorted(range(n_chunks), key=lambda i: -scores[i])[: rng.randint(0, 30)]
    relevant = rng.sample(range(n_chunks), rng.randint(1, 4))
    gains = {i: float(rng.choice([1, 1, 2, 3])) for i in relevant}
    return ranked, [scores[i] / 10_000 for i in ranked], gains


def test_metrics_agree_with_ranx_on_random_runs():
    ranx = pytest.importorskip("ranx")
    rng = random.Random(7)
    n_chunks = 40
    table = ChunkTable("t", {}, tuple(["u"] * n_chunks), tuple(range(n_chunks)),
                       tuple(range(n_chunks)), tuple(range(n_chunks)), {"u": ""})
    qrels, run, outcomes = {}, {}, []
    for q in range(150):
        ranked, scores, gains = random_case(rng, n_chunks)
        qid = f"q{q:03d}"  # ranx returns per-query values in sorted id order
        judged = Judged(Question(qid, "?", trecho="x"), gains, "chunk")
        outcomes.append(outcome_of(judged, table, ranked, scores))
        qrels[qid] = {f"c{i}": int(g) for i, g in gains.items()}
        run[qid] = {f"c{i}": s for i, s in zip(ranked, scores)} or {"none": 0.0}
    names = {"recall@1": "hit_rate@1", "recall@3": "hit_rate@3", "recall@10": "hit_rate@10",
             "mrr@10": "mrr@10", "ndcg@10": "ndcg@10", "ndcg@3": "ndcg@3"}
    expected = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), list(names.values()),
                             return_mean=False)
    for ours, theirs in names.items():
        got = values(parse_metric(ours), outcomes)
        assert got == pytest.approx(expected[theirs], abs=1e-9), ours
