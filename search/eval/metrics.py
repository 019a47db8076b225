"""Ranking metrics, named by strings parsed here only: "recall@3", "mrr@10", "ndcg@10".

Every metric reads an `Outcome`: the 1-based ranks at which relevant items came back (within
the ranking's depth) with their gains, and the ideal gains (every relevant item's gain, best
first). A question with no hit scores 0; it is never dropped.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
from ...errors import BuscaError
from ..scorers import MOST

KINDS = ("recall", "mrr", "ndcg")
KS = (1, 3, 5, 10)
KEY = "recall@3"  # fixed/broken lists are read on this metric by default
EXTRA = ("mrr@10", "ndcg@10")

_NAME = re.compile(r"^(recall|mrr|ndcg)@([0-9]+)$")


class MetricError(BuscaError, ValueError):
    """A metric name or cutoff busca does not know."""


@dataclass(frozen=True)
class Metric:
    """A metric kind with its cutoff k."""

    kind: str
    k: int

    @property
    def name(self) -> str:
        return f"{self.kind}@{self.k}"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Outcome:
    """How one ranking did on one question.

    `ranks`: 1-based ranks of the relevant items found (ascending); `gains`: their gains;
    `ideal`: the gains of all relevant items, best first; `top_score`: the best hit's score
    (None with no hit); `first_score`: the score at the first relevant rank. `units` and
    `scores` keep the ranking itself (item labels and scores, best first) for run files; `ids`
    the chunk id of each unit (a document's best chunk), for answerability features.
    """

    question_id: str
    ranks: tuple[int, ...]
    gains: tuple[float, ...]
    ideal: tuple[float, ...]
    top_score: float | None
    first_score: float | None
    units: tuple[str, ...] = field(default=(), compare=False, repr=False)
    scores: tuple[float, ...] = field(default=(), compare=False, repr=False)
    ids: tuple[int, ...] = field(default=(), compare=False, repr=False)  # chunk of each unit

    @property
    def first_rank(self) -> int | None:
        return self.ranks[0] if self.ranks else None


def parse_metric(name: str) -> Metric:
    """"recall@3" -> Metric("recall", 3); MetricError lists the valid forms."""
    match = _NAME.match(name.strip().lower())
    if not match or int(match.group(2)) < 1:
        raise MetricError(f"unknown metric {name!r}; use recall@K, mrr@K or ndcg@K with K a"
                          " positive integer, e.g. recall@3")
    return Metric(match.group(1), int(match.group(2)))


def parse_ks(text: str) -> tuple[int, ...]:
    """"1,3,5,10" -> (1, 3, 5, 10), sorted and unique; MetricError on anything else."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isascii() and p.isdigit() and 0 < int(p) <= MOST for p in parts):
        raise MetricError(f"-k takes positive integers up to {MOST:,} separated by commas,"
                          f" e.g. 1,3,5,10; got {text!r}")
    return tuple(sorted({int(p) for p in parts}))


def default_metrics(ks: tuple[int, ...] = KS) -> list[Metric]:
    """recall@k for each k, then MRR@10 and nDCG@10."""
    return [Metric("recall", k) for k in ks] + [parse_metric(m) for m in EXTRA]


def recall(outcome: Outcome, k: int) -> float:
    """The seed's acerto@k (ranx's hit_rate@k): 1 if some relevant item is in the top k."""
    return 1.0 if outcome.ranks and outcome.ranks[0] <= k else 0.0


def reciprocal_rank(outcome: Outcome, k: int) -> float:
    """1 / rank of the first relevant item if that rank is at most k, else 0."""
    first = outcome.first_rank
    return 1.0 / first if first is not None and first <= k else 0.0


def ndcg(outcome: Outcome, k: int) -> float:
    """DCG@k / IDCG@k with linear gain: DCG@k = sum over ranks r <= k of gain_r / log2(r + 1);
    IDCG@k is the DCG@k of the ideal order. 0 when nothing is relevant."""
    dcg = sum(g / math.log2(r + 1) for r, g in zip(outcome.ranks, outcome.gains) if r <= k)
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(outcome.ideal[:k]))
    return dcg / idcg if idcg > 0 else 0.0


_FUNCTIONS = {"recall": recall, "mrr": reciprocal_rank, "ndcg": ndcg}


def value(metric: Metric, outcome: Outcome) -> float:
    """The metric's value on one question."""
    return _FUNCTIONS[metric.kind](outcome, metric.k)


def values(metric: Metric, outcomes: list[Outcome]) -> np.ndarray:
    """Per-question values of a metric, in the order of `outcomes`."""
    return np.array([value(metric, o) for o in outcomes], dtype=np.float64)
