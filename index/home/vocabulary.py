"""A method's vocabulary held compactly: term -> column in about 25 bytes a term.

A dict of str for the 880,000 terms of a million chunks holds 150 MB (a str object, an int
and a dict slot per term); this holds the terms' UTF-8 text as it is stored (one term a
line), where each ends, and the terms' hashes sorted with their columns: 25 MB. A look-up
hashes the term, finds its hash by binary search and compares the stored bytes, so a term is
found only when it is there, whatever the order of the terms (about 2 µs; the rankers keep
the columns of the words they have met).
"""

from __future__ import annotations

import numpy as np

BLOCK = 1 << 16  # terms decoded at a time while hashing: a few MB of str, then freed
NEWLINE = 10
term_hash = hash  # a module name, so that a test can make every term collide


class Vocabulary:
    """The terms of a stored vocabulary file (UTF-8, each term followed by a newline), with
    the dict methods the rankers use: `get(term, default)`, `in`, `len`."""

    def __init__(self, text: bytes):
        self._text = text
        ends = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == NEWLINE)
        self._ends = ends.astype(np.int32 if len(text) < 1 << 31 else np.int64)
        hashes = _hashes(text, ends)
        order = np.argsort(hashes, kind="stable")
        self._hashes = hashes[order]
        self._columns = order.astype(np.int32)

    @classmethod
    def of(cls, terms: list[str]) -> Vocabulary:
        return cls(("\n".join(terms) + "\n").encode("utf-8") if terms else b"")

    def __len__(self) -> int:
        return self._ends.size

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and self.get(term) is not None

    def get(self, term: str, default=None):
        """The column of `term`, or `default` when the vocabulary does not hold it."""
        h = term_hash(term)
        i = int(self._hashes.searchsorted(h))
        encoded = None
        while i < self._hashes.size and self._hashes[i] == h:
            column = int(self._columns[i])
            if encoded is None:
                encoded = term.encode("utf-8", "surrogatepass")
            if self._term(column) == encoded:
                return column
            i += 1
        return default

    def _term(self, column: int) -> bytes:
        start = int(self._ends[column - 1]) + 1 if column else 0
        return self._text[start:int(self._ends[column])]


def _hashes(text: bytes, ends: np.ndarray) -> np.ndarray:
    """Python's hash of every term (this process's: the table lives only in it), a block of
    terms decoded at a time."""
    hashes = np.empty(ends.size, dtype=np.int64)
    for lo in range(0, ends.size, BLOCK):
        hi = min(lo + BLOCK, ends.size)
        start = int(ends[lo - 1]) + 1 if lo else 0
        terms = text[start:int(ends[hi - 1])].decode("utf-8").split("\n")
        hashes[lo:hi] = np.fromiter(map(term_hash, terms), dtype=np.int64, count=hi - lo)
    return hashes
