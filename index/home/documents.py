"""The document table of a local home: one SQLite file (`busca.db`) in the home folder.

Tables:
- `documents`: url (the id), title, text (NFC), source, modified (ISO 8601 or NULL),
  sha256 of the text, fetched_at, meta (JSON object or NULL: categories, tags, section,
  authors, language, dates, page numbers; added to older homes by ALTER TABLE).
- `meta`: small key/value settings and crawl state (high-water marks, validators).
- `changes`: one row, `version`, a random value its triggers draw again at every change of a
  document (`Store.version`; added to older homes when opened for writing).
The query log (index/home/queries.py) is another table of the same file; index/home/storage.py
is the map of a home. This is the crawler's `DocumentStore` (crawler/store.py) for a local
home: `LocalHome` is a `Store`.

Every write is its own transaction, so an interrupted crawl keeps what it stored. A home that
cannot be written (a read-only medium or share) is opened read-only: it answers reads, and a
write raises ReadOnlyHome. SQLite errors of this file become one-line StoreErrors; a damaged
file (StoreDamaged) names the way out.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ...crawler.store import Document, StoreError

DB_NAME = "busca.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    url TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    modified TEXT,
    sha256 TEXT NOT NULL,
    fetched_at TEXT NOT NULL,
    meta TEXT
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


# `changes.version`: a random value drawn again, by these triggers, in the transaction of every
# insert, update or delete of a document, whichever process or connection makes it (a value
# names one state of the documents: search/filters.py caches the filters' masks by it).
_CHANGES = """
BEGIN;
CREATE TABLE IF NOT EXISTS changes (id INTEGER PRIMARY KEY CHECK (id = 1), version BLOB NOT NULL);
INSERT OR IGNORE INTO changes (id, version) VALUES (1, randomblob(16));
CREATE TRIGGER IF NOT EXISTS documents_inserted AFTER INSERT ON documents
    BEGIN UPDATE changes SET version = randomblob(16); END;
CREATE TRIGGER IF NOT EXISTS documents_updated AFTER UPDATE ON documents
    BEGIN UPDATE changes SET version = randomblob(16); END;
CREATE TRIGGER IF NOT EXISTS documents_deleted AFTER DELETE ON documents
    BEGIN UPDATE changes SET version = randomblob(16); END;
COMMIT;
"""


class StoreDamaged(StoreError):
    """busca.db has damaged pages or is not an SQLite file at all."""


class ReadOnlyHome(StoreError):
    """A write to a home that can only be read (read-only medium, share or permissions)."""


_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def store_error(path: Path, error: sqlite3.Error) -> StoreError:
    """The one-line error for an SQLite failure on the store file `path`."""
    name = getattr(error, "sqlite_errorname", "")
    text = str(error)
    if name in _DAMAGED or "malformed" in text or "not a database" in text:
        return StoreDamaged(
            f"the store {path} is damaged ({text}): re-crawl or re-add the documents into a new"
            f" home (--home NEW); to try to save what it holds: mkdir NEW && sqlite3 {path}"
            " .dump | sqlite3 NEW/busca.db (or .recover for .dump where sqlite3 has it)")
    if name.startswith("SQLITE_READONLY") or "readonly database" in text:
        return read_only_error(path.parent)
    if "closed database" in text:
        return StoreError(f"the store {path} was closed (close() or the end of a with block):"
                          " open the home again (busca.open)")
    if "same thread" in text:
        return StoreError(f"the store {path} was opened in another thread: open the home in"
                          " each thread, or share one busca.Corpus, which does so for you")
    return StoreError(f"cannot use the store {path}: {text}")


def read_only_error(home: Path) -> ReadOnlyHome:
    return ReadOnlyHome(f"the home {home} is read-only: it can be searched but not changed —"
                        " copy it to a writable folder to crawl, add or index")


@contextmanager
def guard(path: Path):
    """Turn SQLite errors on the store file into one-line StoreErrors."""
    try:
        yield
    except sqlite3.Error as e:
        raise store_error(path, e) from e


def _guarded(method):
    """Run a Store method under `guard` (its errors become one-line StoreErrors)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with guard(self.path):
            return method(self, *args, **kwargs)
    return wrapper


def writable(home: Path) -> bool:
    """Whether the home can be written (a missing home is created, so it counts as writable)."""
    db = home / DB_NAME
    if not home.exists():
        return True
    return os.access(home, os.W_OK) and (not db.exists() or os.access(db, os.W_OK))


def read_only_uri(db: Path) -> str:
    """An SQLite URI opening `db` read-only; `immutable` when its WAL cannot be shared (the
    -wal/-shm files are missing and cannot be created on a read-only medium)."""
    shared = all(db.with_name(db.name + end).exists() for end in ("-wal", "-shm"))
    return db.resolve().as_uri() + "?mode=ro" + ("" if shared else "&immutable=1")


def _row_document(row) -> Document:
    """A Document from (url, title, text, source, modified, sha256, meta JSON)."""
    *head, meta = row
    try:
        data = json.loads(meta) if meta else None
    except ValueError:
        data = None
    return Document(*head, data if isinstance(data, dict) else None)


def _columns(db: sqlite3.Connection) -> set[str]:
    return {row[1] for row in db.execute("PRAGMA table_info(documents)")}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class DocumentRanges:
    """A store's documents as consecutive URL ranges (range i starts at starts[i], the first
    one at the smallest URL there is), for worker processes that each read their own:
    `read(i)` opens the file read-only and yields (url, sha256, text as the UTF-8 bytes
    SQLite holds) of range i in URL order. A document added or changed while they read is
    read as it is at that moment, once."""

    path: Path
    starts: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.starts)

    def read(self, i: int) -> Iterator[tuple[str, str, bytes]]:
        sql = "SELECT url, sha256, CAST(text AS BLOB) FROM documents"
        bounds = [("url >= ?", self.starts[i]) if i > 0 else None,
                  ("url < ?", self.starts[i + 1]) if i + 1 < len(self.starts) else None]
        bounds = [b for b in bounds if b is not None]
        if bounds:
            sql += " WHERE " + " AND ".join(b[0] for b in bounds)
        with guard(self.path):
            db = sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True,
                                 timeout=30)
            try:
                yield from db.execute(sql + " ORDER BY url", [b[1] for b in bounds])
            finally:
                db.close()


class Store:
    """Documents and settings of one local corpus home (`busca.db`)."""

    def __init__(self, home: str | Path):
        self.home = Path(home)
        self.path = self.home / DB_NAME
        self.read_only = not writable(self.home)
        try:
            self.db = self._open_read_only() if self.read_only else self._open()
        except (FileExistsError, NotADirectoryError):
            raise StoreError(f"cannot open the store in {self.home}: a file is there, or on"
                             " its path, where a folder should be; give a folder (created"
                             " when missing) or a postgresql:// URL") from None
        except OSError as e:
            raise StoreError(f"cannot open the store in {self.home}: {e}") from e
        except sqlite3.Error as e:
            raise store_error(self.path, e) from e

    def _open(self) -> sqlite3.Connection:
        self.home.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(_SCHEMA)
        if "meta" not in _columns(db):  # a home made before documents had metadata
            db.execute("ALTER TABLE documents ADD COLUMN meta TEXT")
        if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name ="
                          " 'documents_deleted'").fetchone():  # a home made before `version`
            db.executescript(_CHANGES)
        return db

    def _open_read_only(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise StoreError(f"the home {self.home} is read-only and holds no store"
                             f" ({DB_NAME}): give the --home that was crawled or indexed")
        db = sqlite3.connect(read_only_uri(self.path), uri=True, timeout=30,
                             isolation_level=None)
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # fail now if damaged
        return db

    @functools.cached_property
    def _meta(self) -> str:
        """The meta column, or NULL for an older home opened read-only (not migrated)."""
        with guard(self.path):
            return "meta" if "meta" in _columns(self.db) else "NULL"

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # documents -----------------------------------------------------------
    @_guarded
    def put(self, doc: Document) -> str:
        """Insert or update a document; returns "added", "updated" (its title or text),
        "metadata_updated" (only its metadata, groups or date: written, nothing to re-index)
        or "unchanged"."""
        doc = doc.normalized()
        meta = doc.meta_json()
        old = self.db.execute(
            "SELECT sha256, title, modified, meta FROM documents WHERE url = ?", (doc.url,)
        ).fetchone()
        if old and old == (doc.sha256, doc.title, doc.modified, meta):
            return "unchanged"
        self.db.execute(
            "INSERT OR REPLACE INTO documents (url, title, text, source, modified, sha256,"
            " fetched_at, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (doc.url, doc.title, doc.text, doc.source, doc.modified, doc.sha256, _now(), meta),
        )
        if old is None:
            return "added"
        return "updated" if old[:2] != (doc.sha256, doc.title) else "metadata_updated"

    @_guarded
    def get(self, url: str) -> Document | None:
        row = self.db.execute(
            f"SELECT url, title, text, source, modified, sha256, {self._meta} FROM documents"
            " WHERE url = ?", (url,),
        ).fetchone()
        return _row_document(row) if row else None

    def written(self, url: str) -> Document | None:
        """`get`: one database, written and read (crawler/store.py DocumentStore)."""
        return self.get(url)

    @_guarded
    def delete(self, url: str) -> bool:
        """Remove a document; True if it was there."""
        return self.db.execute("DELETE FROM documents WHERE url = ?", (url,)).rowcount > 0

    def documents(self, source: str | None = None) -> Iterator[Document]:
        """All documents in URL order (optionally only those of one source)."""
        sql = f"SELECT url, title, text, source, modified, sha256, {self._meta} FROM documents"
        args: tuple = ()
        if source is not None:
            sql, args = sql + " WHERE source = ?", (source,)
        with guard(self.path):
            for row in self.db.execute(sql + " ORDER BY url", args):
                yield _row_document(row)

    def records(self) -> Iterator[tuple[str, str, str, str | None, dict | None]]:
        """(url, title, source, modified, meta) of every document, without the text."""
        with guard(self.path):
            rows = self.db.execute(
                f"SELECT url, title, source, modified, {self._meta} FROM documents").fetchall()
        for *head, meta in rows:
            yield (*head, _row_document(("", "", "", "", None, "", meta)).meta)

    def version(self) -> bytes | None:
        """A value naming the documents' present state: another one after any document is
        added, changed or deleted, by any process (`changes`, kept by triggers); None for a
        home made before it that is opened read-only."""
        try:
            row = self.db.execute("SELECT version FROM changes WHERE id = 1").fetchone()
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return None
            raise store_error(self.path, e) from e
        except sqlite3.Error as e:
            raise store_error(self.path, e) from e
        return bytes(row[0]) if row else None

    def document_ranges(self, size: int) -> DocumentRanges | None:
        """The documents cut into URL ranges of `size` documents (the last may be shorter),
        which processes read themselves (DocumentRanges.read); None when the file's texts
        are not stored as UTF-8."""
        with guard(self.path):
            if self.db.execute("PRAGMA encoding").fetchone()[0] != "UTF-8":
                return None
            starts = [url for i, (url,) in enumerate(
                self.db.execute("SELECT url FROM documents ORDER BY url")) if i % size == 0]
        return DocumentRanges(self.path, tuple(starts))

    @_guarded
    def hashes(self, source: str | None = None) -> dict[str, str]:
        """url -> sha256 of every document (optionally of one source)."""
        sql, args = "SELECT url, sha256 FROM documents", ()
        if source is not None:
            sql, args = sql + " WHERE source = ?", (source,)
        return dict(self.db.execute(sql, args).fetchall())

    @_guarded
    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]

    # settings and crawl state --------------------------------------------
    @_guarded
    def get_meta(self, key: str, default=None):
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    @_guarded
    def set_meta(self, key: str, value) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value))
        )


