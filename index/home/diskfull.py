"""A build that runs out of disk space: recognise the error and say so in one line.

The ways a full disk (or a quota, or the file-size limit `ulimit -f`) shows up while a build
writes: an OSError with ENOSPC / EDQUOT / EFBIG, numpy's `N requested and M written` (its
`tofile` reports a short write without errno), and SQLite's SQLITE_FULL (`database or disk is
full`, on ENOSPC) or SQLITE_IOERR_WRITE (`disk I/O error`, any other failed write, e.g. EFBIG).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
from pathlib import Path

from ...errors import BuscaError

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
SQLITE_WRITE_FAILED = frozenset({"SQLITE_FULL", "SQLITE_IOERR_WRITE"})
NUMPY_SHORT_WRITE = re.compile(r"(\d+) requested and (\d+) written")


class DiskFull(BuscaError):
    """The disk (or a quota or file-size limit) filled up while a build was written."""


def is_disk_full(error: BaseException | None) -> bool:
    """Whether `error`, or an error it was raised from, is a write that found no space."""
    return _culprit(error) is not None


def _culprit(error: BaseException | None) -> BaseException | None:
    """The write error that found no space, in `error`'s chain, or None."""
    while error is not None:
        if isinstance(error, OSError) and (error.errno in FULL_ERRNOS or (
                error.errno is None and NUMPY_SHORT_WRITE.search(str(error)))):
            return error
        if isinstance(error, sqlite3.Error) and (
                getattr(error, "sqlite_errorname", "") in SQLITE_WRITE_FAILED
                or "disk is full" in str(error)):
            return error
        error = error.__cause__ or error.__context__
    return None


def folder_size(path: Path | None) -> int:
    """Bytes of the files under `path` (0 when there is none)."""
    if path is None:
        return 0
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def disk_full_error(error: BaseException, folder: Path, *, needed: int,
                    previous_live: bool) -> DiskFull:
    """The one line for a build stopped by a full disk in `folder` (its partial build already
    removed): what failed, about how much space a build needs, what is free, what stays live."""
    free = shutil.disk_usage(folder).free if folder.exists() else None
    space = f"it needs about {_size(needed)} of space" if needed else "it needs more space"
    if free is not None:
        space += f" and {_size(free)} are free"
    kept = ("the previous index is still live" if previous_live
            else "no index was published")
    return DiskFull(f"cannot write the new index to the disk in {folder} ({_reason(error)}):"
                    f" {space}; the partial build was removed and {kept} — free some space and"
                    " run \"busca index\" again")


def _reason(error: BaseException) -> str:
    error = _culprit(error) or error
    text = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    short = NUMPY_SHORT_WRITE.search(text)
    if short:
        return f"a short write: {int(short[2]):,} of {int(short[1]):,} values written"
    return text.strip().splitlines()[0][:120] if text.strip() else type(error).__name__


def _size(count: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"
