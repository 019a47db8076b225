"""The discovery record of a running `busca serve`: `<home>/serve.json`, so that `busca
search` and `busca context` on the same home can ask the server (which holds the index and
the encoder in memory) instead of loading them again. This module is the only one that writes
or reads the record; it needs nothing beyond the standard library.

The server publishes the record once it listens (written atomically: a temporary file renamed
over the old one) and withdraws it when it stops cleanly; a record left by a killed server is
stale, and `find` ignores it: the process is gone, the record names another home (the home
was copied), or its URL is not on the loopback interface. A PostgreSQL home (a URL) gets no
record: it names no folder on this machine to hold one (docs/terminal.md says why not
elsewhere).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..index.home.processes import alive

FILE = "serve.json"
LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class Record:
    """Where a server of this home listens, and what it serves."""

    url: str  # http://127.0.0.1:PORT/ (the loopback address even when it listens on all)
    pid: int
    home: str  # the home's resolved absolute path
    build: str | None  # the build it loaded at start (it follows `busca index` after)
    writable: bool  # started with --token: the write endpoints exist
    version: str  # busca's version


def path_of(location: str | Path) -> Path | None:
    """The record's path for a home folder; None for a database URL."""
    text = str(location)
    if "://" in text:
        return None
    return Path(text) / FILE


def local_url(url: str) -> str | None:
    """`url` as the loopback address a client on this machine uses (a server listening on
    every interface is reached on 127.0.0.1), or None when it is not reachable that way."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if host not in LOOPBACK and not host.startswith("127."):
        return None
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{parts.port}/"


def publish(location: str | Path, *, url: str, build: str | None, writable: bool,
            version: str, pid: int | None = None) -> Path | None:
    """Write the record of this process's server; its path, or None when there is none to
    write (a database URL, a server not on the loopback interface) or the home cannot be
    written (then clients load the index themselves, as without a server)."""
    path, local = path_of(location), local_url(url)
    if path is None or local is None:
        return None
    record = Record(local, os.getpid() if pid is None else pid, str(Path(location).resolve()),
                    build, writable, version)
    try:
        fd, temporary = tempfile.mkstemp(prefix=".serve-", suffix=".json", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(asdict(record), out, indent=1)
                out.write("\n")
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        return None
    return path


def withdraw(location: str | Path, pid: int | None = None) -> None:
    """Remove the record if it is this process's (another server may have replaced it)."""
    path = path_of(location)
    record = read(path) if path is not None else None
    if record is not None and record.pid == (os.getpid() if pid is None else pid):
        try:
            path.unlink()
        except OSError:
            pass


def read(path: Path) -> Record | None:
    """The record in `path` as written, or None if there is none or it is malformed."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        record = Record(**data)
    except (OSError, ValueError, TypeError):
        return None
    if not (isinstance(record.url, str) and isinstance(record.pid, int)
            and isinstance(record.home, str)):
        return None
    return record


def find(location: str | Path) -> Record | None:
    """The record of a live server of this very home, or None: no record, a dead process,
    another home (a copied folder), or a URL off the loopback interface. Whether the server
    answers, and on which build, is the client's to check."""
    path = path_of(location)
    if path is None:
        return None
    record = read(path)
    if record is None or not alive(record.pid) or local_url(record.url) != record.url:
        return None
    try:
        if Path(record.home) != Path(location).resolve():
            return None
    except OSError:
        return None
    return record
