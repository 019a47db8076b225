"""The documents and settings of a PostgreSQL home: the DocumentStore half of PostgresHome.

Tables `documents` and `settings` of the corpus schema (index/postgres/schema.py creates them); this
module is their one writer. Every write is its own statement in autocommit mode, so an
interrupted crawl keeps what it stored. A document's `meta` is jsonb, read back as the local
store gives it (the same dict, keys sorted as its JSON text is); `records_having` selects by
metadata key through the column's GIN index (the filters' pre-selection, search/filters.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone

from ...crawler.store import Document
from .schema import add_meta, has_changes, has_meta, quoted, track_changes, versioned

DOCUMENT_COLUMNS = "url, title, text, source, modified, sha256"
RECORD_COLUMNS = "url, title, source, modified"
BATCH = 1000  # documents per fetch of the streaming cursor


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _meta_json(meta) -> str | None:
    """A stored meta as Document.meta_json gives it (so "unchanged" means the same text)."""
    return json.dumps(meta, ensure_ascii=False, sort_keys=True) if meta else None


def _sorted_meta(meta) -> dict | None:
    """jsonb's object as the local store reads its sorted JSON text (the same dict, the same
    key order at every depth)."""
    text = _meta_json(meta) if isinstance(meta, dict) else None
    return json.loads(text) if text else None


def _document(row) -> Document:
    """A Document from (url, title, text, source, modified, sha256, meta jsonb)."""
    *head, meta = row
    return Document(*head, _sorted_meta(meta))


class PostgresStore:
    """Documents and settings (crawl state) of a PostgreSQL home; every write commits.
    (The DocumentStore half of PostgresHome: needs `conn()`, `connect()`, `guard()`, `schema`,
    `exists()` — a corpus not created yet reads as empty —, `_writing()`, which creates
    it before the first write, and `_writers_reads()`.)"""

    _has_meta: bool | None = None  # whether `documents` has its meta column (None: not known)
    _tracked = False  # whether `changes.version` is known to be kept (schema.CHANGES)
    _versioned = False  # whether it is known to be readable where documents are read

    @property
    def s(self) -> str:
        return quoted(self.schema)

    def _db(self):
        """Where documents are read (index/postgres/replica.py: a standby, unless this home
        wrote)."""
        return self._reads()

    def put(self, doc) -> str:
        """Insert or update a document; returns "added", "updated", "metadata_updated" or
        "unchanged", as the local store does."""
        doc = doc.normalized()
        self._writing()
        self._meta_ready()
        old = self.conn().execute(f"SELECT sha256, title, modified, meta FROM {self.s}.documents"
                                 " WHERE url = %s", (doc.url,)).fetchone()
        if old and (*old[:3], _meta_json(old[3])) == (doc.sha256, doc.title, doc.modified,
                                                      doc.meta_json()):
            return "unchanged"
        self.conn().execute(
            f"INSERT INTO {self.s}.documents (url, title, text, source, modified, sha256,"
            " fetched_at, meta) VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb) ON CONFLICT"
            " (url) DO UPDATE SET title = EXCLUDED.title, text = EXCLUDED.text,"
            " source = EXCLUDED.source, modified = EXCLUDED.modified,"
            " sha256 = EXCLUDED.sha256, fetched_at = EXCLUDED.fetched_at, meta = EXCLUDED.meta",
            (doc.url, doc.title, doc.text, doc.source, doc.modified, doc.sha256, _now(),
             doc.meta_json()))
        if old is None:
            return "added"
        return "updated" if tuple(old[:2]) != (doc.sha256, doc.title) else "metadata_updated"

    def _meta_ready(self) -> None:
        """Before a write: a corpus made before metadata gets its `meta` column, one made
        before `changes` the table and its trigger (once)."""
        if not self._has_meta:
            if not has_meta(self.conn(), self.schema):
                add_meta(self.conn(), self.schema)
            self._has_meta = True
        self._changes_ready()

    def _changes_ready(self) -> None:
        """Before a write: a corpus made before `changes` gets the table and its trigger
        (once; schema.track_changes leaves it for a role that may not)."""
        if not self._tracked:
            if not has_changes(self.conn(), self.schema):
                track_changes(self.conn(), self.schema)
            self._tracked = True

    def version(self) -> str | None:
        """A value naming the documents' present state where they are read: another one
        after any statement that writes them, by any process (`changes`, kept by a trigger);
        None for a corpus made before it and not written since by this busca, or a role not
        granted it."""
        if not self.exists():
            return None
        if not self._versioned:
            if not versioned(self._db(), self.schema):
                return None
            self._versioned = True
        return self._db().execute(f"SELECT version FROM {self.s}.changes").fetchone()[0]

    @property
    def _meta(self) -> str:
        """The meta column, or NULL for a corpus made before metadata (its next write adds
        the column)."""
        return self._meta_in(self._db)

    def _meta_in(self, db) -> str:
        """`_meta`, asked of `db()` (where the documents are read) when not known yet."""
        if self._has_meta is None and self.exists():
            self._has_meta = has_meta(db(), self.schema)
        return "meta" if self._has_meta else "NULL"

    def get(self, url: str):
        return self._document_in(self._db, url)

    def written(self, url: str):
        """The document as a writer reads it before it writes (`_writers_reads`: the primary,
        where its write goes; the standby may lag or be away)."""
        return self._document_in(self._writers_reads, url)

    def _document_in(self, db, url: str):
        """The document of `url` as `db()` (where it is read) holds it, or None."""
        if not self.exists():
            return None
        row = db().execute(f"SELECT {DOCUMENT_COLUMNS}, {self._meta_in(db)} FROM"
                           f" {self.s}.documents WHERE url = %s", (url,)).fetchone()
        return _document(row) if row else None

    def delete(self, url: str) -> bool:
        if not self.exists():
            return False
        self._writing()
        self._changes_ready()
        cur = self.conn().execute(f"DELETE FROM {self.s}.documents WHERE url = %s", (url,))
        return cur.rowcount > 0

    def documents(self, source: str | None = None) -> Iterator:
        """All documents in URL order, streamed (a server-side cursor of its own)."""
        if not self.exists():
            return
        sql = f"SELECT {DOCUMENT_COLUMNS}, {self._meta} FROM {self.s}.documents"
        args: tuple = ()
        if source is not None:
            sql, args = sql + " WHERE source = %s", (source,)
        with self.guard(), self.routes.reads_connect(autocommit=False) as conn:
            with conn.cursor(name="busca_documents") as cur:
                cur.itersize = BATCH
                cur.execute(sql + " ORDER BY url", args)
                for row in cur:
                    yield _document(row)

    def records(self) -> Iterator[tuple]:
        """(url, title, source, modified, meta) of every document, without the text."""
        return self._records("", ())

    def records_having(self, keys: list[tuple[str, ...]]) -> Iterator[tuple]:
        """The records of the documents whose meta has, for each tuple of `keys`, one of its
        keys (`meta ?| ...`, answered through the GIN index): a superset of those a filter
        needing those keys passes."""
        if not self.exists() or self._meta == "NULL":
            return iter(())
        where = " WHERE " + " AND ".join(["meta ?| %s::text[]"] * len(keys)) if keys else ""
        return self._records(where, tuple(list(k) for k in keys))

    def _records(self, where: str, args: tuple) -> Iterator[tuple]:
        if not self.exists():
            return iter(())
        rows = self._db().execute(f"SELECT {RECORD_COLUMNS}, {self._meta} FROM"
                                  f" {self.s}.documents{where}", args).fetchall()
        return ((*head, _sorted_meta(meta)) for *head, meta in rows)

    def hashes(self, source: str | None = None) -> dict[str, str]:
        if not self.exists():
            return {}
        sql, args = f"SELECT url, sha256 FROM {self.s}.documents", ()
        if source is not None:
            sql, args = sql + " WHERE source = %s", (source,)
        # a crawl's or add's from the primary; `stats` compares the standby's with its build
        return dict(self._writers_reads().execute(sql, args).fetchall())

    def count(self) -> int:
        if not self.exists():
            return 0
        return self._db().execute(f"SELECT count(*) FROM {self.s}.documents").fetchone()[0]

    def get_meta(self, key: str, default=None):
        if not self.exists():
            return default
        row = self.conn().execute(f"SELECT value FROM {self.s}.settings WHERE key = %s",
                                 (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value) -> None:
        self._writing()
        self.conn().execute(f"INSERT INTO {self.s}.settings (key, value) VALUES (%s, %s)"
                           " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                           (key, json.dumps(value)))
