"""Exact cosine search over the memory-mapped chunk vectors: one matrix-vector product."""

from __future__ import annotations

import logging

import numpy as np

from ..errors import BuscaError
from .dense_models import array_key, dense_methods, label, server_settings
from .embedding_api import ServerSettings
from .encoders import THREADS, Encoder, get_encoder
from .lexical import top_k

log = logging.getLogger(__name__)


class EmptyQuery(BuscaError, ValueError):
    """A query with nothing to encode."""


class EncoderMismatch(BuscaError, ValueError):
    """The index's vectors were made by another encoder or have another dimension."""


class NoVectors(BuscaError, ValueError):
    """The index was built without dense vectors."""


def check_encoder(entry: dict, encoder: Encoder) -> None:
    """Refuse an encoder other than the one that made the index's vectors."""
    made_by = f"{entry['encoder']} ({entry['dimension']} dimensions)"
    if encoder.name != entry["encoder"]:
        raise EncoderMismatch(
            f"the index's vectors were made by {made_by}, not {encoder.name} — search with"
            f" the same encoder or rebuild: busca index --dense {encoder.name}")
    if encoder.dimension != entry["dimension"]:
        raise EncoderMismatch(
            f"the index's vectors have {entry['dimension']} dimensions but {encoder.name}"
            f" now gives {encoder.dimension} — rebuild: busca index --dense {encoder.name}")
    if encoder.version != entry.get("encoder_version"):
        log.warning("the index's vectors were made by %s, this machine has %s; rebuild with"
                    " busca index --dense %s if results look wrong",
                    entry.get("encoder_version"), encoder.version, encoder.name)


def require_vectors(index, method: str = "dense") -> None:
    """NoVectors, saying how to add them, if the index was built without dense vectors."""
    methods = index.manifest.methods
    if method not in methods:
        have = [label(methods, m) for m in dense_methods(methods)]
        if have:
            raise NoVectors(f"this index has no dense model {method!r}; it has:"
                            f" {', '.join(have)} — add one with: busca index --dense"
                            f" {','.join(n.split(':', 1)[1] for n in have)},NAME=ENCODER")
        raise NoVectors("this index has no dense vectors — add them with:"
                        " busca index --dense use (or e5-small, sentence-transformers:PATH,"
                        " openai:MODEL)")


class DenseScorer:
    """Cosine between the query's vector and every chunk's vector (both L2-normalised)."""

    def __init__(self, index, method: str = "dense", *, encoder: Encoder | None = None,
                 threads: int = THREADS, server: ServerSettings | None = None):
        require_vectors(index, method)
        entry = index.methods[method]
        self.vectors = index.array(array_key(method), "vectors")
        if self.vectors.ndim != 2 or self.vectors.shape[1] != entry["dimension"]:
            raise EncoderMismatch(f"the dense vectors have shape {self.vectors.shape}, the"
                                  f" manifest says {entry['dimension']} dimensions — rebuild")
        self.encoder = encoder or get_encoder(
            entry["encoder"], threads=threads,
            server=server or server_settings(entry, **getattr(index, "embed", {})),
            dimension=entry["dimension"])
        check_encoder(entry, self.encoder)

    def embed(self, query: str) -> np.ndarray:
        """The query's unit vector."""
        if not query.strip():
            raise EmptyQuery("the query is empty")
        return self.encoder.encode([query], query=True)[0]

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk id and its cosine with the query."""
        scores = self.vectors @ self.embed(query)
        return np.arange(scores.size, dtype=np.int64), scores.astype(np.float64)

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k chunks nearest to the query, best first (exact search)."""
        return top_k(*self.score(query), k)
