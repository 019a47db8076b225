"""The build's compiled loops (numba, the `fast` extra), loaded on first use: `module(name)`
is index/<name>.py, or None when numba is not installed or BUSCA_NUMBA=0 (then every caller
takes its numpy path, with the same results; the tests compare both)."""

from __future__ import annotations

import importlib
import os

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
