"""PostgreSQL binary COPY rows made from numpy arrays (no per-element Python work).

A row is a sequence of fields; each field is one of
- `Int4(values)`, `Float8(values)`: one scalar per row;
- `Text(strings)`: one str per row;
- `Bytes(matrix)`: one fixed-width bytea per row (a uint8 matrix, one row per row);
- `Array(indptr, values, kind)`: a one-dimensional int4[] or float4[] per row, row r holding
  values[indptr[r]:indptr[r+1]] (CSR-like);
- `Vector(matrix)`: one pgvector `vector` per row (float32 matrix);
- `Slices(indptr, values, pack)`: one bytea per row, pack(values[indptr[r]:indptr[r+1]])
  (a posting list's chunk ids or values; index/postgres/lists.py packs them).
`copy_rows(cursor, table, columns, fields)` streams them with `COPY ... (FORMAT BINARY)`, in
buffers of at most BLOCK rows and about BUFFER_BYTES bytes.
Values keep their exact bits: float4 arrays are the float32 values busca computed.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
TRAILER = struct.pack("!h", -1)
OIDS = {"int4": (23, ">i4"), "float4": (700, ">f4")}
BLOCK = 8192  # rows per buffer handed to COPY
BUFFER_BYTES = 32 << 20  # and about this many bytes of Slices per buffer at most


@dataclass(frozen=True)
class Int4:
    values: np.ndarray


@dataclass(frozen=True)
class Float8:
    values: np.ndarray


@dataclass(frozen=True)
class Text:
    values: Sequence[str]


@dataclass(frozen=True)
class Bytes:
    matrix: np.ndarray


@dataclass(frozen=True)
class Array:
    indptr: np.ndarray
    values: np.ndarray
    kind: str  # "int4" or "float4"


@dataclass(frozen=True)
class Vector:
    matrix: np.ndarray


@dataclass(frozen=True)
class Slices:
    indptr: np.ndarray
    values: np.ndarray
    pack: Callable[[np.ndarray], bytes]


def _scalars(values: np.ndarray, dtype: str) -> list[bytes]:
    width = np.dtype(dtype).itemsize
    out = np.empty((len(values), 4 + width), dtype=np.uint8)
    out[:, :4] = np.frombuffer(struct.pack("!i", width), dtype=np.uint8)
    out[:, 4:] = np.ascontiguousarray(values, dtype=dtype).view(np.uint8).reshape(-1, width)
    return [row.tobytes() for row in out]


def _encode_field(field, lo: int, hi: int) -> list[bytes]:
    """The bytes (length word included) of rows lo..hi of one field."""
    if isinstance(field, Int4):
        return _scalars(field.values[lo:hi], ">i4")
    if isinstance(field, Float8):
        return _scalars(field.values[lo:hi], ">f8")
    if isinstance(field, Text):
        out = []
        for value in field.values[lo:hi]:
            data = value.encode("utf-8")
            out.append(struct.pack("!i", len(data)) + data)
        return out
    if isinstance(field, Bytes):
        matrix = np.ascontiguousarray(field.matrix[lo:hi], dtype=np.uint8)
        prefix = struct.pack("!i", matrix.shape[1])
        return [prefix + row.tobytes() for row in matrix]
    if isinstance(field, Vector):
        return _vectors(field.matrix[lo:hi])
    if isinstance(field, Slices):
        return _slices(field, lo, hi)
    return _arrays(field, lo, hi)


def _slices(field: Slices, lo: int, hi: int) -> list[bytes]:
    values = np.asarray(field.values)
    out = []
    for r in range(lo, hi):
        data = field.pack(values[int(field.indptr[r]):int(field.indptr[r + 1])])
        out.append(struct.pack("!i", len(data)) + data)
    return out


def _vectors(matrix: np.ndarray) -> list[bytes]:
    dim = matrix.shape[1]
    prefix = struct.pack("!ihh", 4 + 4 * dim, dim, 0)
    body = np.ascontiguousarray(matrix, dtype=">f4")
    return [prefix + row.tobytes() for row in body]


def _arrays(field: Array, lo: int, hi: int) -> list[bytes]:
    oid, dtype = OIDS[field.kind]
    start, stop = int(field.indptr[lo]), int(field.indptr[hi])
    pairs = np.empty((stop - start, 2), dtype=">i4")
    pairs[:, 0] = 4
    pairs[:, 1] = np.asarray(field.values[start:stop]).astype(dtype).view(">i4")
    buf = memoryview(pairs.tobytes())
    out = []
    empty = struct.pack("!iiii", 12, 0, 0, oid)
    for r in range(lo, hi):
        a, b = int(field.indptr[r]) - start, int(field.indptr[r + 1]) - start
        n = b - a
        if n == 0:
            out.append(empty)
            continue
        head = struct.pack("!iiiiii", 20 + 8 * n, 1, 0, oid, n, 1)
        out.append(head + buf[8 * a:8 * b].tobytes())
    return out


def _bounds(fields: Sequence, n: int) -> list[int]:
    """Row numbers where buffers start: every BLOCK rows, and sooner where Slices fields would
    make a buffer larger than about BUFFER_BYTES."""
    if not any(isinstance(f, Slices) for f in fields):
        return list(range(0, n, BLOCK)) + [n] if n else [0]
    sizes = np.zeros(n, dtype=np.int64)
    for f in fields:
        if isinstance(f, Slices):
            sizes += np.diff(np.asarray(f.indptr[:n + 1], dtype=np.int64)) \
                * np.asarray(f.values).dtype.itemsize
    starts, total = [0], 0
    for r in range(n):
        if r > starts[-1] and (r - starts[-1] >= BLOCK or total + sizes[r] > BUFFER_BYTES):
            starts.append(r)
            total = 0
        total += int(sizes[r])
    return starts + [n] if n else [0]


def _rows(fields: Sequence, n: int):
    """Binary COPY data for n rows, in buffers (see `_bounds`)."""
    count = struct.pack("!h", len(fields))
    bounds = _bounds(fields, n)
    for lo, hi in zip(bounds, bounds[1:]):
        columns = [_encode_field(f, lo, hi) for f in fields]
        yield b"".join(count + b"".join(parts) for parts in zip(*columns))


def copy_rows(cursor, table: str, columns: Sequence[str], fields: Sequence, n: int) -> None:
    """COPY n rows into `table` (an already quoted name) with the binary format."""
    names = ", ".join(f'"{c}"' for c in columns)
    with cursor.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(HEADER)
        for block in _rows(fields, n):
            copy.write(block)
        copy.write(TRAILER)
