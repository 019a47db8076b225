"""Questions encoded once per `busca eval`: `dense` and `hybrid` share each query vector.

Every dense model a ranked method needs (itself, or a component of a hybrid) gets its
encoder loaded here, with the evaluation's thread count, behind a memo of query vectors;
the index's ranker of that model is made with it, so the hybrid's dense component is the
same ranker and finds the question's vector already computed.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ...index.dense.dense_models import HYBRID, resolve
from ...index.dense.encoders import THREADS
from ...index.methods import method_spec, stored_methods
from ...index.dense.vectors import query_encoder
from ..fusion import stored_settings
from ..scorers import describe_fusion


class QueryMemo:
    """An encoder whose query vectors are computed once per text; passages pass through."""

    def __init__(self, encoder):
        self._encoder = encoder
        self._vectors: dict[str, np.ndarray] = {}

    def __getattr__(self, name):
        return getattr(self._encoder, name)

    def encode(self, texts, *, query: bool = False) -> np.ndarray:
        if not query:
            return self._encoder.encode(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            self._vectors.update(zip(missing, self._encoder.encode(missing, query=True)))
        if not texts:
            return self._encoder.encode([], query=True)
        return np.stack([self._vectors[t] for t in texts])


def share_query_vectors(index, methods: Iterable[str], *, threads: int = THREADS,
                        fusion=None) -> None:
    """Make the rankers of the dense models `methods` need (fused ones by the FusionSettings
    `fusion`, default the build's) with memoised encoders."""
    for dense in _dense_needed(index, methods, fusion):
        memo = QueryMemo(query_encoder(index, dense, threads=threads))
        index.ranker(dense, encoder=memo)


def _dense_needed(index, methods: Iterable[str], fusion=None) -> list[str]:
    stored = index.manifest.methods
    dense = [m for m in stored_methods(stored) if method_spec(m).kind == "dense"]
    needed: set[str] = set()
    for method in methods:
        name = resolve(stored, method)
        spec = method_spec(name)
        if spec is not None and spec.kind == "fused" and HYBRID in stored:
            settings = fusion or stored_settings(index.manifest.entry(HYBRID))
            needed.update(resolve(stored, m)
                          for m in describe_fusion(index, settings, method)["weights"])
        needed.add(name)
    return [m for m in dense if m in needed]
