import pytest

from busca.search.eval.floors import MIN_QUESTIONS, FloorError, calibrate, tradeoff
from busca.search.eval.metrics import Outcome


def answerable(top, first_rank=1, first_score=None, qid="a"):
    ranks = () if first_rank is None else (first_rank,)
    score = top if first_score is None else first_score
    return Outcome(qid, ranks, (1.0,) * len(ranks), (1.0,), top,
                   score if first_rank is not None else None)


def unanswerable(top, qid="n"):
    return Outcome(qid, (), (), (), top, None)


def test_the_seeds_floor_lies_midway_between_the_groups():
    # seed 000: lowest answerable 0.476, highest unanswerable 0.348 -> floor near 0.41
    pos = [answerable(s) for s in (0.476, 0.65, 0.73, 0.70)]
    neg = [unanswerable(s) for s in (0.206, 0.339, 0.348)]
    cal = calibrate(pos, neg)
    assert cal.floor == pytest.approx(0.412)
    assert cal.separation == 1.0
    assert (cal.lowest_answerable, cal.highest_unanswerable) == (0.476, 0.348)
    chosen = next(r for r in cal.rows if r.floor == cal.floor)
    assert (chosen.answered_right, chosen.answerable_refused, chosen.unanswerable_refused) == (
        1.0, 0.0, 1.0)
    assert cal.rows[0].floor == 0.0 and cal.rows[0].unanswerable_refused == 0.0


def test_overlapping_groups_get_the_best_youden_cut():
    pos = [answerable(s) for s in (0.2, 0.5, 0.6, 0.7)]
    neg = [unanswerable(s) for s in (0.1, 0.3, 0.55)]
    cal = calibrate(pos, neg)
    # J at 0.4 (between 0.3 and 0.5): 3/4 kept + 2/3 refused - 1 = 0.42;
    # at 0.575 (between 0.55 and 0.6): 2/4 kept + 3/3 refused - 1 = 0.5, the best
    assert cal.floor == pytest.approx(0.575)
    assert cal.separation == pytest.approx(0.5)
    at_04 = tradeoff(pos, neg, 0.4)
    assert (at_04.answerable_refused, at_04.unanswerable_refused) == (0.25, pytest.approx(2 / 3))


def test_tradeoff_counts_only_relevant_hits_in_the_top_k():
    pos = [answerable(0.9, first_rank=1), answerable(0.8, first_rank=5),
           answerable(0.7, first_rank=2, first_score=0.3), answerable(None, first_rank=None)]
    neg = [unanswerable(0.5), unanswerable(None)]
    row = tradeoff(pos, neg, 0.4, k=3)
    assert row.answered_right == 0.25  # only the first: rank 5 > 3, the third's hit < floor
    assert row.answerable_refused == 0.25  # the one with no hit at all
    assert row.unanswerable_refused == 0.5
    assert tradeoff(pos, neg, 0.0, k=3).answered_right == 0.5


def test_calibration_needs_both_groups():
    with pytest.raises(FloorError, match='"trecho": null'):
        calibrate([answerable(0.5)], [])
    with pytest.raises(FloorError):
        calibrate([], [unanswerable(0.5)])


def test_a_floor_from_too_few_questions_warns_and_says_how_many_it_needs():
    """Issue 10 item 15: J = 1.00 from two unanswerable questions is no evidence."""
    pos = [answerable(0.4 + i / 100, qid=f"a{i}") for i in range(12)]
    few = calibrate(pos, [unanswerable(0.1, "n1"), unanswerable(0.2, "n2")])
    assert few.separation == 1.0
    assert "only 2 unanswerable question(s)" in few.warning
    assert f"at least {MIN_QUESTIONS} of each kind" in few.warning and "1/2" in few.warning
    assert '"trecho": null' in few.warning
    enough = calibrate(pos, [unanswerable(i / 100, f"n{i}") for i in range(MIN_QUESTIONS)])
    assert enough.warning is None
    assert "only 3 answerable" in calibrate(pos[:3], [unanswerable(0.1)] * 10).warning

