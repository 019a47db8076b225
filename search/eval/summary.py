"""Turn per-question outcomes into the evaluation: metrics with intervals, slices by tag,
pairwise fixed/broken lists with paired differences, the subset lesson and the floors."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .bootstrap import (SUBSET_SIZES, Difference, Estimate, SubsetRange, estimate,
                        paired_difference, subset_range)
from .answerability import Answerability, measure_all
from .floors import KEEP, Calibration, FloorError, calibrate
from .golden import Golden
from .metrics import KEY, Metric, Outcome, parse_metric, values

SUBSET_METRIC = "recall@1"  # the seed's sample-size lesson
FEW_QUESTIONS = 20  # seed 001: "um ponto de partida prático é de 20 a 30 perguntas"
MAX_TAG_VALUES = 12
MAX_ALL_PAIRS = 4


@dataclass(frozen=True)
class Pair:
    """System b against system a on the same questions (differences are b - a)."""

    a: str
    b: str
    key: str
    fixed: tuple[str, ...]  # question ids b answers within the key cutoff and a does not
    broken: tuple[str, ...]
    wins: int  # questions whose first relevant rank is better with b
    ties: int
    losses: int
    differences: dict[str, Difference]


@dataclass
class Evaluation:
    """Everything `busca eval` reports; `outcomes[system]` follows `golden.questions`."""

    golden: Golden
    metrics: list[Metric]
    key: Metric
    outcomes: dict[str, list[Outcome]]
    summary: dict[str, dict[str, Estimate]]
    slices: dict[str, dict[str, dict[str, dict[str, Estimate]]]]
    pairs: list[Pair]
    subsets: dict[str, list[SubsetRange]]
    floors: dict[str, Calibration | str]
    info: dict = field(default_factory=dict)
    problems: dict[str, tuple] = field(default_factory=dict)  # chunker label -> LabelProblems
    found_in: dict[str, Mapping[str, int]] = field(default_factory=dict)
    answerability: dict[str, Answerability] = field(default_factory=dict)
    warning: str | None = None  # too few answerable questions to trust the figures


def summarize(golden: Golden, outcomes: dict[str, list[Outcome]], metrics: Sequence[Metric], *,
              key: Metric | str = KEY, by: Sequence[str] | None = None,
              pairs: Sequence[tuple[str, str]] | None = None, info: dict | None = None,
              keep: float = KEEP, features: dict[str, list[dict]] | None = None,
              meta: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None
              ) -> Evaluation:
    """The whole evaluation of `outcomes` (per system, in golden order); each floor keeps
    `keep` of the answerable questions; `features` (per system, per question: see
    search/answerable.py) give the answerability signals; `meta` (`meta.FIELD` -> question
    id -> values: search/eval/scope.py) slices by a field of the relevant documents."""
    key = parse_metric(key) if isinstance(key, str) else key
    answerable = [i for i, q in enumerate(golden.questions) if q.answerable]
    unanswerable = [i for i, q in enumerate(golden.questions) if not q.answerable]
    kept = {s: [o[i] for i in answerable] for s, o in outcomes.items()}
    summary = {s: _estimates(o, metrics) for s, o in kept.items()}
    slices = _slices(golden, answerable, kept, metrics, by, meta or {})
    chosen = list(pairs) if pairs is not None else default_pairs(list(outcomes))
    compared = [compare(a, kept[a], b, kept[b], metrics, key) for a, b in chosen]
    subset_metric = parse_metric(SUBSET_METRIC)
    subsets = {s: [r for n in SUBSET_SIZES
                   if (r := subset_range(values(subset_metric, o), n))]
               for s, o in kept.items()}
    floors = {s: _floor(kept[s], [outcomes[s][i] for i in unanswerable], keep)
              for s in outcomes}
    return Evaluation(golden, list(metrics), key, outcomes, summary, slices, compared,
                      subsets, floors, dict(info or {}),
                      answerability=measure_all(golden, features or {}, keep),
                      warning=few_questions(len(answerable)))


def few_questions(n: int) -> str | None:
    """The warning for a golden set of fewer than FEW_QUESTIONS answerable questions (seed
    001: five questions mislead), else None."""
    if not 0 < n < FEW_QUESTIONS:
        return None
    return (f"only {n} answerable question{'s' if n != 1 else ''}: each one moves recall by"
            f" {1 / n:.2f}, and a change can look better or worse by the luck of which"
            f" questions were picked; start from {FEW_QUESTIONS}–30, written as users ask"
            " them, and add each real miss (busca misses --golden)")


def default_pairs(systems: list[str]) -> list[tuple[str, str]]:
    """Every pair of systems; with many, only pairs sharing a method or a chunker."""
    pairs = list(itertools.combinations(systems, 2))
    if len(systems) <= MAX_ALL_PAIRS:
        return pairs
    return [(a, b) for a, b in pairs
            if set(a.split("/")) & set(b.split("/"))]


def compare(a_name: str, a: list[Outcome], b_name: str, b: list[Outcome],
            metrics: Sequence[Metric], key: Metric) -> Pair:
    """Fixed/broken on `key`, wins/ties/losses on the first relevant rank, paired tests."""
    va, vb = values(key, a), values(key, b)
    fixed = tuple(o.question_id for o, x, y in zip(a, va, vb) if y > x)
    broken = tuple(o.question_id for o, x, y in zip(a, va, vb) if y < x)
    ra = [o.first_rank or math.inf for o in a]
    rb = [o.first_rank or math.inf for o in b]
    wins = sum(y < x for x, y in zip(ra, rb))
    losses = sum(y > x for x, y in zip(ra, rb))
    diffs = {m.name: paired_difference(values(m, a), values(m, b)) for m in metrics}
    return Pair(a_name, b_name, key.name, fixed, broken, wins, len(a) - wins - losses, losses,
                diffs)


def _estimates(outcomes: list[Outcome], metrics: Sequence[Metric]) -> dict[str, Estimate]:
    return {m.name: estimate(values(m, outcomes)) for m in metrics}


def tag_keys(golden: Golden, by: Sequence[str] | None = None) -> list[str]:
    """Tags to slice by: `by`, or every tag with 2 to 12 values among answerable questions."""
    questions = golden.answerable
    if by is not None:
        return list(by)
    keys = dict.fromkeys(k for q in questions for k in q.tags)
    return [k for k in keys
            if 2 <= len({q.tags[k] for q in questions if k in q.tags}) <= MAX_TAG_VALUES]


def _slices(golden, answerable, kept, metrics, by, meta):
    questions = [golden.questions[i] for i in answerable]
    slices = {}
    for tag in tag_keys(golden, by):
        groups: dict[str, list[int]] = {}
        for n, q in enumerate(questions):
            for value in _slice_values(q, tag, meta):
                groups.setdefault(value, []).append(n)
        slices[tag] = {value: {s: _estimates([o[n] for n in members], metrics)
                               for s, o in kept.items()}
                       for value, members in groups.items()}
    return slices


def _slice_values(question, tag: str, meta: Mapping) -> tuple[str, ...]:
    """The slices of `tag` a question is in: its tag's value, or (`meta.FIELD`) each value
    of FIELD among its relevant documents; "(none)" without one."""
    if tag in meta:
        return meta[tag].get(question.id) or ("(none)",)
    return (question.tags.get(tag, "(none)"),)


def _floor(answerable: list[Outcome], unanswerable: list[Outcome],
           keep: float) -> Calibration | str:
    try:
        return calibrate(answerable, unanswerable, keep=keep)
    except FloorError as e:
        return str(e)
