"""The exact top k of a weighted sum of posting lists, by a compiled block-max MaxScore when
numba is installed (index/lexical/maxscore_numba.py).

`top(postings, columns, weights, k, factor)` returns the exact top k of
factor[d] * sum_j weights[j] * column j in one compiled call: the candidates (every chunk
whose score is within rounding of the k-th best, found by block-max MaxScore over windows of
2**SHIFT chunks) are scored exactly, with the numbers of lexical.py's `lookup` (the same
products and sums, in the same order and dtype), so the ranking and the scores are the same,
bit for bit, whether numba is there or not; without it, lexical.py's numpy path answers.
`candidates` and `exact_sums` are the two halves, for callers with postings of their own.
Postings laid out for one query only (`one_query`: PostgreSQL's ranker makes them per query)
get the plain document-at-a-time MaxScore instead, without tables (making them would cost a
pass over every posting, thrown away with the postings). `allowed`, a boolean mask over the
chunks (a filter, search/filters.py), restricts both walks to its chunks: the exact top k
among them, the same as ranking every allowed chunk.

A postings object has `indptr`, `indices`, `data` (term-major CSR), `n_rows` and
`accumulator` (the dtype of exact sums), and may have `bound` (each column's largest value).
The window tables of its long lists are made from those arrays and kept on it (`Blocks`:
ROW_BYTES = 11 bytes a window, n_rows × 11/32 bytes a long list, at most BLOCKS_MAX_BYTES
in all): for the query's terms on the first query, for every long list on the second. A
table holds each window's largest value and where its postings start, and the list's peaks
(its largest code in each part of 4 chunks), which bound the windows tightly. On the second
query the lists holding at least 1/DENSE_SHARE of the chunks also get a code per chunk
(one byte, the longest lists first, at most DENSE_MAX_BYTES in all), so the walk bounds
every chunk of a window at once without reading their postings. Nothing needs to be stored
in the index.

numba is the `fast` extra; it is imported only for indexes of COMPILED_MIN_ROWS chunks or
more (loading it costs a few hundred milliseconds, more than a small index's whole query),
and BUSCA_NUMBA=0 turns it off (tests compare both paths).
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import os
import sys
import threading
import weakref

import numpy as np

from .. import compiled

COMPILED_MIN_ROWS = 5_000
SHIFT = 5  # windows of 32 chunks
BLOCKS_MAX_BYTES = 320 << 20  # window tables kept per postings object, at most
DENSE_SHARE = 32  # a list gets a code per chunk when it holds 1/32 of the chunks or more
PART_SHIFT = 2  # a long list's peaks: its largest code in each part of 4 chunks
TILE_SHIFT = 6  # peaks laid out in tiles of 64 windows (maxscore_numba._bounds)
# bytes per window of a list's table: maximum, offset, a quarter of an int32, and its peaks
ROW_BYTES = 3 + (1 << SHIFT - min(PART_SHIFT, SHIFT))
DENSE_MAX_BYTES = 64 << 20  # codes (a byte per chunk and list), in all;
# BUSCA_CODES_MB sets it
APART_MIN_BYTES = 64 << 20  # coded lists' values read from the file from this size on

UNSEEN, SHORT = -1, -2  # a column's table row before its first query / for a short list

_scratch = threading.local()
_kernel = None


def usable(n_rows: int) -> bool:
    """True when the compiled MaxScore is installed, allowed, worth loading and loaded (it
    loads in a background thread: index/compiled.py's `ready`)."""
    return n_rows >= COMPILED_MIN_ROWS and compiled.ready("maxscore_numba") is not None


def when_usable(n_rows: int, then) -> None:
    """then() now if the compiled MaxScore is usable, else in the thread that loads it, once
    loaded; never if it will not be."""
    if n_rows >= COMPILED_MIN_ROWS:
        compiled.when_ready("maxscore_numba", then)


def _loaded():
    """The compiled module, for callers that asked `usable()` first: without a second look at
    the environment (a microsecond a query)."""
    return _kernel or kernel()


def kernel():
    """The compiled module, or None (numba not installed, or BUSCA_NUMBA=0)."""
    global _kernel
    if compiled.off():
        return None
    if _kernel is None:
        _kernel = compiled.module("maxscore_numba") or False
    return _kernel or None


class Blocks:
    """Per-window tables of a postings object's long lists (a list is long when it has at
    least as many postings as there are windows): each window's largest value, quantised up
    to uint8 steps of the list's maximum, and where its postings start. Made for a query's
    terms on the first query, for every long list on the next one (one pass over their
    postings, if they fit in BLOCKS_MAX_BYTES; else term by term); kept in one growing
    table whose rows never change once written, so a search running in another thread
    always reads whole rows."""

    def __init__(self, n_rows: int, n_columns: int, factor: np.ndarray | None,
                 known: np.ndarray | None = None):
        self.shift = SHIFT
        self.part_shift = min(PART_SHIFT, SHIFT)
        self.n_windows = window_count(n_rows)
        self.factor = factor if factor is not None else np.empty(0)
        self.queries = 0
        self._lock = threading.Lock()
        self._peaks_shape = peaks_shape(n_rows)
        self._reset(n_columns)
        # per-chunk codes of the longest lists (`dense_row`), made on the second query:
        # (row of each column or -1, codes, scales), replaced as a whole
        width = self.n_windows << SHIFT
        self.dense = (np.full(n_columns, -1, dtype=np.int32),
                      np.zeros((0, width), dtype=np.uint8), np.empty(0))
        self.apart = _Apart.none()  # where the coded lists' values are read from
        self.known = _NO_BOUND if known is None else known  # `_known_bounds`

    def _reset(self, n_columns: int) -> None:
        self.slot = np.full(n_columns, UNSEEN, dtype=np.int32)  # (int64 per query)
        self.used = 0
        self._tables(8)

    def _tables(self, rows: int) -> None:
        """New tables of `rows` rows, the used ones copied (see maxscore_numba.window_index)."""
        n = self.n_windows + 1
        shapes = {"maxima": ((rows, n), np.uint8), "rel": ((rows, n), np.uint8),
                  "group": ((rows, (n >> 2) + 1), np.int32), "scales": ((rows,), np.float64),
                  "peaks": ((rows, *self._peaks_shape), np.uint8)}
        for name, (shape, dtype) in shapes.items():
            table = np.zeros(shape, dtype=dtype)
            if self.used:
                table[:self.used] = getattr(self, name)[:self.used]
            setattr(self, name, table)

    def slots(self, postings, columns: np.ndarray) -> np.ndarray:
        """The table rows of `columns` (negative for a short list), making the missing ones."""
        found = self.slot[columns]
        if self.queries == 1 or UNSEEN in found.tolist():  # (a list: numpy's any() is slower)
            with self._lock:
                if self.queries == 1:
                    self._add_all(postings)
                for c in columns[self.slot[columns] == UNSEEN]:
                    self._add(postings, int(c))
                found = self.slot[columns]
        self.queries += 1
        return found.astype(np.int64)

    def _add_all(self, postings) -> None:
        """Tables (with peaks) for every long list, if they fit in BLOCKS_MAX_BYTES; codes
        per chunk for the lists holding at least 1/DENSE_SHARE of the chunks, the longest
        first, up to DENSE_MAX_BYTES: the walk then bounds each chunk of a window at once
        instead of reading those lists' postings. Each list is read once for both, from the
        index's files (`_read_list`), so that its pages are not mapped: the walk then maps
        only the pages it reads (at 1M chunks, 600 MB of long lists would otherwise be)."""
        self._make_all(postings)
        _trim_heap()  # what making them freed (each list read, the tables' growth) given back

    def _make_all(self, postings) -> None:
        lengths = np.diff(postings.indptr)
        long = np.flatnonzero(lengths >= self.n_windows)
        # every short list marked at once: a query's new words then never take `slots`' lock
        # (a few µs a query on a stream of new questions)
        self.slot[(lengths < self.n_windows) & (self.slot == UNSEEN)] = SHORT
        tables = long.size * (self.n_windows + 1) * ROW_BYTES <= BLOCKS_MAX_BYTES
        if tables and self.scales.size < long.size:
            self._tables(long.size)
        width = self.n_windows << self.shift
        coded = long[lengths[long] * DENSE_SHARE >= max(postings.n_rows, 1)]
        coded = coded[np.argsort(-lengths[coded], kind="stable")]
        coded = coded[:codes_budget() // coded_bytes(postings.n_rows)]
        rows = np.full(lengths.size, -1, dtype=np.int32)  # (int64 per query)
        rows[coded] = np.arange(coded.size)
        codes = np.zeros((coded.size, width), dtype=np.uint8)
        scales = np.empty(coded.size)
        for c in long if tables else coded:
            ids, values = _read_list(postings, int(c))
            if tables:
                self._add(postings, int(c), ids, values)
            if rows[c] >= 0:
                scales[rows[c]] = kernel().dense_row(ids, values, 0, ids.size, self.factor,
                                                     codes[rows[c]])
        if coded.size:
            self.dense = (rows, codes, scales)
            if int(lengths[coded].sum()) * postings.data.itemsize >= APART_MIN_BYTES:
                self.apart = _Apart.of(postings.data)

    def _add(self, postings, column: int, ids=None, values=None) -> None:
        if self.slot[column] != UNSEEN:
            return
        lo, hi = int(postings.indptr[column]), int(postings.indptr[column + 1])
        if hi - lo < self.n_windows:
            self.slot[column] = SHORT
            return
        if ids is None:
            ids, values = _list(postings, column)
        if (self.used + 1) * (self.n_windows + 1) * ROW_BYTES > BLOCKS_MAX_BYTES:
            self._reset(self.slot.size)  # fresh arrays: running searches keep the old ones
        if self.used == self.scales.size:
            self._tables(2 * self.used)  # before the cap resets, at most twice the rows
        row = self.used
        self.scales[row] = kernel().window_index(ids, values, 0, ids.size, self.factor,
                                                 self.shift, self.maxima[row], self.rel[row],
                                                 self.group[row], self.peaks[row],
                                                 self.part_shift)
        self.used += 1
        self.slot[column] = row


def prepare(postings, factor: np.ndarray | None = None) -> None:
    """Make the window tables of every long list and the codes now, as the second query
    would (a server or a terminal session, before the first question)."""
    blocks = blocks_of(postings, factor)
    with blocks._lock:
        if blocks.queries <= 1:
            blocks._add_all(postings)
            blocks.queries = 2


def _list(postings, column: int) -> tuple[np.ndarray, np.ndarray]:
    """A list's chunk ids and values (views)."""
    lo, hi = int(postings.indptr[column]), int(postings.indptr[column + 1])
    return postings.indices[lo:hi], postings.data[lo:hi]


def _read_list(postings, column: int) -> tuple[np.ndarray, np.ndarray]:
    """A long list's chunk ids and values, read from the index's files, not through the
    mapping. Its pages are then set apart (`_set_apart`): the walk reads a coded list's
    values only where it scores exactly (their place counted on the codes), and another
    list's postings only in the windows it walks."""
    lo, hi = int(postings.indptr[column]), int(postings.indptr[column + 1])
    for array in (postings.indices, postings.data):
        _set_apart(array, lo, hi)
    return _read(postings.indices, lo, hi), _read(postings.data, lo, hi)


def _read(array: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """array[lo:hi], read from the file when array is a whole memory-mapped .npy array (or
    a plain view of one), else a view."""
    mapped = _whole_map(array)
    if mapped is None:
        return array[lo:hi]
    out = np.empty(hi - lo, dtype=array.dtype)
    view, done = memoryview(out).cast("B"), 0
    with open(mapped.filename, "rb", buffering=0) as f:
        f.seek(mapped.offset + lo * array.itemsize)
        while done < view.nbytes:
            got = f.readinto(view[done:])
            if not got:
                raise OSError(f"{mapped.filename} is shorter than its header says")
            done += got
    return out


def _whole_map(array: np.ndarray) -> np.memmap | None:
    """The np.memmap behind `array` when it is a whole memory-mapped .npy array (or a plain
    view of one), else None."""
    mapped = array.base if not isinstance(array, np.memmap) else array
    if (not isinstance(mapped, np.memmap) or not mapped.filename or mapped.ndim != 1
            or array.ctypes.data != mapped.ctypes.data or array.size != mapped.size):
        return None
    return mapped


_MADV_RANDOM = 1  # Linux, the BSDs and macOS


def _set_apart(array: np.ndarray, lo: int, hi: int) -> None:
    """madvise(MADV_RANDOM) over the whole pages of array[lo:hi] when array is memory-mapped:
    those pages become a mapping of their own, so a fault next to them no longer maps them
    with its neighbours (Linux maps whole folios of a file at a fault: a long list's pages
    would otherwise come back into memory). A hint: nothing changes where it is refused."""
    if hi <= lo or not isinstance(array.base, np.memmap):
        return
    madvise = _madvise()
    if madvise is None:
        return
    page = mmap.PAGESIZE
    first = -(-(array.ctypes.data + lo * array.itemsize) // page) * page
    last = (array.ctypes.data + hi * array.itemsize) // page * page
    if last > first:
        madvise(first, last - first, _MADV_RANDOM)


def _trim_heap() -> None:
    """Give the heap's freed memory back to the system (glibc's malloc_trim): making the
    tables frees tens of MB (list buffers, the tables' growth) that glibc would otherwise
    keep, in the process's resident memory for as long as it serves (at 1M chunks, 31 MB
    of its 380). A hint: nothing happens where there is no malloc_trim."""
    trim = _libc("malloc_trim", (ctypes.c_size_t,))
    if trim is not None:
        trim(0)


@functools.cache
def _libc(name: str, argtypes: tuple):
    """The C library's function `name`, or None where there is none."""
    try:
        function = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    function.argtypes = argtypes
    return function


def _madvise():
    """libc's madvise, or None where there is none."""
    return _libc("madvise", (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int))


def window_count(n_rows: int) -> int:
    """How many windows of 2**SHIFT chunks n_rows chunks fill (at least one)."""
    return (max(n_rows, 1) - 1 >> SHIFT) + 1


def peaks_shape(n_rows: int) -> tuple[int, int, int]:
    """The shape of one long list's peaks: (tiles, parts per window, windows per tile)."""
    return ((window_count(n_rows) - 1 >> TILE_SHIFT) + 1, 1 << SHIFT - min(PART_SHIFT, SHIFT),
            1 << TILE_SHIFT)


def coded_bytes(n_rows: int) -> int:
    """What one coded list takes: a code per chunk, whole windows."""
    return window_count(n_rows) << SHIFT


def codes_budget() -> int:
    """Bytes the codes per chunk may take: BUSCA_CODES_MB (0: none, the walk
    reads postings only: less memory, slower), else DENSE_MAX_BYTES."""
    value = os.environ.get("BUSCA_CODES_MB", "")
    try:
        return max(0, int(float(value) * (1 << 20))) if value.strip() else DENSE_MAX_BYTES
    except ValueError:
        return DENSE_MAX_BYTES


class _Apart:
    """A descriptor of a memory-mapped values file, for the compiled walk to read the coded
    lists' values with pread instead of through the mapping (fd -1: through the mapping);
    closed when the tables that hold it go."""

    def __init__(self, fd: int, base: int):
        self.fd, self.base = fd, base
        if fd >= 0:
            weakref.finalize(self, os.close, fd)

    @classmethod
    def none(cls) -> "_Apart":
        return cls(-1, 0)

    @classmethod
    def of(cls, array: np.ndarray) -> "_Apart":
        """The file behind `array` when it is a whole memory-mapped .npy array (or a plain
        view of one) that can be opened, else none."""
        mapped = _whole_map(array)
        if mapped is None or sys.platform == "win32":  # (the walk reads no file there)
            return cls.none()
        try:
            return cls(os.open(mapped.filename, os.O_RDONLY), int(mapped.offset))
        except OSError:
            return cls.none()


def blocks_of(postings, factor: np.ndarray | None) -> Blocks:
    """The Blocks kept on `postings` (made on first use; a fresh one if it cannot keep it)."""
    blocks = getattr(postings, "_blocks", None)
    if (blocks is None or blocks.shift != SHIFT
            or blocks.factor is not factor and factor is not None):
        blocks = Blocks(postings.n_rows, postings.indptr.size - 1, factor,
                        _known_bounds(postings, factor))
        try:
            postings._blocks = blocks
        except AttributeError:
            pass
    return blocks


def _known_bounds(postings, factor: np.ndarray | None) -> np.ndarray:
    """Each column's largest value as `postings.bound` stores it, for the walk's term bounds
    (read-only float32 whatever the source: the kernels are compiled for one type), or an
    empty array where it cannot serve: with a factor, or a bound of another dtype than the
    values (its rounding could fall below them)."""
    bound = getattr(postings, "bound", None)
    if (factor is not None or bound is None or bound.dtype != np.float32
            or postings.data.dtype != np.float32):
        return _NO_BOUND
    known = np.asarray(bound).view()
    known.flags.writeable = False
    return known


def _scratch_vectors(n_rows: int, n_windows: int, tile: tuple[int, int] = (1, 1)):
    """This thread's work vectors: ids and scores of n_rows, bounds of n_windows, float32
    sums of one tile of peaks (fresh ones per query would cost the page faults of touching
    megabytes)."""
    buffers = getattr(_scratch, "buffers", None)
    if (buffers is None or buffers[0].size != n_rows or buffers[2].size != n_windows
            or buffers[3].shape != tile):
        buffers = _scratch.buffers = (np.empty(n_rows, dtype=np.int64), np.empty(n_rows),
                                      np.empty(n_windows), np.empty(tile, dtype=np.float32))
    return buffers


def _tables(postings, columns, factor, blocks: Blocks | None = None):
    """The arguments of the compiled walk after the query's: its window tables, work vectors,
    per-chunk codes and the tables' peaks (of `blocks`, else of `blocks_of`)."""
    blocks = blocks if blocks is not None else blocks_of(postings, factor)
    found, scores, ub, sums = _scratch_vectors(postings.n_rows, blocks.n_windows,
                                               blocks.peaks.shape[2:])
    slots = blocks.slots(postings, columns)
    rows, codes, scales = blocks.dense
    return (blocks.factor, slots, blocks.maxima, blocks.rel, blocks.group, blocks.scales,
            blocks.shift, ub, found, scores, rows[columns].astype(np.int64), codes, scales,
            blocks.peaks, sums, blocks.known)


def one_query(postings, columns: np.ndarray) -> bool:
    """True for postings laid out for this query alone (PostgreSQL's ranker makes them per
    query, only the query's columns): window tables would cost a pass over every posting and
    be thrown away, so the plain walk (`daat_candidates`), which reads fewer, answers."""
    return postings.indptr.size - 1 <= columns.size


def mask_arguments(allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The kernels' (mask, quads) for a boolean mask over the chunks (None: empty arrays,
    every chunk allowed): the mask as bools and its bytes read 4 at a time (views)."""
    if allowed is None:
        return _NO_MASK
    mask = np.ascontiguousarray(allowed, dtype=np.bool_)
    quads = mask.view(np.uint8)[:mask.size & ~3].view(np.uint32)
    if not quads.flags.aligned:  # (a view into another array: an aligned copy)
        mask = mask.copy()
        quads = mask.view(np.uint8)[:mask.size & ~3].view(np.uint32)
    return mask, quads


def _plain(postings, columns, weights, k, factor, allowed=None):
    """Sorted candidates by the plain document-at-a-time MaxScore (no tables)."""
    bound = getattr(postings, "bound", None)
    if bound is None:  # each column's largest value
        values = postings.data * (factor[postings.indices] if factor is not None else 1)
        lengths = np.diff(postings.indptr)
        bound = np.zeros(lengths.size)
        filled = lengths > 0
        bound[filled] = np.maximum.reduceat(values, postings.indptr[:-1][filled])
    bounds = weights * np.asarray(bound, dtype=np.float64)[columns]
    order = np.argsort(bounds, kind="stable")  # weakest first
    buffers = getattr(_scratch, "buffers", None)
    if buffers is None or buffers[0].size != postings.n_rows:
        buffers = _scratch_vectors(postings.n_rows, 1)
    found, scores = buffers[0], buffers[1]
    return _loaded().daat_candidates(postings.indptr, postings.indices, postings.data,
                                     columns[order],
                                     weights[order].astype(postings.accumulator),
                                     bounds[order], factor if factor is not None else _NONE,
                                     k, found, scores, mask_arguments(allowed)[0])


def candidates(postings, columns, weights: np.ndarray, k: int,
               factor: np.ndarray | None, allowed: np.ndarray | None = None) -> np.ndarray:
    """Sorted chunk ids whose score may be in the top k (see the module docstring), among
    the chunks of `allowed` when given."""
    columns = np.asarray(columns, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    if one_query(postings, columns):
        return _plain(postings, columns, weights, k, factor, allowed)
    factor, *tables = _tables(postings, columns, factor)
    ids = _loaded().candidates(postings.indptr, postings.indices, postings.data, columns,
                               weights, factor, k, *tables, *mask_arguments(allowed))
    ids.sort()
    return ids


def top(postings, columns, weights, k: int, factor: np.ndarray | None = None,
        norms: np.ndarray | None = None, qnorm: float = 0.0,
        allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The exact top k (ids, float64 scores), best first, equal scores in id order: the
    candidates' `exact_sums` in column order, as float64, divided by norms[id] * qnorm when
    norms are given; among the chunks of `allowed` when given. One compiled call (two for
    postings made for one query)."""
    columns = np.asarray(columns, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    norms = norms if norms is not None else _NONE
    if one_query(postings, columns):
        ids = _plain(postings, columns, weights, k, factor, allowed)
        dtype = postings.accumulator
        ids, scores = _loaded().exact_top(
            postings.indptr, postings.indices, postings.data, columns, weights.astype(dtype),
            ids.astype(postings.indices.dtype), k, norms, float(qnorm),
            np.zeros(ids.size, dtype=dtype))
        return ids.astype(np.int64), scores
    blocks = blocks_of(postings, factor)  # held: its file stays open during the call
    ids, scores = _loaded().top(*walk_arguments(postings, columns, weights, k, factor, norms,
                                                qnorm, allowed, blocks))
    return ids.astype(np.int64), scores


def walk_arguments(postings, columns: np.ndarray, weights: np.ndarray, k: int,
                   factor: np.ndarray | None, norms: np.ndarray, qnorm: float,
                   allowed: np.ndarray | None, blocks: Blocks) -> tuple:
    """The compiled `top`'s arguments for a query (int64 columns, float64 weights) on the
    tables of `blocks`, which the caller holds during the call (bench/bench_query_parts.py
    times the call alone)."""
    factor, *tables = _tables(postings, columns, factor, blocks)
    return (postings.indptr, postings.indices, postings.data, columns, weights,
            weights.astype(postings.accumulator), factor, k, *tables, norms, float(qnorm),
            *mask_arguments(allowed), blocks.apart.fd, blocks.apart.base)


_NONE = np.empty(0)
_NO_BOUND = np.empty(0, dtype=np.float32)
_NO_BOUND.flags.writeable = False
_NO_MASK = (np.empty(0, dtype=np.bool_), np.empty(0, dtype=np.uint32))


def exact_sums(postings, ids: np.ndarray, columns, weights, out: np.ndarray) -> np.ndarray:
    """lexical.py's `lookup` compiled: the same products and sums, in the same order and
    dtype (tests compare both bit for bit)."""
    dtype = postings.accumulator
    return _loaded().exact_sums(postings.indptr, postings.indices, postings.data,
                                np.asarray(columns, dtype=np.int64),
                                np.asarray(weights, dtype=np.float64).astype(dtype),
                                ids.astype(postings.indices.dtype), out)
