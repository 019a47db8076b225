"""Answerability: does the site hold the answer, or should search say "nothing found"?

A raw score floor carries little signal for some models (e5's cosines of relevant and
irrelevant windows both sit between 0.83 and 0.90), so the signal can be a small logistic
model over features of one search's ranked lists (best first):
- `top`: the method's best score (what a floor reads);
- `z_top`: that score as a z-score of the method's top `WINDOW` scores (per-query normalisation);
- `margin`: (first - second score) / the standard deviation of that window;
- `idf_coverage`: the share of the question's idf mass (Lucene BM25 idf of each distinct
  analysed term, a word the corpus lacks counting with df 0) that the best window holds, read
  from the postings of the index's lexical method (bm25, else tfidf);
- `idf_known`: the share of that mass whose terms occur anywhere in the corpus: a question
  about something the site never names (a tool, a product) loses it, a paraphrase in common
  words seldom does;
- `agreement`: the share of the lexical method's top `AGREE_K` also in dense's top `AGREE_K`
  (the same value whatever the method searched; needs a lexical and a dense method).
Each method uses every feature its index allows. Answerability is a property of the question
and the corpus, not of the ranking method, so a *shared* (question-level) model reads the
build's base methods whatever method ranks: `top@bm25`, `z_top@bm25`, `idf_coverage@bm25`,
`idf_known@bm25` (the lexical method, bm25 else tfidf), `top@dense`, `margin@dense` and `agreement`
(`shared_features`). `busca eval --calibrate` fits both (search/eval/answerability.py) and
stores, per method, the one that, held out, keeps its target share of answerable questions and
refuses more unanswerable ones, as plain JSON in the method's manifest entry (`answerable`);
`busca search`, `context`, `shell` and `serve` then refuse a question whose probability is
below the model's threshold (`--min-score` overrides, as it does a floor).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..index.dense.dense_models import resolve
from ..index.lexical.lexical import NoSearchableTerms
from .coverage import Lexicon, lexicon_of
from .fusion import LEXICAL
from .scorers import rank

FEATURES = ("top", "z_top", "margin", "idf_coverage", "idf_known", "agreement")
LEXICON = ("idf_coverage", "idf_known")  # the features read from a Lexicon
WINDOW = 100  # scores per query that z_top and margin read (hybrid's fusion window)
AGREE_K = 10
ENTRY = "answerable"  # the key of the model in a method's manifest entry
AT = "@"  # a shared feature's name: FEATURE@METHOD (the base method it is read from)
SHARED = {"lexical": ("top", "z_top", *LEXICON), "dense": ("top", "margin")}


@dataclass(frozen=True)
class Model:
    """A fitted logistic model: p(answerable) = sigmoid(intercept + sum coef * standardised x),
    and the threshold below which a question is refused."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    threshold: float
    keep: float
    agreement: tuple[str, ...] = ()  # (lexical, dense) methods the agreement feature compares
    shared: bool = False  # question-level: its features are read from the base methods

    @property
    def methods(self) -> tuple[str, ...]:
        """The base methods a shared model reads (FEATURE@METHOD), () for a method's own."""
        return tuple(dict.fromkeys(f.rpartition(AT)[2] for f in self.features if AT in f))

    def probability(self, values: Mapping[str, float]) -> float:
        """p(answerable) of one question's feature values (all of `features` needed)."""
        return float(self.probabilities(np.array([[values[f] for f in self.features]]))[0])

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """p(answerable) of each row of `x` (columns in the order of `features`): the same
        arithmetic for one question at search time as for a table at calibration."""
        z = self.intercept + ((np.asarray(x, dtype=np.float64) - self.mean) / self.scale
                              * self.coefficients).sum(axis=1)
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-z))

    def to_json(self) -> dict:
        return {"features": list(self.features), "mean": list(self.mean),
                "scale": list(self.scale), "coefficients": list(self.coefficients),
                "intercept": self.intercept, "threshold": self.threshold, "keep": self.keep,
                "agreement": list(self.agreement), "shared": self.shared,
                "methods": list(self.methods)}  # what a rebuild checks (index/build.py)

    @classmethod
    def from_json(cls, data: Mapping) -> Model:
        return cls(tuple(data["features"]), tuple(map(float, data["mean"])),
                   tuple(map(float, data["scale"])), tuple(map(float, data["coefficients"])),
                   float(data["intercept"]), float(data["threshold"]), float(data["keep"]),
                   tuple(data.get("agreement", ())), bool(data.get("shared", False)))


def features(query: str, ranked: Mapping, method: str, *, lexicon: Lexicon | None = None,
             agreement: tuple[str, ...] = ()) -> dict[str, float]:
    """The feature values of one question from `ranked` (method -> (ids, scores), best
    first): {} when `method` found nothing; a feature left out when it cannot be computed."""
    ids, scores = (np.asarray(a) for a in ranked[method])
    if ids.size == 0:
        return {}
    window = np.asarray(scores[:WINDOW], dtype=np.float64)
    sd = float(window.std())
    second = float(window[1]) if window.size > 1 else float(window[0])
    out = {"top": float(window[0]),
           "z_top": (float(window[0]) - float(window.mean())) / sd if sd > 0 else 0.0,
           "margin": (float(window[0]) - second) / sd if sd > 0 else 0.0}
    if lexicon is not None:
        out["idf_coverage"], out["idf_known"] = lexicon.shares(query, int(ids[0]))
    if len(agreement) == 2 and all(m in ranked for m in agreement):
        out["agreement"] = overlap(ranked[agreement[0]][0], ranked[agreement[1]][0])
    return out


def overlap(a, b, k: int = AGREE_K) -> float:
    """The share of a's top k that is also in b's top k (0 when a is empty)."""
    top = [int(i) for i in list(a)[:k]]
    return len(set(top) & {int(i) for i in list(b)[:k]}) / len(top) if top else 0.0


def base_pair(methods) -> tuple[str | None, str | None]:
    """(lexical, dense) base methods among `methods`: bm25 else tfidf, and `dense`; None for
    a missing one."""
    return next((m for m in LEXICAL if m in methods), None), \
        ("dense" if "dense" in methods else None)


def shared_features(query: str, ranked: Mapping, pair: tuple[str | None, str | None], *,
                    lexicon: Lexicon | None = None) -> dict[str, float]:
    """The question-level features (SHARED, named FEATURE@METHOD, and `agreement`) from the
    base methods' rankings in `ranked`; a base method that found nothing reads as 0 on each."""
    lexical, dense = pair
    out: dict[str, float] = {}
    for method, kind in ((lexical, "lexical"), (dense, "dense")):
        if method is None or method not in ranked:
            continue
        found = features(query, ranked, method, lexicon=lexicon if kind == "lexical" else None)
        out.update({f"{f}{AT}{method}": found.get(f, 0.0) for f in SHARED[kind]})
    if lexical in ranked and dense in ranked:
        out["agreement"] = overlap(ranked[lexical][0], ranked[dense][0])
    return out


def agreement_pair(methods) -> tuple[str, ...]:
    """(lexical, dense) among `methods`: bm25 else tfidf, and `dense`; () without both."""
    lexical = next((m for m in LEXICAL if m in methods), None)
    return (lexical, "dense") if lexical and "dense" in methods else ()


def model_of(index, method: str) -> Model | None:
    """The answerability model stored for `method`, if any."""
    data = index.manifest.entry(resolve(index.manifest.methods, method)).get(ENTRY)
    return Model.from_json(data) if data else None


@dataclass(frozen=True)
class Verdict:
    """What the stored model says of one question."""

    probability: float
    threshold: float

    @property
    def refused(self) -> bool:
        return self.probability < self.threshold

    @property
    def reason(self) -> str:
        return (f"the answerability model judges the answer is not here (p = {self.probability:.3f}"
                f" < {self.threshold:.3f}); give min_score 0 (--min-score 0 on the command"
                " line) to see the hits anyway")


def refusal(index, query: str, method: str, min_score: float | None,
            allowed=None) -> Verdict | None:
    """The stored model's verdict when it refuses `query` (never when a min_score is given:
    it overrides the model as it does a floor). Called where the floor is applied, with the
    search's mask `allowed` (search/filters.py): the features read only what the search may
    show, so a hidden document's scores never decide whether a reader gets hits."""
    if min_score is not None:
        return None
    found = verdict(index, query, method, allowed)
    return found if found is not None and found.refused else None


def verdict(index, query: str, method: str, allowed=None) -> Verdict | None:
    """The stored model's verdict on `query` searched with `method` (among the chunks of the
    mask `allowed` when given); None without a model (or when this index cannot compute one
    of its features)."""
    model = model_of(index, method)
    if model is None:
        return None
    if model.shared:
        return _shared_verdict(index, query, model, allowed)
    needed = [method, *(model.agreement if "agreement" in model.features else ())]
    ranked = {m: _ranked(index, query, m, allowed) for m in dict.fromkeys(needed)}
    lexicon = lexicon_of(index) if set(LEXICON) & set(model.features) else None
    values = features(query, ranked, method, lexicon=lexicon, agreement=model.agreement)
    if not values:
        return Verdict(0.0, model.threshold)
    if any(f not in values for f in model.features):
        return None
    return Verdict(model.probability(values), model.threshold)


def _shared_verdict(index, query: str, model: Model, allowed) -> Verdict | None:
    """A shared model's verdict: the base methods it reads rank the question, whichever
    method searched (None when this build lacks one of them)."""
    if any(m not in index.manifest.methods for m in model.methods):
        return None
    pair = base_pair(model.methods)
    ranked = {m: _ranked(index, query, m, allowed) for m in model.methods}
    lexicon = lexicon_of(index) if pair[0] else None
    values = shared_features(query, ranked, pair, lexicon=lexicon)
    if any(f not in values for f in model.features):
        return None
    return Verdict(model.probability(values), model.threshold)


def _ranked(index, query: str, method: str, allowed):
    try:
        return rank(index, query, method=method, k=WINDOW, allowed=allowed)
    except NoSearchableTerms:
        return np.empty(0, np.int64), np.empty(0)
