"""Embeddings already paid for, kept by (model, text hash) in the home's `vectors.sqlite`.

One table, `vectors(model, hash, dim, vector)`: `model` is the encoder's cache key (its name
plus everything that changes a passage's vector, such as the passage prefix, and a digest of
the server's URL: two servers may serve other weights under one name), `hash` the
BLAKE2b-128 digest of the chunk text (as in `dense.hashes.npy`), `vector` float32 bytes.
Every encoded batch is committed at once, so an encode killed half-way resumes where it
stopped, and going back to a model re-uses its vectors. Delete the file to forget them all.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ...errors import BuscaError

FILE = "vectors.sqlite"
_LOOKUP = 500  # hashes per SELECT (SQLite's variable limit is 999 on old builds)


class CacheError(BuscaError):
    """The vector cache cannot be read or written."""


class DimensionChanged(BuscaError):
    """A model now returns vectors of another dimension than before."""


class VectorCache:
    """Read and add cached vectors of one home; use as a context manager."""

    def __init__(self, home: str | Path):
        self.path = Path(home) / FILE
        try:
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL,"
                            " hash BLOB NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL,"
                            " PRIMARY KEY (model, hash)) WITHOUT ROWID")
        except sqlite3.Error as e:
            raise CacheError(f"cannot open the vector cache {self.path} ({e}) — delete it,"
                             " it only holds vectors busca can compute again") from None

    def __enter__(self) -> VectorCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def dimension(self, model: str) -> int | None:
        """The dimension of the vectors cached for `model`, if any."""
        row = self.db.execute("SELECT dim FROM vectors WHERE model = ? LIMIT 1",
                              (model,)).fetchone()
        return row[0] if row else None

    def get(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """hash -> vector for the `hashes` cached for `model`."""
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        for lo in range(0, len(unique), _LOOKUP):
            part = unique[lo:lo + _LOOKUP]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(f"SELECT hash, dim, vector FROM vectors WHERE model = ?"
                                   f" AND hash IN ({marks})", (model, *part))
            for digest, dim, blob in rows:
                vector = np.frombuffer(blob, dtype=np.float32)
                if vector.size == dim and dim and np.isfinite(vector).all() and vector.any():
                    found[bytes(digest)] = vector  # a vector of zeros or NaN is no vector
        return found

    def forget(self, model: str) -> None:
        """Drop every vector cached for `model` (another model now answers under its name)."""
        try:
            with self.db:
                self.db.execute("DELETE FROM vectors WHERE model = ?", (model,))
        except sqlite3.Error as e:
            raise CacheError(f"cannot write the vector cache {self.path} ({e})") from None

    def adopt(self, old: str, model: str) -> None:
        """Copy the vectors cached under the key `old` to `model`'s (the old rows stay)."""
        try:
            with self.db:
                self.db.execute("INSERT OR IGNORE INTO vectors SELECT ?, hash, dim, vector"
                                " FROM vectors WHERE model = ?", (model, old))
        except sqlite3.Error as e:
            raise CacheError(f"cannot write the vector cache {self.path} ({e})") from None

    def put(self, model: str, hashes: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store one batch of vectors for `model` in one transaction."""
        vectors = np.asarray(vectors, dtype=np.float32)
        dim = vectors.shape[1]
        known = self.dimension(model)
        if known is not None and known != dim:
            raise DimensionChanged(
                f"{model} now returns {dim}-dimensional vectors, {known} before: the model"
                f" behind that name changed — give it another name, or delete {self.path}")
        rows = [(model, h, dim, v.tobytes()) for h, v in zip(hashes, vectors)]
        try:
            with self.db:
                self.db.execute("BEGIN")
                self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
        except sqlite3.Error as e:
            raise CacheError(f"cannot write the vector cache {self.path} ({e})") from None

    def count(self, model: str | None = None) -> int:
        """How many vectors are cached (for `model`, or in all)."""
        if model is None:
            return self.db.execute("SELECT count(*) FROM vectors").fetchone()[0]
        return self.db.execute("SELECT count(*) FROM vectors WHERE model = ?",
                               (model,)).fetchone()[0]
