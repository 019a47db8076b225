"""The compiled path of stream.py's batches: word windows and java-term counts of a batch of
documents in a few numba calls (index/text/tokens_numba.py, the `fast` extra) instead of Python
work per word. The results are those of the Python path (`stream._chunk_batch`): the same
spans, and the same counts per chunk and term (tests/index/test_index_tokens.py compares both).
numba missing or BUSCA_NUMBA=0: `compiled_batch` returns None and the Python path runs.

The texts travel as UTF-8 (the store's bytes, or str encoded here). Each distinct word is
decoded once and its characters looked up in two tables indexed by code point, filled 256
codes at a time as codes appear: its lowercase, and whether it is a letter or digit once
lowercased (`analyzers.java_terms`' regex, asked per code). A code whose lowercase is not one
code of its own (İ -> "i̇") or depends on its neighbours (Σ: σ or final ς), bytes that are
not UTF-8, or previous spans that differ from the windows send the batch to the Python path.
A batch's term ids are numbered in order of first occurrence, and so are each chunk's
(counting.count_pieces' are sorted): nothing downstream needs them in order (the merge
keeps the order terms came in; tfidf sorts its columns and sums each chunk's weights in
column order from its term-major arrays).
"""

from __future__ import annotations

import sys

import numpy as np

from .. import compiled
from .codetables import UNKNOWN, fill, tables
from .counting import CountedBatch, PackedTerms, compact



def compiled_batch(docs, *, size: int, overlap: int):
    """(words, chunks, starts, ends, counts) of the (text, previous spans) pairs as
    stream._chunk_batch makes them, or None: no compiler, a code that needs the Python path,
    a text that is not valid UTF-8, or previous spans that differ from the windows. Texts
    are str, or UTF-8 bytes decoded here (in the compiled pass)."""
    k = compiled.module("tokens_numba")
    if k is None or sys.byteorder != "little":
        return None
    texts = [text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
             for text, _ in docs]  # bytes: UTF-8 from DocumentRanges.read
    raw = b"\n".join(texts)  # a lone surrogate is invalid UTF-8 there: the Python path
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    byte_end = np.cumsum(lengths + 1) - 1
    byte_start = byte_end - lengths
    padded = raw + bytes(8)
    buf = np.frombuffer(padded, dtype=np.uint8)
    win = np.ndarray(shape=(len(raw),), dtype="<u8", buffer=padded, strides=(1,))
    lower, flags = tables()
    found = k.terms_of(buf, win, byte_start, byte_end, lower, flags)
    if found[0] & UNKNOWN:  # codes never seen in this process: fill their pages, again
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None  # the Python path names the invalid text
        fill(np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32))
        found = k.terms_of(buf, win, byte_start, byte_end, lower, flags)
    status, words, doc_char, w_start, w_end, w_occ, occ, pool, t_at = found
    if status:
        return None
    chunks, starts, ends, indptr, indices, data = k.window_counts(
        words, w_start, w_end, w_occ, occ, t_at.size - 1, doc_char, size, overlap)
    if not _same_spans(docs, chunks, starts, ends):
        return None
    # ids in order of first occurrence, unsorted rows: a sort here was a third of the batch;
    # 16-bit ids and counts where they fit: half the bytes pickled to the merging process
    return words, chunks, starts, ends, CountedBatch(PackedTerms(pool, t_at), indptr,
                                                     compact(indices), compact(data))


def warm_up() -> None:
    """Load (or compile, the first time) the compiled pass for str and UTF-8 texts."""
    for text in ("a", b"a"):
        compiled_batch([(text, None)], size=1, overlap=0)


def _same_spans(docs, chunks: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
    """True when every previous span list equals the new windows (the spans are reused)."""
    reused = [d for d, (_, old) in enumerate(docs) if old is not None]
    if not reused:
        return True
    first = np.cumsum(chunks) - chunks
    for d in reused:
        old = docs[d][1]
        a, b = int(first[d]), int(first[d] + chunks[d])
        if old != list(zip(starts[a:b].tolist(), ends[a:b].tolist())):
            return False
    return True
