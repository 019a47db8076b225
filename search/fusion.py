"""Hybrid search: fuse the ranked lists of two or more methods, never their raw scores.

Each component ranks the whole index; only its top `window` chunks take part. Two fusions:
- `rrf`: reciprocal-rank fusion, score(c) = sum_m w_m / (k + rank_m(c)), rank from 1, a chunk
  absent from a component's window contributing nothing (Cormack et al. 2009; k = 60 as in
  Elasticsearch, OpenSearch, Pyserini and ranx);
- `minmax`: score(c) = sum_m w_m * (s_m(c) - min_m) / (max_m - min_m) over each window
  (1 when the window's scores are all equal; 0 when absent);
- `zscore`: score(c) = sum_m w_m * (z_m(c) - min z_m), z_m = (s_m - mean_m) / std_m over each
  window (0 when the window's scores are all equal; 0 when absent, i.e. the window's lowest).
Floor: a fused hit is kept only if at least one of the gating components (all but `sparse`:
search/scorers.py `gates`) scored it at or above its own calibrated floor (a gating component
without a floor lets every hit pass).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import BuscaError
from ..index.dense.dense_models import is_dense
from ..index.dense.encoders import DENSE_SHARE, DENSE_SHARES, GROUPED_SHARES
from ..index.lexical.lexical import NoSearchableTerms, top_k

METHOD = "hybrid"
FUSIONS = ("rrf", "minmax", "zscore")
FUSION = "minmax"  # measured across models and corpora: docs/dense.md, "Fusion across models"
RRF_K = 60.0
WINDOW = 100
LEXICAL = ("bm25", "tfidf")  # the first one the index has is the default lexical component
# Default weights: the weighted sums (minmax, zscore) give dense the share measured for its
# encoder (index/dense/encoders.py DENSE_SHARES: use 0.3, e5-small 0.7, others 0.5) and lexical the
# rest; RRF stays the textbook 1:1. Measured: docs/dense.md, "Fusion across models".
RRF_WEIGHTS = {"lexical": 1.0, "dense": 1.0}
SPARSE_SHARE = 0.3  # hybrid3: sparse's share, the others keep their proportions (docs/dense.md)
# The lift (builds since the twenty-second session): a question whose rare words the lexical
# method's best window holds gets more of the lexical side. With the default min-max weights,
# the lexical share rises linearly from its own (0.21 or 0.3 with e5-small) at LIFT_FROM of
# the question's idf mass found there to LIFT_SHARE at LIFT_TO; the others keep their
# proportions. Chosen on the handbook and the bundled golden set, judged on FaQuAD and the 30
# fresh paraphrases (docs/eval.md, "A lexical share that follows the question").
LIFT_FROM, LIFT_TO, LIFT_SHARE = 0.3, 0.8, 0.4
# The coordination bonus (builds since the thirty-second session): on a question whose idf
# mass the lexical method's best window holds COORD_FROM or more of, each of the fused top
# COORD_TOP gains COORD_WEIGHT × x × the share of that mass it holds itself, x rising
# linearly from 0 at COORD_FROM to 1 at all of it. Of windows the fusion ranks alike, the one
# holding more of a worded question's rare words comes first (Lucene's classic coord factor,
# weighted by idf). Measured: docs/eval.md, "A coordination bonus".
COORD_FROM, COORD_WEIGHT, COORD_TOP = 0.8, 0.3, 10
# Weights are relative (only their ratios rank), so a cap costs nothing and keeps every fused
# score finite: two weights of 1e308 summed to inf, with numpy's overflow warning.
MAX_WEIGHT = 1e6


class FusionError(BuscaError, ValueError):
    """Fusion settings that cannot work (unknown fusion, bad weights, missing component)."""


@dataclass(frozen=True)
class FusionSettings:
    """How `hybrid` fuses: the fusion, its constant k, the window and per-method weights."""

    fusion: str = FUSION
    rrf_k: float = RRF_K
    window: int = WINDOW
    weights: dict = field(default_factory=dict)  # method -> weight; empty: the defaults
    floors: bool = False  # keep only hits that pass at least one component's floor

    def describe(self) -> dict:
        """The settings as printed in --json output and reports."""
        out = {"fusion": self.fusion, "window": self.window, "weights": dict(self.weights)}
        if self.fusion == "rrf":
            out["rrf_k"] = self.rrf_k
        return out


def check_settings(settings: FusionSettings) -> FusionSettings:
    """The settings, or FusionError naming the bad value."""
    if settings.fusion not in FUSIONS:
        raise FusionError(
            f"unknown fusion {settings.fusion!r}; choose one of: {', '.join(FUSIONS)}")
    if settings.window < 1:
        raise FusionError(f"the window must be at least 1, got {settings.window}")
    if not settings.rrf_k >= 0:
        raise FusionError(f"the RRF constant k must be 0 or more, got {settings.rrf_k}")
    weights = settings.weights
    if weights:
        _check_weights(weights)
    return settings


def _check_weights(weights: Mapping[str, float]) -> None:
    """FusionError unless the weights are finite, 0 or more, not all 0, at most MAX_WEIGHT
    and two or more: a library caller or a stored setting skips `parse_weights`."""
    odd = next((m for m, w in weights.items() if not math.isfinite(w)), None)
    if odd is not None:
        raise FusionError(f"weight {odd}={weights[odd]} is not a finite number: give each"
                          " method a number >= 0, e.g. bm25=1,dense=0.5")
    if min(weights.values()) < 0 or not any(weights.values()):
        raise FusionError(f"weights must be 0 or more and not all 0, got {weights}")
    big = next((m for m, w in weights.items() if w > MAX_WEIGHT), None)
    if big is not None:
        raise FusionError(f"weight {big}={weights[big]:g} is over the cap of"
                          f" {MAX_WEIGHT:,.0f}: weights are relative, scale them down, e.g."
                          " bm25=1,dense=1")
    if len(weights) < 2:
        raise FusionError(f"hybrid fuses two or more methods, got only {', '.join(weights)}")


def parse_weights(text: str) -> dict[str, float]:
    """`"bm25=1,dense=0.5"` -> {"bm25": 1.0, "dense": 0.5}."""
    weights: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        try:
            weight = float(value) if sep else 1.0
        except ValueError:
            weight = math.nan
        if not (math.isfinite(weight) and weight >= 0):
            raise FusionError(f"bad weight {part!r}: write METHOD=NUMBER with a number >= 0,"
                              " e.g. bm25=1,dense=0.5")
        if name.strip() in weights:
            raise FusionError(f"{name.strip()!r} is weighted twice in {text!r}; give each"
                              " method once, e.g. bm25=1,dense=0.5")
        weights[name.strip()] = weight
    return weights


def default_weights(methods, fusion: str = FUSION, dense: str = "dense", *,
                    dense_share: float = DENSE_SHARE, sparse: str | None = None
                    ) -> dict[str, float]:
    """Default components and weights: the best lexical method the index has, plus `dense`
    (the default dense model; `dense:NAME` for `hybrid:NAME`): 1:1 for RRF, 1 - `dense_share`
    and `dense_share` for the weighted sums. With `sparse` (hybrid3), that method too: 1 for
    RRF, SPARSE_SHARE of the weighted sums (the other two scaled by 1 - SPARSE_SHARE)."""
    lexical = next((m for m in LEXICAL if m in methods), None)
    if dense not in methods:
        have = [m for m in methods if is_dense(m)]
        if have and dense != "dense":  # hybrid:NAME of a model the index lacks
            raise FusionError(f"this index has no dense model {dense!r} to fuse for"
                              f" hybrid:{dense.split(':', 1)[1]}; it has: {', '.join(have)}")
        raise FusionError("hybrid needs dense vectors and a lexical method (bm25 or tfidf);"
                          " add vectors with: busca index --dense e5-small")
    if lexical is None:
        raise FusionError(f"hybrid fuses a lexical method (bm25 or tfidf) with {dense}; name"
                          f" one beside it, e.g. bm25,{dense}")
    if sparse is not None and sparse not in methods:
        raise FusionError("hybrid3 needs the sparse method: busca index --methods"
                          " tfidf,bm25,sparse --dense e5-small")
    if fusion == "rrf":
        weights = {lexical: RRF_WEIGHTS["lexical"], dense: RRF_WEIGHTS["dense"]}
        return {**weights, sparse: 1.0} if sparse else weights
    rest = 1 - SPARSE_SHARE if sparse else 1.0
    weights = {lexical: round((1 - dense_share) * rest, 6), dense: round(dense_share * rest, 6)}
    return {**weights, sparse: SPARSE_SHARE} if sparse else weights


def rrf(lists, weights, *, k: float = RRF_K) -> tuple[np.ndarray, np.ndarray]:
    """Reciprocal-rank fusion of ranked id lists (best first): sum of w / (k + rank)."""
    parts = [(ids, np.full(ids.size, w) / (k + np.arange(1, ids.size + 1)))
             for ids, w in zip(lists, weights)]
    return _sum(parts)


def minmax(lists, scores, weights) -> tuple[np.ndarray, np.ndarray]:
    """Weighted sum of each list's scores min-max-normalised to [0, 1]."""
    parts = []
    for ids, s, w in zip(lists, scores, weights):
        if ids.size == 0:
            continue
        lo, hi = float(s.min()), float(s.max())
        norm = (s - lo) / (hi - lo) if hi > lo else np.ones(s.size)
        parts.append((ids, w * norm))
    return _sum(parts)


def zscore(lists, scores, weights) -> tuple[np.ndarray, np.ndarray]:
    """Weighted sum of each list's z-scores, shifted so the list's lowest counts 0 (as absent)."""
    parts = []
    for ids, s, w in zip(lists, scores, weights):
        if ids.size == 0:
            continue
        sd = float(s.std())
        z = (s - s.mean()) / sd if sd > 0 else np.zeros(s.size)
        parts.append((ids, w * (z - z.min())))
    return _sum(parts)


def _sum(parts) -> tuple[np.ndarray, np.ndarray]:
    if not parts:
        return np.empty(0, np.int64), np.empty(0)
    ids = np.concatenate([p[0] for p in parts]).astype(np.int64)
    values = np.concatenate([p[1] for p in parts]).astype(np.float64)
    unique, inverse = np.unique(ids, return_inverse=True)
    return unique, np.bincount(inverse, weights=values, minlength=unique.size)


def lifted(weights: Mapping[str, float], lexical: str, coverage: float) -> dict[str, float]:
    """`weights` for a question whose idf mass the lexical method's best window holds
    `coverage` (0 to 1) of: the lexical share raised toward LIFT_SHARE (never lowered), the
    other components scaled to keep their proportions and the sum."""
    total = sum(weights.values())
    own = weights[lexical] / total if total > 0 else 0.0
    x = min(1.0, max(0.0, (coverage - LIFT_FROM) / (LIFT_TO - LIFT_FROM)))
    share = own + x * max(0.0, LIFT_SHARE - own)
    if share == own:
        return dict(weights)
    scale = (1 - share) / (1 - own)
    return {m: share * total if m == lexical else w * scale for m, w in weights.items()}


def coordinated(ids: np.ndarray, scores: np.ndarray, coverage: float,
                holds: Callable[[list[int]], Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Fused (ids, scores) with the coordination bonus of a question whose idf mass the
    lexical method's best window holds `coverage` of; `holds(chunks)`: the share each of
    them holds. Only the top COORD_TOP gain, so the rest of the ranking stays below them."""
    x = min(1.0, max(0.0, (coverage - COORD_FROM) / (1 - COORD_FROM)))
    if x == 0 or ids.size == 0:
        return ids, scores
    top = np.lexsort((ids, -scores))[:COORD_TOP]  # top_k's order: equal scores by chunk
    scores = scores.copy()
    scores[top] += COORD_WEIGHT * x * np.asarray(holds([int(i) for i in ids[top]]), float)
    return ids, scores


def liftable(settings: FusionSettings, weights: Mapping[str, float]) -> bool:
    """Whether the lift applies to a fusion with these settings and weights: min-max, and a
    lexical share below LIFT_SHARE (else `lifted` changes nothing)."""
    lexical = next((m for m in LEXICAL if m in weights), None)
    total = sum(weights.values())
    return (settings.fusion == "minmax" and lexical is not None and total > 0
            and weights[lexical] / total < LIFT_SHARE)


def describe_lift(coord: bool = False) -> dict:
    """The lift (and the coordination bonus, when the build has it) as --json output and
    `busca stats` describe it."""
    lift = {"from": LIFT_FROM, "to": LIFT_TO, "lexical_share": LIFT_SHARE}
    return {**lift, "coord": {"from": COORD_FROM, "weight": COORD_WEIGHT, "top": COORD_TOP}} \
        if coord else lift


def stored_settings(entry: Mapping) -> FusionSettings:
    """The settings a build stored in its `hybrid` entry (defaults for what it omits)."""
    stored = entry.get("fusion") or {}
    known = FusionSettings.__dataclass_fields__
    return check_settings(FusionSettings(**{k: v for k, v in stored.items() if k in known}))


def components(settings: FusionSettings, available: Sequence[str], dense: str = "dense", *,
               dense_share: float = DENSE_SHARE, sparse: str | None = None) -> dict[str, float]:
    """Method -> weight that `settings` fuses, given the methods an index has (`dense`: the
    dense component of the default weights, `dense_share`: the share measured for its encoder,
    `sparse`: a third component, for hybrid3)."""
    weights = settings.weights or default_weights(available, settings.fusion, dense,
                                                  dense_share=dense_share, sparse=sparse)
    missing = [m for m in weights if m not in available]
    if missing:
        raise FusionError(f"hybrid cannot use {', '.join(missing)}: this index has"
                          f" {', '.join(available)}")
    return weights


class HybridScorer:
    """Fuses the top windows of its component rankers; the settings are a value given once."""

    def __init__(self, rankers: Mapping, weights: Mapping[str, float],
                 settings: FusionSettings, floors: Mapping[str, float | None],
                 lexicon=None, coord: bool = False):
        """`floors`: the floor of each component a hit may pass (search/scorers.py `gates`).
        `lexicon`: the shares of a query's idf mass that chunks hold (search/coverage.py:
        `coverage(query, chunk)`, `coverages(query, chunks)`), given when the weights are
        lifted per question (`lifted`); `coord`: the lifted fusion also gets the
        coordination bonus (`coordinated`)."""
        self.rankers, self.weights = dict(rankers), dict(weights)
        self.settings, self.floors = check_settings(settings), dict(floors)
        self.lexicon, self.coord = lexicon, coord

    def ranked(self, query: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each component's top-`window` (ids, scores), best first."""
        out = {}
        for method in self.weights:
            try:  # `top`: the same ranking as score + top_k (a lexical ranker prunes)
                ids, scores = self.rankers[method].top(query, self.settings.window)
            except NoSearchableTerms:  # a lexical side with no known word: the others still rank
                ids, scores = np.empty(0, np.int64), np.empty(0)
            out[method] = ids, scores
        return out

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        return self.fuse(query, self.ranked(query))

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        return top_k(*self.score(query), k)

    def _best_coverage(self, query: str, ranked: dict) -> float | None:
        """The share of `query`'s idf mass the lexical component's best window holds, None
        when the scorer does not lift."""
        lexical = next((m for m in LEXICAL if m in self.weights), None)
        if self.lexicon is None or lexical is None:
            return None
        ids = ranked[lexical][0]
        return self.lexicon.coverage(query, int(ids[0])) if ids.size else 0.0

    def _weights(self, coverage: float | None) -> dict[str, float]:
        """The weights of a question whose idf mass the lexical component's best window holds
        `coverage` of: lifted by it when the scorer lifts (None: it does not), else fixed."""
        if coverage is None:
            return self.weights
        return lifted(self.weights, next(m for m in LEXICAL if m in self.weights), coverage)

    def fuse(self, query: str, ranked: dict) -> tuple[np.ndarray, np.ndarray]:
        """Fused (ids, scores) of the components' ranked windows for `query` (with its
        weights lifted by its coverage, and the coordination bonus, when the scorer has
        them), floors applied if asked."""
        coverage = self._best_coverage(query, ranked)
        ids, scores = fuse(ranked, self._weights(coverage), self.settings)
        if self.coord and coverage is not None:
            ids, scores = coordinated(ids, scores, coverage,
                                      lambda chunks: self.lexicon.coverages(query, chunks))
        if self.settings.floors:
            keep = passing(ids, ranked, self.floors)
            ids, scores = ids[keep], scores[keep]
        return ids, scores


def fuse(ranked: dict, weights: dict[str, float], settings: FusionSettings):
    """Fuse each method's ranked (ids, scores), best first, cut to the settings' window."""
    window = settings.window
    lists = [ranked[m][0][:window] for m in weights]
    if settings.fusion == "rrf":
        return rrf(lists, list(weights.values()), k=settings.rrf_k)
    normalise = zscore if settings.fusion == "zscore" else minmax
    return normalise(lists, [ranked[m][1][:window] for m in weights], list(weights.values()))


def passing(ids: np.ndarray, ranked: dict, floors: dict) -> np.ndarray:
    """Mask of `ids` that at least one component scored at or above its own floor."""
    if any(floor is None for floor in floors.values()):
        return np.ones(ids.size, dtype=bool)
    keep = np.zeros(ids.size, dtype=bool)
    for method, floor in floors.items():
        c_ids, c_scores = ranked[method]
        keep |= np.isin(ids, c_ids[c_scores >= floor])
    return keep


def describe_default() -> str:
    """The default components and weights, for help texts."""
    lexical = "|".join(LEXICAL)
    shares = ", ".join(f"{name} {share:g}" for name, share in DENSE_SHARES.items())
    return (f"minmax, zscore: {lexical}=1-s,dense=s with s the encoder's measured share"
            f" ({shares}, others {DENSE_SHARE:g}); rrf: {lexical}=1,dense=1")


def share_of(encoder: str | None, *, grouped: bool = False) -> float:
    """The dense share measured for `encoder` (index/dense/encoders.py DENSE_SHARES, or
    GROUPED_SHARES when its windows score by their best sentence group), else 0.5."""
    if grouped and (encoder or "") in GROUPED_SHARES:
        return float(GROUPED_SHARES[encoder])
    return float(DENSE_SHARES.get(encoder or "", DENSE_SHARE))


def describe(settings: FusionSettings, available: Sequence[str], dense: str = "dense", *,
             dense_share: float = DENSE_SHARE, sparse: str | None = None) -> dict:
    """Settings with the components and weights actually used on an index with `available`."""
    return {**settings.describe(), "weights": components(settings, available, dense,
                                                         dense_share=dense_share, sparse=sparse)}
