"""A method's vocabulary held compactly: term -> column in about 32 bytes a term.

A dict of str for the 880,000 terms of a million chunks holds 150 MB (a str object, an int
and a dict slot per term); this holds the terms' UTF-8 text as it is stored (one term a
line), where each ends, and the terms' hashes grouped by bucket with their columns: 28 MB.
A look-up hashes the term, reads its bucket's few hashes and compares the stored bytes of a
match, so a term is found only when it is there, whatever the order of the terms. The
arrays are read through memoryviews (a Python int per read, no numpy scalar): about 0.4 µs
a look-up, a few times a dict's (the rankers keep the columns of the words they have met).
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
        index = np.int32 if len(text) < 1 << 31 else np.int64  # offsets and columns
        ends = ends.astype(index)
        hashes = _hashes(text, ends)
        self._mask = (1 << max(1, (ends.size - 1).bit_length())) - 1  # buckets >= terms
        buckets = hashes & self._mask
        order = np.argsort(buckets, kind="stable")
        first = np.zeros(self._mask + 2, dtype=index)
        np.cumsum(np.bincount(buckets, minlength=self._mask + 1), out=first[1:])
        self.size = int(ends.size)
        self._ends = memoryview(ends)
        self._hashes = memoryview(hashes[order])
        self._columns = memoryview(order.astype(index))
        self._first = memoryview(first)

    @classmethod
    def of(cls, terms: list[str]) -> Vocabulary:
        return cls(("\n".join(terms) + "\n").encode("utf-8") if terms else b"")

    def __len__(self) -> int:
        return self.size

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and self.get(term) is not None

    def get(self, term: str, default=None):
        """The column of `term`, or `default` when the vocabulary does not hold it."""
        h = term_hash(term)
        first, hashes = self._first, self._hashes
        bucket = h & self._mask
        for i in range(first[bucket], first[bucket + 1]):
            if hashes[i] == h:
                column = self._columns[i]
                ends = self._ends
                start = ends[column - 1] + 1 if column else 0
                encoded = term.encode("utf-8", "surrogatepass")  # compared in place, no copy
                if (ends[column] - start == len(encoded)
                        and self._text.startswith(encoded, start)):
                    return column
        return default


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
