"""Raw term counts of chunks: the one tokenising pass that every lexical method builds from.

A chunk is tokenised through its whitespace-separated pieces: the java terms of a piece
(`java_terms(piece)`: lowercase, runs of letters or digits) are computed once per distinct
piece and cached, so the work per word is a dictionary look-up done in C. Splitting at
whitespace first changes nothing: whitespace is never part of a term, and lowercasing a piece
alone gives the same letters as lowercasing the whole text (whitespace is neither cased nor
case-ignorable, so even a final sigma comes out the same).

Other analyzers map each java term to one term or none (`analyzers.get_term_filter`), so
their counts are the java counts with columns merged or dropped: `reanalyze`.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from ...errors import BuscaError
from .analyzers import java_terms

if TYPE_CHECKING:  # scipy loads with the build, never for a search
    import scipy.sparse as sp

UINT16_MAX = np.iinfo(np.uint16).max


class EmptyVocabulary(BuscaError, ValueError):
    """No chunk has a single term."""


@dataclass(frozen=True)
class TermCounts:
    """Raw counts, chunks x terms (CSR, int32 indices), and the terms in column order."""

    matrix: sp.csr_matrix
    terms: list[str]

    @property
    def chunks(self) -> int:
        return self.matrix.shape[0]


@dataclass(frozen=True)
class CountedBatch:
    """Counts of a batch of chunks over the batch's own term ids (`terms` in id order):
    CSR, ids numbered in sorted term order and increasing within each row, so that the
    merged matrix has its rows sorted without sorting them."""

    terms: list[str]
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray


@functools.lru_cache(maxsize=1 << 20)
def piece_terms(piece: str) -> tuple[str, ...]:
    """The java terms of one whitespace-free piece of text (cached)."""
    return tuple(java_terms(piece))


def count_pieces(chunks: Sequence[Sequence[str]]) -> CountedBatch:
    """Term counts of chunks given as lists of whitespace-free pieces."""
    import scipy.sparse as sp
    lengths = np.fromiter(map(len, chunks), dtype=np.int64, count=len(chunks))
    piece_ids: defaultdict[str, int] = defaultdict()
    piece_ids.default_factory = piece_ids.__len__
    occurrences = np.fromiter(map(piece_ids.__getitem__, chain.from_iterable(chunks)),
                              dtype=np.int64, count=int(lengths.sum()))
    term_ids: defaultdict[str, int] = defaultdict()
    term_ids.default_factory = term_ids.__len__
    per_piece = [tuple(map(term_ids.__getitem__, piece_terms(p))) for p in piece_ids]
    n_terms = np.fromiter(map(len, per_piece), dtype=np.int64, count=len(per_piece))
    flat = np.fromiter(chain.from_iterable(per_piece), dtype=np.int64, count=int(n_terms.sum()))
    terms, rank = sorted_terms(list(term_ids))
    flat = rank[flat]
    rows = np.repeat(np.arange(len(chunks), dtype=np.int64), lengths)
    columns, rows = _expand(occurrences, rows, n_terms, flat)
    matrix = sp.coo_matrix((np.ones(columns.size, dtype=np.int32), (rows, columns)),
                           shape=(len(chunks), len(terms))).tocsr()  # rows sorted
    return CountedBatch(terms, matrix.indptr.astype(np.int64),
                        matrix.indices.astype(np.int32), compact(matrix.data))


def sorted_terms(terms: list[str]) -> tuple[list[str], np.ndarray]:
    """The terms sorted, and rank[i] = the position of terms[i] among them."""
    order = sorted(range(len(terms)), key=terms.__getitem__)
    rank = np.empty(len(terms), dtype=np.int32)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(len(terms), dtype=np.int32)
    return [terms[i] for i in order], rank


def _expand(occurrences, rows, n_terms, flat):
    """Term id and row of every term occurrence, from piece occurrences."""
    if n_terms.size and n_terms.min() == 1 and n_terms.max() == 1:
        return flat[occurrences], rows
    counts = n_terms[occurrences]
    starts = np.cumsum(n_terms) - n_terms
    first = np.repeat(starts[occurrences], counts)
    within = np.arange(first.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return flat[first + within], np.repeat(rows, counts)


def compact(data: np.ndarray) -> np.ndarray:
    if data.size == 0 or data.max() <= UINT16_MAX:
        return data.astype(np.uint16)
    return data.astype(np.int32)


class CountMerger:
    """Accumulates batches in order into one vocabulary; `result()` gives sorted columns.

    The entries go straight into one pair of growing arrays (their room reserved from the
    first batch's entries per document and `documents`, the expected total; untouched room
    costs no memory), with ids in order of first appearance; `result()` renames them in
    place. Memory holds the counts once: no list of parts to concatenate, no freed parts
    left behind in the heap."""

    def __init__(self, documents: int = 0):
        self.vocabulary: defaultdict[str, int] = defaultdict()
        self.vocabulary.default_factory = self.vocabulary.__len__
        self.documents = documents
        self.indptr: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
        self.indices = np.empty(0, dtype=np.int32)
        self.data = np.empty(0, dtype=np.uint16)
        self.nnz = 0
        self.rows = 0

    def add(self, batch: CountedBatch, documents: int = 0) -> None:
        """Append a batch's rows (`documents`: how many documents they come from)."""
        mapping = np.fromiter(map(self.vocabulary.__getitem__, batch.terms), dtype=np.int32,
                              count=len(batch.terms))
        n, end = batch.indptr.size - 1, self.nnz + batch.indices.size
        if end > self.indices.size:
            self._reserve(end, batch.indices.size / max(documents, 1))
        if batch.data.dtype != self.data.dtype and batch.data.dtype == np.int32:
            self.data = self.data.astype(np.int32)
        np.take(mapping, batch.indices, out=self.indices[self.nnz:end])
        self.data[self.nnz:end] = batch.data
        self.indptr.append(batch.indptr[1:] + self.nnz)
        self.nnz, self.rows = end, self.rows + n

    def _reserve(self, needed: int, per_document: float) -> None:
        """Room for `needed` entries, and for the expected documents at this density."""
        room = max(needed, int(per_document * self.documents * 1.05), int(self.indices.size * 1.5))
        for name in ("indices", "data"):
            old = getattr(self, name)
            grown = np.empty(room, dtype=old.dtype)
            grown[:self.nnz] = old[:self.nnz]
            setattr(self, name, grown)

    def result(self) -> TermCounts:
        """All rows so far; columns renumbered in sorted term order (as CountVectorizer)."""
        import scipy.sparse as sp
        terms, rank = sorted_terms(list(self.vocabulary))
        indices, data = self.indices[:self.nnz], self.data[:self.nnz]
        for lo in range(0, self.nnz, 1 << 22):  # in place, a block at a time
            block = indices[lo:lo + (1 << 22)]
            block[:] = rank[block]
        indptr = np.concatenate(self.indptr)
        if self.nnz < np.iinfo(np.int32).max:
            indptr = indptr.astype(np.int32)
        self.indptr, self.indices, self.data, self.nnz = [indptr[-1:]], indices[:0], data[:0], 0
        matrix = sp.csr_matrix((data, indices, indptr), shape=(self.rows, len(terms)))
        # each batch's ids follow term order, and so do their ranks: rows stay sorted
        matrix.has_sorted_indices = True
        return TermCounts(matrix, terms)


def count_texts(texts: Iterable[str], *, batch: int = 4096) -> TermCounts:
    """Java-term counts of chunk texts, in one process (the small-corpus path)."""
    merger = CountMerger()
    pending: list[list[str]] = []
    for text in texts:
        pending.append(text.split())
        if len(pending) >= batch:
            merger.add(count_pieces(pending))
            pending = []
    if pending or merger.rows == 0:
        merger.add(count_pieces(pending))
    return merger.result()


def column_targets(terms: list[str], term_filter) -> tuple[list[str], np.ndarray]:
    """The sorted terms that `term_filter` maps `terms` to, and for each of `terms` its new
    column (-1: dropped)."""
    if term_filter is None:
        return list(terms), np.arange(len(terms), dtype=np.int64)
    mapped = [term_filter(t) for t in terms]
    kept = sorted({t for t in mapped if t})
    column = {t: i for i, t in enumerate(kept)}
    target = np.fromiter((column[t] if t else -1 for t in mapped), dtype=np.int64,
                         count=len(mapped))
    return kept, target


def reanalyze(counts: TermCounts, term_filter) -> TermCounts:
    """The counts under another analyzer: each java column merged into its filtered term's
    column or dropped (`term_filter(term) -> term | None`)."""
    import scipy.sparse as sp
    if term_filter is None:
        return counts
    terms, target = column_targets(counts.terms, term_filter)
    keep = np.flatnonzero(target >= 0)
    targets = target[keep]
    most = int(counts.matrix.sum(axis=1).max()) if counts.chunks else 0
    dtype = np.uint16 if most <= UINT16_MAX else np.int32
    projection = sp.csr_matrix((np.ones(keep.size, dtype=dtype), (keep, targets)),
                               shape=(len(counts.terms), len(terms)))
    matrix = counts.matrix.astype(dtype, copy=False) @ projection
    return TermCounts(sp.csr_matrix(matrix), terms)


def column_blocks(indptr: np.ndarray, size: int = 1 << 23) -> Iterator[tuple[int, int]]:
    """Consecutive column ranges [c0, c1) of a compressed matrix holding about `size`
    entries each (at least one column), to process big arrays in bounded memory."""
    n = indptr.size - 1
    c0 = 0
    while c0 < n:
        c1 = int(np.searchsorted(indptr, indptr[c0] + size, side="right")) - 1
        c1 = min(max(c1, c0 + 1), n)
        yield c0, c1
        c0 = c1
