"""Confidence for per-question metric values: bootstrap intervals, paired differences with a
sign-flip randomisation p-value, and the range over small random subsets (the seed's lesson
that five questions mislead). Every draw uses a fixed seed, so a run repeats exactly."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .floors import wilson

RESAMPLES = 1000
SEED = 0
LEVEL = 0.95
SUBSET_SIZES = (5, 10)
EXACT_FLIPS = 12  # up to this many non-zero differences, enumerate every sign pattern


@dataclass(frozen=True)
class Estimate:
    """A mean over n questions with its bootstrap interval (NaN when n is 0)."""

    mean: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class Difference:
    """Mean of b - a over paired questions, its bootstrap interval and two-sided p-value."""

    mean: float
    low: float
    high: float
    p_value: float
    n: int


@dataclass(frozen=True)
class SubsetRange:
    """A metric's mean over `draws` random subsets of `size` questions: extremes and 90% band."""

    size: int
    low: float
    high: float
    p05: float
    p95: float


def bootstrap(values: np.ndarray, *, resamples: int = RESAMPLES, seed: int = SEED,
              level: float = LEVEL) -> Estimate:
    """Percentile bootstrap interval of the mean: resample questions with replacement."""
    values = np.asarray(values, dtype=np.float64)
    n = values.size
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return Estimate(float(values.mean()), float(low), float(high), n)


def estimate(values: np.ndarray, *, resamples: int = RESAMPLES, seed: int = SEED) -> Estimate:
    """The mean of a per-question metric in [0, 1] with its 95% interval: the percentile
    bootstrap, except when every question has the same value (every question found at rank
    1, or none in the top k; a slice of one question). There the bootstrap has nothing to
    resample and would say 1.00–1.00 — certainty from five questions; the interval is then
    the Wilson score interval of n of n (or 0 of n) successes, the floors' interval: for a
    metric in [0, 1] all n values are 1 no likelier than n successes of a coin of the same
    mean (Markov), so the bound holds for MRR and nDCG too. 0.57–1.00 for 5 questions,
    0.84–1.00 for 20. Every value v strictly between: the Wilson interval of a coin of mean v
    (the [0, 1] metric of the widest spread for that mean), not 0.33–0.33 from one MRR."""
    values = np.asarray(values, dtype=np.float64)
    if values.size and np.all(values == values[0]):
        share = wilson(float(values.sum()), int(values.size))
        return Estimate(share.value, share.low, share.high, share.n)
    return bootstrap(values, resamples=resamples, seed=seed)


def paired_difference(a: np.ndarray, b: np.ndarray, *, resamples: int = RESAMPLES,
                      seed: int = SEED, level: float = LEVEL) -> Difference:
    """b - a per question: the mean, its bootstrap interval and the sign-flip p-value."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired values differ in length: {a.size} and {b.size}")
    diff = b - a
    est = bootstrap(diff, resamples=resamples, seed=seed, level=level)
    p = sign_flip_p(diff, resamples=resamples, seed=seed)
    return Difference(est.mean, est.low, est.high, p, est.n)


def sign_flip_p(diff: np.ndarray, *, resamples: int = RESAMPLES, seed: int = SEED) -> float:
    """Two-sided p-value of a paired randomisation test: under "no difference" each question's
    difference is as likely to have either sign, so p = share of sign patterns whose
    |sum| >= the observed |sum| (exact for few non-zero differences, else sampled, +1 smoothed)."""
    d = np.asarray(diff, dtype=np.float64)
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    observed = abs(d.sum()) - 1e-12 * max(1.0, abs(d.sum()))
    if d.size <= EXACT_FLIPS:
        patterns = (np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1
        sums = (patterns * 2 - 1) @ d
        return float(np.mean(np.abs(sums) >= observed))
    rng = np.random.default_rng(seed)
    signs = rng.integers(0, 2, size=(resamples, d.size)) * 2 - 1
    extreme = int(np.sum(np.abs(signs @ d) >= observed))
    return (extreme + 1) / (resamples + 1)


def subset_range(values: np.ndarray, size: int, *, draws: int = RESAMPLES,
                 seed: int = SEED) -> SubsetRange | None:
    """The mean over `draws` random subsets of `size` questions (without replacement);
    None when there are not more than `size` questions."""
    values = np.asarray(values, dtype=np.float64)
    if values.size <= size:
        return None
    rng = np.random.default_rng(seed)
    picks = np.argsort(rng.random((draws, values.size)), axis=1)[:, :size]
    means = values[picks].mean(axis=1)
    p05, p95 = np.quantile(means, [0.05, 0.95])
    return SubsetRange(size, float(means.min()), float(means.max()), float(p05), float(p95))
