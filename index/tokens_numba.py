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
def _same(codes, lower, a, b, n):
    for k in range(n):
        x, y = codes[a + k], codes[b + k]
        if x != y and lower[x] != lower[y]:
            return False
    return True


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
def _scan(codes, lower, flags, doc_start, doc_end):
    """Words and term occurrences (start, length, hash of the lowercase codes) of each
    document, in one pass over the codes; status != 0: a code flagged `STOP` was met."""
    cap = codes.size // 2 + 2  # a word or a term takes a code and a separator at least
    words = np.zeros(doc_start.size, dtype=np.int64)
    w_start = np.empty(cap, dtype=np.int64)
    w_end = np.empty(cap, dtype=np.int64)
    w_occ = np.empty(cap + 1, dtype=np.int64)
    o_start = np.empty(cap, dtype=np.int64)
    o_len = np.empty(cap, dtype=np.int64)
    o_hash = np.empty(cap, dtype=np.uint64)
    n_words = n_occ = 0
    h = _FNV_OFFSET
    for d in range(doc_start.size):
        lo, hi = doc_start[d], doc_end[d]
        while lo < hi and codes[lo] <= 32:  # Java's trim()
            lo += 1
        while hi > lo and codes[hi - 1] <= 32:
            hi -= 1
        in_word = in_term = False
        first = n_words
        for i in range(lo, hi):
            c = codes[i]
            if c == 32 or 9 <= c <= 13:  # Java's \s
                if in_term:
                    o_len[n_occ] = i - o_start[n_occ]
                    o_hash[n_occ] = h
                    n_occ += 1
                    in_term = False
                if in_word:
                    w_end[n_words] = i
                    n_words += 1
                    in_word = False
                continue
            if not in_word:
                w_start[n_words] = i
                w_occ[n_words] = n_occ
                in_word = True
            f = flags[c]
            if f & TERM:
                if not in_term:
                    o_start[n_occ] = i
                    h = _FNV_OFFSET
                    in_term = True
                h = (h ^ np.uint64(lower[c])) * _FNV_PRIME
            else:
                if f & STOP:
                    return f & STOP, words, w_start, w_end, w_occ, o_start, o_len, o_hash, 0, 0
                if in_term:
                    o_len[n_occ] = i - o_start[n_occ]
                    o_hash[n_occ] = h
                    n_occ += 1
                    in_term = False
        if in_term:
            o_len[n_occ] = hi - o_start[n_occ]
            o_hash[n_occ] = h
            n_occ += 1
        if in_word:
            w_end[n_words] = hi
            n_words += 1
        words[d] = n_words - first
    w_occ[n_words] = n_occ
    return 0, words, w_start, w_end, w_occ, o_start, o_len, o_hash, n_words, n_occ


@numba.njit(cache=True, nogil=True)
def _ids(codes, lower, o_start, o_len, o_hash, n_occ):
    """The term id of each occurrence (ids in order of first occurrence), and per term its
    first occurrence."""
    occ = np.empty(n_occ, dtype=np.int32)
    first = np.empty(max(n_occ, 1), dtype=np.int64)
    t_hash = np.empty(max(n_occ, 1), dtype=np.uint64)
    slots = np.full(4096, _EMPTY, dtype=np.int32)
    n_terms = 0
    for k in range(n_occ):
        h, length, start = o_hash[k], o_len[k], o_start[k]
        mask = slots.size - 1
        s = np.int64(h & np.uint64(mask))
        while True:
            t = slots[s]
            if t == _EMPTY:
                t = n_terms
                first[t] = k
                t_hash[t] = h
                n_terms += 1
                slots[s] = t
                if 2 * n_terms > slots.size:
                    slots = _grow(slots, t_hash, n_terms)
                break
            f = first[t]
            if (t_hash[t] == h and o_len[f] == length
                    and _same(codes, lower, o_start[f], start, length)):
                break
            s = (s + 1) & mask
        occ[k] = t
    return occ, first[:n_terms]


@numba.njit(cache=True, nogil=True)
def terms_of(codes, lower, flags, doc_start, doc_end):
    """Words and term occurrences of each document. Returns (status, words per document,
    word starts, word ends, per word its first occurrence (words + 1 values), the term id
    of each occurrence, and per term id its first position and length); status != 0: the
    STOP flags of a code that was met (nothing else is valid)."""
    status, words, w_start, w_end, w_occ, o_start, o_len, o_hash, n_words, n_occ = _scan(
        codes, lower, flags, doc_start, doc_end)
    if status:
        return status, words, w_start[:0], w_end[:0], w_occ[:0], o_start[:0].astype(np.int32), \
            o_start[:0], o_len[:0]
    occ, first = _ids(codes, lower, o_start, o_len, o_hash, n_occ)
    return (0, words, w_start[:n_words], w_end[:n_words], w_occ[:n_words + 1], occ,
            o_start[first], o_len[first])


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
