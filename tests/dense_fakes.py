"""A deterministic fake sentence encoder for dense and hybrid tests (no model, no download).

Each word (lowercased, after an optional synonym map) is hashed to one of `dimension` axes;
a text's vector is its normalised bag of axes, so texts that share words (or synonyms) are
close and a test can predict every cosine.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from busca.index.dense import encoders

# A tiny blog for hybrid tests: (url, title, text).
DOCS = [
    ("https://blog.example/alucinacao", "Alucinação",
     "Alucinação é quando o modelo inventa uma resposta falsa, como uma biblioteca que"
     " não existe."),
    ("https://blog.example/react-native", "React Native",
     "Em React Native instale a biblioteca com npm e peça permissão de câmera ao usuário."),
    ("https://blog.example/segredos", "Segredos",
     "Guarde a senha do banco de dados em variáveis de ambiente, nunca no código."),
    ("https://blog.example/erros", "Erros",
     "O código de erro ERR_504 aparece quando o servidor demora demais para responder."),
]


def axis(word: str, dimension: int) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=4).digest(),
                          "little") % dimension


class FakeEncoder:
    name = "fake"
    version = "fake 1"
    max_length = None

    def __init__(self, *, threads: int = 1, dimension: int = 256, synonyms: dict | None = None,
                 nan_for: str | None = None):
        self.dimension = dimension
        self.synonyms = synonyms or {}
        self.nan_for = nan_for
        self.encoded: list[str] = []  # every text encoded, in order
        self.queries: list[str] = []

    def vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dimension, np.float32)
        for word in re.findall(r"[^\W_]+", text.lower()):
            v[axis(self.synonyms.get(word, word), self.dimension)] += 1
        if self.nan_for and self.nan_for in text:
            v[:] = np.nan
        return v

    def encode(self, texts, *, query: bool = False) -> np.ndarray:
        (self.queries if query else self.encoded).extend(texts)
        if not texts:
            return np.empty((0, self.dimension), np.float32)
        return encoders.normalise(np.stack([self.vector(t) for t in texts]))

    def count_truncated(self, texts) -> int:
        return 0


def register(monkeypatch) -> FakeEncoder:
    """Register one FakeEncoder instance as the encoder "fake"; returns it."""
    encoder = FakeEncoder()
    monkeypatch.setitem(encoders.ENCODERS, "fake", lambda *, threads=1: encoder)
    return encoder
