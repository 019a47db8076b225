import itertools

import numpy as np
import pytest

from busca.search.eval.bootstrap import (bootstrap, paired_difference, sign_flip_p, subset_range)


def test_bootstrap_is_repeatable_and_brackets_the_mean():
    values = np.array([1, 0, 1, 1, 0, 1, 1, 1, 0, 1], dtype=float)
    a, b = bootstrap(values), bootstrap(values)
    assert a == b
    assert a.mean == pytest.approx(0.7) and a.n == 10
    assert 0.3 <= a.low < 0.7 < a.high <= 1.0


def test_bootstrap_of_constant_values_has_no_width_and_of_nothing_is_nan():
    est = bootstrap(np.ones(30))
    assert (est.low, est.mean, est.high) == (1.0, 1.0, 1.0)
    assert np.isnan(bootstrap(np.array([])).mean)


def test_bootstrap_interval_shrinks_with_more_questions():
    small = bootstrap(np.tile([1.0, 0.0], 10))
    large = bootstrap(np.tile([1.0, 0.0], 500))
    assert large.high - large.low < (small.high - small.low) / 3


def test_sign_flip_exact_by_hand():
    # three questions all +1: of 8 sign patterns only ++ + and - - - reach |sum| 3
    assert sign_flip_p(np.array([1.0, 1.0, 1.0])) == pytest.approx(2 / 8)
    # zeros do not count; one +1 and one -1: every pattern has |sum| >= 0
    assert sign_flip_p(np.array([0.0, 1.0, -1.0])) == 1.0
    assert sign_flip_p(np.zeros(5)) == 1.0


def test_sign_flip_exact_matches_brute_force():
    d = np.array([0.5, -0.2, 1.0, 0.3, 0.0, -1.0, 0.7])
    nonzero = d[d != 0]
    observed = abs(nonzero.sum())
    sums = [abs(np.dot(s, nonzero)) for s in itertools.product([-1, 1], repeat=nonzero.size)]
    assert sign_flip_p(d) == pytest.approx(np.mean([x >= observed - 1e-12 for x in sums]))


def test_sign_flip_sampled_for_many_questions():
    rng = np.random.default_rng(1)
    noise = rng.choice([-1.0, 1.0], size=200)
    assert sign_flip_p(noise) > 0.05
    assert sign_flip_p(np.ones(40)) == pytest.approx(1 / 1001)


def test_paired_difference():
    a = np.array([0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0], dtype=float)
    b = np.ones_like(a)
    d = paired_difference(a, b)
    assert d.mean == pytest.approx(10 / 14) and d.n == 14
    assert 0 < d.low <= d.mean <= d.high
    assert d.p_value == pytest.approx(2 / 2 ** 10)
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference(a, b[:3])


def test_subset_range_reproduces_the_seed_lesson():
    # 20 questions, recall@1 0.75: subsets of 5 range widely, of 10 less
    values = np.array([1.0] * 15 + [0.0] * 5)
    five, ten = subset_range(values, 5), subset_range(values, 10)
    assert five.low <= 0.4 and five.high == 1.0
    assert ten.low > five.low and ten.high == 1.0
    assert five.p05 <= 0.75 <= five.p95
    assert subset_range(values, 5) == five
    assert subset_range(values[:5], 5) is None
