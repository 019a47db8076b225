"""The chunk table of an index build: where each chunk lies in its document's text.

Local homes keep it in `index-<build>/chunks.db` (SQLite, table `chunks`: id, url, position,
start, end, doc_sha256), written once while the build is unpublished, so it appears and
disappears with its build. Written and read only here.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

FILE = "chunks.db"
BATCH = 500  # ids per IN (...) query

_SCHEMA = """
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    position INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    doc_sha256 TEXT NOT NULL DEFAULT ''
);
"""


@dataclass(frozen=True)
class ChunkRow:
    """Where one chunk of an index build lies in its document's text."""

    id: int
    url: str
    position: int
    start: int
    end: int
    doc_sha256: str = ""


@dataclass(frozen=True)
class ChunkColumns:
    """The chunk rows of a build as columns: per document its url, sha256 and number of
    chunks; per chunk its span. Iterating gives the ChunkRows, ids in order from 0."""

    urls: Sequence[str]
    hashes: Sequence[str]
    per_doc: Sequence[int]
    starts: Sequence[int]
    ends: Sequence[int]

    def __len__(self) -> int:
        return len(self.starts)

    def __iter__(self) -> Iterator[ChunkRow]:
        return itertools.starmap(ChunkRow, self.tuples())

    def tuples(self) -> Iterator[tuple]:
        """(id, url, position, start, end, doc_sha256) of each chunk."""
        counts = list(self.per_doc)
        return zip(itertools.count(), _repeated(self.urls, counts),
                   itertools.chain.from_iterable(map(range, counts)), self.starts, self.ends,
                   _repeated(self.hashes, counts))


def _repeated(values: Iterable, counts: list[int]) -> Iterator:
    return itertools.chain.from_iterable(map(itertools.repeat, values, counts))


def write_chunks(folder: Path, rows: Iterable[ChunkRow]) -> None:
    """Write the chunk table of the build in `folder` (a new file, one transaction). No
    journal and no sync: the file belongs to a build that nobody reads before it is
    published, and a build that dies is deleted."""
    path = Path(folder) / FILE
    path.unlink(missing_ok=True)
    values = rows.tuples() if isinstance(rows, ChunkColumns) else (
        (r.id, r.url, r.position, r.start, r.end, r.doc_sha256) for r in rows)
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        with db:
            db.executescript(_SCHEMA)
            db.executemany(
                "INSERT INTO chunks (id, url, position, start, end, doc_sha256)"
                " VALUES (?, ?, ?, ?, ?, ?)", values)
    finally:
        db.close()


class ChunkTable:
    """The chunk rows of one build, read on demand. Threads share it (a server's requests):
    one read at a time on its one connection — from Python 3.12 on, two threads stepping
    the sqlite3 module's cached statement of one connection get each other's rows, or
    "bad parameter or other API misuse"."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / FILE
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        return self._db

    def _all(self, sql: str, params: Sequence = ()) -> list[tuple]:
        """Every row of one query, read while no other thread reads."""
        with self._lock:
            return self._connect().execute(sql, params).fetchall()

    def rows(self, ids: Iterable[int] | None = None) -> list[ChunkRow]:
        """Chunk rows in id order (or in the order of `ids`, skipping unknown ids)."""
        sql = "SELECT id, url, position, start, end, doc_sha256 FROM chunks"
        if ids is None:
            return [ChunkRow(*r) for r in self._all(sql + " ORDER BY id")]
        ids = [int(i) for i in ids]
        by_id = {}
        for lo in range(0, len(ids), BATCH):
            part = ids[lo:lo + BATCH]
            marks = ",".join("?" * len(part))
            for r in self._all(sql + f" WHERE id IN ({marks})", part):
                by_id[r[0]] = ChunkRow(*r)
        return [by_id[i] for i in ids if i in by_id]

    def urls(self) -> list[str]:
        """The document URL of each chunk, in id order (the url column alone: a filter's
        mask reads it for every chunk)."""
        return [r[0] for r in self._all("SELECT url FROM chunks ORDER BY id")]

    def documents(self) -> dict[str, str]:
        """url -> doc_sha256 of each document with chunks (its first chunk's row: one row a
        document, not every chunk)."""
        return dict(self._all("SELECT url, doc_sha256 FROM chunks WHERE position = 0"))

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def drop_legacy(db: sqlite3.Connection) -> None:
    """Remove the chunk rows that format 1 kept in busca.db (they now live in each build)."""
    db.execute("DROP TABLE IF EXISTS chunks")
