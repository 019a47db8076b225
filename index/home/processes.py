"""Whether a process named by its id still runs: what the build lock's holder, a PostgreSQL
build's spool folder, the kernels' compiling lock and `busca serve`'s record each ask."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """True while a process with this id exists (another user's counts). Never on Windows,
    where signal 0 would interrupt the process instead of probing it."""
    if pid <= 0 or os.name == "nt":
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:  # alive, another user's
        return True
    except OSError:  # ProcessLookupError: gone
        return False
    return True
