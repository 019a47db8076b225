"""The document store: one SQLite file (`busca.db`) in the corpus home.

Tables:
- `documents`: url (the id), title, text (NFC), source, modified (ISO 8601 or NULL),
  sha256 of the text, fetched_at.
- `meta`: small key/value settings and crawl state (high-water marks, validators).
Other tables of the same file belong to the index (see index/storage.py, the map of a home).

Every write is its own transaction, so an interrupted crawl keeps what it stored.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from ..errors import BuscaError

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
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


class StoreError(BuscaError):
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


def text_hash(text: str) -> str:
    """sha256 hex digest of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class DocumentStore(Protocol):
    """What the crawler needs of a home: documents, and settings/crawl state as JSON values.

    `Store` below is the SQLite implementation; every backend of index/backend.py has one."""

    def put(self, doc: Document) -> str: ...
    def get(self, url: str) -> Document | None: ...
    def delete(self, url: str) -> bool: ...
    def documents(self, source: str | None = None) -> Iterator[Document]: ...
    def hashes(self, source: str | None = None) -> dict[str, str]: ...
    def count(self) -> int: ...
    def get_meta(self, key: str, default=None): ...
    def set_meta(self, key: str, value) -> None: ...


class Store:
    """Documents and settings of one local corpus home (`busca.db`)."""

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

    # settings and crawl state --------------------------------------------
    def get_meta(self, key: str, default=None):
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set_meta(self, key: str, value) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value))
        )


