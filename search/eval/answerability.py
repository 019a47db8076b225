"""Answerability signals measured: how many unanswerable questions each signal refuses while
it keeps a stated share of the answerable ones (90% and 95%).

A signal is one feature of search/answerable.py read alone (higher = answerable), or the
logistic model over all of them (`logistic`), or the question-level model shared by every
method (`shared`: the same logistic regression over search/answerable.py's
`shared_features`, read from the base methods whatever method ranks). Every figure is
cross-validated the same way: stratified k-fold (FOLDS, shuffled with SEED); on each fold
the signal (the model, for `logistic`) and the cut keeping the target share of answerable
questions are fitted on the other folds only, then applied to the held-out questions, and
the held-out counts are pooled — so no question is judged by a cut or a model fitted on it
— and averaged over REPEATS shuffles (one shuffle moved a figure by 6 points on 16
unanswerable questions, by 22 on 14). The cut is read from out-of-fold scores
(`out_of_fold`: each training question scored by a model fitted without it), never from the
model's scores of its own training questions, which sit higher than a new question's and
would keep fewer answerable questions than promised; the threshold `--calibrate` stores is
set the same way. The logistic model's figure on its own training questions is kept beside
it (`training`) to show what cross-validation removes. A question that found nothing is
always refused; AUC is the raw feature's (the model's out of fold).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..answerable import (AT, FEATURES, Model, agreement_pair, base_pair, features,
                          lexicon_of, shared_features)
from .floors import Share, target_cut, wilson

KEEPS = (0.90, 0.95)
FOLDS = 5
SEED = 0
REPEATS = 5  # shuffles of the folds a held-out figure is averaged over
LOGISTIC = "logistic"
SHARED = "shared"  # the question-level model's signal
Fit = Callable[[np.ndarray, np.ndarray], Callable[[np.ndarray], np.ndarray]]


@dataclass(frozen=True)
class Refusal:
    """At one target: answerable questions kept and unanswerable ones refused (held out)."""

    keep: float
    kept: float
    refused: Share


@dataclass(frozen=True)
class Signal:
    """One signal's refusals at each target, its AUC and (logistic) its training figures."""

    name: str
    auc: float
    refusals: tuple[Refusal, ...]
    training: tuple[Refusal, ...] = ()


@dataclass(frozen=True)
class Answerability:
    """A method's signals, the features its model uses and the models fitted on every
    question (its own; the shared one)."""

    features: tuple[str, ...]
    signals: tuple[Signal, ...]
    folds: int
    model: Model | None
    shared: Model | None = None

    def best(self) -> tuple[Signal, Model] | None:
        """The model --calibrate stores: held out at its target, the one that keeps the
        target share of answerable questions, then refuses more unanswerable ones, then
        keeps more answerable ones (the shared one on a tie): the target is a promise, the
        refusals what is won within it."""
        by = {s.name: s for s in self.signals}
        found = [(by[n], m) for n, m in ((SHARED, self.shared), (LOGISTIC, self.model))
                 if m is not None and n in by]
        return max(found, key=lambda f: _at(f[0], f[1].keep), default=None)


def question_features(golden, outcomes: dict, index) -> dict[str, list[dict]]:
    """Per method, each question's feature values from the rankings of the evaluation (the
    agreement pair among the evaluated methods; idf coverage from the index's postings), the
    shared ones (FEATURE@METHOD) included where the method found something."""
    lexicon = lexicon_of(index)
    pair, base = agreement_pair(outcomes), base_pair(outcomes)
    out: dict[str, list[dict]] = {m: [] for m in outcomes}
    for i, q in enumerate(golden.questions):
        ranked = {m: (np.array(o[i].ids, dtype=np.int64), np.array(o[i].scores))
                  for m, o in outcomes.items()}
        shared = shared_features(q.text, ranked, base, lexicon=lexicon)
        for method in outcomes:
            own = features(q.text, ranked, method, lexicon=lexicon, agreement=pair)
            out[method].append({**own, **shared} if own else {})
    return out


def measure_all(golden, rows: dict[str, list[dict]], keep: float,
                keeps: Sequence[float] = KEEPS) -> dict[str, Answerability]:
    """`measure` for each method ("method" or "method/chunker") of `rows`."""
    answerable = [q.answerable for q in golden.questions]
    out, memo = {}, {}
    for system, per_question in rows.items():
        pair = agreement_pair({s.partition("/")[0] for s in rows})
        found = measure(per_question, answerable, keep=keep, keeps=keeps, agreement=pair,
                        memo=memo)
        if found is not None:
            out[system] = found
    return out


def measure(rows: Sequence[dict], answerable: Sequence[bool], *, keep: float,
            keeps: Sequence[float] = KEEPS, agreement: tuple[str, ...] = (),
            folds: int = FOLDS, seed: int = SEED, memo: dict | None = None
            ) -> Answerability | None:
    """Every signal's refusals over these questions; None without both kinds of question.
    `memo` keeps the shared model's figures for the next method with the same rows."""
    y = np.array(answerable, dtype=bool)
    names = tuple(f for f in FEATURES if any(f in r for r in rows))
    k = min(folds, int(y.sum()), int((~y).sum()))
    if k < 2 or not names:
        return None
    x = matrix(rows, names)
    targets = tuple(dict.fromkeys([*keeps, keep]))
    signals = [_signal(n, x, y, targets, _column(j), k, seed) for j, n in enumerate(names)]
    signals.append(_signal(LOGISTIC, x, y, targets, logistic, k, seed, training=True))
    shared, common = shared_names(rows), None
    if shared:
        xs = matrix(rows, shared)
        key = (xs.tobytes(), y.tobytes(), shared, targets, keep, agreement, k, seed)
        memo = {} if memo is None else memo
        if key not in memo:
            memo[key] = (_signal(SHARED, xs, y, targets, logistic, k, seed, training=True),
                         fit_model(xs, y, shared, keep, agreement, shared=True))
        signal, common = memo[key]
        signals.append(signal)
    return Answerability(names, tuple(signals), k, fit_model(x, y, names, keep, agreement),
                         common)


def shared_names(rows: Sequence[dict]) -> tuple[str, ...]:
    """The shared model's features among `rows`: every FEATURE@METHOD, then `agreement`."""
    first = next((r for r in rows if any(AT in f for f in r)), {})
    return tuple(f for f in first if AT in f) + (("agreement",) if "agreement" in first else ())


def matrix(rows: Sequence[dict], names: Sequence[str]) -> np.ndarray:
    """Rows x features; a question that found nothing is a row of nan (always refused)."""
    return np.array([[r.get(n, np.nan) if r else np.nan for n in names] for r in rows],
                    dtype=np.float64).reshape(len(rows), len(names))


def cross_validated(x: np.ndarray, y: np.ndarray, fit: Fit, keeps: Sequence[float], *,
                    folds: int = FOLDS, seed: int = SEED, repeats: int = REPEATS
                    ) -> tuple[tuple[Refusal, ...], np.ndarray]:
    """Held-out refusals at each target, stratified k-fold (the signal and its cut fitted on
    the other folds), averaged over `repeats` shuffles of the folds (seeds seed, seed + 1, …)
    so that a figure does not hang on one shuffle; and the first shuffle's held-out scores.
    The interval is the Wilson interval of that mean share of the n unanswerable questions:
    repeating the folds adds no question."""
    kept = np.zeros(len(keeps))
    refused = np.zeros(len(keeps))
    first = None
    for r in range(repeats):
        k, f, scores = _one_shuffle(x, y, fit, keeps, folds, seed + r)
        kept, refused = kept + k, refused + f
        first = scores if first is None else first
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    return tuple(Refusal(target, kept[t] / (repeats * n_pos),
                         wilson(refused[t] / repeats, n_neg))
                 for t, target in enumerate(keeps)), first


def _one_shuffle(x, y, fit, keeps, folds, seed):
    """(answerable kept, unanswerable refused) per target and the held-out scores of one
    shuffle of the folds."""
    from sklearn.model_selection import StratifiedKFold

    kept = np.zeros(len(keeps))
    refused = np.zeros(len(keeps))
    scores = np.empty(y.size)
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(x, y):
        predict = fit(x[train], y[train])
        inside = out_of_fold(x[train], y[train], fit, folds=folds, seed=seed)
        outside = scored(predict, x[test])
        scores[test] = outside
        for t, target in enumerate(keeps):
            cut = target_cut(inside[y[train]], inside[~y[train]], target)
            kept[t] += np.sum(outside[y[test]] >= cut)
            refused[t] += np.sum(outside[~y[test]] < cut)
    return kept, refused, scores


def out_of_fold(x: np.ndarray, y: np.ndarray, fit: Fit, *, folds: int = FOLDS,
                seed: int = SEED) -> np.ndarray:
    """Each row scored by the signal fitted on the other folds (stratified k-fold); the
    in-sample scores when there are too few of a kind to fold."""
    from sklearn.model_selection import StratifiedKFold

    k = min(folds, int(y.sum()), int((~y).sum()))
    if k < 2:
        return scored(fit(x, y), x)
    out = np.empty(y.size)
    for train, test in StratifiedKFold(k, shuffle=True, random_state=seed).split(x, y):
        out[test] = scored(fit(x[train], y[train]), x[test])
    return out


def in_sample(x: np.ndarray, y: np.ndarray, fit: Fit, keeps: Sequence[float]
              ) -> tuple[Refusal, ...]:
    """The same figures measured on the questions the signal was fitted on."""
    s = scored(fit(x, y), x)
    out = []
    for target in keeps:
        cut = target_cut(s[y], s[~y], target)
        out.append(Refusal(target, float(np.mean(s[y] >= cut)),
                           wilson(int(np.sum(s[~y] < cut)), int((~y).sum()))))
    return tuple(out)


def scored(predict, x: np.ndarray) -> np.ndarray:
    """`predict` on the rows with every value; -inf (refused) on rows that found nothing."""
    ok = np.all(np.isfinite(x), axis=1)
    out = np.full(x.shape[0], -np.inf)
    if ok.any():
        out[ok] = predict(x[ok])
    return out


def _column(j: int) -> Fit:
    return lambda x, y: (lambda z: z[:, j])


def logistic(x: np.ndarray, y: np.ndarray):
    """Fit the logistic model on the rows with every value; its probability function."""
    model = _fit(x, y, ())
    if model is None:  # one kind only among the questions that found something
        return lambda z: np.full(z.shape[0], 0.5)
    return model.probabilities


def fit_model(x: np.ndarray, y: np.ndarray, names: Sequence[str], keep: float,
              agreement: tuple[str, ...] = (), *, shared: bool = False) -> Model | None:
    """The model on every question, its threshold keeping `keep` of the answerable ones as
    scored out of fold, i.e. as new questions would be (`shared`: the question-level model)."""
    model = _fit(x, y, tuple(names), agreement)
    if model is None:
        return None
    s = out_of_fold(x, y, logistic)
    threshold = target_cut(s[y], s[~y], keep)
    return Model(model.features, model.mean, model.scale, model.coefficients, model.intercept,
                 float(threshold), keep, model.agreement, shared)


def _fit(x: np.ndarray, y: np.ndarray, names: tuple[str, ...],
         agreement: tuple[str, ...] = ()) -> Model | None:
    """Standardised features, class-balanced L2 logistic regression (`balanced_logistic`)."""
    ok = np.all(np.isfinite(x), axis=1)
    x, y = x[ok], y[ok]
    if len(set(y.tolist())) < 2:
        return None
    names = names or tuple(str(j) for j in range(x.shape[1]))
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    coefficients, intercept = balanced_logistic((x - mean) / scale, y.astype(bool))
    return Model(names, tuple(map(float, mean)), tuple(map(float, scale)),
                 tuple(map(float, coefficients)), float(intercept), 0.0, 0.0,
                 tuple(agreement if "agreement" in names else ()))


def balanced_logistic(z: np.ndarray, y: np.ndarray, *, tol: float = 1e-10,
                      steps: int = 100) -> tuple[np.ndarray, float]:
    """scikit-learn's `LogisticRegression(class_weight="balanced")` (C = 1, L2, intercept not
    penalised) solved exactly by damped Newton steps: minimise 0.5 |w|² + Σ s_i log(1 +
    exp(-t_i (w·z_i + b))), s_i = n / (2 n_class), t_i = ±1. The objective is strictly convex
    in w and a handful of features make each step a tiny linear solve: ~0.3 ms a fit against
    sklearn's ~6 ms (a calibration fits ~1,000 of them), the same optimum
    (tests/search/test_search_answerable.py checks it against sklearn)."""
    n, d = z.shape
    a = np.hstack([z, np.ones((n, 1))])
    t = np.where(y, 1.0, -1.0)
    s = np.where(y, n / (2 * y.sum()), n / (2 * (~y).sum()))
    penalty = np.append(np.ones(d), 0.0)
    beta = np.zeros(d + 1)

    def objective(b):
        return 0.5 * np.sum(penalty * b * b) + np.sum(s * np.logaddexp(0.0, -t * (a @ b)))

    value = objective(beta)
    for _ in range(steps):
        p = 0.5 * (1 + np.tanh(0.5 * (a @ beta)))  # sigmoid, without overflow
        grad = a.T @ (s * (p - (t > 0))) + penalty * beta
        hess = (a * (s * p * (1 - p))[:, None]).T @ a + np.diag(penalty)
        step = np.linalg.solve(hess + 1e-12 * np.eye(d + 1), grad)
        shrink = 1.0
        while shrink > 1e-8 and objective(beta - shrink * step) > value:
            shrink *= 0.5
        beta = beta - shrink * step
        value = objective(beta)
        if np.max(np.abs(shrink * step)) < tol:
            break
    return beta[:d], float(beta[d])


def _at(signal: Signal, keep: float) -> tuple[bool, float, float, bool]:
    """(target kept, refused, kept, shared) of a signal at the target `keep`: the larger
    the better."""
    r = next((r for r in signal.refusals if r.keep == keep), signal.refusals[-1])
    return r.kept >= keep - 1e-9, r.refused.value, r.kept, signal.name == SHARED


def _signal(name, x, y, keeps, fit, folds, seed, *, training: bool = False) -> Signal:
    """A signal's held-out refusals; its AUC on held-out scores (a lone feature's held-out
    scores are its raw values; a model's, those of the first shuffle)."""
    refusals, held_out = cross_validated(x, y, fit, keeps, folds=folds, seed=seed)
    return Signal(name, auc(held_out, y), refusals,
                  in_sample(x, y, fit, keeps) if training else ())


def auc(scores: np.ndarray, y: np.ndarray) -> float:
    """P(an answerable question scores above an unanswerable one), ties counting half."""
    pos, neg = scores[y], scores[~y]
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (pos.size * neg.size))
