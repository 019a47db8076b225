"""Score-floor calibration: measure, not guess, the score below which search says "nothing".

For one method, the best hit's score of each answerable and each unanswerable question; the
floor is the highest cut that still keeps a stated share of the answerable questions (`keep`,
95% by default), placed midway in the gap below the lowest kept score — the seed's 0.41
between 0.348 (highest unanswerable) and 0.476 (lowest answerable) — and the report says
which share of the unanswerable questions it refuses, with a Wilson interval. The cut with
the best separation (Youden J) is printed as an alternative only: on real data it can refuse
most answerable questions (e5 dense refused 88% of them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import BuscaError
from ...index.methods import method_spec
from .metrics import Outcome

FLOOR_K = 3  # `busca search` returns 3 hits by default
TABLE_ROWS = 9
# Fewest questions of each kind (answerable, unanswerable) for a floor worth trusting: with
# fewer, one question moves a share (answerable kept, unanswerable refused) by over 10 points.
MIN_QUESTIONS = 10
KEEP = 0.95  # the share of answerable questions a calibrated floor keeps (--keep)
Z = 1.959964  # the normal quantile of a two-sided 95% interval


class FloorError(BuscaError, ValueError):
    """A floor cannot be calibrated from these questions."""


@dataclass(frozen=True)
class FloorRow:
    """What a floor does: shares of answerable questions answered with a relevant hit in the
    top k, of answerable questions refused, and of unanswerable questions refused."""

    floor: float
    answered_right: float
    answerable_refused: float
    unanswerable_refused: float


@dataclass(frozen=True)
class Share:
    """A share of n questions with its 95% Wilson score interval."""

    value: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class Choice:
    """What one floor does: answerable questions kept (best hit at or above it), unanswerable
    ones refused (with its interval), and Youden's J (kept + refused - 1)."""

    floor: float
    kept: float
    refused: Share
    separation: float


@dataclass(frozen=True)
class Calibration:
    """The floor chosen for one method and the trade-off table around it."""

    floor: float  # the highest floor that keeps `keep` of the answerable questions
    separation: float  # Youden J of the floor: answerable kept + unanswerable refused - 1
    lowest_answerable: float | None
    highest_unanswerable: float | None
    k: int
    answerable_scores: tuple[float | None, ...]
    unanswerable_scores: tuple[float | None, ...]
    rows: tuple[FloorRow, ...]
    warning: str | None = None  # too few questions to trust the floor, and how many it needs
    keep: float = KEEP  # the target share of answerable questions kept
    chosen: Choice | None = None  # what `floor` does
    youden: Choice | None = None  # the alternative: the cut with the best separation


def calibrate(answerable: list[Outcome], unanswerable: list[Outcome], *,
              k: int = FLOOR_K, keep: float = KEEP) -> Calibration:
    """The floor that keeps `keep` of the answerable questions, with its trade-off table and
    the best-separating (Youden) floor as an alternative."""
    if not answerable or not unanswerable:
        raise FloorError(_lacking(answerable, unanswerable))
    if not 0 < keep <= 1:
        raise FloorError(f"the share of answerable questions to keep must be in (0, 1],"
                         f" got {keep}")
    pos = _tops(answerable)
    neg = _tops(unanswerable)
    chosen = _choice(_target_floor(pos, neg, keep), pos, neg)
    youden = _choice(_best_floor(pos, neg)[0], pos, neg)
    floors = _table_floors(np.concatenate([pos, neg]), chosen.floor) | {youden.floor}
    rows = tuple(_row(f, answerable, pos, neg, k) for f in sorted(floors))
    finite_pos, finite_neg = pos[np.isfinite(pos)], neg[np.isfinite(neg)]
    return Calibration(
        chosen.floor, chosen.separation,
        float(finite_pos.min()) if finite_pos.size else None,
        float(finite_neg.max()) if finite_neg.size else None,
        k, tuple(o.top_score for o in answerable), tuple(o.top_score for o in unanswerable),
        rows, too_few(len(answerable), len(unanswerable)), keep, chosen, youden)


# what a golden set lacking answerable or unanswerable questions should add
_ADD = {"answerable": 'answerable ones (with the "trecho" or "url" that answers them)',
        "unanswerable": 'unanswerable ones (with "trecho": null, that the site cannot answer)'}


def _lacking(answerable: list[Outcome], unanswerable: list[Outcome]) -> str:
    """Why no floor can be calibrated: the kind (or kinds) of question the set has none of,
    and what to add."""
    missing = [kind for kind, given in (("answerable", answerable),
                                        ("unanswerable", unanswerable)) if not given]
    return (f"calibrating a floor needs answerable and unanswerable questions; this set has no"
            f" {' and no '.join(missing)} question: add {' and '.join(_ADD[m] for m in missing)}")


def wilson(hits: float, n: int) -> Share:
    """The share hits/n with its 95% Wilson score interval (sound for small n and 0% or 100%;
    `hits` may be a mean count over repeated folds)."""
    if n == 0:
        return Share(math.nan, math.nan, math.nan, 0)
    p = hits / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    low = 0.0 if p <= 0 else max(0.0, centre - half)  # exact at 0% and 100%, not 1e-17 off
    return Share(p, low, 1.0 if p >= 1 else min(1.0, centre + half), n)


def too_few(answerable: int, unanswerable: int) -> str | None:
    """The warning for a floor calibrated from too few questions of either kind, else None."""
    short = [f"{n} {kind}" for n, kind in ((answerable, "answerable"),
                                            (unanswerable, "unanswerable")) if n < MIN_QUESTIONS]
    if not short:
        return None
    how = ' (questions the site cannot answer, with "trecho": null)' if (
        unanswerable < MIN_QUESTIONS) else ""
    return (f"this floor comes from only {' and '.join(short)} question(s), too few to trust:"
            f" each question moves a share by 1/{min(answerable, unanswerable)}; it needs at"
            f" least {MIN_QUESTIONS} of each kind — add more{how} and calibrate again")


def tradeoff(answerable: list[Outcome], unanswerable: list[Outcome], floor: float, *,
             k: int = FLOOR_K) -> FloorRow:
    """The shares at one given floor."""
    return _row(floor, answerable, _tops(answerable), _tops(unanswerable), k)


def target_cut(pos, neg, keep: float) -> float:
    """The highest cut keeping at least `keep` of the scores `pos` (see `calibrate`)."""
    return _target_floor(np.asarray(pos, dtype=np.float64), np.asarray(neg, dtype=np.float64),
                         keep)


def _tops(outcomes: list[Outcome]) -> np.ndarray:
    """Best-hit scores; a question with no hit at all scores -inf (always refused)."""
    return np.array([-math.inf if o.top_score is None else o.top_score for o in outcomes])


def _choice(floor: float, pos: np.ndarray, neg: np.ndarray) -> Choice:
    kept = float(np.mean(pos >= floor))
    refused = wilson(int(np.sum(neg < floor)), neg.size)
    return Choice(floor, kept, refused, round(kept + refused.value - 1, 12))


def _target_floor(pos: np.ndarray, neg: np.ndarray, keep: float) -> float:
    """The highest cut keeping at least `keep` of `pos`, midway in the gap below it; the
    lowest score when no cut can (answerable questions with no hit at all)."""
    values = np.unique(np.concatenate([pos, neg]))
    values = values[np.isfinite(values)]
    if values.size == 0:
        return 0.0
    needed = math.ceil(keep * pos.size - 1e-9)
    kept = [i for i, v in enumerate(values) if np.sum(pos >= v) >= needed]
    i = kept[-1] if kept else 0
    return _between(values[i - 1], values[i]) if i else float(values[i])


def _best_floor(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    """(floor, J): the best-separating cut, in the middle of its gap below the next score."""
    values = np.unique(np.concatenate([pos, neg]))
    values = values[np.isfinite(values)]
    if values.size == 0:
        return 0.0, 0.0
    candidates = []
    for i, v in enumerate(values):
        j = round(float(np.mean(pos >= v) + np.mean(neg < v) - 1), 12)
        gap, floor = (v - values[i - 1], _between(values[i - 1], v)) if i else (0.0, v)
        candidates.append((j, float(gap), float(floor)))
    j, _, floor = max(candidates, key=lambda c: (c[0], c[1]))
    return floor, j


def _between(low: float, high: float) -> float:
    """The midpoint of (low, high), rounded to 4 significant digits if it stays inside."""
    mid = (low + high) / 2
    for digits in (4, 6):
        short = float(f"{mid:.{digits}g}")
        if low < short < high:
            return short
    return float(mid)


def _table_floors(scores: np.ndarray, chosen: float) -> set[float]:
    finite = scores[np.isfinite(scores)]
    picks = {0.0}
    if finite.size:
        near = 0.01 * (finite.max() - finite.min())
        picks |= {float(f"{q:.3g}") for q in np.quantile(finite, np.linspace(0, 1, TABLE_ROWS))
                  if abs(q - chosen) > near and f"{q:.3g}" != f"{chosen:.3g}"}
    return picks | {chosen}


def _row(floor: float, answerable: list[Outcome], pos: np.ndarray, neg: np.ndarray,
         k: int) -> FloorRow:
    right = [o.first_rank is not None and o.first_rank <= k and o.first_score >= floor
             for o in answerable]
    return FloorRow(floor, float(np.mean(right)), float(np.mean(pos < floor)),
                    float(np.mean(neg < floor)))


class NoFloorToStore(BuscaError):
    """An evaluation calibrated no floor that a build can keep."""


def floors_to_store(results: dict) -> tuple[dict[str, float], bool]:
    """The calibrated floors a build keeps (method -> floor) out of an evaluation's floors
    (method -> Calibration, or the reason there is none), and whether hybrid's was left out:
    fused scores have no floor of their own; a hybrid hit must pass one component's floor."""
    floors = {s: c.floor for s, c in results.items() if isinstance(c, Calibration)}
    hybrids = [m for m in floors if _fused(m)]  # hybrid, hybrid:NAME, hybrid3
    dropped = bool([floors.pop(m) for m in hybrids])
    return floors, dropped


def _fused(method: str) -> bool:
    spec = method_spec(method)
    return spec is not None and spec.kind == "fused"


def store_floors(home, results: dict, models: dict | None = None) -> dict[str, float]:
    """Store the calibrated floors of an evaluation (and its answerability models, method ->
    plain JSON, for the methods the build has an entry for) in the home's live build; the
    floors."""
    floors, _ = floors_to_store(results)
    stored = home.current().manifest.methods  # hybrid:NAME is fused on the fly: no entry
    models = {m: model for m, model in (models or {}).items() if m in stored}
    if not floors and not models:
        reasons = [r for r in results.values() if isinstance(r, str)]
        raise NoFloorToStore(reasons[0] if reasons else
                             "no floor to store: calibrate the methods hybrid fuses,"
                             " e.g. --methods bm25,dense,hybrid")
    home.set_floors(floors, models)
    return floors
