"""The documents and settings of a PostgreSQL home: the DocumentStore half of PostgresHome.

Tables `documents` and `settings` of the corpus schema (index/postgres/schema.py creates them); this
module is their one writer. Every write is its own statement in autocommit mode, so an
interrupted crawl keeps what it stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone

from ...crawler.store import Document
from .schema import quoted

DOCUMENT_COLUMNS = "url, title, text, source, modified, sha256"
BATCH = 1000  # documents per fetch of the streaming cursor


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class PostgresStore:
    """Documents and settings (crawl state) of a PostgreSQL home; every write commits.
    (The DocumentStore half of PostgresHome: needs `conn()`, `connect()`, `guard()`, `schema`,
    `exists()` — a corpus not created yet reads as empty — and `_writing()`, which creates
    it before the first write.)"""

    @property
    def s(self) -> str:
        return quoted(self.schema)

    def _db(self):
        """Where documents are read (index/postgres/replica.py: a standby, unless this home
        wrote)."""
        return self._reads()

    def put(self, doc) -> str:
        """Insert or update a document; returns "added", "updated" or "unchanged"."""
        doc = doc.normalized()
        self._writing()
        old = self.conn().execute(f"SELECT sha256, title, modified FROM {self.s}.documents"
                                 " WHERE url = %s", (doc.url,)).fetchone()
        if old and tuple(old) == (doc.sha256, doc.title, doc.modified):
            return "unchanged"
        self.conn().execute(
            f"INSERT INTO {self.s}.documents (url, title, text, source, modified, sha256,"
            " fetched_at) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (url) DO UPDATE SET"
            " title = EXCLUDED.title, text = EXCLUDED.text, source = EXCLUDED.source,"
            " modified = EXCLUDED.modified, sha256 = EXCLUDED.sha256,"
            " fetched_at = EXCLUDED.fetched_at",
            (doc.url, doc.title, doc.text, doc.source, doc.modified, doc.sha256, _now()))
        if old is None:
            return "added"
        return "updated" if tuple(old[:2]) != (doc.sha256, doc.title) else "unchanged"

    def get(self, url: str):
        if not self.exists():
            return None
        row = self._db().execute(f"SELECT {DOCUMENT_COLUMNS} FROM {self.s}.documents"
                                 " WHERE url = %s", (url,)).fetchone()
        return Document(*row) if row else None

    def delete(self, url: str) -> bool:
        if not self.exists():
            return False
        self._writing()
        cur = self.conn().execute(f"DELETE FROM {self.s}.documents WHERE url = %s", (url,))
        return cur.rowcount > 0

    def documents(self, source: str | None = None) -> Iterator:
        """All documents in URL order, streamed (a server-side cursor of its own)."""
        if not self.exists():
            return
        sql = f"SELECT {DOCUMENT_COLUMNS} FROM {self.s}.documents"
        args: tuple = ()
        if source is not None:
            sql, args = sql + " WHERE source = %s", (source,)
        with self.guard(), self.routes.reads_connect(autocommit=False) as conn:
            with conn.cursor(name="busca_documents") as cur:
                cur.itersize = BATCH
                cur.execute(sql + " ORDER BY url", args)
                for row in cur:
                    yield Document(*row)

    def hashes(self, source: str | None = None) -> dict[str, str]:
        if not self.exists():
            return {}
        sql, args = f"SELECT url, sha256 FROM {self.s}.documents", ()
        if source is not None:
            sql, args = sql + " WHERE source = %s", (source,)
        return dict(self.conn().execute(sql, args).fetchall())  # for crawls: the primary

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
