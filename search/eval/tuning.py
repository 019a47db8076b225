"""`busca eval --tune-fusion`: search hybrid's fusion, k and weights on a golden set.

Each component ranks every question once (its top `window`); every setting of the grid then
only re-fuses those lists, so a grid of ~70 settings costs about one evaluation. Two
components (one lexical method and dense) are tuned over RRF's k and dense's weight or share;
three or more (`--methods bm25,dense,sparse,dense:use`) over every split of the weights in
steps of SIMPLEX_STEP, min-max and z-score, beside equal-weight RRF. The best
setting is reported with its interval (eval's: the bootstrap, or Wilson when every question
scores 0 or 1), its paired difference to the default, and a cross-validated figure (the
best setting chosen on the other folds, scored on the held-out one): tuning and reporting
on the same questions flatters the winner, and the gap between the two figures says by how
much.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ...index.dense.dense_models import HYBRID3, is_hybrid
from ...index.methods import SPARSE
from ...index.lexical.lexical import NoSearchableTerms
from ..fusion import (RRF_K, WINDOW, FusionError, FusionSettings, check_settings,
                      coordinated, default_weights, fuse, liftable, lifted)
from ..scorers import (available_methods, coords, dense_share, fuses_sparse, lift_lexicon, scorer,
                       top_k)
from .bootstrap import Difference, Estimate, estimate, paired_difference
from .golden import Golden
from .judge import DEPTH, chunk_table, judge, outcome_of
from .metrics import Metric, value
from .summary import tag_keys

RRF_KS = (1, 5, 10, 20, 40, 60, 100)
DENSE_WEIGHTS = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0)  # RRF, lexical weight 1
DENSE_SHARES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)  # min-max, lexical 1 - share
SIMPLEX_STEP = 0.1  # three or more components: every split of the weights in these steps
FOLDS = 5
TOP = 10
WARNING = ("tuned and reported on the same {n} questions: the best setting's figure flatters"
           " it; the cross-validated figure (chosen on the other folds, scored on the held-out"
           " one) is the honest estimate — confirm on questions not used for tuning")


@dataclass(frozen=True)
class Trial:
    """One setting (or one single method) and how it did: per-question values and slices."""

    name: str
    settings: FusionSettings | None
    values: np.ndarray
    estimate: Estimate
    slices: dict  # "tag=value" -> mean


@dataclass(frozen=True)
class Tuning:
    """The ranked grid, the default and single methods, the best against the default."""

    metric: Metric
    components: tuple[str, ...]
    trials: tuple[Trial, ...]  # best first
    default: Trial
    singles: tuple[Trial, ...]
    best_vs_default: Difference
    cross_validated: Estimate
    questions: int

    @property
    def best(self) -> Trial:
        return self.trials[0]

    @property
    def warning(self) -> str:
        return WARNING.format(n=self.questions)

    @property
    def keep_default(self) -> str | None:
        """A warning when the best setting does not beat the default beyond its interval."""
        d = self.best_vs_default
        if d.low > 0:
            return None
        return (f"the best setting is not better than the default beyond its 95% interval"
                f" (best − default {d.mean:+.3f}, {d.low:+.3f} to {d.high:+.3f}): keep the"
                " default unless questions not used here confirm the gain")


def grid(components: Sequence[str], *, window: int = WINDOW,
         sparse: str | None = None) -> list[FusionSettings]:
    """Two components (lexical, dense): RRF over k x dense weight (lexical 1), then z-score and
    min-max over the dense share; with `sparse` (a hybrid that fuses it) that method too, at
    weight 1 and at its fixed share (search/fusion.py `default_weights`): the share is what
    `--save` stores, and the hybrid applies it beside sparse. More: RRF with equal weights over
    k, then z-score and min-max over every split of the weights (`splits`)."""
    if len(components) > 2:
        out = [FusionSettings("rrf", float(k), window, dict.fromkeys(components, 1.0))
               for k in RRF_KS]
        return out + [FusionSettings(how, RRF_K, window, weights)
                      for how in ("zscore", "minmax") for weights in splits(components)]
    lexical, dense = components
    third = {sparse: 1.0} if sparse else {}
    out = [FusionSettings("rrf", float(k), window, {lexical: 1.0, dense: w, **third})
           for k in RRF_KS for w in DENSE_WEIGHTS]
    parts = (lexical, dense, *third)
    out += [FusionSettings(how, RRF_K, window,
                           default_weights(parts, how, dense, dense_share=s, sparse=sparse))
            for how in ("zscore", "minmax") for s in DENSE_SHARES]
    return out


def splits(components: Sequence[str], step: float = SIMPLEX_STEP) -> list[dict[str, float]]:
    """Every weighting of `components` in multiples of `step` that sums to 1 and gives at
    least two of them a weight (the ones with 0 are left out, as fusion ignores them)."""
    parts = round(1 / step)

    def shares(n: int, left: int):
        if n == 1:
            yield (left,)
            return
        for first in range(left, -1, -1):
            yield from ((first, *rest) for rest in shares(n - 1, left - first))

    return [{m: round(p / parts, 6) for m, p in zip(components, split) if p}
            for split in shares(len(components), parts) if sum(1 for p in split if p) >= 2]


def tune_fusion(golden: Golden, index, store, *, metric: Metric,
                components: Sequence[str] | None = None, by: Sequence[str] | None = None,
                window: int = WINDOW, folds: int = FOLDS, on_progress=None) -> Tuning:
    """Score every setting of the grid on the golden set's answerable questions."""
    progress = on_progress or (lambda stage, done, total: None)
    if metric.k > DEPTH:  # the fused lists hold the top DEPTH: deeper, every setting ties
        raise FusionError(f"--tune-fusion judges the top {DEPTH} fused hits: choose a --key"
                          f" at k <= {DEPTH} (e.g. recall@{DEPTH}), not {metric.name}")
    available = [m for m in available_methods(index) if not is_hybrid(m)]
    weights = dict.fromkeys(components, 1.0) if components else default_weights(available)
    check_settings(FusionSettings(weights=weights))
    pair = len(weights) == 2 and "dense" in weights
    if not pair and (len(weights) < 3 or any(m not in available for m in weights)):
        raise FusionError("--tune-fusion tunes one lexical method with dense, e.g."
                          " --methods bm25,dense, or three or more of the index's methods"
                          f" ({', '.join(available)}), e.g. --methods bm25,dense,sparse;"
                          f" got {', '.join(weights)}")
    components = tuple(sorted(weights, key=lambda m: m == "dense")) if pair else tuple(weights)
    sparse = SPARSE if pair and fuses_sparse(index) else None  # kept at its share (grid)
    table = chunk_table(index, store)
    judged = [j for j in judge(golden, table).items if j.question.answerable]
    if not judged:
        raise FusionError(f"{golden.path} has no answerable question (one with a \"trecho\""
                          " or qrels) to tune the fusion on: add some")
    ranked = [_ranked(index, components + ((sparse,) if sparse else ()), j.question.text,
                      window, progress, n, len(judged))
              for n, j in enumerate(judged, start=1)]
    labels = _labels(golden, judged, by)

    def trial(name, settings, rankings) -> Trial:
        vals = np.array([value(metric, outcome_of(j, table, ids[:DEPTH], s[:DEPTH]))
                         for j, (ids, s) in zip(judged, rankings)])
        return Trial(name, settings, vals, estimate(vals), _slice_means(vals, labels))

    default = FusionSettings(window=window, weights=_baseline(index, components, sparse))
    settings = [default] + [s for s in grid(components, window=window, sparse=sparse)
                            if s != default]
    lift = _lift(index, components[0], [j.question.text for j in judged], ranked) if pair \
        else None
    trials = []
    for n, s in enumerate(settings, start=1):
        if lift is not None and liftable(s, s.weights):  # as the hybrid fuses with this share
            trials.append(trial(_name(s) + " lifted", s, lift.fused(s)))
        else:
            trials.append(trial(_name(s), s, [_fused(r, s) for r in ranked]))
        progress("trying fusion settings", n, len(settings))
    singles = tuple(trial(m, None, [r[m] for r in ranked]) for m in components)
    best_first = sorted(trials, key=lambda t: -t.estimate.mean)  # stable: ties keep the default
    return Tuning(metric, components, tuple(best_first), trials[0], singles,
                  paired_difference(trials[0].values, best_first[0].values),
                  _cross_validated(trials, folds), len(judged))


def _baseline(index, components: tuple[str, ...], sparse: str | None = None
              ) -> dict[str, float]:
    """The weights the grid is compared with: the default hybrid's for a pair (with `sparse`
    when it fuses it), hybrid3's for its three methods, else min-max with equal weights."""
    if len(components) == 2:
        return default_weights((*components, *([sparse] if sparse else [])),
                               dense_share=dense_share(index), sparse=sparse)
    available = available_methods(index)
    if HYBRID3 in available or fuses_sparse(index):  # the weights of the hybrid that fuses
        # sparse (search/fusion.py), when they are these
        hybrid3 = default_weights(available, dense_share=dense_share(index), sparse="sparse")
        if set(components) == set(hybrid3):
            return {m: hybrid3[m] for m in components}
    return {m: round(1 / len(components), 6) for m in components}


@dataclass(frozen=True)
class _Lift:
    """A pair's min-max settings fused as the hybrid of a build that lifts fuses them: each
    question with the weights lifted by its coverage (search/fusion.py `lifted`), and the
    coordination bonus when the build has it (`coordinated`)."""

    lexical: str
    questions: list
    ranked: list
    coverage: list
    lexicon: object  # search/coverage.py's shares, or None without the coordination bonus

    def fused(self, settings: FusionSettings) -> list:
        return [_fused(r, replace(settings, weights=lifted(settings.weights, self.lexical, c)),
                       self._bonus(q, c))
                for q, r, c in zip(self.questions, self.ranked, self.coverage)]

    def _bonus(self, query: str, coverage: float):
        if self.lexicon is None:
            return None
        return lambda ids, scores: coordinated(
            ids, scores, coverage, lambda chunks: self.lexicon.coverages(query, chunks))


def _lift(index, lexical: str, questions: list[str], ranked: list[dict]) -> _Lift | None:
    """The _Lift of the questions' rankings, None when the build does not lift."""
    lexicon = lift_lexicon(index)
    if lexicon is None:
        return None
    return _Lift(lexical, questions, ranked,
                 [lexicon.coverage(q, int(r[lexical][0][0])) if r[lexical][0].size else 0.0
                  for q, r in zip(questions, ranked)], lexicon if coords(index) else None)


def _fused(ranked: dict, settings: FusionSettings, bonus=None):
    """The top DEPTH of `ranked` fused by `settings` (then `bonus(ids, scores)` when given)."""
    ids, scores = fuse(ranked, settings.weights, settings)
    if bonus is not None:
        ids, scores = bonus(ids, scores)
    return top_k(ids, scores, DEPTH) if ids.size else (ids, scores)


def _ranked(index, components, query, window, progress, done, total) -> dict:
    out = {}
    for method in components:
        try:
            ids, scores = scorer(index, method).score(query)
        except NoSearchableTerms:
            ids, scores = np.empty(0, np.int64), np.empty(0)
        out[method] = top_k(ids, scores, window) if ids.size else (ids, scores)
    progress("ranking the components", done, total)
    return out


def _labels(golden: Golden, judged, by) -> list[list[str]]:
    keys = tag_keys(golden, by)
    return [[f"{k}={j.question.tags.get(k, '(none)')}" for k in keys] for j in judged]


def _slice_means(vals: np.ndarray, labels: list[list[str]]) -> dict:
    groups: dict[str, list[float]] = {}
    for v, names in zip(vals, labels):
        for name in names:
            groups.setdefault(name, []).append(v)
    return {name: float(np.mean(g)) for name, g in sorted(groups.items())}


def _cross_validated(trials: list[Trial], folds: int) -> Estimate:
    """Per question, the value of the setting that is best on the other folds."""
    n = trials[0].values.size
    fold = np.arange(n) % max(1, min(folds, n))
    held_out = np.empty(n)
    for f in np.unique(fold):
        train = fold != f
        best = max(trials, key=lambda t: t.values[train].mean() if train.any() else 0)
        held_out[~train] = best.values[~train]
    return estimate(held_out)


@dataclass(frozen=True)
class ShareChoice:
    """The min-max dense share chosen on a golden set, and what `--save` does with it."""

    dense: str
    share: float  # the best min-max share on all the questions
    cross_validated: Estimate  # choosing the share on 4 folds, scored on the fifth
    default: Estimate  # the default share's figure
    default_share: float

    @property
    def wins(self) -> bool:
        """Store it only if it is not the default's and choosing a share this way does not
        lose to the default."""
        return self.share != self.default_share and \
            self.cross_validated.mean >= self.default.mean


def choose_share(tuning: Tuning) -> ShareChoice:
    """The min-max share of the grid best on all questions, with the cross-validated figure
    of picking the share that way (min-max settings only) beside the default's."""
    shares = [t for t in tuning.trials if t.settings.fusion == "minmax"]  # best first
    lexical, dense = tuning.components
    return ShareChoice(dense, _share(shares[0].settings.weights, lexical, dense),
                       _cross_validated(shares, FOLDS), tuning.default.estimate,
                       _share(tuning.default.settings.weights, lexical, dense))


def _share(weights: dict, lexical: str, dense: str) -> float:
    """Dense's share of the pair's weight (the rest of a min-max fusion is sparse's)."""
    return round(weights[dense] / (weights[lexical] + weights[dense]), 6)


def save_share(home, choice: ShareChoice) -> bool:
    """Store the chosen share in the live build's manifest (the dense model's `share`, which
    `search/scorers.dense_share` prefers) when it wins; whether it was stored."""
    if choice.wins:
        home.set_floors({choice.dense: choice.share}, key="share")
    return choice.wins


def describe_choice(choice: ShareChoice, *, saving: bool) -> str:
    """One line on the chosen share and whether `--save` stores (`saving`) or would store it."""
    cv, d = choice.cross_validated, choice.default
    if choice.share == choice.default_share:
        verdict = "the default's share: nothing to store"
    elif saving:
        verdict = ("stored: busca search's default hybrid uses it" if choice.wins else
                   "not stored: cross-validated, choosing a share loses to the default")
    else:
        verdict = "--save would store it" if choice.wins else "--save would keep the default"
    return (f"min-max dense share chosen on this golden set: {choice.share:g}"
            f" (cross-validated {_ci(cv)}, default {_ci(d)}) — {verdict}")


def describe_best(tuning: Tuning) -> str:
    """One line on the best setting of three or more components, as `busca search` options."""
    s, cv = tuning.best.settings, tuning.cross_validated
    k = f" --rrf-k {s.rrf_k:g}" if s.fusion == "rrf" else ""
    weights = ",".join(f"{m}={w:g}" for m, w in s.weights.items())
    return (f"best on this golden set: --fusion {s.fusion}{k} --weights {weights}"
            f" (cross-validated {_ci(cv)}, {tuning.default.name} {_ci(tuning.default.estimate)})"
            " — busca search --method hybrid and busca eval take these options")


def _name(s: FusionSettings) -> str:
    w = ", ".join(f"{m}={x:g}" for m, x in s.weights.items())
    return f"rrf k={s.rrf_k:g} ({w})" if s.fusion == "rrf" else f"{s.fusion} ({w})"


# --- output ----------------------------------------------------------------------------------

def render(tuning: Tuning, *, top: int = TOP) -> str:
    """A plain-text table: single methods, the default, the best `top` settings, the warning."""
    slices = list(tuning.best.slices)
    head = ["setting", f"{tuning.metric.name} (95% interval)", *slices]
    shown = [*tuning.singles, tuning.default,
             *[t for t in tuning.trials[:top] if t is not tuning.default]]
    base = "default" if len(tuning.components) == 2 else "baseline"  # see _baseline
    marks = {id(tuning.default): f"{base}: ", id(tuning.best): "best: "}
    if tuning.best is tuning.default:
        marks[id(tuning.default)] = f"{base} = best: "
    rows = [[marks.get(id(t), "") + t.name, _ci(t.estimate),
             *(f"{t.slices[s]:.3f}" for s in slices)] for t in shown]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *rows]]
    d, cv = tuning.best_vs_default, tuning.cross_validated
    fixed = [m for m in tuning.default.settings.weights if m not in tuning.components]
    also = f"; {', '.join(fixed)} fused beside them at its share" if fixed else ""
    lines += ["",
              f"{len(tuning.trials)} settings tried on {tuning.questions} answerable questions"
              f" (components: {', '.join(tuning.components)}{also},"
              f" window {tuning.best.settings.window})",
              f"best − default: {d.mean:+.3f} ({d.low:+.2f} to {d.high:+.2f}),"
              f" p = {d.p_value:.3f}",
              f"cross-validated ({FOLDS} folds): {_ci(cv)}",
              f"warning: {tuning.warning}"]
    if tuning.keep_default:
        lines.append(f"warning: {tuning.keep_default}")
    return "\n".join(lines) + "\n"


def to_json(tuning: Tuning) -> dict:
    def trial(t: Trial) -> dict:
        e = t.estimate
        return {"name": t.name, "settings": t.settings.describe() if t.settings else None,
                "mean": e.mean, "low": e.low, "high": e.high, "n": e.n, "slices": t.slices}
    d, cv = tuning.best_vs_default, tuning.cross_validated
    return {"metric": tuning.metric.name, "components": list(tuning.components),
            "questions": tuning.questions, "best": trial(tuning.best),
            "default": trial(tuning.default), "singles": [trial(t) for t in tuning.singles],
            "best_minus_default": {"mean": d.mean, "low": d.low, "high": d.high,
                                   "p_value": d.p_value},
            "cross_validated": {"mean": cv.mean, "low": cv.low, "high": cv.high,
                                "folds": FOLDS},
            "trials": [trial(t) for t in tuning.trials], "warning": tuning.warning,
            "keep_default": tuning.keep_default}


def _ci(e: Estimate) -> str:
    return f"{e.mean:.3f} ({e.low:.2f}–{e.high:.2f})"
