"""A posting list as two bytea values: its chunk ids and its values, packed without loss.

What a query that reads long lists waits for is mostly their bytes on the way from the server
to psycopg (measured here: about 2.6 ms per MB, of which well under half is the server reading
them), so a list travels in as few bytes as numpy can unpack quickly (about 2 ms per million
postings; at 1M bench chunks a bm25 posting takes 2 to 3 bytes instead of 8):

- ids (int32, ascending): a 4-byte word `width`, then
  width 0: the ids as int32; width 1 or 2: the first id as int32, then the n - 1 gaps
  between consecutive ids as uint8 or uint16 (when every gap fits);
- values (the method's dtype: bm25 impacts float32, tfidf counts uint16/uint32): a word
  `width`, then width 0: the values; width 1 or 2: a word T, the T distinct values, and
  per posting the index of its value among them as uint8 or uint16 (when T fits and the
  list is long enough for that to save bytes).

Everything is little-endian and every array starts at a multiple of its item size, so the
unpacked arrays are exactly the local CSR column slices, bit for bit (tests compare them).
"""

from __future__ import annotations

import struct

import numpy as np

MIN_PACKED = 128  # shorter lists are stored as they are (packing would not pay for itself)
WIDTHS = {1: np.dtype("<u1"), 2: np.dtype("<u2")}
_WORD = struct.Struct("<I")


def _width(top: int) -> int:
    return 1 if top < 1 << 8 else 2 if top < 1 << 16 else 0


def pack_ids(ids: np.ndarray) -> bytes:
    ids = np.asarray(ids)
    if ids.size >= MIN_PACKED:
        gaps = np.diff(ids)
        width = _width(int(gaps.max(initial=0)))
        if width:
            return (_WORD.pack(width) + ids[:1].astype("<i4").tobytes()
                    + gaps.astype(WIDTHS[width]).tobytes())
    return _WORD.pack(0) + ids.astype("<i4").tobytes()


def unpack_ids(data: bytes) -> np.ndarray:
    width = _WORD.unpack_from(data)[0]
    if width == 0:
        return np.frombuffer(data, dtype="<i4", offset=4)
    first = np.frombuffer(data, dtype="<i4", count=1, offset=4)[0]
    gaps = np.frombuffer(data, dtype=WIDTHS[width], offset=8)
    out = np.empty(gaps.size + 1, dtype=np.int32)
    out[0] = first
    np.cumsum(gaps, dtype=np.int32, out=out[1:])
    out[1:] += first
    return out


def pack_values(values: np.ndarray) -> bytes:
    values = np.asarray(values)
    little = values.dtype.newbyteorder("<")
    if values.size >= MIN_PACKED:
        table, codes = _distinct(values)
        width = _width(table.size - 1)
        itemsize = values.dtype.itemsize
        if width and 8 + table.size * itemsize + values.size * width < values.size * itemsize:
            return (_WORD.pack(width) + _WORD.pack(table.size) + table.astype(little).tobytes()
                    + codes.astype(WIDTHS[width]).tobytes())
    return _WORD.pack(0) + values.astype(little).tobytes()


def unpack_values(data: bytes, dtype) -> np.ndarray:
    dtype = np.dtype(dtype).newbyteorder("<")
    width = _WORD.unpack_from(data)[0]
    if width == 0:
        return np.frombuffer(data, dtype=dtype, offset=4)
    size = _WORD.unpack_from(data, 4)[0]
    table = np.frombuffer(data, dtype=dtype, count=size, offset=8)
    codes = np.frombuffer(data, dtype=WIDTHS[width], offset=8 + size * dtype.itemsize)
    return np.take(table, codes)


def _distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values (ascending) and each value's index among them."""
    if values.dtype.kind == "u" and int(values.max()) < 1 << 16:  # counts: no sort needed
        present = np.bincount(values)
        table = np.flatnonzero(present).astype(values.dtype)
        index = np.zeros(present.size, dtype=np.int64)
        index[table] = np.arange(table.size)
        return table, index[values]
    bits = values.view(f"<u{values.dtype.itemsize}") if values.dtype.kind == "f" else values
    table, codes = np.unique(bits, return_inverse=True)  # floats by their bits: exact
    return table.view(values.dtype.newbyteorder("<")), codes.ravel()
