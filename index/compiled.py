"""The build's compiled loops (numba, the `fast` extra), loaded on first use: `module(name)`
is index/<name>.py, or None when numba is not installed or BUSCA_NUMBA=0 (then every caller
takes its numpy path, with the same results; the tests compare both).

Loading numba and the cached machine code takes about half a second (compiling them, the
first time after an install, several seconds), more than a small build costs without them:
builds use them from MIN_DOCUMENTS documents (tokenising) or MIN_POSTINGS postings."""

from __future__ import annotations

import importlib
import os

MIN_DOCUMENTS = 5_000
MIN_POSTINGS = 1_000_000
_loaded: dict[str, object] = {}


def module(name: str):
    """index/<name>.py imported (its numba functions load or compile on first call), or None."""
    if os.environ.get("BUSCA_NUMBA", "1") == "0":
        return None
    if name not in _loaded:
        try:
            _loaded[name] = importlib.import_module(f"{__package__}.{name}")
        except ImportError:
            _loaded[name] = None
    return _loaded[name]
