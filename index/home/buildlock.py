"""One build at a time per home: the lock a build writer holds from `new_build` to its end.

Local home: an exclusive `flock` on `HOME/index.lock`, whose text records the holder's pid
and start time for the message a second build gets. The file stays after the build (removing
a lock file races with the next build opening it); the lock goes with the process, so a
killed build never leaves the home locked. PostgreSQL (index/postgres/build.py): a session advisory
lock on the build's connection, keyed on the home's schema.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from ...errors import BuscaError
from .processes import alive

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock, as before
    fcntl = None

LOCK = "index.lock"
PG_LOCK_CLASS = 0x62757363  # "busc": the first key of busca's advisory locks
PG_APP = "busca index "  # application_name prefix of a build's connection
HOLDER_WAIT = 0.5  # seconds a refused build waits for the holder to record its pid


CLI = "busca index"
_BY = [CLI]  # what builds in this process, as a refused build names it (`builds_by`)


class BuildLocked(BuscaError):
    """Another build is writing this home's index; this one did not start."""


@contextmanager
def builds_by(name: str) -> Iterator[None]:
    """While open, the builds of this process are named `name` ("busca serve": its POST
    /api/index) in the message of a build the lock refuses meanwhile ("stop it" would stop a
    server); the name before comes back at its end."""
    previous, _BY[0] = _BY[0], name
    try:
        yield
    finally:
        _BY[0] = previous


def holder_text(pid: int | None = None, started: datetime | None = None) -> str:
    """`pid N, started HH:MM:SS` of a build (this process, now, by default)."""
    pid = os.getpid() if pid is None else pid
    started = started or datetime.now().astimezone()
    return f"pid {pid}, started {started:%H:%M:%S}"


def locked_error(holder: str | None, by: str = CLI) -> BuildLocked:
    """The one-line error of a build that finds the home locked by `holder` (None: unknown),
    a build of `by` (a `busca index`, or the server that builds)."""
    who = f" ({holder})" if holder else ""
    if by == CLI:
        return BuildLocked(f'another "busca index"{who} is building this home — wait for it'
                           " or stop it")
    return BuildLocked(f"{by}{who} is building this home's index — wait for it to end (it"
                       " goes on serving meanwhile)")


class LocalBuildLock:
    """The exclusive lock of a local home's builds, taken at once or BuildLocked."""

    def __init__(self, home: Path):
        self.path = Path(home) / LOCK
        self._fd: int | None = None
        if fcntl is None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder, by = _read_holder(fd)
            os.close(fd)
            raise locked_error(holder, by) from None
        self._fd = fd
        _write_holder(fd)

    def release(self) -> None:
        """Let the next build start (idempotent)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the only descriptor releases the flock


def _write_holder(fd: int) -> None:
    started = datetime.now().astimezone()
    data = json.dumps({"pid": os.getpid(), "started": started.isoformat(timespec="seconds"),
                       "by": _BY[0]})
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, data.encode() + b"\n", 0)
    except OSError:  # a full disk: the lock holds all the same, the message names no pid
        pass


def _read_holder(fd: int) -> tuple[str | None, str]:
    """(`pid N, started HH:MM:SS`, what builds there) from the lock file. A holder that has
    just taken the lock may not have written it yet (the file is empty, or still names the
    last build, whose process has ended): read again for up to HOLDER_WAIT seconds, then
    (None, CLI)."""
    deadline = time.monotonic() + HOLDER_WAIT
    while True:
        holder = _holder_in(fd)
        if holder[0] is not None or time.monotonic() >= deadline:
            return holder
        time.sleep(0.01)


def _holder_in(fd: int) -> tuple[str | None, str]:
    """The holder the file names if its process is alive (POSIX only, as `flock`)."""
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"null")
        pid, started = int(data["pid"]), datetime.fromisoformat(data["started"])
        by = str(data.get("by") or CLI)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None, CLI
    if not alive(pid):  # the last build's text
        return None, CLI
    return holder_text(pid, started), by


def take_pg_lock(conn, schema: str) -> None:
    """The session advisory lock of `schema`'s builds on `conn` (released when it closes),
    or BuildLocked naming the holder recorded in its connection's application_name."""
    key = (PG_LOCK_CLASS, zlib.crc32(schema.encode()) & 0x7FFFFFFF)
    by = "" if _BY[0] == CLI else f"{_BY[0]}: "  # application_name: at most 63 bytes
    conn.execute("SELECT set_config('application_name', %s, false)",
                 (f"{PG_APP}({by}{holder_text()})",))
    if conn.execute("SELECT pg_try_advisory_lock(%s, %s)", key).fetchone()[0]:
        return
    row = conn.execute(
        "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2"
        " AND l.classid::bigint = %s AND l.objid::bigint = %s AND l.database ="
        " (SELECT oid FROM pg_database WHERE datname = current_database())", key).fetchone()
    name = row[0] if row and row[0] else ""
    holder = name[len(PG_APP) + 1:-1] if name.startswith(PG_APP + "(") else None
    by, _, text = (holder or "").rpartition(": ")
    raise locked_error(text or None, by or CLI)
