import pytest

from busca.search.eval.floors import (KEEP, MIN_QUESTIONS, FloorError, calibrate, tradeoff,
                                      wilson)
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


def test_overlapping_groups_get_the_best_youden_cut_as_the_alternative():
    """Issue 30: Youden's J is printed as an alternative, never the default floor."""
    pos = [answerable(s) for s in (0.2, 0.5, 0.6, 0.7)]
    neg = [unanswerable(s) for s in (0.1, 0.3, 0.55)]
    cal = calibrate(pos, neg)
    # J at 0.4 (between 0.3 and 0.5): 3/4 kept + 2/3 refused - 1 = 0.42;
    # at 0.575 (between 0.55 and 0.6): 2/4 kept + 3/3 refused - 1 = 0.5, the best
    assert cal.youden.floor == pytest.approx(0.575)
    assert cal.youden.separation == pytest.approx(0.5)
    assert (cal.youden.kept, cal.youden.refused.value) == (0.5, 1.0)
    # keeping 95% of 4 answerable questions keeps all 4: midway between 0.1 and 0.2
    assert cal.floor == pytest.approx(0.15) and cal.chosen.kept == 1.0
    assert cal.separation == pytest.approx(1 / 3)
    assert any(r.floor == cal.youden.floor for r in cal.rows)
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



def _e5_like():
    """Scores as e5 dense gives them: both groups crowded near 0.85-0.9, overlapping."""
    pos = [answerable(0.84 + i * 0.003, qid=f"a{i}") for i in range(20)]  # 0.840 .. 0.897
    neg = [unanswerable(0.85 + i * 0.005, f"n{i}") for i in range(10)]  # 0.850 .. 0.895
    return pos, neg


def test_the_floor_keeps_the_target_share_of_answerable_questions():
    """Issue 30: the default floor keeps 95% of answerable questions, not the J optimum."""
    pos, neg = _e5_like()
    cal = calibrate(pos, neg)
    assert KEEP == 0.95 and cal.keep == 0.95
    assert cal.chosen.kept == 0.95  # 19 of 20: the lowest (0.840) is refused
    assert 0.840 < cal.floor < 0.843  # the highest cut that keeps 19: below 0.843
    assert cal.chosen.refused.value == 0.0 and cal.chosen.refused.n == 10
    assert cal.chosen.refused.high == pytest.approx(wilson(0, 10).high)
    assert cal.youden.kept < 0.5 < cal.youden.refused.value  # what J would have cost
    lower = calibrate(pos, neg, keep=0.5)
    assert lower.chosen.kept == 0.5 and lower.floor > cal.floor
    assert lower.chosen.refused.value > 0
    with pytest.raises(FloorError, match=r"\(0, 1\]"):
        calibrate(pos, neg, keep=0)


def test_the_target_counts_questions_with_no_hit_as_refused():
    pos = [answerable(0.5), answerable(0.6), answerable(None, first_rank=None)]
    neg = [unanswerable(0.1), unanswerable(0.55)]
    cal = calibrate(pos, neg, keep=0.9)  # 0.9 of 3 is unreachable: keep every hit
    assert cal.floor == 0.1 and cal.chosen.kept == pytest.approx(2 / 3)


def test_wilson_intervals():
    assert wilson(5, 10).low == pytest.approx(0.2366, abs=1e-4)
    assert wilson(5, 10).high == pytest.approx(0.7634, abs=1e-4)
    assert wilson(10, 10).low == pytest.approx(0.7225, abs=1e-4)
    assert wilson(10, 10).high == pytest.approx(1.0)
    assert wilson(0, 10).low == 0.0 and wilson(0, 0).n == 0


@pytest.mark.parametrize("pos, neg, lacking, not_named", [
    ([], [unanswerable(0.5)], "no answerable question: add answerable ones", "unanswerable ones"),
    ([answerable(0.5)], [], 'no unanswerable question: add unanswerable ones (with "trecho":'
     " null", "add answerable"),
    ([], [], "no answerable and no unanswerable question", None),
])
def test_calibration_names_the_kind_of_question_the_set_lacks(pos, neg, lacking, not_named):
    """A set of only unanswerable questions was told to add unanswerable ones
    ('"trecho": null'): the message names the kind missing and how to add it."""
    with pytest.raises(FloorError) as e:
        calibrate(pos, neg)
    assert lacking in str(e.value) and "\n" not in str(e.value)
    assert not_named is None or not_named not in str(e.value)


def test_the_scores_chart_counts_a_question_that_got_no_hit():
    """`busca eval --plot`'s scores chart left out an unanswerable question without any hit
    (no score to plot): its legend said 3 where the report counted 4."""
    from busca.search.eval.plots import score_rows

    pos = [answerable(s) for s in (0.5, 0.6, 0.7)]
    neg = [unanswerable(s) for s in (0.1, 0.2, 0.3)] + [unanswerable(None, qid="vazia")]
    (kept_label, kept), (refused_label, refused) = score_rows(calibrate(pos, neg))
    assert (kept_label, kept) == ("answerable (3)", [0.5, 0.6, 0.7])
    assert (refused_label, refused) == ("unanswerable (4, 1 with no hit)", [0.1, 0.2, 0.3])
