"""What this machine offers a busca process: the cores it may use (the tokenising workers a
build forks, the windows e5-small encodes side by side unless told) and the user's cache
folder (numba's kernel record, the ONNX models the e5 engines build)."""

from __future__ import annotations

import os
from pathlib import Path


def cores() -> int:
    """The CPUs this process may run on (its affinity where the OS says), at least 1."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)


def user_cache() -> Path | None:
    """busca's folder in the user's cache: `$XDG_CACHE_HOME/busca`, else `~/.cache/busca`
    (None: no home folder to be found, e.g. a bare service account)."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = Path.home() / ".cache"
        except (RuntimeError, KeyError):
            return None
    return Path(base) / "busca"
