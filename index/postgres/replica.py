"""Where a PostgreSQL home's statements go: writes to the primary, searches to a standby.

The home URL names the primary (libpq's multi-host form works too: `host1:p1,host2:p2` with
`target_session_attrs=read-write`); busca's own `read=URL` names where to read from — a
streaming standby, or a pool of them (`postgresql://r1,r2/db?target_session_attrs=standby`).
Without `read=` both are the one server.

- The build pointer (`busca_meta.live`) and the build tables are read from the standby only.
  A build is one transaction, so a standby shows it whole or not at all: a lagging standby
  keeps answering on the previous build until the COMMIT record is replayed, never on a half
  of one.
- Documents are read from the standby too (a search's hit texts), except by a home that has
  written or is building (`writing()`): from then on it reads its own writes, on the primary.
- Writes (documents, settings, builds, the query log) and what only writers read (crawl
  state and settings, the previous build reused by the next) use the primary. A home that
  may write (`crawl`, `add`, `index`) asks the primary whether the corpus exists and for the
  document hashes before its first write too, so a standby that is away stops no write; a
  home opened only to read (`stats`) compares the standby's hashes with the standby's build.
- After publishing a build, the writer waits until the standby has replayed it, at most
  `read_wait` seconds (default READ_WAIT): `busca index` (and `POST /api/index`) return when
  readers can see the new build, or, past the bound, leave them on the previous one.
"""

from __future__ import annotations

import logging
import time

from .conn import Connections, Guarded
from .schema import PostgresError, is_postgres, parse_location, read_options, redact

log = logging.getLogger(__name__)

READ_WAIT = 10  # seconds a publish waits for the standby to replay it
POLL = 0.05  # seconds between two looks at the standby's replay position


class Routes:
    """The primary's connections, the standby's, and which one reads now."""

    def __init__(self, primary: Connections, options: dict, schema: str):
        self.primary = primary
        read = options.get("read")
        self.routed = bool(read)
        self.standby = Connections(_reader_conninfo(read), read, schema, primary.answer_wait
                                   or 0) if read else primary
        self.wait = float(options.get("read_wait", READ_WAIT))
        self._wrote = False

    def writing(self) -> None:
        """This home writes: its reads follow to the primary (read-your-writes)."""
        self._wrote = True

    def reads(self) -> Guarded:
        """Where documents are read: the standby, or the primary once this home wrote."""
        return self.primary.get() if self._wrote else self.standby.get()

    def reads_connect(self, *, autocommit: bool = True):
        """A new connection to where documents are read (for a streaming cursor): its reads
        give up after `answer_wait` seconds of silence, as a question's do."""
        source = self.primary if self._wrote else self.standby
        conn = source.connect(autocommit=autocommit)
        conn.patience = source.answer_wait
        return conn

    def close(self) -> None:
        self.primary.close()
        if self.routed:
            self.standby.close()

    def published(self) -> bool:
        """After a build's COMMIT: wait (at most `wait` s) until the standby has replayed all
        the primary wrote; whether it did (always True without `read=`)."""
        if not self.routed:
            return True
        target = self.primary.get().execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        deadline = time.monotonic() + self.wait
        while True:
            try:
                if replayed(self.standby.get(), str(target)):
                    return True
            except PostgresError as e:  # the build is published all the same
                log.warning("could not ask the standby whether it has the new build (%s)", e)
                return False
            if time.monotonic() >= deadline:
                log.warning("the standby %s has not replayed the new build after %g s: its"
                            " readers serve the previous build until it does",
                            redact(self.standby.where.location), self.wait)
                return False
            time.sleep(POLL)


def replayed(conn, lsn: str) -> bool:
    """Whether the server has replayed the WAL up to `lsn` (a primary always has)."""
    return bool(conn.execute("SELECT coalesce(pg_last_wal_replay_lsn() >= %s::pg_lsn, true)",
                             (lsn,)).fetchone()[0])


def _reader_conninfo(read: str) -> str:
    """libpq's URL of `read=` (busca's own parameters, e.g. corpus, removed: the corpus is the
    home URL's)."""
    if not is_postgres(read):
        raise PostgresError(f"read={read} in the home URL: use the URL of a standby,"
                            " e.g. read=postgresql://reader@replica:5432/rag (percent-encoded:"
                            " read=postgresql%3A%2F%2Freader%40replica%3A5432%2Frag)")
    url, _ = read_options(read)
    return parse_location(url)[0]
