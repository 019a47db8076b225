"""Word windows and java-term counts of a batch of documents in a few compiled passes (numba,
the `fast` extra); index/text/tokens.py prepares the input and checks when it may be used.

The batch is the documents' UTF-8 bytes joined by "\n" (plus 8 zero bytes of padding). A
document's words are Java's (`text.trim().split("\\s+")`: trim every char <= U+0020 at both
ends, split at the six ASCII whitespace chars): single bytes that are never part of a
multi-byte sequence, so words are found on the bytes without decoding them. Each distinct
word is decoded once (as strictly as Python's decoder) and split into java terms: runs of
codes flagged TERM, lowercased through the `lower` table. Words and terms get ids from
open-addressing hash tables whose hits are checked in full (a word of up to 16 bytes is its
own key: its first and last 8 bytes), so two different words or terms never share an id.
Positions are counted in characters (continuation bytes subtracted), as Python indexes text.
"""

from __future__ import annotations

import numba
import numpy as np

from .codetables import STOP, TERM

INVALID = 8  # status: bytes that are not UTF-8
_EMPTY = -1
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


FIRST_SLOTS = 4096  # a hash table's slots at first (a power of two; doubled as it fills)
_GROUP = 32  # terms whose look-ups merge_terms starts together
_SHORT_RUN = 16  # term_order sorts runs up to this long by insertion


@numba.njit(cache=True, nogil=True)
def room(n):
    """Slots enough for a table of up to n entries (kept at most half full): tables are made
    this large at once, used FIRST_SLOTS at a time and grown in place (`_rehash`), so that no
    array is replaced inside a loop (numba would count references to it at every turn)."""
    size = FIRST_SLOTS
    while size < 4 * n:
        size *= 2
    return size


@numba.njit(cache=True, nogil=True)
def _rehash(slots, size, hashes, n):
    """The table's first `size` slots (a power of two) holding entries 0..n-1 again."""
    slots[:size] = _EMPTY
    mask = size - 1
    for t in range(n):
        s = np.int64(hashes[t] & np.uint64(mask))
        while slots[s] != _EMPTY:
            s = (s + 1) & mask
        slots[s] = t


@numba.njit(cache=True, nogil=True)
def _decode(buf, a, b, out):
    """The code points of the UTF-8 bytes buf[a:b] into `out`: their number, or -1 if the
    bytes are not valid UTF-8 (no overlong form, surrogate, code point above U+10FFFF or cut
    sequence, as Python's decoder)."""
    i = a
    n = 0
    while i < b:
        b0 = np.uint32(buf[i])
        if b0 < 0x80:
            out[n] = b0
            i += 1
        else:
            if 0xC2 <= b0 <= 0xDF:
                width, lo, hi, cp = 2, 0x80, 0xBF, b0 & 0x1F
            elif 0xE0 <= b0 <= 0xEF:
                width, cp = 3, b0 & 0x0F
                lo = 0xA0 if b0 == 0xE0 else 0x80
                hi = 0x9F if b0 == 0xED else 0xBF
            elif 0xF0 <= b0 <= 0xF4:
                width, cp = 4, b0 & 0x07
                lo = 0x90 if b0 == 0xF0 else 0x80
                hi = 0x8F if b0 == 0xF4 else 0xBF
            else:
                return -1
            if i + width > b:
                return -1
            for j in range(1, width):
                x = np.uint32(buf[i + j])
                if not ((lo <= x <= hi) if j == 1 else (0x80 <= x <= 0xBF)):
                    return -1
                cp = (cp << 6) | (x & 0x3F)
            out[n] = cp
            i += width
        n += 1
    return n


@numba.njit(cache=True, nogil=True)
def word_edges(buf, n):
    """Start and end byte of every run of non-whitespace bytes in buf[:n] (Java's \\s: space,
    \\t, \\n, \\v, \\f, \\r), alternating; branch-free."""
    edges = np.empty(n + 1, dtype=np.int64)
    k = 0
    before = 1
    for j in range(n):
        x = buf[j]
        space = np.int64((x == 32) | ((x >= 9) & (x <= 13)))
        edges[k] = j
        k += space != before
        before = space
    edges[k] = n
    k += 1 - before
    return edges[:k]


@numba.njit(cache=True, nogil=True)
def _same_bytes(buf, a, b, n):
    for q in range(n):
        if buf[a + q] != buf[b + q]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _separator(c):
    """A code of analyzers.NUMBER_SEPARATORS: . , - /"""
    return (c == 46) | (c == 44) | (c == 45) | (c == 47)


@numba.njit(cache=True, nogil=True)
def _digit_run(codes, a, b):
    for k in range(a, b):
        if codes[k] < 48 or codes[k] > 57:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _groups(codes, n, flags, runs, spans):
    """analyzers.number_groups of the word codes[:n]: its spans (start, end) one after the
    other in `spans`, their number returned (`runs`: room for the word's runs)."""
    found = False
    for k in range(1, n - 1):
        if _separator(codes[k]) and _digit_run(codes, k - 1, k) and _digit_run(codes, k + 1,
                                                                                  k + 2):
            found = True
            break
    if not found:
        return 0
    m = 0
    k = 0
    while k < n:
        if flags[codes[k]] & TERM:
            runs[2 * m] = k
            while k < n and flags[codes[k]] & TERM:
                k += 1
            runs[2 * m + 1] = k
            m += 1
        else:
            k += 1
    s = 0
    i = 0
    while i < m:
        j = i
        first = runs[2 * i + 1]  # where the digits that end run i start
        while first > runs[2 * i] and _digit_run(codes, first - 1, first):
            first -= 1
        if first < runs[2 * i + 1]:
            while _joined(codes, runs, m, j) and _digit_run(codes, runs[2 * j + 2],
                                                          runs[2 * j + 3]):
                j += 1
            if _joined(codes, runs, m, j):  # the digits that begin the next run end it
                last = runs[2 * j + 2]
                while last < runs[2 * j + 3] and _digit_run(codes, last, last + 1):
                    last += 1
                if last > runs[2 * j + 2]:
                    j += 1
                    runs[2 * j + 1] = last  # runs i..j are the group's from here on
            if j > i:
                runs[2 * i] = first
                s = _kept_groups(codes, runs, i, j, spans, s)
        i = j + 1
    return s


@numba.njit(cache=True, nogil=True)
def _joined(codes, runs, m, j):
    """Run j is followed by a run after one separator."""
    return (j + 1 < m and runs[2 * j + 2] == runs[2 * j + 1] + 1
            and _separator(codes[runs[2 * j + 1]]))


@numba.njit(cache=True, nogil=True)
def _kept_groups(codes, runs, i, j, spans, s):
    """analyzers._kept_groups of the runs i..j: their spans written from spans[2 * s]; the
    spans written then."""
    digits = 0
    dash = False
    cuts = 0
    cut = 0
    for r in range(i, j + 1):
        digits += runs[2 * r + 1] - runs[2 * r]
        if r < j and (codes[runs[2 * r + 1]] == 45 or codes[runs[2 * r + 1]] == 47):
            dash = True
            cuts += 1
            cut = r
    whole = not dash
    if dash:
        size0 = runs[2 * i + 1] - runs[2 * i]
        size1 = runs[2 * i + 3] - runs[2 * i + 2]
        sep0 = codes[runs[2 * i + 1]]
        date = False
        if j - i == 2:
            size2 = runs[2 * i + 5] - runs[2 * i + 4]
            date = sep0 == codes[runs[2 * i + 3]] and (sep0 == 45 or sep0 == 47) and (
                (size0 <= 2 and size1 <= 2 and size2 == 4)
                or (size0 == 4 and size1 <= 2 and size2 <= 2))
        years = j - i == 1 and size0 == 4 and size1 == 4
        numbers = cuts == 1 and i < cut and cut + 1 < j  # "1.000-2.000": two numbers
        whole = digits >= 8 and not date and not years and not numbers
    if whole:
        spans[2 * s], spans[2 * s + 1] = runs[2 * i], runs[2 * j + 1]
        return s + 1
    first = i
    for k in range(i, j + 1):
        if k == j or codes[runs[2 * k + 1]] == 45 or codes[runs[2 * k + 1]] == 47:
            if k > first:
                spans[2 * s], spans[2 * s + 1] = runs[2 * first], runs[2 * k + 1]
                s += 1
            first = k + 1
    return s


@numba.njit(cache=True, nogil=True)
def _distinct_terms(buf, d_at, d_len, n_distinct, d_terms, word_terms, d_chars, scratch,
                    lower, flags, pool, t_at, t_hash, t_slots):
    """Decode each distinct word w (buf[d_at[w]:d_at[w] + d_len[w]], in the order they first
    occur), count its characters, look its java terms up (new ones join the pool) and list
    them in word_terms[d_terms[w]:d_terms[w + 1]]. Returns the number of distinct terms, or
    -status for the first word that cannot be done here. One call for every word: a call
    per word made numba count references to each array it was given."""
    t_slots[:FIRST_SLOTS] = _EMPTY
    t_size = FIRST_SLOTS
    n_terms = 0
    d_terms[0] = 0
    q = 0
    runs = np.empty(scratch.size + 2, dtype=np.int64)
    spans = np.empty(scratch.size + 2, dtype=np.int64)
    for w in range(n_distinct):
        n = _decode(buf, d_at[w], d_at[w] + d_len[w], scratch)
        if n < 0:
            return -INVALID
        d_chars[w] = n
        groups = _groups(scratch, n, flags, runs, spans)  # their codes are lowercase
        k = 0
        g = 0
        while k < n or g < groups:
            if k >= n:  # then the word's number groups whole, as counting.piece_terms
                start, end = spans[2 * g], spans[2 * g + 1]
                h = _FNV_OFFSET
                for z in range(start, end):
                    h = (h ^ np.uint64(scratch[z])) * _FNV_PRIME
                length = end - start
                g += 1
            else:
                f = flags[scratch[k]]
                if not f & TERM:
                    if f & STOP:
                        return -(f & STOP)
                    k += 1
                    continue
                start = k
                h = _FNV_OFFSET
                while k < n and flags[scratch[k]] & TERM:
                    low = lower[scratch[k]]
                    scratch[k] = low
                    h = (h ^ np.uint64(low)) * _FNV_PRIME
                    k += 1
                length = k - start
            mask = t_size - 1
            s = np.int64(h & np.uint64(mask))
            while True:
                t = t_slots[s]
                if t == _EMPTY:
                    t = n_terms
                    p = t_at[t]
                    for z in range(length):
                        pool[p + z] = scratch[start + z]
                    t_at[t + 1] = p + length
                    t_hash[t] = h
                    n_terms += 1
                    t_slots[s] = t
                    if 2 * n_terms > t_size:
                        t_size *= 2
                        _rehash(t_slots, t_size, t_hash, n_terms)
                    break
                if t_hash[t] == h and t_at[t + 1] - t_at[t] == length:
                    p = t_at[t]
                    same = True
                    for z in range(length):
                        if pool[p + z] != scratch[start + z]:
                            same = False
                            break
                    if same:
                        break
                s = (s + 1) & mask
            word_terms[q] = t
            q += 1
        d_terms[w + 1] = q
    return n_terms


@numba.njit(cache=True, nogil=True)
def terms_of(buf, win, byte_start, byte_end, lower, flags):
    """Words and term occurrences of each document (document d is buf[byte_start[d]:
    byte_end[d]]; `win[j]` = the 8 bytes from j, little-endian). Returns (status, words per
    document, each document's first character, word starts and ends in characters, per word
    its first occurrence (words + 1 values), the term id of each occurrence, the lowercase
    codes of every term one after the other, and where each term starts among them (terms + 1
    values)); status != 0: the STOP flags of a code that was met, or INVALID."""
    n_docs = byte_start.size
    edges = word_edges(buf, byte_end[n_docs - 1] if n_docs else 0)
    cap = edges.size // 2 + 2
    words = np.zeros(n_docs, dtype=np.int64)
    doc_char = np.empty(n_docs, dtype=np.int64)
    w_start = np.empty(cap, dtype=np.int64)
    w_end = np.empty(cap, dtype=np.int64)
    w_of = np.empty(cap, dtype=np.int32)  # each word's distinct word
    w_occ = np.empty(cap + 1, dtype=np.int64)
    # up to one java term per 2 bytes and one number group per 4 (a group is 3 bytes or more)
    occ = np.empty(buf.size + 2, dtype=np.int32)
    d_key = np.empty(cap, dtype=np.uint64)  # distinct words: first and last 8 bytes, ...
    d_tail = np.empty(cap, dtype=np.uint64)
    d_len = np.empty(cap, dtype=np.int64)  # ... length, where they first occur, hash,
    d_at = np.empty(cap, dtype=np.int64)  # ... characters
    d_hash = np.empty(cap, dtype=np.uint64)
    d_chars = np.empty(cap, dtype=np.int64)
    d_terms = np.empty(cap + 1, dtype=np.int64)  # ... and terms (word_terms[d_terms[w]:])
    word_terms = np.empty(buf.size + 2, dtype=np.int32)
    w_slots = np.empty(room(cap), dtype=np.int32)
    w_slots[:FIRST_SLOTS] = _EMPTY
    w_size = FIRST_SLOTS
    pool = np.empty(2 * buf.size, dtype=np.uint32)  # distinct terms (number groups: twice)
    t_at = np.empty(buf.size + 3, dtype=np.int64)
    t_at[0] = 0
    t_hash = np.empty(buf.size + 2, dtype=np.uint64)
    t_slots = np.empty(room(t_hash.size), dtype=np.int32)
    scratch = np.empty(buf.size + 1, dtype=np.uint32)
    n_words = n_distinct = 0
    e = 0
    for d in range(n_docs):  # each word's distinct word, its place still in bytes
        lo, hi = byte_start[d], byte_end[d]
        while lo < hi and buf[lo] <= 32:  # Java's trim(): ASCII, no continuation byte
            lo += 1
        while hi > lo and buf[hi - 1] <= 32:
            hi -= 1
        first_word = n_words
        while e < edges.size and edges[e] < byte_end[d]:
            a, b = max(edges[e], lo), min(edges[e + 1], hi)
            e += 2
            if a >= b:
                continue
            length = b - a
            key = win[a]  # the first 8 bytes, and (longer words) the last 8: up to 16
            tail = np.uint64(0)  # bytes, the word itself
            if length < 8:
                key &= (np.uint64(1) << np.uint64(8 * length)) - np.uint64(1)
            elif length > 8:
                tail = win[b - 8]
            h = (key ^ np.uint64(length)) * _GOLDEN + tail
            h = (h ^ (h >> np.uint64(29))) * _GOLDEN
            h ^= h >> np.uint64(32)
            mask = w_size - 1
            s = np.int64(h & np.uint64(mask))
            while True:
                w = w_slots[s]
                if w == _EMPTY:
                    w = n_distinct
                    d_key[w], d_tail[w], d_len[w], d_at[w], d_hash[w] = key, tail, length, a, h
                    n_distinct += 1
                    w_slots[s] = w
                    if 2 * n_distinct > w_size:
                        w_size *= 2
                        _rehash(w_slots, w_size, d_hash, n_distinct)
                    break
                if d_key[w] == key and d_tail[w] == tail and d_len[w] == length and (
                        length <= 16 or _same_bytes(buf, d_at[w], a, length)):
                    break
                s = (s + 1) & mask
            w_of[n_words], w_start[n_words], w_end[n_words] = w, a, b
            n_words += 1
        words[d] = n_words - first_word
    n_terms = _distinct_terms(buf, d_at, d_len, n_distinct, d_terms, word_terms, d_chars,
                              scratch, lower, flags, pool, t_at, t_hash, t_slots)
    if n_terms < 0:
        return (-n_terms, words, doc_char, w_start[:0], w_end[:0], w_occ[:0], occ[:0],
                pool[:0], t_at[:1])
    cont = 0  # continuation bytes before the current word: char index = byte index - cont
    n_occ = i = 0
    for d in range(n_docs):  # places in characters, and each word's term occurrences
        doc_char[d] = byte_start[d] - cont
        for _ in range(words[d]):
            w = w_of[i]
            w_start[i] -= cont
            cont += d_len[w] - d_chars[w]
            w_end[i] -= cont
            w_occ[i] = n_occ
            for q in range(d_terms[w], d_terms[w + 1]):
                occ[n_occ] = word_terms[q]
                n_occ += 1
            i += 1
    w_occ[n_words] = n_occ
    return (0, words, doc_char, w_start[:n_words], w_end[:n_words], w_occ[:n_words + 1],
            occ[:n_occ], pool[:t_at[n_terms]], t_at[:n_terms + 1])


@numba.njit(cache=True, nogil=True)
def merge_terms(codes, at, slots, size, g_hash, g_at, g_pool, n_global, ids, hashes):
    """The global id of every term of a batch (term i: codes[at[i]:at[i + 1]]) into `ids`,
    adding the new ones to the vocabulary (g_pool[g_at[g]:g_at[g + 1]], hash g_hash[g],
    open-addressing table slots[:size], grown in place: `slots` has room() slots for every
    term the vocabulary may then hold, and its other arrays room for the batch's terms). A
    hit is checked code by code, so two different terms never share an id. Returns (terms
    now known, the table's size in use). `hashes`: room for the batch's term hashes.

    The look-ups wait on memory (at 1M chunks the table and the pool hold tens of MB): each
    one reads a slot, then its term's hash, place and codes, one after the other. So the
    terms go GROUP at a time: first each term's slot and its term's place and first code are
    read, loads that do not wait on each other, then the probes find them in cache (1.7M
    terms in 500 batches: 3.0 -> 1.6 s alone). The probe is written out here as in
    _distinct_terms: one helper called for each term (even inline="always") made numba
    count references to its arrays at every term."""
    n = at.size - 1
    for i in range(n):
        h = _FNV_OFFSET
        for j in range(at[i], at[i + 1]):
            h = (h ^ np.uint64(codes[j])) * _FNV_PRIME
        h = (h ^ (h >> np.uint64(32))) * _GOLDEN  # FNV's low bits, the slot's, mixed
        hashes[i] = h ^ (h >> np.uint64(29))
    warm = np.int64(0)  # what the first reads found (returned, so that they are made)
    for lo in range(0, n, _GROUP):
        hi = min(lo + _GROUP, n)
        mask = size - 1
        for i in range(lo, hi):
            g = slots[np.int64(hashes[i] & np.uint64(mask))]
            if g != _EMPTY:
                p = g_at[g]
                warm += p + np.int64(g_hash[g] & np.uint64(1)) + g_pool[p]
        for i in range(lo, hi):
            a, b, h = at[i], at[i + 1], hashes[i]
            mask = size - 1
            s = np.int64(h & np.uint64(mask))
            while True:
                g = slots[s]
                if g == _EMPTY:
                    g = n_global
                    p = g_at[g]
                    g_pool[p:p + b - a] = codes[a:b]
                    g_at[g + 1] = p + b - a
                    g_hash[g] = h
                    n_global += 1
                    slots[s] = g
                    if 2 * n_global > size:
                        size *= 2
                        _rehash(slots, size, g_hash, n_global)
                    break
                if g_hash[g] == h and g_at[g + 1] - g_at[g] == b - a:
                    p = g_at[g]
                    same = True
                    for z in range(b - a):
                        if g_pool[p + z] != codes[a + z]:
                            same = False
                            break
                    if same:
                        break
                s = (s + 1) & mask
            ids[i] = g
    return n_global, size, warm


@numba.njit(cache=True, nogil=True)
def _prefix(pool, a, b, depth, per, bits):
    """Codes depth * per to depth * per + per - 1 of the term pool[a:b] in one key, `bits`
    bits each (per * bits <= 64), a code past the end 0 (no term holds U+0000): keys order
    terms as Python orders str."""
    key = np.uint64(0)
    for j in range(per):
        q = a + depth * per + j
        key = (key << np.uint64(bits)) | (np.uint64(pool[q]) if q < b else np.uint64(0))
    return key


@numba.njit(cache=True, nogil=True)
def term_order(pool, at):
    """The terms (term t: pool[at[t]:at[t + 1]], all different) in Python's str order: their
    ids sorted by as many codes at a time as fit 64 bits (8 when every code is below 256, as
    in Portuguese or English text; 4 below 65,536; else 3), runs that tie sorted again by
    the next ones. Short runs are sorted by insertion (no array made for them)."""
    n = at.size - 1
    largest = 0
    for q in range(at[n]):
        largest = max(largest, pool[q])
    bits = 8 if largest < 256 else 16 if largest < 65536 else 21
    per = 64 // bits
    order = np.arange(n)
    key = np.empty(n, dtype=np.uint64)
    stack = [(np.int64(0), np.int64(n), np.int64(0))]
    while len(stack):
        lo, hi, depth = stack.pop()
        for i in range(lo, hi):
            key[i] = _prefix(pool, at[order[i]], at[order[i] + 1], depth, per, bits)
        if hi - lo <= _SHORT_RUN:
            for i in range(lo + 1, hi):
                k, o, j = key[i], order[i], i - 1
                while j >= lo and key[j] > k:
                    key[j + 1], order[j + 1] = key[j], order[j]
                    j -= 1
                key[j + 1], order[j + 1] = k, o
        else:
            by = np.argsort(key[lo:hi], kind="mergesort")
            order[lo:hi] = order[lo:hi][by]
            key[lo:hi] = key[lo:hi][by]
        i = lo
        while i < hi:
            j = i + 1
            while j < hi and key[j] == key[i]:
                j += 1
            if j - i > 1 and key[i] & np.uint64((1 << bits) - 1) != 0:
                # (a key whose last code is 0: terms that ended, the same)
                stack.append((np.int64(i), np.int64(j), depth + 1))
            i = j
    return order


@numba.njit(cache=True, nogil=True)
def window_counts(words, w_start, w_end, w_occ, occ, n_terms, doc_start, size, overlap):
    """Windows of `size` words overlapping by `overlap` (chunking.window_starts) of each
    document and their term counts. Returns (chunks per document, span starts and ends
    relative to the document, CSR indptr, indices (term ids in first-occurrence order within
    a chunk) and counts)."""
    n_docs = words.size
    step = size - overlap
    chunks = np.zeros(n_docs, dtype=np.int64)
    total = 0
    room = 0
    base = 0
    for d in range(n_docs):
        n = words[d]
        s = 0
        while s < n:
            e = min(s + size, n)
            total += 1
            room += w_occ[base + e] - w_occ[base + s]
            chunks[d] += 1
            if s + size >= n:
                break
            s += step
        base += n
    starts = np.empty(total, dtype=np.int64)
    ends = np.empty(total, dtype=np.int64)
    indptr = np.zeros(total + 1, dtype=np.int64)
    indices = np.empty(room, dtype=np.int32)
    data = np.empty(room, dtype=np.int32)
    mark = np.full(n_terms, -1, dtype=np.int64)
    where = np.empty(n_terms, dtype=np.int64)
    c = nnz = base = 0
    for d in range(n_docs):
        n = words[d]
        s = 0
        while s < n:
            e = min(s + size, n)
            starts[c] = w_start[base + s] - doc_start[d]
            ends[c] = w_end[base + e - 1] - doc_start[d]
            for k in range(w_occ[base + s], w_occ[base + e]):
                t = occ[k]
                if mark[t] != c:
                    mark[t] = c
                    where[t] = nnz
                    indices[nnz] = t
                    data[nnz] = 1
                    nnz += 1
                else:
                    data[where[t]] += 1
            c += 1
            indptr[c] = nnz
            if s + size >= n:
                break
            s += step
        base += n
    return chunks, starts, ends, indptr, indices[:nnz], data[:nnz]
