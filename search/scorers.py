"""Rankers by method name, on any backend: stored methods come from the build, `hybrid` is
fused here from them. The method names and kinds come from index/methods.py (the registry)."""

from __future__ import annotations

from ..index.lexical import top_k
from ..index.methods import METHODS, UnknownMethod
from .fusion import FusionSettings, HybridScorer, components, describe, stored_settings

K = 3


def available_methods(index) -> list[str]:
    """Methods this index can answer with, in registry order."""
    return [m for m in METHODS if m in index.manifest.methods]


def scorer(index, method: str, fusion: FusionSettings | None = None):
    """The ranker of `method` on `index`; a fused method uses `fusion` (default: the settings
    stored in the build)."""
    spec = METHODS.get(method)
    if spec is None or spec.kind != "fused":
        return index.ranker(method)
    if method not in index.manifest.methods:
        have = ", ".join(available_methods(index)) or "none"
        raise UnknownMethod(f"this index has no method {method!r}; it has: {have}")
    settings = fusion if fusion is not None else stored_settings(index.manifest.entry(method))
    weights = components(settings, _parts(index, method))
    return HybridScorer({m: index.ranker(m) for m in weights}, weights, settings,
                        {m: index.manifest.floor(m) for m in weights})


def describe_fusion(index, settings: FusionSettings, method: str = "hybrid") -> dict:
    """The settings with the components and weights actually used on `index`."""
    return describe(settings, _parts(index, method))


def _parts(index, method: str) -> list[str]:
    return [m for m in available_methods(index) if m != method]


def floor_of(index, method: str) -> float | None:
    """The calibrated score floor stored for `method`, if any."""
    return index.manifest.floor(method)


def rank(index, query: str, *, method: str = "tfidf", k: int = K,
         fusion: FusionSettings | None = None):
    """Top-k chunk ids and scores for `query`."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    ranker = scorer(index, method, fusion)
    if hasattr(ranker, "top"):
        return ranker.top(query, k)
    return top_k(*ranker.score(query), k)
