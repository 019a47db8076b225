"""Rankers by method name, on any backend: stored methods come from the build, `hybrid` is
fused here from them. The method names and kinds come from index/methods.py (the registry);
several dense models (`dense`, `dense:NAME`) each get a `hybrid:NAME`
(index/dense/dense_models.py)."""

from __future__ import annotations

from dataclasses import replace

from ..index.dense.dense_models import COORD, HYBRID, LIFT, is_hybrid, model_of, resolve
from ..index.lexical.lexical import top_k
from ..index.methods import (HYBRID3, SPARSE, method_spec, not_in_index,
                             stored_methods)
from ..index.text.analyzers import as_asked
from .coverage import lexicon_of
from .fusion import (FusionSettings, HybridScorer, components, describe, describe_lift, liftable,
                     share_of, stored_settings)

K = 3
COMPARE_K = 5  # each method's hits side by side by default: busca compare, Corpus.compare,
#                GET /api/compare and the MCP compare tool
MOST = 10 ** 9  # any whole-number option: far beyond any index, within SQLite's integers


def available_methods(index) -> list[str]:
    """Methods this index can answer with, in registry order: each dense model (`dense`,
    `dense:NAME`) and, when it has `hybrid`, one hybrid per extra model (`hybrid:NAME`) and
    `hybrid3` (hybrid + sparse) when it has `sparse` that its hybrid does not fuse already."""
    stored = stored_methods(index.manifest.methods)
    if HYBRID not in stored:
        return stored
    extra = [f"{HYBRID}:{model_of(m)}" for m in stored if m.startswith("dense:")]
    return stored + extra + ([HYBRID3] if SPARSE in stored and not fuses_sparse(index) else [])


def fuses_sparse(index) -> bool:
    """Whether the build's `hybrid` fuses `sparse` (built with it: index/dense/dense.py)."""
    return bool(index.manifest.entry(HYBRID).get(SPARSE))


def scorer(index, method: str, fusion: FusionSettings | None = None):
    """The ranker of `method` on `index` (`dense:NAME` / `hybrid:NAME` of the first model are
    `dense` / `hybrid`); a fused method uses `fusion` (default: the settings stored in the
    build's `hybrid` entry), `hybrid:NAME` fusing `dense:NAME` by default; `hybrid3` is
    `hybrid` on a build whose hybrid fuses sparse."""
    method = _hybrid3(index, resolve(index.manifest.methods, method))
    spec = method_spec(method)
    if spec is None or spec.kind != "fused":
        return index.ranker(method)
    if method not in available_methods(index):
        raise not_in_index(method, available_methods(index))
    settings, weights = _fused(index, method, fusion)
    return HybridScorer({m: index.ranker(resolve(index.manifest.methods, m)) for m in weights},
                        weights, settings, {m: floor_of(index, m) for m in gates(weights)},
                        lexicon=_lexicon(index, settings, weights), coord=coords(index))


def _fused(index, method: str, fusion: FusionSettings | None) -> tuple[FusionSettings, dict]:
    """A fused method's settings (`fusion`, else the build's) and its components' weights."""
    settings = fusion if fusion is not None else stored_settings(index.manifest.entry(HYBRID))
    dense = _dense_of(method)
    return settings, components(_resolved(index, settings), _parts(index), dense,
                                dense_share=dense_share(index, dense),
                                sparse=_sparse_of(index, method))


def gate_floors(index, method: str, fusion: FusionSettings | None = None) -> dict[str, float]:
    """The calibrated floors a hit of fused `method` must pass one of (search/fusion.py
    `passing`), by component; empty when `method` is not fused, `fusion` applies no floors,
    or a component has no floor (every hit passes then)."""
    method = _hybrid3(index, resolve(index.manifest.methods, method))
    spec = method_spec(method)
    if spec is None or spec.kind != "fused" or method not in available_methods(index):
        return {}
    settings, weights = _fused(index, method, fusion)
    floors = {m: floor_of(index, m) for m in gates(weights)}
    if not settings.floors or any(f is None for f in floors.values()):
        return {}
    return floors


def lifts(index, settings: FusionSettings, weights: dict) -> bool:
    """Whether `hybrid` lifts the lexical share of `weights` per question (search/fusion.py
    `lifted`): on builds that say so (index/dense/dense.py), with the default min-max
    weights, when their lexical share is below the lift's; weights given (--weights) stay
    as they are."""
    return bool(index.manifest.entry(HYBRID).get(LIFT)) and liftable(settings, weights) \
        and not settings.weights


def coords(index) -> bool:
    """Whether the build's lifted `hybrid` has the coordination bonus (search/fusion.py
    `coordinated`; builds before it lift without)."""
    return bool(index.manifest.entry(HYBRID).get(COORD))


def _lexicon(index, settings: FusionSettings, weights: dict):
    """`lift_lexicon` when the hybrid lifts these weights, else None."""
    return lift_lexicon(index) if lifts(index, settings, weights) else None


def lift_lexicon(index):
    """The shares of the index's lexical method (search/coverage.py) when its build lifts
    the hybrid's lexical share, else None."""
    return lexicon_of(index) if index.manifest.entry(HYBRID).get(LIFT) else None


def describe_fusion(index, settings: FusionSettings, method: str = "hybrid") -> dict:
    """The settings with the components and weights actually used on `index`."""
    method = _hybrid3(index, resolve(index.manifest.methods, method))
    dense = _dense_of(method)
    out = describe(_resolved(index, settings), _parts(index), dense,
                   dense_share=dense_share(index, dense), sparse=_sparse_of(index, method))
    return {**out, "lift": describe_lift(coords(index))} \
        if lifts(index, settings, out["weights"]) else out


def dense_share(index, dense: str = "dense") -> float:
    """The dense share of the default weighted fusion: the one `busca eval --tune-fusion
    --save` stored for this model on the user's golden set, else the one measured for the
    encoder that made the `dense` (or `dense:NAME`) vectors (with or without sentence groups)."""
    entry = index.manifest.entry(resolve(index.manifest.methods, dense))
    if entry.get("share") is not None:
        return float(entry["share"])
    return share_of(entry.get("encoder"), grouped=bool(entry.get("groups")))


def method_settings(index, method: str) -> dict:
    """A method's parameters as `busca stats` shows them: empty values (no analyzer version,
    no floor) left out; a fused method's settings as they apply (fusion, components, weights)."""
    entry = index.manifest.entry(method)
    out = {k: v for k, v in entry.items()
           if k != "vocabulary" and not (v is None or v == "" or v == {})}
    spec = method_spec(method)
    if spec is not None and spec.kind == "fused":
        out.pop("fusion", None)
        out.pop(SPARSE, None)  # the weights name it
        out.pop(LIFT, None)  # described with them
        out.pop(COORD, None)
        out = {**describe_fusion(index, stored_settings(entry), method), **out}
    return out


def _resolved(index, settings: FusionSettings) -> FusionSettings:
    """`settings` with weights naming the first dense model by its name (`dense:use`) on `dense`."""
    methods = index.manifest.methods
    weights = {resolve(methods, m): w for m, w in settings.weights.items()}
    return replace(settings, weights=weights) if weights != settings.weights else settings


def _parts(index) -> list[str]:
    """What a hybrid may fuse: every method of the index but the hybrids."""
    return [m for m in available_methods(index) if not is_hybrid(m)]


def _sparse_of(index, method: str) -> str | None:
    """The sparse component of a hybrid's default weights: `hybrid3` fuses `sparse`, and so
    does `hybrid` when the build made them together."""
    return SPARSE if method == HYBRID3 or method == HYBRID and fuses_sparse(index) else None


def gates(weights) -> list[str]:
    """The components whose floors a fused hit must pass one of: `sparse` ranks but does not
    vouch for a hit (its top score tells answerable from unanswerable questions least: the
    handbook's 16 refused 38 % at its 95 % floor against bm25's 56 %, the golden set's 14 none;
    docs/eval.md), unless it is all the fusion has."""
    return [m for m in weights if m != SPARSE] or list(weights)


def _hybrid3(index, method: str) -> str:
    """`hybrid3` names `hybrid` on a build whose hybrid fuses sparse already."""
    return HYBRID if method == HYBRID3 and fuses_sparse(index) else method


def _dense_of(method: str) -> str:
    """The dense component of a hybrid's default weights: `hybrid:NAME` fuses `dense:NAME`."""
    name = model_of(method)
    return f"dense:{name}" if name else "dense"


def floor_of(index, method: str) -> float | None:
    """The calibrated score floor stored for `method`, if any."""
    return index.manifest.floor(resolve(index.manifest.methods, method))


def rank(index, query: str, *, method: str = "tfidf", k: int = K,
         fusion: FusionSettings | None = None, allowed=None):
    """Top-k chunk ids and scores for `query` (only among the chunks of the boolean mask
    `allowed`, when given: search/filters.py)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    query = as_asked(query)
    ranker = scorer(index, method, fusion)
    if allowed is not None:
        from .filters import restricted

        ranker = restricted(ranker, allowed)
    if hasattr(ranker, "top"):
        return ranker.top(query, k)
    return top_k(*ranker.score(query), k)
