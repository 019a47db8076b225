"""The manifest of an index build: a typed, frozen record (its JSON form is `manifest.json`).

`methods` maps each built method to its entry (parameters, vocabulary size, calibrated
`floor`); entries differ per method, so they stay mappings, read through `entry()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace

from ...errors import BuscaError
from ..dense.dense_models import is_dense

# 2: chunk rows live in the build (index/text/chunks.py), not in busca.db; 3: the same files,
# but the pt analyzer accents a document's plain suffixes (analyzers.ACCENTED), which a busca
# reading only 2 would not do to its questions (it found nothing for "informacao", silently)
FORMAT_VERSION = 3
READS = (2, 3)  # the versions this busca reads (a 2 is asked as it was built: analyzers.analysis)


@dataclass(frozen=True)
class Manifest:
    """What one build holds: chunker, corpus figures and one entry per method."""

    build: str
    chunker: Mapping
    documents: int
    chunks: int
    methods: Mapping[str, Mapping] = field(default_factory=dict)
    words: int = 0
    rechunked_documents: int = 0
    busca_version: str = ""
    format_version: int = FORMAT_VERSION

    def __getitem__(self, key: str):
        """Read a field by its JSON key (`manifest["chunks"]`)."""
        if key not in _KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default=None):
        return getattr(self, key) if key in _KEYS else default

    def entry(self, method: str) -> Mapping:
        """The entry of `method` ({} if it was not built)."""
        return self.methods.get(method, {})

    def floor(self, method: str) -> float | None:
        """The calibrated score floor stored for `method`, if any."""
        return self.entry(method).get("floor")

    def with_floors(self, floors: Mapping[str, float],
                    models: Mapping[str, Mapping] | None = None, *,
                    key: str = "floor") -> Manifest:
        """The same manifest with these methods' floors (or another `key`) and answerability
        models set."""
        methods = {m: dict(e) for m, e in self.methods.items()}
        for method, value in floors.items():
            methods.setdefault(method, {})[key] = value
        for method, model in (models or {}).items():
            methods.setdefault(method, {})["answerable"] = dict(model)
        return replace(self, methods=methods)

    def to_json(self) -> dict:
        return {"format_version": self.format_version, **{k: v for k, v in asdict(self).items()
                                                          if k != "format_version"}}

    @classmethod
    def from_json(cls, data: Mapping) -> Manifest:
        """The manifest of a JSON object (unknown keys ignored; KeyError if one is missing)."""
        return cls(**{k: data[k] for k in _KEYS if k in data})

    def summary(self, **extra) -> dict:
        """What the build made, as POST /api/index and `busca index --json` answer (`extra`,
        e.g. took_ms, after it): `dense`, each dense model's line of `busca index`."""
        out = {key: self[key] for key in ("build", "documents", "words", "chunks",
                                          "rechunked_documents", "chunker")}
        dense = {method: {key: entry[key] for key in DENSE_SUMMARY if key in entry}
                 for method, entry in self.methods.items() if is_dense(method)}
        return {**out, "methods": list(self.methods), "dense": dense, **extra}

    def figures(self) -> dict:
        """The figures `busca stats` prints: corpus sizes, vocabularies, parameters."""
        out = {key: self[key] for key in ("documents", "words", "chunks")}
        out["vocabulary"] = {m: e["vocabulary"] for m, e in self.methods.items()
                             if "vocabulary" in e}
        out.update(chunker=self.chunker, methods=self.methods, build=self.build,
                   busca_version=self.busca_version)
        return out


_KEYS = tuple(f.name for f in fields(Manifest))
DENSE_SUMMARY = ("encoder", "dimension", "encoded", "reused", "cached", "chunks_per_second",
                 "truncated", "max_length")  # a dense model's figures in `summary`


def previous_entry(previous, method: str) -> Mapping:
    """The manifest entry of `method` in the build `previous` ({} when there is none, or its
    manifest cannot be read): what a rebuild keeps of it."""
    try:
        return previous.manifest.entry(method) if previous is not None else {}
    except (BuscaError, KeyError):
        return {}
