"""The connections of a PostgreSQL home, and the one-line errors its statements raise.

Each thread has its own autocommit connection (`Connections.get`), made again when it was
closed or when the server dropped it while idle (a restart), so a process survives an outage:
while the server is away every statement fails with `PostgresUnavailable` (one line), and the
first one after it is back works. Every psycopg error a statement can meet for reasons outside
busca becomes a PostgresError naming the fix:

- the server is gone or refuses connections: PostgresUnavailable;
- the role lacks a privilege: PostgresDenied, naming the GRANT a reader (USAGE + SELECT) or
  a writer (the corpus's owner) needs — docs/postgres.md gives both;
- a write on a read-only session (a standby, `default_transaction_read_only`): PostgresReadOnly;
- a table of the corpus is gone (a build dropped by newer ones): PostgresMissingTable.

Anything else (a bug in busca's SQL) is left as it is.
"""

from __future__ import annotations

import functools
import os
import re
import select
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace

from .schema import PostgresError, redact
from ..home.storage import IndexNotFound

CONNECT_TIMEOUT = 10  # seconds a new connection waits, unless the URL says (connect_timeout=)
ANSWER_WAIT = 30.0  # seconds a read waits in silence for the server (?answer_wait=, 0: forever)
LOST_STATES = ("57P01", "57P02", "57P03")  # admin shutdown, crash shutdown, cannot connect now
REFUSED_CLASSES = ("53", "57", "58")  # out of resources, operator intervention, system error
_WRITES = re.compile(r"\s*(INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|TRUNCATE)\b", re.IGNORECASE)


class PostgresUnavailable(PostgresError):
    """The server cannot be reached, or dropped the connection (busca connects again at the
    next statement)."""


class PostgresDenied(PostgresError):
    """The role lacks a privilege on the corpus; the message names the GRANT. `public`: the
    refusal as busca serve tells a network client, without the role, owner and objects the
    GRANT names (the CLI and the server's log keep the message)."""

    public = ("the server's database role may not read this corpus — its administrator runs"
              " the GRANT the server's log names")

    def __init__(self, message: str, public: str | None = None):
        super().__init__(message)
        if public is not None:
            self.public = public


class PostgresReadOnly(PostgresError):
    """A write on a read-only session (a standby, or default_transaction_read_only)."""


class PostgresMissingTable(PostgresError, IndexNotFound):
    """A table of the corpus is gone (a build that newer builds dropped, or a dropped schema)."""


@dataclass(frozen=True)
class Where:
    """What the messages name: the home URL (its password hidden), corpus, role, database."""

    location: str
    schema: str
    user: str = "?"
    database: str = "?"
    owner: str = "<its writer>"  # the corpus schema's owner, when known


def reader_grants(schema: str, user: str, owner: str) -> str:
    """The statements that let `user` search the corpus of `owner` (docs/postgres.md)."""
    user, owner = ident(user), ident(owner)
    return (f'GRANT USAGE ON SCHEMA "{schema}" TO {user}; GRANT SELECT ON ALL TABLES IN SCHEMA'
            f' "{schema}" TO {user}; ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA'
            f' "{schema}" GRANT SELECT ON TABLES TO {user} (the tables of later builds)')


def writer_grants(schema: str, user: str, database: str) -> str:
    """How `user` becomes the writer of the corpus (docs/postgres.md)."""
    user = ident(user)
    return (f'CREATE SCHEMA "{schema}" AUTHORIZATION {user} (before its first write), or GRANT'
            f' CREATE ON DATABASE "{database}" TO {user} (busca then creates the corpus)')


def ident(name: str) -> str:
    """A role name as SQL takes it: as it is when plain, else double-quoted."""
    return name if re.fullmatch(r"[a-z_][a-z0-9_$]*|<[^>]*>", name) else \
        '"' + name.replace('"', '""') + '"'


def translate(error: Exception, where: Where, *, write: bool = False,
              broken: bool = False) -> PostgresError | None:
    """The one-line PostgresError for a psycopg error, None for one that is busca's bug;
    `write`: the statement writes; `broken`: the connection is unusable after it."""
    state = getattr(error, "sqlstate", None) or ""
    reason = _first_line(error)
    if broken or state.startswith("08") or state in LOST_STATES:
        return PostgresUnavailable(
            f"lost the connection to {redact(where.location)} ({reason}) — check that the"
            " server runs; busca connects again at the next command, question or request")
    if state == "42501":
        return _denied(where, reason, write)
    if state == "25006":
        return _read_only(where, reason)
    if state == "42P01":
        return PostgresMissingTable(
            f"a table of the corpus {where.schema!r} is missing ({reason}) — a newer build"
            " replaced it: ask again (or run \"busca index\" if it stays)")
    if state[:2] in REFUSED_CLASSES:
        return PostgresError(f"PostgreSQL at {redact(where.location)} refused a statement"
                             f" ({reason}) — try again, or ask its administrator")
    return None


def _read_only(where: Where, reason: str) -> PostgresReadOnly:
    return PostgresReadOnly(
        f"the session on {redact(where.location)} is read-only ({reason}: a standby, or"
        " default_transaction_read_only) — crawl, add, index, log and --calibrate write:"
        " point them at the primary; search, context, stats and eval work as they are")


def _denied(where: Where, reason: str, write: bool) -> PostgresDenied:
    if write:
        return PostgresDenied(
            f"role {where.user} may not change the corpus {where.schema!r} ({reason}) —"
            " crawl, add, index, log and the query log need the corpus's owner: an"
            f" administrator runs {writer_grants(where.schema, where.user, where.database)};"
            " searching only needs USAGE and SELECT",
            public="the server's database role may not change this corpus — its"
                   " administrator runs the GRANT the server's log names")
    return PostgresDenied(
        f"role {where.user} may not read the corpus {where.schema!r} ({reason}) — an"
        f" administrator runs {reader_grants(where.schema, where.user, where.owner)}")


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0].strip() if text else type(error).__name__


def _libpq(error) -> str:
    """libpq's message on one line: every line of it, without psycopg's prefix or tabs."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = "; ".join(lines) or type(error).__name__
    return re.sub(r"^connection (failed|is bad): ", "", text)


def is_write(sql: str) -> bool:
    """Whether a statement changes the database (for the GRANT a refusal names)."""
    return bool(_WRITES.match(sql))


class Guarded:
    """A psycopg connection whose statements raise one-line PostgresErrors (`translate`);
    `cursor()` and other attributes are psycopg's own (wrap their use in `guard`)."""

    def __init__(self, raw, connections: Connections):
        self.raw = raw
        self._connections = connections

    def execute(self, sql, params=None, **kwargs):
        """The statement's cursor; a read fails (PostgresUnavailable) when the server sends
        nothing for `answer_wait` seconds (frozen, or its network gone), where it waited for
        ever; a write may be silent as long as it works (CREATE INDEX)."""
        write = is_write(str(sql))
        with self._connections.guard(write=write, conn=self.raw):
            self.raw.patience = None if write else self._connections.answer_wait
            try:
                return self.raw.execute(sql, params, **kwargs)
            finally:
                self.raw.patience = None

    @contextmanager
    def reading(self):
        """A streaming read in the block (a COPY, a named cursor through `cursor()`) fails,
        as `execute`'s reads do, after `answer_wait` seconds of silence."""
        self.raw.patience = self._connections.answer_wait
        try:
            yield self
        finally:
            self.raw.patience = None

    @contextmanager
    def transaction(self):
        with self._connections.guard(conn=self.raw), self.raw.transaction() as tx:
            yield tx

    def __getattr__(self, name):
        return getattr(self.raw, name)


class Connections:
    """One autocommit connection per thread to one database, for one corpus."""

    def __init__(self, conninfo: str, location: str, schema: str,
                 answer_wait: float = ANSWER_WAIT):
        self._conninfo = conninfo
        self.answer_wait = answer_wait or None  # 0: wait for ever
        self.where = Where(location, schema)
        self._local = threading.local()

    def connect(self, *, autocommit: bool = True):
        """A new psycopg connection (PostgresUnavailable with a one-line reason if it fails)."""
        try:
            import psycopg
        except ImportError as e:
            raise PostgresError("a PostgreSQL home needs the postgres extra:"
                                " pip install 'busca[postgres]'") from e
        try:
            conn = _patient_class().connect(self._conninfo, autocommit=autocommit,
                                            **_timeout(self._conninfo))
        except psycopg.Error as e:
            raise PostgresUnavailable(f"cannot connect to {redact(self.where.location)}"
                                      f" ({_libpq(e)}) — check the URL and that the server"
                                      " runs") from e
        info = conn.info
        self.where = Where(self.where.location, self.where.schema, info.user, info.dbname)
        return conn

    def get(self) -> Guarded:
        """This thread's connection: made again when closed or dropped by the server."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and (conn.raw.closed or _dropped(conn.raw)):
            conn.raw.close()
            conn = None
        if conn is None:
            conn = self._local.conn = Guarded(self.connect(), self)
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.raw.close()
            self._local.conn = None

    @contextmanager
    def guard(self, *, write: bool = False, conn=None):
        """psycopg errors in the block -> one-line PostgresErrors (see `translate`)."""
        import psycopg

        try:
            yield
        except psycopg.Error as e:
            broken = ((conn is not None and conn.closed) or isinstance(e, psycopg.InterfaceError)
                      or (isinstance(e, psycopg.OperationalError) and not e.sqlstate))
            where = self._with_owner() if getattr(e, "sqlstate", "") == "42501" else self.where
            error = translate(e, where, write=write, broken=broken)
            if error is None:
                raise
            raise error from e


    def _with_owner(self) -> Where:
        """`where` naming the corpus's owner (for the GRANT of a refusal), if it can be read."""
        import psycopg

        try:
            with self.connect() as conn:
                row = conn.execute("SELECT nspowner::regrole::text FROM pg_namespace"
                                   " WHERE nspname = %s", (self.where.schema,)).fetchone()
        except (psycopg.Error, PostgresError):
            row = None
        if not row:
            return self.where
        return replace(self.where, owner=row[0].strip('"'))


def _timeout(conninfo: str) -> dict:
    """connect_timeout=CONNECT_TIMEOUT unless the URL (or PGCONNECT_TIMEOUT) sets its own."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        given = "connect_timeout" in conninfo_to_dict(conninfo)
    except psycopg.Error:  # a bad URL: connect() says what is wrong with it
        given = False
    return {} if given or os.environ.get("PGCONNECT_TIMEOUT") else \
        {"connect_timeout": CONNECT_TIMEOUT}


@functools.cache
def _patient_class():
    """psycopg's Connection, whose waits give up after `patience` seconds without a byte."""
    import psycopg

    class Patient(psycopg.Connection):
        patience: float | None = None  # set by Guarded.execute for a read

        def wait(self, gen, *args, **kwargs):
            if self.patience:
                gen = _silence_limited(gen, self.patience, self)
            return super().wait(gen, *args, **kwargs)

    return Patient


def _silence_limited(gen, seconds: float, conn):
    """psycopg's wait generator `gen`, raising OperationalError (and closing `conn`, which
    is mid-statement) once the socket was ready for nothing for `seconds`; psycopg's wait
    sends 0 at each of its short intervals without an event."""
    import psycopg

    try:
        state = next(gen)
    except StopIteration as stop:  # (nothing to wait for)
        return stop.value
    heard = time.monotonic()
    while True:
        ready = yield state
        if ready:
            heard = time.monotonic()
        elif time.monotonic() - heard > seconds:
            gen.close()
            conn.pgconn.finish()
            raise psycopg.OperationalError(
                f"the server sent nothing for {seconds:g} s; ?answer_wait=SECONDS in the home"
                " URL sets how long a question waits, 0 for ever")
        try:
            state = gen.send(ready)
        except StopIteration as stop:
            return stop.value


class GuardedWriter:
    """A build writer (index/postgres/build.py) whose every call raises one-line PostgresErrors."""

    def __init__(self, writer, guard):
        self._writer, self._guard = writer, guard

    def __getattr__(self, name):
        value = getattr(self._writer, name)
        if not callable(value):
            return value

        @functools.wraps(value)
        def guarded(*args, **kwargs):
            with self._guard(write=True):
                return value(*args, **kwargs)
        return guarded


def _dropped(conn) -> bool:
    """Whether an idle connection has something to read: the server closed it (a restart or
    an administrator), since an idle autocommit connection is sent nothing else."""
    import psycopg

    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return False
    try:
        return bool(select.select([conn.fileno()], [], [], 0)[0])
    except (OSError, ValueError, psycopg.Error):
        return True


@dataclass(frozen=True)
class Access:
    """What the role may do with the corpus (read from the catalogs, which anyone may read)."""

    read_only_session: bool
    exists: bool
    can_log: bool  # INSERT on the query log (and its id sequence)
    can_build: bool  # CREATE in the corpus's schema
    can_create: bool  # CREATE in the database: a new corpus

    @property
    def read_only(self) -> bool:
        """Nothing can be logged: a read-only session, or a role without the privilege."""
        return self.read_only_session or not (self.can_log if self.exists else self.can_create)


ACCESS = """
WITH t AS (SELECT c.relname, c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = %(s)s)
SELECT current_setting('transaction_read_only') = 'on',
       EXISTS (SELECT 1 FROM t WHERE relname = 'busca_meta'),
       coalesce(has_table_privilege((SELECT oid FROM t WHERE relname = 'queries'), 'INSERT')
                AND has_sequence_privilege((SELECT oid FROM t WHERE relname = 'queries_id_seq'),
                                           'USAGE'), false),
       coalesce(has_schema_privilege((SELECT oid FROM pg_namespace WHERE nspname = %(s)s),
                                     'CREATE'), false),
       has_database_privilege(current_database(), 'CREATE')"""


def access(conn, schema: str) -> Access:
    """The role's access to the corpus `schema` (one catalog query, allowed to every role)."""
    return Access(*conn.execute(ACCESS, {"s": schema}).fetchone())


def check_writable(conn, where: Where) -> None:
    """PostgresReadOnly or PostgresDenied (naming the GRANT) unless the session and role may
    write builds into the corpus: checked before a build does any work."""
    found = access(conn, where.schema)
    if found.read_only_session:
        raise _read_only(where, "transaction_read_only is on")
    if not found.can_build:
        raise _denied(where, f"no CREATE on schema {where.schema}", write=True)
