"""Word windows and java-term counts of a batch of documents in one compiled pass (numba, the
`fast` extra); index/tokens.py prepares the input and checks when it may be used.

The batch is one array of character codes; each document is a range of it. A document's
words are Java's (`text.trim().split("\\s+")`: trim every code <= 32 at both ends, split at
the six ASCII whitespace codes), its windows those of `chunking.window_starts`, and the java
terms of a word the runs of codes flagged TERM, lowercased through the `lower` table (the
caller guarantees that every code maps to one code: no İ, no Σ). Each distinct term gets an
id, in order of first occurrence, from an open-addressing hash table whose hits are checked
code by code, so two different terms never share an id.
"""

from __future__ import annotations

import numba
import numpy as np

from .tokens import STOP, TERM

_EMPTY = -1
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@numba.njit(cache=True, nogil=True)
def _grow(slots, term_hash, n_terms):
    """A table twice as large holding the same terms."""
    bigger = np.full(slots.size * 2, _EMPTY, dtype=np.int32)
    mask = bigger.size - 1
    for t in range(n_terms):
        s = np.int64(term_hash[t] & np.uint64(mask))
        while bigger[s] != _EMPTY:
            s = (s + 1) & mask
        bigger[s] = t
    return bigger


@numba.njit(cache=True, nogil=True)
def terms_of(codes, lower, flags, doc_start, doc_end):
    """Words and term occurrences of each document, in one pass over the codes. Returns
    (status, words per document, word starts, word ends, per word its first occurrence
    (words + 1 values), the term id of each occurrence, the lowercase codes of every term
    one after the other, and where each term starts in them (terms + 1 values)); status
    != 0: the STOP flags of a code that was met (nothing else is valid).

    A term is looked up when it ends, while its codes are still in cache: by the hash of
    its lowercase codes, then code by code against the term's copy in `pool`."""
    cap = codes.size // 2 + 2  # a word or a term takes a code and a separator at least
    words = np.zeros(doc_start.size, dtype=np.int64)
    w_start = np.empty(cap, dtype=np.int64)
    w_end = np.empty(cap, dtype=np.int64)
    w_occ = np.empty(cap + 1, dtype=np.int64)
    occ = np.empty(cap, dtype=np.int32)
    pool = np.empty(codes.size, dtype=np.uint32)
    t_at = np.zeros(cap + 1, dtype=np.int64)
    t_hash = np.empty(cap, dtype=np.uint64)
    slots = np.full(4096, _EMPTY, dtype=np.int32)
    n_words = n_occ = n_terms = 0
    for d in range(doc_start.size):
        lo, hi = doc_start[d], doc_end[d]
        while lo < hi and codes[lo] <= 32:  # Java's trim()
            lo += 1
        while hi > lo and codes[hi - 1] <= 32:
            hi -= 1
        first_word = n_words
        i = lo
        while i < hi:
            c = codes[i]
            if c == 32 or 9 <= c <= 13:  # Java's \s
                i += 1
                continue
            w_start[n_words] = i
            w_occ[n_words] = n_occ
            while i < hi:
                c = codes[i]
                if c == 32 or 9 <= c <= 13:
                    break
                f = flags[c]
                if not f & TERM:
                    if f & STOP:
                        return (f & STOP, words, w_start[:0], w_end[:0], w_occ[:0], occ[:0],
                                pool[:0], t_at[:1])
                    i += 1
                    continue
                start = i
                h = _FNV_OFFSET
                while True:
                    h = (h ^ np.uint64(lower[c])) * _FNV_PRIME
                    i += 1
                    if i >= hi:
                        break
                    c = codes[i]
                    if not flags[c] & TERM:
                        break
                length = i - start
                mask = slots.size - 1
                s = np.int64(h & np.uint64(mask))
                while True:
                    t = slots[s]
                    if t == _EMPTY:  # a new term: copy its lowercase codes to the pool
                        t = n_terms
                        p = t_at[t]
                        for q in range(length):
                            pool[p + q] = lower[codes[start + q]]
                        t_at[t + 1] = p + length
                        t_hash[t] = h
                        n_terms += 1
                        slots[s] = t
                        if 2 * n_terms > slots.size:
                            slots = _grow(slots, t_hash, n_terms)
                        break
                    if t_hash[t] == h and t_at[t + 1] - t_at[t] == length:
                        p = t_at[t]
                        same = True
                        for q in range(length):
                            if pool[p + q] != lower[codes[start + q]]:
                                same = False
                                break
                        if same:
                            break
                    s = (s + 1) & mask
                occ[n_occ] = t
                n_occ += 1
            w_end[n_words] = i
            n_words += 1
        words[d] = n_words - first_word
    w_occ[n_words] = n_occ
    return (0, words, w_start[:n_words], w_end[:n_words], w_occ[:n_words + 1], occ[:n_occ],
            pool[:t_at[n_terms]], t_at[:n_terms + 1])


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


@numba.njit(cache=True, nogil=True)
def sorted_rows(indptr, indices, data, rank):
    """The CSR rows with term id t renamed rank[t] and each row's entries in increasing id
    order: two counting sorts (by id, then by row), linear in the entries."""
    n_rows, nnz, n_ids = indptr.size - 1, indices.size, rank.size
    col_ptr = np.zeros(n_ids + 1, dtype=np.int64)
    for k in range(nnz):
        col_ptr[rank[indices[k]] + 1] += 1
    for c in range(n_ids):
        col_ptr[c + 1] += col_ptr[c]
    fill = col_ptr[:-1].copy()
    rows = np.empty(nnz, dtype=np.int64)
    values = np.empty(nnz, dtype=data.dtype)
    for r in range(n_rows):
        for k in range(indptr[r], indptr[r + 1]):
            c = rank[indices[k]]
            p = fill[c]
            fill[c] += 1
            rows[p] = r
            values[p] = data[k]
    out_indices = np.empty(nnz, dtype=np.int32)
    out_data = np.empty(nnz, dtype=data.dtype)
    pos = indptr[:-1].copy()
    for c in range(n_ids):
        for p in range(col_ptr[c], col_ptr[c + 1]):
            r = rows[p]
            q = pos[r]
            pos[r] += 1
            out_indices[q] = c
            out_data[q] = values[p]
    return out_indices, out_data


@numba.njit(cache=True, nogil=True)
def utf8_codes(buf, byte_end):
    """The code points of UTF-8 bytes holding documents back to back (document d ends at
    byte byte_end[d]), and each document's start and end among them. Strict like Python's
    decoder (no overlong form, surrogate, code point above U+10FFFF or cut sequence); ok is
    False at the first invalid byte (nothing else is valid)."""
    n_docs = byte_end.size
    codes = np.empty(buf.size, dtype=np.uint32)
    doc_start = np.empty(n_docs, dtype=np.int64)
    doc_end = np.empty(n_docs, dtype=np.int64)
    i = n = 0
    for d in range(n_docs):
        doc_start[d] = n
        end = byte_end[d]
        while i < end:
            b0 = np.uint32(buf[i])
            if b0 < 0x80:
                codes[n] = b0
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
                    return False, codes[:0], doc_start, doc_end
                if i + width > end:
                    return False, codes[:0], doc_start, doc_end
                for j in range(1, width):
                    b = np.uint32(buf[i + j])
                    if j == 1:
                        ok = lo <= b <= hi
                    else:
                        ok = 0x80 <= b <= 0xBF
                    if not ok:
                        return False, codes[:0], doc_start, doc_end
                    cp = (cp << 6) | (b & 0x3F)
                codes[n] = cp
                i += width
            n += 1
        doc_end[d] = n
    return True, codes[:n], doc_start, doc_end
