"""Block-max MaxScore over term-major postings, compiled with numba (`fast` extra).

Chunks are cut into windows of 2**shift consecutive ids, and windows into parts of 4
chunks. Each long posting list has a table (`window_index`, made once per term and kept by
maxscore.py's `Blocks`): per window, its largest value quantised *up* to one of 255 steps
of the list's maximum, and where its postings there start; per part, its largest such code
(its peaks). Short lists have no table. A window's bound `ub[j]` (`_bounds`) adds up, part
by part, the long lists' peaks and the short lists' values, and takes the window's best
part: rare words seldom meet in one part, so this bound is much tighter than the sum of
each list's window maximum (at 1M chunks, 520 windows walked a query instead of 4,498).

`candidates` first walks the SEEDS windows of highest bound (in id order, so that every list
is read forwards), for a k-th best score `theta` close to the final one, then the other
windows in id order. A window whose bound is below `theta` is skipped without reading a
posting. A window is walked one of two ways:

- with codes per chunk (`_walk_dense`, when one of the query's lists has them: the longest
  lists get one byte per chunk, `dense_row`, its value quantised *up* like the tables'):
  the coded terms add code * step for the window's 32 chunks at once (vector code), the
  others add their values there, and a chunk whose bound reaches `theta` is kept with it.
  No posting of a coded list is read during the walk; `theta` is the k-th best *lower*
  bound (a chunk's bound minus the codes' largest rounding), so it never passes the true
  k-th best score;
- without (`_walk_tables`): the terms (weakest bound first) are split by their bounds in
  this window: the longest weak prefix whose window bounds add up to less than `theta`
  cannot lift a chunk to it alone, so only the chunks of the other terms (the drivers,
  read from where the table says the window starts) are visited, document at a time; each
  is completed with the weak terms, strongest first, looked up inside the window, and
  abandoned as soon as what the window maxima leave cannot lift it to `theta`.

The walk jumps from window to window, beyond what the CPU's own prefetcher guesses, so the
first cache lines of each long list's postings (or codes) in the next LEAD windows to walk
are asked for ahead of time, as are the seeds'.

Every chunk whose score (or bound) reached `theta` when it was seen is kept; those within
rounding (slack) of the final `theta` are returned, to be scored exactly (`exact_top`, or in
`top` through the window tables: the numbers of lexical.py's `lookup`).

A filter (search/filters.py) comes in as `mask`, one bool per chunk (empty: every chunk),
with `quads`, the same bytes read 4 at a time (a part's chunks in one read): when few parts
hold an allowed chunk (`_few_open`), a window's bound is taken over those parts only
(`_mask_parts`); short lists add only their allowed chunks' values; a window without an allowed chunk is never walked nor
taken as a seed (`_open`), a chunk not allowed is passed over before it is scored: `theta`
is the k-th best among the allowed chunks, and the bounds are upper bounds of theirs.
"""

from __future__ import annotations

import sys

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

SLACK = 1e-5  # relative margin on every pruning test (float32 sums in another order)
SEEDS = 16  # windows walked first, those of highest bound (in id order)
LEAD = 8  # windows to walk found ahead, their postings asked for (a power of 2)
PROBE = 32  # chunks scored in full before a plain walk, for a first threshold
LITTLE = sys.byteorder == "little"
SAMPLE, OPEN_SHARE = 1024, 0.75  # a mask's parts sampled; the bounds masked part by part
# when fewer than this share of them hold an allowed chunk


@intrinsic
def _prefetch(typingctx, array, index):
    """Ask the CPU for the cache line of array[index] (llvm.prefetch: a hint, never a fault,
    no effect on any result; LLVM names the overload for the pointer type itself)."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        array_type, index_type = signature.args
        data = context.make_array(array_type)(context, builder, args[0]).data
        where = builder.gep(data, [context.cast(builder, args[1], index_type, types.intp)])
        byte_pointer, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer, i32, i32, i32]),
            "llvm.prefetch")
        # read, keep in every cache level, data
        builder.call(hint, [builder.bitcast(where, byte_pointer), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


if sys.platform == "win32":  # no pread: the coded lists' values come from the mapping

    @numba.njit(cache=True, nogil=True, inline="always")
    def _value(data, p, fd, base, one):
        """data[p]."""
        return data[p]

else:

    @intrinsic
    def _pread(typingctx, fd, buffer, nbytes, offset):
        """libc's pread(fd, buffer's data, nbytes, offset): the bytes read (-1 on an error). The
        symbol is resolved when the machine code loads, from the C library of the process (no
        ctypes object in the code: it stays in numba's cache)."""
        if not isinstance(buffer, types.Array) or not all(
                isinstance(a, types.Integer) for a in (fd, nbytes, offset)):
            return None

        def codegen(context, builder, signature, args):
            i32, i64, byte_pointer = ir.IntType(32), ir.IntType(64), ir.IntType(8).as_pointer()
            data = context.make_array(signature.args[1])(context, builder, args[1]).data
            pread = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(i64, [i32, byte_pointer, i64, i64]), "pread")
            handle, size, at = (context.cast(builder, args[i], signature.args[i], types.int64)
                                for i in (0, 2, 3))
            return builder.call(pread, [builder.trunc(handle, i32),
                                        builder.bitcast(data, byte_pointer), size, at])

        return types.int64(fd, buffer, nbytes, offset), codegen

    @numba.njit(cache=True, nogil=True, inline="always")
    def _value(data, p, fd, base, one):
        """data[p], read from the file (descriptor fd, data[0] at byte `base`) when fd >= 0, so
        that its page is not mapped into the process; from data where the read fails."""
        if fd >= 0 and _pread(fd, one, one.itemsize, base + p * one.itemsize) == one.itemsize:
            return one[0]
        return data[p]


@numba.njit(cache=True, nogil=True, inline="always")
def _seek(indices, lo, hi, target):
    """The first position in indices[lo:hi] holding target or more (galloping search)."""
    step = 1
    while lo + step < hi and indices[lo + step] < target:
        lo += step
        step *= 2
    top = min(lo + step, hi)
    while lo < top:
        mid = (lo + top) // 2
        if indices[mid] < target:
            lo = mid + 1
        else:
            top = mid
    return lo


@numba.njit(cache=True, nogil=True, inline="always")
def _push(heap, size, value):
    """Keep the `heap.size` largest values in a min-heap; returns the new size."""
    k = heap.size
    if size < k:
        i = size
        heap[i] = value
        while i > 0 and heap[(i - 1) // 2] > heap[i]:
            parent = (i - 1) // 2
            heap[i], heap[parent] = heap[parent], heap[i]
            i = parent
        return size + 1
    if value <= heap[0]:
        return size
    heap[0] = value
    i = 0
    while True:
        smallest, left, right = i, 2 * i + 1, 2 * i + 2
        if left < k and heap[left] < heap[smallest]:
            smallest = left
        if right < k and heap[right] < heap[smallest]:
            smallest = right
        if smallest == i:
            return size
        heap[i], heap[smallest] = heap[smallest], heap[i]
        i = smallest


@numba.njit(cache=True, nogil=True, inline="always")
def _log2(n):
    """log2 of a power of 2."""
    bits = 0
    while (1 << bits) < n:
        bits += 1
    return bits


@numba.njit(cache=True, nogil=True, inline="always")
def _open(mask, quads, j, shift):
    """Whether the 2**shift chunks from j << shift hold one the mask allows (mask empty: every
    chunk is allowed); read 4 at a time from `quads` (mask's bytes, 4 at a time) when they
    can be."""
    if mask.size == 0:
        return True
    lo = j << shift
    hi = min(lo + (1 << shift), mask.size)
    if shift >= 2 and hi - lo == 1 << shift and hi <= quads.size << 2:
        seen = np.uint32(0)
        for w in range(lo >> 2, hi >> 2):
            seen |= quads[w]
        return seen != 0
    for d in range(lo, hi):
        if mask[d]:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def _few_open(quads):
    """Whether under OPEN_SHARE of the parts (4 chunks, one of `quads`) hold an allowed chunk,
    on SAMPLE of them evenly spread: masking the bounds part by part is then worth its pass."""
    if quads.size == 0:
        return True
    step = max(1, quads.size // SAMPLE)
    seen = opened = 0
    for i in range(0, quads.size, step):
        seen += 1
        opened += quads[i] != 0
    return opened < OPEN_SHARE * seen


@numba.njit(cache=True, nogil=True)
def _open_parts(quads):
    """Per window of 8 parts of 4 chunks (one of `quads` each), a byte per part, 1 when the
    part holds an allowed chunk, read as one uint64 per window (the windows quads covers
    whole; byte q is part q: `_part_shift`)."""
    flags = np.empty(quads.size & ~7, dtype=np.uint8)
    for i in range(flags.size):  # (vector code)
        flags[i] = quads[i] != 0
    return flags.view(np.uint64)


@numba.njit(cache=True, nogil=True, inline="always")
def _part_shift(q):
    """Where part q's byte is in a window's uint64 of `_open_parts`."""
    return np.uint64(8 * q if LITTLE else 8 * (7 - q))


@numba.njit(cache=True, nogil=True, inline="always")
def _mask_parts(sums, mask, quads, parts, j0, part_shift):
    """The bounds of a tile's parts (sums[part, window in tile], windows from j0) set to 0
    where the part holds no allowed chunk: from `parts` (`_open_parts`, windows of 8 parts
    of 4 chunks) a row of sums at a time (vector code) for the windows it covers, from the
    mask for the others."""
    per, tile = sums.shape
    covered = 0
    if part_shift == 2 and per == 8:
        covered = max(0, min(tile, parts.size - j0))
        for q in range(per):
            row, at = sums[q], _part_shift(q)
            for w in range(covered):
                row[w] *= np.float32((parts[j0 + w] >> at) & np.uint64(1))
    for w in range(covered, tile):
        for q in range(per):
            if not _open(mask, quads, (j0 + w) * per + q, part_shift):
                sums[q, w] = 0.0


@numba.njit(cache=True, nogil=True, inline="always")
def _left_out(mask, doc):
    """True when the mask (empty: every chunk allowed) leaves chunk `doc` out: the caller
    moves its lists past it without scoring it."""
    return mask.size > 0 and not mask[doc]


@numba.njit(cache=True, nogil=True, inline="always")
def _scale(indices, data, lo, hi, factor):
    """The step of a list's codes: its largest value (times factor, if any) / 254."""
    top = 0.0
    for p in range(lo, hi):
        v = np.float64(data[p])
        if factor.size > 0:
            v *= factor[indices[p]]
        if v > top:
            top = v
    return top / 254.0 if top > 0 else 1.0


@numba.njit(cache=True, nogil=True)
def window_index(indices, data, lo, hi, factor, shift, maxima, rel, group, peaks, part_shift):
    """One long list's window table (rows of zeros on entry): maxima[j], its largest value
    (times factor, if any) in window j in steps of scale = maximum / 254 rounded up (0: no
    posting there); its first posting at or after window j is lo + group[j >> 2] + rel[j]
    (j <= number of windows); its peaks (shape (tiles, parts per window, windows per tile):
    see `_bounds`), the largest such code in each part of 2**part_shift chunks,
    peaks[w // tile, part of window w, w % tile]. Returns scale."""
    use_factor = factor.size > 0
    scale = _scale(indices, data, lo, hi, factor)
    tile_mask = peaks.shape[2] - 1  # (powers of 2)
    tile_shift = _log2(peaks.shape[2])
    part_mask = peaks.shape[1] - 1
    p = lo
    for j in range(rel.size):
        if j & 3 == 0:
            group[j >> 2] = p - lo
        rel[j] = p - lo - group[j >> 2]
        limit = (j + 1) << shift
        at_tile, at_window = j >> tile_shift, j & tile_mask
        while p < hi and indices[p] < limit:
            v = np.float64(data[p])
            if use_factor:
                v *= factor[indices[p]]
            q = np.uint8(min(np.ceil(v / scale), 255.0))
            if q > maxima[j]:
                maxima[j] = q
            part = (indices[p] >> part_shift) & part_mask
            if q > peaks[at_tile, part, at_window]:
                peaks[at_tile, part, at_window] = q
            p += 1
    return scale


@numba.njit(cache=True, nogil=True)
def dense_row(indices, data, lo, hi, factor, row):
    """One long list's per-chunk codes (row: zeros on entry, one byte per chunk): row[d] =
    its value at chunk d (times factor, if any) in steps of scale = maximum / 254 rounded
    up (the steps of its window table), 0 where it has no posting. Returns scale."""
    use_factor = factor.size > 0
    scale = _scale(indices, data, lo, hi, factor)
    for p in range(lo, hi):
        v = np.float64(data[p])
        if use_factor:
            v *= factor[indices[p]]
        row[indices[p]] = np.uint8(max(min(np.ceil(v / scale), 255.0), 1.0))
    return scale


@numba.njit(cache=True, nogil=True)
def _bounds(indptr, indices, data, cols, weights, factor, slots, scales, shift, ub, peaks,
            sums, mask, quads):
    """ub[j] = an upper bound of every chunk's score in window j. Without a long list in
    the query, the short lists' values added up per window. Else per part of the window:
    the long lists' peaks (see `window_index`) and the short lists' values added up, the
    window's best part going to ub[j]: a much tighter bound than the sum of the lists'
    window maxima (at 1M chunks, a tenth of the windows to walk). Peaks come in tiles of
    windows, part-major (peaks[row, tile, part, window in tile]), so that a tile's sums
    (the work array `sums`, float32, shape (parts per window, windows per tile)) stay in
    the first-level cache and the best part of each window is found a vector of windows at
    a time. With a mask (see the module docstring), the allowed chunks' bounds only."""
    ub[:] = 0.0
    use_factor = factor.size > 0
    use_mask = mask.size > 0
    mask_parts = use_mask and _few_open(quads)
    if not (slots >= 0).any():
        for t in range(cols.size):  # values added up per window (at least their maximum)
            w = weights[t]
            for p in range(indptr[cols[t]], indptr[cols[t] + 1]):
                if use_mask and not mask[indices[p]]:
                    continue
                v = data[p] * w
                if use_factor:
                    v *= factor[indices[p]]
                ub[indices[p] >> shift] += v
        return
    per, tile = sums.shape
    part_shift = shift - _log2(per)
    tile_shift = _log2(tile)
    parts = _open_parts(quads) if mask_parts else np.empty(0, dtype=np.uint64)
    pos = np.empty(cols.size, dtype=np.int64)  # each short list's next posting
    for t in range(cols.size):
        pos[t] = indptr[cols[t]]
    for t0 in range(peaks.shape[1]):
        first = True
        for t in range(cols.size):
            s = slots[t]
            if s >= 0:  # in the float32 steps of `_walk_dense`
                _add_peaks(sums, peaks[s, t0], np.float32(scales[s] * weights[t]), first)
                first = False
        limit = (t0 + 1) << tile_shift + shift
        for t in range(cols.size):
            if slots[t] >= 0:
                continue
            w = weights[t]
            p, end = pos[t], indptr[cols[t] + 1]
            while p < end and indices[p] < limit:
                doc = indices[p]
                v = data[p] * w
                if use_factor:
                    v *= factor[doc]
                sums[(doc >> part_shift) & per - 1, (doc >> shift) & tile - 1] += v
                p += 1
            pos[t] = p
        if mask_parts:
            _mask_parts(sums, mask, quads, parts, t0 * tile, part_shift)
        for q in range(1, per):
            _most(sums[0], sums[q])
        j0 = t0 * tile
        best = sums[0]
        for j in range(min(tile, ub.size - j0)):
            ub[j0 + j] = best[j]


@numba.njit(cache=True, nogil=True, inline="always")
def _add_peaks(sums, peaks, step, first):
    """sums (=, if first) += peaks * step, part by part (vector code)."""
    for q in range(sums.shape[0]):
        out, row = sums[q], peaks[q]
        if first:
            for j in range(out.size):
                out[j] = np.float32(row[j]) * step
        else:
            for j in range(out.size):
                out[j] += np.float32(row[j]) * step


@numba.njit(cache=True, nogil=True, inline="always", fastmath=True)
def _most(acc, other):
    """acc = max(acc, other), element by element (no NaN here: fastmath lets LLVM compare a
    vector at a time)."""
    for j in range(acc.size):
        acc[j] = max(acc[j], other[j])


@numba.njit(cache=True, nogil=True, inline="always")
def _visit(j, indices, data, weights, factor, slots, maxima, rel, group, shift, step, bounds,
           start, end, pos, window_bound, heap, state, theta, slack, found, scores, mask):
    """Walk window j (see the module docstring): state = [heap size, chunks found], theta =
    [k-th best so far]. The postings are read from `pos` onwards: windows come in id order
    (from `start` again for each pass)."""
    c_count = weights.size
    use_factor = factor.size > 0
    k = heap.size
    floor = theta[0] * (1 - slack)
    base = j << shift
    limit = base + (1 << shift)
    for i in range(c_count):
        s = slots[i]
        window_bound[i] = maxima[s, j] * step[i] if s >= 0 else bounds[i]
    # drivers: the terms outside the longest weak prefix whose window bounds stay below
    prefix = 0.0
    drv = 0
    while drv < c_count - 1 and (prefix + window_bound[drv]) * (1 + slack) < floor:
        prefix += window_bound[drv]
        drv += 1
    for i in range(drv, c_count):
        s = slots[i]
        if s >= 0:
            pos[i] = max(pos[i], start[i] + group[s, j >> 2] + rel[s, j])
        else:
            pos[i] = _seek(indices, pos[i], end[i], base)
    while True:
        doc = limit
        for i in range(drv, c_count):
            if pos[i] < end[i] and indices[pos[i]] < doc:
                doc = indices[pos[i]]
        if doc >= limit:
            break
        if _left_out(mask, doc):  # not allowed: the drivers move past it, unscored
            for i in range(drv, c_count):
                if pos[i] < end[i] and indices[pos[i]] == doc:
                    pos[i] += 1
            continue
        score = 0.0
        for i in range(drv, c_count):
            if pos[i] < end[i] and indices[pos[i]] == doc:
                score += data[pos[i]] * weights[i]
                pos[i] += 1
        rest = prefix
        f = factor[doc] if use_factor else 1.0
        for i in range(drv - 1, -1, -1):
            if (score * f + rest) * (1 + slack) < floor:
                score = -1.0
                break
            rest -= window_bound[i]
            if window_bound[i] <= 0:
                continue
            s = slots[i]
            if s >= 0:  # its postings in this window, from the table
                p = max(pos[i], start[i] + group[s, j >> 2] + rel[s, j])
            else:
                p = _seek(indices, pos[i], end[i], doc)
            while p < end[i] and indices[p] < doc:
                p += 1
            pos[i] = p
            if p < end[i] and indices[p] == doc:
                score += data[p] * weights[i]
        if score <= 0:
            continue
        score *= f
        if score >= floor:
            found[state[1]] = doc
            scores[state[1]] = score
            state[1] += 1
            state[0] = _push(heap, state[0], score)
            if state[0] == k and heap[0] > theta[0]:
                theta[0] = heap[0]
                floor = theta[0] * (1 - slack)


@numba.njit(cache=True, nogil=True, inline="always")
def _add_codes(acc, codes, step):
    """acc += codes * step, 32 chunks at once (a loop LLVM turns into vector code)."""
    for r in range(acc.size):
        acc[r] += np.float32(codes[r]) * step


@numba.njit(cache=True, nogil=True, inline="always", fastmath=True)
def _largest(acc):
    """The largest of acc (no NaN here: fastmath lets LLVM compare a vector at a time)."""
    top = acc[0]
    for r in range(1, acc.size):
        top = max(top, acc[r])
    return top


@numba.njit(cache=True, nogil=True, inline="always")
def _visit_dense(j, indices, data, weights, factor, slots, rel, group, shift, dslots, dense,
                 dsteps, error, start, end, pos, acc, kept, heap, state, theta, slack, found,
                 scores, mask):
    """Walk window j with a bound per chunk: the terms with codes per chunk (`dense_row`)
    add code * step for the window's 32 chunks at once, the others add their values there.
    No posting of a coded list is read: a chunk whose bound reaches theta is kept with that
    bound, and its bound minus the codes' rounding (`error`) goes to the heap of k-th
    best lower bounds; `exact_top` scores the kept ones."""
    c_count = weights.size
    use_factor = factor.size > 0
    k = heap.size
    floor = theta[0] * (1 - slack)
    base = j << shift
    limit = base + acc.size
    acc[:] = 0.0
    for i in range(c_count):
        d = dslots[i]
        if d >= 0:
            _add_codes(acc, dense[d, base:limit], dsteps[i])
            continue
        s = slots[i]
        if s >= 0:
            p = start[i] + group[s, j >> 2] + rel[s, j]
        else:
            p = _seek(indices, pos[i], end[i], base)
            pos[i] = p
        while p < end[i] and indices[p] < limit:
            v = data[p] * weights[i]
            if use_factor:
                v *= factor[indices[p]]
            acc[indices[p] - base] += v
            p += 1
    if mask.size > 0:  # the chunks not allowed: no bound, never kept
        for r in range(min(acc.size, mask.size - base)):
            if not mask[base + r]:
                acc[r] = 0.0
    if _largest(acc) * (1 + slack) < floor:
        return
    n = 0
    for r in range(acc.size):  # the chunks that may reach it, without a branch per chunk
        kept[n] = r
        n += (acc[r] * (1 + slack) >= floor) & (acc[r] > 0)
    for i in range(n):
        r = kept[i]
        high = acc[r] * (1 + slack)
        if high < floor:  # theta has risen since
            continue
        found[state[1]] = base + r
        scores[state[1]] = high
        state[1] += 1
        state[0] = _push(heap, state[0], (acc[r] - error) * (1 - slack))
        if state[0] == k and heap[0] > theta[0]:
            theta[0] = heap[0]
            floor = theta[0] * (1 - slack)


@numba.njit(cache=True, nogil=True, inline="always")
def _ask(j, indices, data, slots, rel, group, start, shift, dslots, dense):
    """Prefetch the first two cache lines of each long list's postings in window j, or its
    codes there (the walk's reads jump from window to window, beyond what the CPU guesses
    by itself)."""
    for i in range(slots.size):
        s = slots[i]
        if dslots[i] >= 0:
            _prefetch(dense, dslots[i] * dense.shape[1] + (j << shift))
        elif s >= 0:
            p = start[i] + group[s, j >> 2] + rel[s, j]
            _prefetch(indices, p)
            _prefetch(data, p)
            _prefetch(indices, p + 16)
            _prefetch(data, p + 16)


@numba.njit(cache=True, nogil=True)
def candidates(indptr, indices, data, cols, weights, factor, k, slots, maxima, rel, group,
               scales, shift, ub, found, scores, dslots, dense, dscales, peaks, sums, known,
               mask, quads):
    """Sorted chunk ids that may be in the top k of factor[d] * sum_t weights[t] * column
    cols[t] (factor empty: 1). slots[t]: the row of column cols[t] in the window tables
    (maxima, rel, group, scales: see `window_index`), -1 for none (a short list); ub: work
    vector of one value per window; found, scores: work vectors of one id and one float per
    chunk; dslots[t]: the row of column cols[t] in `dense` (codes per chunk, see
    `dense_row`, with scale dscales[row]), -1 for none; peaks: the tables' peaks (see
    `window_index`); sums: a tile's work array (`_bounds`); known: each column's largest
    value as stored (empty: computed here, as with a factor); mask, quads: the allowed chunks
    (see the module docstring; empty: all)."""
    c_count = cols.size
    use_factor = factor.size > 0
    slack = SLACK + 2.4e-7 * c_count  # float32 sums of m terms in another order
    _bounds(indptr, indices, data, cols, weights, factor, slots, scales, shift, ub, peaks, sums,
            mask, quads)
    # each term's bound (the largest weighted value); terms sorted weakest first
    bounds = np.empty(c_count)
    for t in range(c_count):
        if slots[t] >= 0:
            bounds[t] = scales[slots[t]] * 255.0 * weights[t]
        elif known.size > 0:  # (a short list at 1M chunks: up to 31,250 postings to read)
            bounds[t] = np.float64(known[cols[t]]) * weights[t]
        else:
            top = 0.0
            for p in range(indptr[cols[t]], indptr[cols[t] + 1]):
                v = np.float64(data[p])
                if use_factor:
                    v *= factor[indices[p]]
                top = max(top, v)
            bounds[t] = top * weights[t]
    order = np.argsort(bounds, kind="mergesort")
    cols, weights, slots, bounds = cols[order], weights[order], slots[order], bounds[order]
    dslots = dslots[order]
    start = np.empty(c_count, dtype=np.int64)
    end = np.empty(c_count, dtype=np.int64)
    for i in range(c_count):
        start[i], end[i] = indptr[cols[i]], indptr[cols[i] + 1]
    heap = np.empty(k)
    state = np.zeros(2, dtype=np.int64)  # heap size, chunks kept
    theta = np.zeros(1)  # the k-th best score (lower bound) so far
    # first the windows of highest bound, in id order (each list read forwards)
    n_seeds = min(SEEDS, ub.size)
    best = np.full(n_seeds, -1.0)
    seeds = np.full(n_seeds, -1, dtype=np.int64)
    low, at = -1.0, 0
    for j in range(ub.size):
        if ub[j] > low and _open(mask, quads, j, shift):
            best[at], seeds[at] = ub[j], j
            at = np.argmin(best)
            low = best[at]
    seeds.sort()
    if (dslots >= 0).any():
        _walk_dense(indices, data, weights, factor, slots, rel, group, scales, shift, ub,
                    dslots, dense, dscales, start, end, seeds, heap, state, theta, slack,
                    found, scores, mask, quads)
    else:
        _walk_tables(indices, data, weights, factor, slots, maxima, rel, group, scales, shift,
                     ub, bounds, start, end, seeds, heap, state, theta, slack, found, scores,
                     mask, quads)
    return found[:_compact(found, scores, state[1], theta[0] * (1 - slack))].copy()


@numba.njit(cache=True, nogil=True, inline="always")
def _to_walk(ub, floor, slack, mask, quads, shift):
    """The windows whose bound may still reach `floor` (theta * (1 - slack), after the seeds)
    and that hold an allowed chunk, in id order, and how many: one pass without a branch per
    window (the walk's pass over every bound mispredicted a branch at each of the few hundred
    windows kept)."""
    to_walk = np.empty(ub.size + 1, dtype=np.int64)
    n = 0
    for j in range(ub.size):
        to_walk[n] = j
        n += (ub[j] > 0) & (ub[j] * (1 + slack) >= floor)
    if mask.size > 0:
        kept = 0
        for i in range(n):
            if _open(mask, quads, to_walk[i], shift):
                to_walk[kept] = to_walk[i]
                kept += 1
        n = kept
    return to_walk, n


@numba.njit(cache=True, nogil=True)
def _walk_tables(indices, data, weights, factor, slots, maxima, rel, group, scales, shift, ub,
                 bounds, start, end, seeds, heap, state, theta, slack, found, scores, mask,
                 quads):
    """The walk through postings (`_visit`): the seeds, then the other windows."""
    c_count = weights.size
    step = np.empty(c_count)
    for t in range(c_count):
        step[t] = scales[slots[t]] * weights[t] if slots[t] >= 0 else 0.0
    no_codes = np.full(c_count, -1, dtype=np.int64)
    no_rows = np.zeros((0, 0), dtype=np.uint8)
    pos = start.copy()
    window_bound = np.empty(c_count)  # the terms' bounds in the current window
    for j in seeds:
        if j >= 0:
            _ask(j, indices, data, slots, rel, group, start, shift, no_codes, no_rows)
    for j in seeds:
        if j >= 0 and ub[j] > 0 and ub[j] * (1 + slack) >= theta[0] * (1 - slack):
            _visit(j, indices, data, weights, factor, slots, maxima, rel, group, shift, step,
                   bounds, start, end, pos, window_bound, heap, state, theta, slack, found,
                   scores, mask)
        if j >= 0:
            ub[j] = -1.0  # done
    pos[:] = start
    # then every other window that may still hold one, in id order; the next LEAD of them
    # are found (and their postings asked for) ahead of the walk
    to_walk, n = _to_walk(ub, theta[0] * (1 - slack), slack, mask, quads, shift)
    lead = np.empty(LEAD, dtype=np.int64)
    head, queued, scan = 0, 0, 0
    while True:
        while queued < LEAD and scan < n:
            j = to_walk[scan]
            if ub[j] * (1 + slack) >= theta[0] * (1 - slack):
                _ask(j, indices, data, slots, rel, group, start, shift, no_codes, no_rows)
                lead[(head + queued) & (LEAD - 1)] = j
                queued += 1
            scan += 1
        if queued == 0:
            return
        j = lead[head]
        head = (head + 1) & (LEAD - 1)
        queued -= 1
        if ub[j] * (1 + slack) < theta[0] * (1 - slack):  # theta has risen since
            continue
        _visit(j, indices, data, weights, factor, slots, maxima, rel, group, shift, step,
               bounds, start, end, pos, window_bound, heap, state, theta, slack, found, scores,
               mask)


@numba.njit(cache=True, nogil=True)
def _walk_dense(indices, data, weights, factor, slots, rel, group, scales, shift, ub, dslots,
                dense, dscales, start, end, seeds, heap, state, theta, slack, found, scores,
                mask, quads):
    """The walk with codes per chunk (`_visit_dense`): the seeds, then the other windows."""
    c_count = weights.size
    dsteps = np.zeros(c_count, dtype=np.float32)
    error = 0.0  # the most the codes can add to a chunk's score
    for t in range(c_count):
        if dslots[t] >= 0:
            dsteps[t] = dscales[dslots[t]] * weights[t]
            error += dsteps[t]
    acc = np.empty(1 << shift, dtype=np.float32)
    kept = np.empty(1 << shift, dtype=np.int64)
    pos = start.copy()
    for j in seeds:
        if j >= 0:
            _ask(j, indices, data, slots, rel, group, start, shift, dslots, dense)
    for j in seeds:
        if j >= 0 and ub[j] > 0 and ub[j] * (1 + slack) >= theta[0] * (1 - slack):
            _visit_dense(j, indices, data, weights, factor, slots, rel, group, shift, dslots,
                         dense, dsteps, error, start, end, pos, acc, kept, heap, state, theta, slack,
                         found, scores, mask)
        if j >= 0:
            ub[j] = -1.0  # done
    pos[:] = start
    # as in _walk_tables (a shared helper returning the next window made the walk 30 %
    # slower: numba kept its queue in memory)
    to_walk, n = _to_walk(ub, theta[0] * (1 - slack), slack, mask, quads, shift)
    lead = np.empty(LEAD, dtype=np.int64)
    head, queued, scan = 0, 0, 0
    while True:
        while queued < LEAD and scan < n:
            j = to_walk[scan]
            if ub[j] * (1 + slack) >= theta[0] * (1 - slack):
                _ask(j, indices, data, slots, rel, group, start, shift, dslots, dense)
                lead[(head + queued) & (LEAD - 1)] = j
                queued += 1
            scan += 1
        if queued == 0:
            return
        j = lead[head]
        head = (head + 1) & (LEAD - 1)
        queued -= 1
        if ub[j] * (1 + slack) < theta[0] * (1 - slack):
            continue
        _visit_dense(j, indices, data, weights, factor, slots, rel, group, shift, dslots, dense,
                     dsteps, error, start, end, pos, acc, kept, heap, state, theta, slack, found,
                     scores, mask)


@numba.njit(cache=True, nogil=True)
def daat_candidates(indptr, indices, data, cols, weights, bounds, factor, k, found, scores,
                    mask):
    """Plain document-at-a-time MaxScore (no tables), for postings made for one query:
    chunk ids that may be in the top k, sorted. cols/weights/bounds: the query's terms,
    weakest bound first; factor: per-chunk factor (empty: 1); found, scores: work vectors
    of n values (ids and floats); mask: the allowed chunks (empty: all). The walk: chunks in
    id order through the terms outside the longest weak prefix whose bounds add up to less
    than theta, each completed with the weak terms by galloping search and abandoned when
    what is left cannot lift it to theta."""
    c_count = cols.size
    use_factor = factor.size > 0
    below = np.zeros(c_count)  # below[i]: bounds of terms 0..i
    total = 0.0
    for i in range(c_count):
        total += bounds[i]
        below[i] = total
    pos = np.empty(c_count, dtype=np.int64)
    end = np.empty(c_count, dtype=np.int64)
    for i in range(c_count):
        pos[i], end[i] = indptr[cols[i]], indptr[cols[i] + 1]
    heap = np.empty(k)
    heap_size = 0
    n_found = 0
    seed = _daat_seed(indptr, indices, data, cols, weights, factor, k, mask)
    theta = seed
    first = 0  # terms first.. are essential
    while True:
        floor = theta * (1 - SLACK)
        while first < c_count - 1 and theta > 0 and below[first] * (1 + SLACK) < floor:
            first += 1
        doc = -1
        for i in range(first, c_count):
            if pos[i] < end[i] and (doc < 0 or indices[pos[i]] < doc):
                doc = indices[pos[i]]
        if doc < 0:
            break
        if _left_out(mask, doc):
            for i in range(first, c_count):
                if pos[i] < end[i] and indices[pos[i]] == doc:
                    pos[i] += 1
            continue
        score = 0.0
        for i in range(first, c_count):
            if pos[i] < end[i] and indices[pos[i]] == doc:
                score += data[pos[i]] * weights[i]
                pos[i] += 1
        f = factor[doc] if use_factor else 1.0
        for i in range(first - 1, -1, -1):
            if (score * f + below[i] * (1 + SLACK)) < floor:
                score = -1.0
                break
            pos[i] = _seek(indices, pos[i], end[i], doc)
            if pos[i] < end[i] and indices[pos[i]] == doc:
                score += data[pos[i]] * weights[i]
        if score <= 0:
            continue
        score *= f
        if score >= floor:
            found[n_found] = doc
            scores[n_found] = score
            n_found += 1
            heap_size = _push(heap, heap_size, score)
            if heap_size == k:
                theta = max(heap[0], seed)
    floor = theta * (1 - SLACK)
    return found[:_compact(found, scores, n_found, floor)].copy()


@numba.njit(cache=True, nogil=True)
def _daat_seed(indptr, indices, data, cols, weights, factor, k, mask):
    """A score the k-th best cannot be below: the k-th best full score of the PROBE chunks
    (allowed by the mask) where the strongest term weighs most (0 when it has fewer)."""
    last = cols.size - 1
    lo, hi = indptr[cols[last]], indptr[cols[last] + 1]
    probe = max(PROBE, k)
    if hi - lo < probe:
        return 0.0
    best = np.full(probe, -1.0)
    docs = np.empty(probe, dtype=np.int64)
    low, at = -1.0, 0
    for p in range(lo, hi):
        if _left_out(mask, indices[p]):
            continue
        v = data[p] * factor[indices[p]] if factor.size > 0 else data[p]
        if v > low:
            best[at], docs[at] = v, indices[p]
            at = np.argmin(best)
            low = best[at]
    if low < 0:  # fewer than PROBE allowed chunks in the list
        return 0.0
    for i in range(probe):
        doc, score = docs[i], 0.0
        for j in range(cols.size):
            a, b = indptr[cols[j]], indptr[cols[j] + 1]
            q = a + np.searchsorted(indices[a:b], doc)
            if q < b and indices[q] == doc:
                score += data[q] * weights[j]
        best[i] = score * factor[doc] if factor.size > 0 else score
    return np.sort(best)[probe - k]


@numba.njit(cache=True, nogil=True)
def exact_sums(indptr, indices, data, cols, weights, ids, out):
    """out[i] += sum_j weights[j] * column cols[j] at ids[i], columns in the given order,
    each product and sum in out's dtype: the numbers of lexical.py's numpy `lookup`."""
    for j in range(cols.size):
        a, b = indptr[cols[j]], indptr[cols[j] + 1]
        if a == b:
            continue
        column = indices[a:b]
        pos = np.searchsorted(column, ids)
        for i in range(ids.size):
            if pos[i] < b - a and column[pos[i]] == ids[i]:
                out[i] += data[a + pos[i]] * weights[j]
    return out


@numba.njit(cache=True, nogil=True)
def exact_top(indptr, indices, data, cols, weights, ids, k, norms, qnorm, out):
    """The k best of the sorted `ids` by their exact score, best first, equal scores in id
    order: out (zeros of the accumulator's dtype) gets `exact_sums` in column order; the score
    is that as float64, divided by norms[id] * qnorm when norms are given (TF-IDF's cosine)."""
    exact_sums(indptr, indices, data, cols, weights, ids, out)
    return _best(ids, out, k, norms, qnorm)


@numba.njit(cache=True, nogil=True)
def _best(ids, out, k, norms, qnorm):
    """The k best ids by out (divided by norms[id] * qnorm when norms are given), best
    first, equal scores in id order; with their float64 scores."""
    score = np.empty(ids.size)
    for i in range(ids.size):
        score[i] = np.float64(out[i])
        if norms.size > 0:
            score[i] = score[i] / (norms[ids[i]] * qnorm)
    order = np.argsort(-score, kind="mergesort")[:k]
    return ids[order], score[order]


@numba.njit(cache=True, nogil=True)
def top(indptr, indices, data, cols, weights, exact_weights, factor, k, slots, maxima, rel,
        group, scales, shift, ub, found, scores, dslots, dense, dscales, peaks, sums, known,
        norms, qnorm, mask, quads, fd, base):
    """`candidates` then `exact_top` in one call: the exact top k (ids, float64 scores); the
    exact sums are in exact_weights' dtype. With fd >= 0 (a descriptor of data's file, its
    first value at byte `base`), the coded lists' values are read from the file (`_value`):
    the walk never reads their postings, and the few an exact score needs would otherwise
    map a page each (at 1M chunks, 80–115 MB of them over 3,000 questions)."""
    ids = candidates(indptr, indices, data, cols, weights, factor, k, slots, maxima, rel,
                     group, scales, shift, ub, found, scores, dslots, dense, dscales, peaks,
                     sums, known, mask, quads)
    ids.sort()
    out = np.zeros(ids.size, dtype=exact_weights.dtype)
    one = np.empty(1, dtype=data.dtype)
    for j in range(cols.size):  # `exact_sums`, each posting found through the tables
        a, b = indptr[cols[j]], indptr[cols[j] + 1]
        s, d = slots[j], dslots[j]
        p = a
        for i in range(ids.size):
            doc = ids[i]
            w = doc >> shift
            if d >= 0 and s >= 0:  # its place: the window's first, plus the codes before it
                if dense[d, doc] != 0:
                    p = a + group[s, w >> 2] + rel[s, w]
                    for c in range(w << shift, doc):
                        p += dense[d, c] != 0
                    out[i] += _value(data, p, fd, base, one) * exact_weights[j]
                continue
            if s >= 0:  # from where its window starts
                p = max(p, a + group[s, w >> 2] + rel[s, w])
            else:
                p = _seek(indices, p, b, doc)
            while p < b and indices[p] < doc:
                p += 1
            if p < b and indices[p] == doc:
                out[i] += data[p] * exact_weights[j]
    return _best(ids, out, k, norms, qnorm)


@numba.njit(cache=True, nogil=True)
def _compact(found, scores, n, floor):
    """Drop the kept chunks whose score fell below floor; returns how many are left."""
    kept = 0
    for i in range(n):
        if scores[i] >= floor:
            found[kept] = found[i]
            scores[kept] = scores[i]
            kept += 1
    return kept
