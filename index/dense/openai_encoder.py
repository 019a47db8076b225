"""`openai:MODEL`: an encoder that asks the user's own OpenAI-compatible embeddings server.

The vectors come from `POST {url}/v1/embeddings` (see embedding_api.py) and are normalised
here. The dimension is whatever the server returns; once known (from the index's manifest or
the first answer) a different one is refused, since vectors of two models cannot be compared.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

import numpy as np

from .embedding_api import (BatchTooLarge, EmbeddingClient, EmbeddingServerError,
                            ServerSettings, public_url)
from .vector_cache import DimensionChanged

log = logging.getLogger(__name__)

PREFIX = "openai:"
PRINTS = 32  # numbers of a fingerprint (`fingerprint`)
SAME = 0.95  # least cosine of two fingerprints of one model (two models: about 0 ± 0.2)


class ModelChanged(EmbeddingServerError):
    """The server answers under the index's model name with another model's vectors."""


class OpenAIEncoder:
    """Embeddings of `model` from an OpenAI-compatible server."""

    max_length = None  # the server truncates (or refuses) by its own rules

    def __init__(self, model: str, settings: ServerSettings, *, dimension: int | None = None,
                 client: EmbeddingClient | None = None):
        self.model = model
        self.name = f"{PREFIX}{model}"
        self.version = f"openai-compatible {model} #{_passage_digest(settings)}"
        self.settings = settings
        self.dimension = dimension
        self.batch = settings.batch
        self.client = client or EmbeddingClient(model, settings)
        self.expected: dict | None = None  # the index's probe (`expect`)

    @property
    def server(self) -> str:
        """The server that answers (two servers may serve other weights under one name)."""
        return server_of(self.settings.url)

    @property
    def cache_key(self) -> str:
        """What identifies this model's passage vectors in the vector cache: the name, what
        changes a passage's vector (prefix, input_type) and the server that answers."""
        server = hashlib.blake2b(self.server.encode(), digest_size=8).hexdigest()
        return f"{self.legacy_cache_key}@{server}"

    @property
    def legacy_cache_key(self) -> str:
        """The key of a cache written before the key named the server (docs/dense.md)."""
        return f"{self.name}#{_passage_digest(self.settings)}"

    def describe(self) -> dict:
        """The server settings for the manifest (never the key; the batch the server took,
        which the next build starts from)."""
        return {**self.settings.describe(), "batch": self.batch,
                "served_model": self.client.served_model}

    def expect(self, probe: dict | None) -> None:
        """Questions are encoded for an index whose model gave `probe` (`probe`; None: a
        build made before probes, not checked): the first question checks the server still
        does."""
        self.expected = probe

    def encode(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Unit rows, one request per `batch` texts; a batch the server refuses as too large
        (HTTP 413, as TEI beyond its --max-client-batch-size) is halved, for this and every
        later request. Questions first check the model (`expect`)."""
        if query and self.expected is not None:
            self._check_model()
        parts, lo = [], 0
        while lo < len(texts):
            part = texts[lo:lo + self.batch]
            try:
                parts.append(self._embed(part, query))
            except BatchTooLarge as e:
                if len(part) == 1:
                    raise BatchTooLarge(f"{e} — even one text: index smaller windows (busca index"
                                   " --size N) or raise the server's input limit") from None
                self.batch = len(part) // 2
                log.warning("%s; sending %d (--embed-batch %d)",
                            str(e).replace("the request", f"{len(part)} texts in one request"),
                            self.batch, self.batch)
                continue
            lo += len(part)
        if not parts:
            return np.empty((0, self.dimension or 0), np.float32)
        return np.concatenate(parts)

    def _embed(self, texts: Sequence[str], query: bool) -> np.ndarray:
        vectors = self.client.embed(texts, query=query)
        if self.dimension is None:
            self.dimension = int(vectors.shape[1])
        elif vectors.shape[1] != self.dimension:
            raise DimensionChanged(
                f"the embedding server at {self.client.where} returned {vectors.shape[1]}"
                f"-dimensional vectors for {self.model!r}, expected {self.dimension}: another"
                f" model answers under that name — rebuild with busca index --dense"
                f" {self.name}, or point --embed-url at the server of the index's model")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1).astype(np.float32)

    def _check_model(self) -> None:
        """ModelChanged unless the server gives the index's fingerprint (once a process):
        a model replaced under the same name and dimension answered vectors of another
        space, and every search ranked at random without a word."""
        if same_print(fingerprint(self.encode([self.expected["text"]])[0]),
                      self.expected["print"]):
            self.expected = None
            return
        raise ModelChanged(f"the embedding server at {self.client.where} answers {self.model!r}"
                           f" with another model than the one this index was built with —"
                           f" rebuild with busca index --dense {self.name}, or point"
                           f" --embed-url at the server of the index's model")

    def count_truncated(self, texts: Sequence[str]) -> int:
        return 0  # the server does not say


def probe(texts: Sequence[str], vectors: np.ndarray) -> dict | None:
    """What the manifest keeps to tell the index's model from another served under its name:
    the shortest chunk's text and the fingerprint of its vector, taken from the build (no
    request); None without chunks."""
    if not len(texts):
        return None
    row = min(range(len(texts)), key=lambda i: (len(texts[i]), i))
    return {"text": texts[row], "print": fingerprint(vectors[row])}


def fingerprint(vector: np.ndarray) -> list[float]:
    """PRINTS numbers that tell one model's vector of a text from another's: a fixed random
    projection of it (cosines survive it), unit length, rounded."""
    projection = np.random.default_rng(len(vector)).standard_normal((PRINTS, len(vector)))
    printed = projection @ np.asarray(vector, np.float64)
    return [round(float(x), 5) for x in printed / (np.linalg.norm(printed) or 1.0)]


def same_print(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether two fingerprints come from one model (cosine >= SAME)."""
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return x.shape == y.shape and float(x @ y) >= SAME * float(np.linalg.norm(x) *
                                                                 np.linalg.norm(y))


def server_of(url: str) -> str:
    """What names an embedding server: its URL without user:password@, a trailing / or /v1."""
    return public_url(url).rstrip("/").removesuffix("/v1")


def _passage_digest(settings: ServerSettings) -> str:
    """A short digest of what changes a passage's vector besides the model: prefix, input_type."""
    passage = repr((settings.passage_prefix, settings.input_type)).encode()
    return hashlib.blake2b(passage, digest_size=4).hexdigest()
