"""What the compiled tokeniser (index/text/tokens_numba.py) knows of each character: two tables
indexed by code point, its lowercase and its flags (a letter or digit once lowercased, as
`analyzers.java_terms`' regex asks per code), filled 256 codes at a time as codes appear."""

from __future__ import annotations

import numpy as np

from .analyzers import _ALNUM_RUN

TERM = 1  # flags: a letter or digit once lowercased
SPECIAL = 2  # flags: a code whose lowercase is not one code of its own (İ, Σ); never TERM
UNKNOWN = 4  # flags: a code whose page of the tables is not filled yet
STOP = SPECIAL | UNKNOWN  # the compiled pass stops at these
PAGE = 256
_CODES = 0x110000
_SIGMA = 0x3A3  # Σ: σ or final ς, depending on its neighbours
_tables: tuple[np.ndarray, np.ndarray] | None = None


def tables() -> tuple[np.ndarray, np.ndarray]:
    """The lowercase and flags tables by code point (flags UNKNOWN until `fill`)."""
    global _tables
    if _tables is None:
        _tables = (np.arange(_CODES, dtype=np.uint32), np.full(_CODES, UNKNOWN, dtype=np.uint8))
    return _tables


def fill(codes: np.ndarray) -> None:
    """Fill the tables for every code in `codes` (256 codes at a time)."""
    lower, flags = tables()
    pages = np.flatnonzero(np.bincount(codes >> 8, minlength=_CODES // PAGE) > 0)
    for page in pages.tolist():
        if flags[page * PAGE] & UNKNOWN:
            _fill(lower, flags, page)


def _fill(lower: np.ndarray, flags: np.ndarray, page: int) -> None:
    for c in range(page * PAGE, (page + 1) * PAGE):
        low = chr(c).lower()
        if len(low) != 1 or c == _SIGMA:
            flags[c] = SPECIAL
        else:
            lower[c] = ord(low)
            flags[c] = TERM if _ALNUM_RUN.fullmatch(low) else 0
