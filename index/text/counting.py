"""Raw term counts of chunks: the one tokenising pass that every lexical method builds from.

A chunk is tokenised through its whitespace-separated pieces: the java terms of a piece
(`java_terms(piece)`: lowercase, runs of letters or digits) are computed once per distinct
piece and cached, so the work per word is a dictionary look-up done in C. Splitting at
whitespace first changes nothing: whitespace is never part of a term, and lowercasing a piece
alone gives the same letters as lowercasing the whole text (whitespace is neither cased nor
case-ignorable, so even a final sigma comes out the same).

A piece's number groups ("1.000,00", a CPF) are counted whole too, after its java terms
(`analyzers.counted_terms`): java's columns leave them out (tfidf's Java parity), `pt` and
`en` map them to one canonical term. Every analyzer maps each counted term to one term or
none (`analyzers.get_term_filter`), so its counts are these with columns merged or dropped:
`reanalyze`.
"""

from __future__ import annotations

import functools
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import TYPE_CHECKING

import numpy as np

from ...errors import BuscaError
from .analyzers import NUMBER_SEPARATORS, counted_terms, get_term_filter, mapped_terms

if TYPE_CHECKING:  # scipy loads with the build, never for a search
    import scipy.sparse as sp

UINT16_MAX = np.iinfo(np.uint16).max


class EmptyVocabulary(BuscaError, ValueError):
    """No chunk has a single term."""


@dataclass(frozen=True, eq=False)
class CsrArrays:
    """A CSR matrix's arrays, without scipy: what the compiled builders read (a build of bm25
    alone then never imports scipy.sparse, a tenth of a second or more of its one process
    while the workers stem). `scipy()`: the matrix, sharing the arrays."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def scipy(self) -> sp.csr_matrix:
        import scipy.sparse as sp
        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=self.shape,
                             copy=False)


@dataclass(frozen=True)
class TermCounts:
    """Raw counts, chunks x terms (CSR, int32 indices), and the terms in column order: the
    order in which a merge met them (`targets` gives the sorted order of any analyzer).
    `arrays`: a scipy CSR matrix or its CsrArrays (`matrix` makes the scipy one when read)."""

    arrays: sp.csr_matrix | CsrArrays
    terms: list[str]
    # analyzer -> its column targets, computed beside the merge or from its vocabulary's
    # compiled loops (CountMerger)
    prefetched: Mapping[str, Callable[[], tuple]] = field(default_factory=dict, repr=False,
                                                          compare=False)

    @functools.cached_property
    def matrix(self) -> sp.csr_matrix:
        arrays = self.arrays
        return arrays.scipy() if isinstance(arrays, CsrArrays) else arrays

    @property
    def chunks(self) -> int:
        return self.arrays.shape[0]

    def targets(self, analyzer: str) -> tuple[list[str], np.ndarray]:
        """`column_targets` of the terms under `analyzer` (the sorted terms it keeps, and each
        column's place among them: java's sorts the columns): the merge's, when it can give
        them (CountMerger's `analyzers`; java from its vocabulary), else computed now."""
        ready = self.prefetched.get(analyzer)
        return ready() if ready is not None else column_targets(self.terms, analyzer)


class PackedTerms(Sequence):
    """Terms as one array of code points: term i is codes[at[i]:at[i + 1]] (UTF-32). What a
    compiled batch sends back from its worker instead of a list of str (one array to
    pickle), read by the compiled merge without a str made of each term."""

    def __init__(self, codes: np.ndarray, at: np.ndarray):
        self.codes, self.at = codes, at

    @classmethod
    def of(cls, terms: Sequence[str]) -> PackedTerms:
        codes = np.frombuffer("".join(terms).encode("utf-32-le", "surrogatepass"), "<u4")
        at = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, terms), dtype=np.int64, count=len(terms)), out=at[1:])
        return cls(codes.astype(np.uint32), at)

    def __len__(self) -> int:
        return self.at.size - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.strings()[i]
        i = i + len(self) if i < 0 else i
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.codes[self.at[i]:self.at[i + 1]].tobytes().decode("utf-32-le",
                                                                     "surrogatepass")

    def taken(self, order: np.ndarray) -> PackedTerms:
        """The terms taken in `order` (term order[i] becomes the i-th)."""
        lengths = np.diff(self.at)[order]
        at = np.zeros(order.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=at[1:])
        shift = np.repeat(self.at[:-1][order] - at[:-1], lengths)
        return PackedTerms(self.codes[shift + np.arange(shift.size)], at)

    @classmethod
    def joined(cls, parts: Sequence[PackedTerms]) -> PackedTerms:
        """The terms of `parts` one after the other."""
        shifts = np.cumsum([0] + [p.codes.size for p in parts])
        at = np.concatenate([p.at[:-1] + shift for p, shift in zip(parts, shifts)]
                            + [shifts[-1:]])
        return cls(np.concatenate([p.codes for p in parts] or [np.empty(0, np.uint32)]), at)

    def strings(self) -> list[str]:
        every = self.codes.tobytes().decode("utf-32-le", "surrogatepass")
        bounds = self.at.tolist()
        return [every[a:b] for a, b in zip(bounds, bounds[1:])]

    def lines(self) -> str:
        """The terms, each followed by a line break, without a str made of each (a
        vocabulary file's text: "\\n".join(terms) + "\\n")."""
        if not len(self):
            return "\n"  # as "\n".join([]) + "\n"
        codes = np.insert(self.codes, self.at[1:], np.uint32(ord("\n")))
        return codes.tobytes().decode("utf-32-le", "surrogatepass")


@dataclass(frozen=True)
class CountedBatch:
    """Counts of a batch of chunks over the batch's own term ids (`terms` in id order):
    CSR; the Python path numbers the ids in sorted term order, the compiled one in the order
    the terms first occur (its rows unsorted)."""

    terms: Sequence[str]  # a list, or PackedTerms from the compiled batch
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray


@functools.lru_cache(maxsize=1 << 20)
def piece_terms(piece: str) -> tuple[str, ...]:
    """The java terms of one whitespace-free piece of text, then its number groups whole
    (`analyzers.counted_terms`; cached)."""
    return tuple(counted_terms(piece))


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
    order = str_order(terms)
    return [terms[i] for i in order], ranks(order)


def str_order(terms: list[str]) -> np.ndarray:
    """The positions of `terms` in Python's str order."""
    return np.asarray(sorted(range(len(terms)), key=terms.__getitem__), dtype=np.int64)


def ranks(order: np.ndarray) -> np.ndarray:
    """rank[order[i]] = i: where each id comes in `order`."""
    rank = np.empty(order.size, dtype=np.int32)
    rank[order] = np.arange(order.size, dtype=np.int32)
    return rank


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


class LazyTerms(Sequence):
    """A vocabulary's terms in column order, made into str when first read (then a list of
    str, which slices and comparisons use): a build of bm25 alone never reads its java terms
    (0.2 s of the merge's one core at 411k terms), and tfidf's thread makes them beside
    bm25's kernels. `make` gives the list, or is PackedTerms: then its length and its
    vocabulary file's text (`lines`) need no str made of each term (0.04-0.1 s of a 100k-chunk
    build's last, single-threaded steps at 217k terms)."""

    def __init__(self, make: Callable[[], list[str]] | PackedTerms):
        self._packed = make if isinstance(make, PackedTerms) else None
        self._make = make.strings if self._packed is not None else make
        self._made = None
        self._lock = threading.Lock()

    @property
    def data(self) -> list[str]:
        if self._made is None:
            with self._lock:
                if self._made is None:
                    self._made, self._make, self._packed = self._make(), None, None
        return self._made

    def lines(self) -> str:
        """The terms, each followed by a line break: "\\n".join(terms) + "\\n"."""
        packed = self._packed
        return packed.lines() if packed is not None else "\n".join(self.data) + "\n"

    def __getitem__(self, i):
        return self.data[i]

    def __len__(self) -> int:
        packed = self._packed
        return len(packed) if packed is not None else len(self.data)

    def __iter__(self):
        return iter(self.data)

    def __eq__(self, other) -> bool:
        return self.data == (other.data if isinstance(other, LazyTerms) else other)

    __hash__ = None  # as a list's


class CountMerger:
    """Accumulates batches in order into one vocabulary; `result()` gives its columns in the
    order the terms first appeared (TermCounts.targets sorts them for whoever asks).

    The entries go straight into one pair of growing arrays (their room reserved from the
    first batch's entries per document and `documents`, the expected total; untouched room
    costs no memory), with ids in order of first appearance, which `result()` keeps. Memory
    holds the counts once: no list of parts to concatenate, no freed parts
    left behind in the heap. `kernels`: index/text/tokens_numba.py, for a vocabulary of
    code points in compiled loops (a dict of str otherwise: the same terms and counts)."""

    def __init__(self, documents: int = 0, kernels=None, analyzers: Sequence[str] = ()):
        self.vocabulary = _PackedVocabulary(kernels) if kernels is not None else _Vocabulary()
        self.documents = documents
        self.analyzers = [a for a in analyzers if get_term_filter(a) is not None]
        self.pending: dict[str, list[Future]] = {}  # the mapping jobs sent, in id order
        self.sent = 0  # the terms they cover: ids 0..sent
        self.pool: Executor | None = None  # set once every term is sent (prefetch)
        self.indptr: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
        self.indices = np.empty(0, dtype=np.int32)
        self.data = np.empty(0, dtype=np.uint16)
        self.nnz = 0
        self.rows = 0

    def add(self, batch: CountedBatch, documents: int = 0) -> None:
        """Append a batch's rows (`documents`: how many documents they come from)."""
        mapping = self.vocabulary.ids(batch.terms)
        n, end = batch.indptr.size - 1, self.nnz + batch.indices.size
        if end > self.indices.size:
            self._reserve(end, batch.indices.size / max(documents, 1))
        if batch.data.dtype != self.data.dtype and batch.data.dtype == np.int32:
            self.data = self.data.astype(np.int32)
        np.take(mapping, batch.indices, out=self.indices[self.nnz:end], mode="clip")
        # (mode clip: the ids are in range; "raise" would go through a buffer)
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

    def map_ahead(self, pool: Executor) -> None:
        """While the merge goes on, have `pool` (the tokenising workers, index/text/stream.py)
        map the terms that came since the last call through `analyzers`, once they are
        AHEAD or more: the workers have room between batches, and what they map then is
        not left for after the merge (a 100k-chunk build of 411k terms: 2.09 s → 1.79 s)."""
        if self.analyzers and self.vocabulary.n - self.sent >= AHEAD:
            self._send(pool, parts=1)

    def prefetch(self, pool: Executor, parts: int = 2) -> None:
        """Have the column targets of `analyzers` computed by `pool` while the merge
        finishes here: mapping every term through a stemmer is a Python loop (seconds at
        1M chunks) that would otherwise come before the methods, or hold the GIL they need.
        The terms not sent ahead go out in `parts` (one per worker); the mapped terms are put
        in order when taken (TermCounts.targets), and the pool is shut down then."""
        self._send(pool, parts)
        self.pool = pool

    def _send(self, pool: Executor, parts: int) -> None:
        """Jobs mapping the terms not sent yet, in `parts`, for every analyzer."""
        end = self.vocabulary.n
        codes, at = self.vocabulary.packed(self.sent)
        cuts = np.linspace(0, end - self.sent, parts + 1).astype(np.int64)
        for analyzer in self.analyzers:
            self.pending.setdefault(analyzer, []).extend(
                pool.submit(_mapped_part, codes[at[lo]:at[hi]].copy(), at[lo:hi + 1] - at[lo],
                            analyzer) for lo, hi in zip(cuts, cuts[1:]))
        self.sent = end

    def result(self) -> TermCounts:
        """All rows so far, the columns in the order their terms first appeared (nothing is
        sorted or renumbered here: `targets` sorts the vocabulary for the method that asks,
        in its own thread; tfidf's renames the columns as it transposes them)."""
        indices, data = self.indices[:self.nnz], self.data[:self.nnz]
        indptr = np.concatenate(self.indptr)
        if self.nnz < np.iinfo(np.int32).max:
            indptr = indptr.astype(np.int32)
        self.indptr, self.indices, self.data, self.nnz = [indptr[-1:]], indices[:0], data[:0], 0
        matrix = CsrArrays(data, indices, indptr, (self.rows, self.vocabulary.n))
        terms = LazyTerms(self.vocabulary.taken(None))
        kernels = getattr(self.vocabulary, "kernels", None)
        prefetched = {a: functools.partial(_mapped_columns, jobs, self.pool, terms, a, kernels)
                      for a, jobs in self.pending.items() if self.pool is not None}
        prefetched["java"] = functools.partial(_sorted_columns, self.vocabulary)
        self.pending, self.pool = {}, None
        return TermCounts(matrix, terms, prefetched)


def _sorted_columns(vocabulary) -> tuple[LazyTerms, np.ndarray]:
    """column_targets(terms, "java") from the vocabulary: its terms sorted (in compiled loops
    when it has them) and made into str when read, and each id's place among them (-1 for a
    number group counted whole, which java terms split)."""
    order = vocabulary.order()
    codes, at = vocabulary.packed()
    if not np.isin(codes, _SEPARATOR_CODES).any():
        return LazyTerms(vocabulary.taken(order)), ranks(order)
    inside = np.concatenate([[0], np.cumsum(np.isin(codes, _SEPARATOR_CODES))])
    number = inside[at[1:]] > inside[at[:-1]]  # a term holding a separator
    kept = order[~number[order]]
    target = np.full(order.size, -1, dtype=np.int64)
    target[kept] = np.arange(kept.size)
    return LazyTerms(vocabulary.taken(kept)), target


AHEAD = 1 << 15  # new terms that make a mapping job while the merge goes on (map_ahead)
_SEPARATOR_CODES = np.array([ord(c) for c in NUMBER_SEPARATORS], dtype=np.uint32)


def _mapped_part(codes: np.ndarray, at: np.ndarray, analyzer: str):
    """`analyzer`'s term filter applied to packed terms: the terms it keeps, mapped and
    packed (codes, at), and which it keeps (a bool per term)."""
    mapped = mapped_terms(analyzer, PackedTerms(codes, at).strings())
    keep = np.fromiter((m is not None for m in mapped), dtype=bool, count=len(mapped))
    kept = PackedTerms.of([m for m in mapped if m is not None])
    return kept.codes, kept.at, keep


def _mapped_columns(jobs: list[Future], pool: Executor, terms: list[str], analyzer: str,
                    kernels=None):
    """The column targets of `terms` (in id order) from the mapped parts that `jobs`
    computed in id order; computed here if a job failed (e.g. its worker was killed). Then
    `pool` is shut down (its processes gone: the next build may fork again)."""
    try:
        parts = [job.result() for job in jobs]
    except Exception:  # noqa: BLE001  (the same work here gives the answer or the real error)
        return column_targets(terms, analyzer)
    finally:
        pool.shutdown(wait=True)
    mapped = PackedTerms.joined([PackedTerms(codes, at) for codes, at, _ in parts])
    keep = np.concatenate([keep for _, _, keep in parts])
    return _packed_columns(mapped, keep, kernels)


def _packed_columns(mapped: PackedTerms, keep: np.ndarray, kernels):
    """column_targets' answer from the mapped terms of the kept ones: in compiled loops (the
    vocabulary's look-up and sort: no str made of each term), else as column_targets."""
    if kernels is None:
        strings = iter(mapped.strings())
        return _columns([next(strings) if k else None for k in keep.tolist()])
    vocabulary = _PackedVocabulary(kernels)
    ids = vocabulary.ids(mapped)
    order = vocabulary.order()
    target = np.full(keep.size, -1, dtype=np.int64)
    target[keep] = ranks(order)[ids]
    return LazyTerms(vocabulary.taken(order)), target


class _Vocabulary:
    """term -> id in order of first appearance, a dict of str."""

    def __init__(self):
        self.id_of: defaultdict[str, int] = defaultdict()
        self.id_of.default_factory = self.id_of.__len__

    @property
    def n(self) -> int:
        return len(self.id_of)

    def ids(self, terms: Sequence[str]) -> np.ndarray:
        """The ids of `terms` (new ones added)."""
        if isinstance(terms, PackedTerms):
            terms = terms.strings()
        return np.fromiter(map(self.id_of.__getitem__, terms), dtype=np.int32,
                           count=len(terms))

    def strings(self) -> list[str]:
        """The terms in id order."""
        return list(self.id_of)

    def packed(self, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The terms in id order from id `start` as code points (PackedTerms' codes, at)."""
        packed = PackedTerms.of(list(islice(self.id_of, start, None)))
        return packed.codes, packed.at

    def order(self) -> np.ndarray:
        """The ids in the terms' sorted order."""
        return str_order(self.strings())

    def taken(self, order: np.ndarray | None) -> Callable[[], list[str]]:
        """The terms taken in `order` (None: in id order), made when called (what it takes
        kept till then, not the vocabulary)."""
        strings = self.strings()
        if order is None:
            return lambda: strings
        return lambda: list(map(strings.__getitem__, order.tolist()))


class _PackedVocabulary:
    """The same ids, kept as code points in compiled loops (tokens_numba's merge_terms and
    term_order): a batch's terms are looked up without a str made of each or a Python call
    per term (at 1M chunks the dict's look-ups were ten seconds of the build's one process)."""

    def __init__(self, kernels):
        self.kernels, self.n = kernels, 0
        self.size = kernels.FIRST_SLOTS  # the table's slots in use, of self.slots
        self.slots = np.full(self.size, -1, dtype=np.int32)
        self.hashes = np.empty(0, dtype=np.uint64)
        self.at = np.zeros(1, dtype=np.int64)
        self.pool = np.empty(0, dtype=np.uint32)

    def ids(self, terms: Sequence[str]) -> np.ndarray:
        packed = terms if isinstance(terms, PackedTerms) else PackedTerms.of(terms)
        self._reserve(len(packed), packed.codes.size)
        ids = np.empty(len(packed), dtype=np.int32)
        self.n, self.size, _ = self.kernels.merge_terms(
            np.require(packed.codes, np.uint32, "CW"), np.require(packed.at, np.int64, "CW"),
            self.slots, self.size, self.hashes, self.at, self.pool, self.n, ids,
            np.empty(len(packed), dtype=np.uint64))
        return ids

    def _reserve(self, terms: int, codes: int) -> None:
        """Room for `terms` more terms of `codes` code points in all (doubling)."""
        if self.n + terms + 1 > self.at.size:
            size = max(self.n + terms + 1, 2 * self.at.size)
            self.at = _grown(self.at, size, self.n + 1)
            self.hashes = _grown(self.hashes, size, self.n)
            self.slots = _grown(self.slots, self.kernels.room(size), self.size)
        used = int(self.at[self.n])
        if used + codes > self.pool.size:
            self.pool = _grown(self.pool, max(used + codes, 2 * self.pool.size), used)

    def packed(self, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The terms in id order from id `start` (codes, at: at[0] is where they start)."""
        return self.pool[:self.at[self.n]], self.at[start:self.n + 1]

    def strings(self) -> list[str]:
        return PackedTerms(*self.packed()).strings()

    def order(self) -> np.ndarray:
        """The sorted order, in compiled loops."""
        return self.kernels.term_order(*self.packed())

    def taken(self, order: np.ndarray | None) -> PackedTerms:
        """The terms taken in `order` (None: in id order), packed (LazyTerms makes them str)."""
        packed = PackedTerms(*self.packed())
        return packed if order is None else packed.taken(order)


def _grown(array: np.ndarray, size: int, used: int) -> np.ndarray:
    out = np.empty(size, dtype=array.dtype)
    out[:used] = array[:used]
    return out


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


def column_targets(terms: list[str], analyzer: str) -> tuple[list[str], np.ndarray]:
    """The sorted terms that `analyzer`'s term filter maps `terms` to, and for each of
    `terms` its new column (-1: dropped); java's keeps every term: its sorted order."""
    return _columns(mapped_terms(analyzer, terms))


def _columns(mapped: list[str | None]) -> tuple[list[str], np.ndarray]:
    """The distinct terms of `mapped` sorted, and each one's column (None: -1)."""
    column = dict.fromkeys(sorted(filter(None, mapped)))  # sorted terms have mostly sorted
    kept = list(column)  # stems, whose runs Python's sort finds
    column = dict(zip(kept, range(len(kept))))
    column[None] = -1
    target = np.fromiter(map(column.__getitem__, mapped), dtype=np.int64, count=len(mapped))
    return kept, target


def reanalyze(counts: TermCounts, analyzer: str) -> TermCounts:
    """The counts under `analyzer`, columns in its sorted term order: each java column
    merged into its filtered term's column or dropped (its term filter: `term -> term |
    None`); java's only puts the columns in order."""
    import scipy.sparse as sp
    terms, target = counts.targets(analyzer)
    if get_term_filter(analyzer) is None and target.min(initial=0) >= 0:
        m = counts.matrix
        if np.array_equal(target, np.arange(target.size)):
            return TermCounts(m, terms)
        return TermCounts(sp.csr_matrix((m.data, target[m.indices].astype(np.int32), m.indptr),
                                        shape=m.shape), terms)
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
