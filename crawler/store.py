"""The document store: one SQLite file (`busca.db`) in the corpus home.

Tables:
- `documents`: url (the id), title, text (NFC), source, modified (ISO 8601 or NULL),
  sha256 of the text, fetched_at.
- `chunks`: the chunk rows of an index build (build id, chunk id, url, position,
  character start/end into the document text). The index manifest names its build, so
  a new build can be written beside the old one and swapped in.
- `meta`: small key/value settings and crawl state (high-water marks, validators).
- `queries`: the query log of `busca search`/`busca context` (time, command, query, method,
  k, top scores as JSON, floor, answered, seconds); read by `busca misses`.

Every write is its own transaction, so an interrupted crawl keeps what it stored.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

DB_NAME = "busca.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    url TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    modified TEXT,
    sha256 TEXT NOT NULL,
    fetched_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    build TEXT NOT NULL,
    id INTEGER NOT NULL,
    url TEXT NOT NULL,
    position INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    doc_sha256 TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (build, id)
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS queries (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    command TEXT NOT NULL,
    query TEXT NOT NULL,
    method TEXT NOT NULL,
    k INTEGER NOT NULL,
    scores TEXT NOT NULL,
    floor REAL,
    answered INTEGER NOT NULL,
    seconds REAL NOT NULL
);
"""


class StoreError(Exception):
    """The store cannot be opened or written."""


@dataclass(frozen=True)
class Document:
    """One article: the URL is its id from crawl to evaluation."""

    url: str
    title: str
    text: str
    source: str = ""
    modified: str | None = None
    sha256: str = field(default="", compare=False)

    def normalized(self) -> Document:
        """The same document with NFC title and text and its text hash filled in."""
        text = unicodedata.normalize("NFC", self.text)
        title = unicodedata.normalize("NFC", self.title)
        return Document(self.url, title, text, self.source, self.modified, text_hash(text))


@dataclass(frozen=True)
class ChunkRow:
    """Where one chunk of an index build lies in its document's text."""

    id: int
    url: str
    position: int
    start: int
    end: int
    doc_sha256: str = ""


def text_hash(text: str) -> str:
    """sha256 hex digest of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Store:
    """Documents, chunk rows and settings of one corpus home."""

    def __init__(self, home: str | Path):
        self.home = Path(home)
        try:
            self.home.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.home / DB_NAME, timeout=30, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as e:
            raise StoreError(f"cannot open the store in {self.home}: {e}") from e

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # documents -----------------------------------------------------------
    def put(self, doc: Document) -> str:
        """Insert or update a document; returns "added", "updated" or "unchanged"."""
        doc = doc.normalized()
        old = self.db.execute(
            "SELECT sha256, title, modified FROM documents WHERE url = ?", (doc.url,)
        ).fetchone()
        if old and old == (doc.sha256, doc.title, doc.modified):
            return "unchanged"
        self.db.execute(
            "INSERT OR REPLACE INTO documents (url, title, text, source, modified, sha256,"
            " fetched_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (doc.url, doc.title, doc.text, doc.source, doc.modified, doc.sha256, _now()),
        )
        if old is None:
            return "added"
        return "updated" if old[:2] != (doc.sha256, doc.title) else "unchanged"

    def get(self, url: str) -> Document | None:
        row = self.db.execute(
            "SELECT url, title, text, source, modified, sha256 FROM documents WHERE url = ?",
            (url,),
        ).fetchone()
        return Document(*row) if row else None

    def delete(self, url: str) -> bool:
        """Remove a document; True if it was there."""
        return self.db.execute("DELETE FROM documents WHERE url = ?", (url,)).rowcount > 0

    def documents(self, source: str | None = None) -> Iterator[Document]:
        """All documents in URL order (optionally only those of one source)."""
        sql = "SELECT url, title, text, source, modified, sha256 FROM documents"
        args: tuple = ()
        if source is not None:
            sql, args = sql + " WHERE source = ?", (source,)
        for row in self.db.execute(sql + " ORDER BY url", args):
            yield Document(*row)

    def hashes(self, source: str | None = None) -> dict[str, str]:
        """url -> sha256 of every document (optionally of one source)."""
        sql, args = "SELECT url, sha256 FROM documents", ()
        if source is not None:
            sql, args = sql + " WHERE source = ?", (source,)
        return dict(self.db.execute(sql, args).fetchall())

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]

    # chunk rows of index builds -------------------------------------------
    def write_chunks(self, build: str, rows: Iterable[ChunkRow]) -> None:
        """Store the chunk rows of one build in a single transaction."""
        with self._transaction():
            self.db.execute("DELETE FROM chunks WHERE build = ?", (build,))
            self.db.executemany(
                "INSERT INTO chunks (build, id, url, position, start, end, doc_sha256)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                ((build, r.id, r.url, r.position, r.start, r.end, r.doc_sha256)
                 for r in rows),
            )

    def chunks(self, build: str, ids: Iterable[int] | None = None) -> list[ChunkRow]:
        """Chunk rows of a build, in id order (or in the order of `ids`)."""
        sql = "SELECT id, url, position, start, end, doc_sha256 FROM chunks WHERE build = ?"
        if ids is None:
            rows = self.db.execute(sql + " ORDER BY id", (build,)).fetchall()
            return [ChunkRow(*r) for r in rows]
        ids = [int(i) for i in ids]
        by_id = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            for r in self.db.execute(sql + f" AND id IN ({marks})", (build, *part)):
                by_id[r[0]] = ChunkRow(*r)
        return [by_id[i] for i in ids if i in by_id]

    def drop_builds_except(self, build: str) -> None:
        """Delete the chunk rows of every other build."""
        self.db.execute("DELETE FROM chunks WHERE build != ?", (build,))

    # settings and crawl state --------------------------------------------
    def get_meta(self, key: str, default=None):
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set_meta(self, key: str, value) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value))
        )

    def _transaction(self):
        return _Transaction(self.db)

    # query log (owned by busca.search.querylog) ---------------------------
    def log_query(self, *, command: str, query: str, method: str, k: int,
                  scores: list[float], floor: float | None, answered: bool,
                  seconds: float, at: str | None = None) -> None:
        """Append one query to the log; `at` defaults to now (UTC, ISO 8601)."""
        self.db.execute(
            "INSERT INTO queries (at, command, query, method, k, scores, floor, answered,"
            " seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (at or _now(), command, query, method, k, json.dumps(scores), floor,
             int(answered), seconds),
        )

    def logged_queries(self, since: str | None = None) -> list[dict]:
        """Logged queries in time order, optionally only those at or after `since` (ISO)."""
        sql = ("SELECT at, command, query, method, k, scores, floor, answered, seconds"
               " FROM queries")
        args: tuple = ()
        if since is not None:
            sql, args = sql + " WHERE at >= ?", (since,)
        keys = ("at", "command", "query", "method", "k", "scores", "floor", "answered",
                "seconds")
        rows = self.db.execute(sql + " ORDER BY at, id", args).fetchall()
        return [{**dict(zip(keys, r)), "scores": json.loads(r[5]), "answered": bool(r[7])}
                for r in rows]


class _Transaction:
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN")

    def __exit__(self, exc_type, *exc):
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")
