"""The cores this process may use: how many tokenising workers a build forks, and how many
windows e5-small encodes side by side unless told."""

from __future__ import annotations

import os


def usable() -> int:
    """The CPUs this process may run on (its affinity where the OS says), at least 1."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)
