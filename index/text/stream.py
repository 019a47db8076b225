"""Chunk the store's documents into word windows and count their terms in one streaming pass.

Documents are read in batches (from a local store, each worker process reads its own URL
range: no text passes through the main process); each batch is cut into windows and
tokenised in a worker process (all cores), and the main process merges the batches in order,
so memory holds the compact results (spans, term counts) and never all the texts. The windows
are exactly those of `chunking.chunk_words` (tests/index/test_index_stream.py checks it); a document
unchanged since the previous build keeps its previous chunk spans.
"""

from __future__ import annotations

import bisect
import ctypes
import gc
import itertools
import os
import re
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing import get_all_start_methods, get_context

import numpy as np

from ...crawler.store import Document, StoreError
from .. import compiled, machine
from ..home.documents import DocumentRanges
from .chunking import JAVA_SPACE, splits_like_java, window_starts, words
from .chunks import ChunkColumns
from .counting import CountedBatch, CountMerger, TermCounts, count_pieces
from .tokens import compiled_batch, warm_up

BATCH_DOCS = 2000
BATCH_CHARS = 4_000_000
STEP = 100  # documents read at a time into a batch
PARALLEL_MIN_DOCS = 5000  # below this, a worker pool costs more than it saves

_GAP = re.compile(f"[{JAVA_SPACE}]+")

Progress = Callable[[str, int, int], None]
Spans = list[tuple[int, int]]
DocumentText = tuple[str, str, "str | bytes"]  # url, sha256, text (str or UTF-8 bytes)


@dataclass(frozen=True)
class ChunkedBatch:
    """Windows of a batch of documents: per document its words and chunk count; per chunk
    its character span; the chunks' term counts and (if asked) texts."""

    words: np.ndarray
    chunks: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    counts: CountedBatch | None
    texts: list[str] | None


@dataclass
class Chunked:
    """Everything the build needs from the documents: chunk rows, figures, counts, texts."""

    urls: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    per_doc: list[np.ndarray] = field(default_factory=list)
    starts: list[np.ndarray] = field(default_factory=list)
    ends: list[np.ndarray] = field(default_factory=list)
    texts: list[str] | None = None
    counts: TermCounts | None = None
    words: int = 0
    rechunked: int = 0

    @property
    def chunks(self) -> int:
        return int(_joined(self.per_doc).sum())  # one sum: each small one hands the GIL over

    def rows(self) -> ChunkColumns:
        """The chunk rows, ids in order (as columns; iterating gives ChunkRows)."""
        return ChunkColumns(self.urls, self.hashes, _joined(self.per_doc).tolist(),
                            _joined(self.starts).tolist(), _joined(self.ends).tolist())


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.empty(0, np.int64)


def chunk_documents(documents: Iterable[Document | DocumentText] | DocumentRanges, *,
                    size: int, overlap: int, reusable: dict, total: int, count: bool = True,
                    keep_texts: bool = False, workers: int | None = None,
                    analyzers: tuple[str, ...] = (),
                    on_progress: Progress | None = None) -> Chunked:
    """Word windows of every document, with their term counts and, if asked, texts. A
    document is a Document or a (url, sha256, text) tuple whose text may be UTF-8 bytes
    (decoded by the workers); or `documents` are a store's DocumentRanges, which the workers
    read themselves (no text passes through this process). `analyzers`: those the counts
    will be mapped through (TermCounts.targets), computed while the merge finishes."""
    progress = on_progress or (lambda stage, done, total: None)
    workers = default_workers() if workers is None else workers
    result = Chunked(texts=[] if keep_texts else None)
    tasks = (_ranges(documents, reusable) if isinstance(documents, DocumentRanges)
             else _batches(documents, reusable, result))
    job = dict(size=size, overlap=overlap, count=count, keep_texts=keep_texts,
               use_compiled=total >= compiled.MIN_DOCUMENTS
               and compiled.for_build("tokens_numba") is not None)
    kernels = compiled.module("tokens_numba") if job["use_compiled"] else None
    merger = CountMerger(documents=total, kernels=kernels, analyzers=analyzers) if count else None
    done = 0
    mapping = merger is not None and bool(merger.analyzers)
    for batches, read in _run(tasks, job, workers if total >= PARALLEL_MIN_DOCS else 1,
                              merger.prefetch if mapping else None,
                              merger.map_ahead if mapping else None):
        if read is not None:  # the documents a worker read: its range of the store
            result.urls.extend(read[0])
            result.hashes.extend(read[1])
            result.rechunked += read[2]
        for batch in batches:
            result.words += int(batch.words.sum())
            result.per_doc.append(batch.chunks)
            result.starts.append(batch.starts)
            result.ends.append(batch.ends)
            if merger is not None:
                merger.add(batch.counts, documents=batch.chunks.size)
            if keep_texts:
                result.texts.extend(batch.texts)
            done += batch.chunks.size
        progress("chunking and counting terms", done, total)
    if merger is not None and merger.rows:
        result.counts = merger.result()
    return result


def default_workers() -> int:
    """Worker processes for tokenising: one per core."""
    return machine.cores()


def _batches(documents: Iterable, reusable: dict, result: Chunked):
    """Lists of (text, previous spans or None), recording urls, hashes and reuse. Documents
    are taken STEP at a time (list work in C) until a batch is full."""
    documents = iter(documents)
    texts: list = []
    spans: list = []
    chars = 0
    while True:
        step = list(itertools.islice(documents, min(STEP, BATCH_DOCS - len(texts))))
        if step and isinstance(step[0], Document):
            step = [(d.url, d.sha256, d.text) for d in step]
        if step:
            urls, hashes, step_texts = zip(*step)
            result.urls.extend(urls)
            result.hashes.extend(hashes)
            old = [_previous(reusable, u, h) for u, h in zip(urls, hashes)] if reusable \
                else [None] * len(urls)
            result.rechunked += old.count(None)
            texts.extend(step_texts)
            spans.extend(old)
            chars += sum(map(len, step_texts))
        if texts and (not step or len(texts) >= BATCH_DOCS or chars >= BATCH_CHARS):
            yield list(zip(texts, spans))
            texts, spans, chars = [], [], 0
        if not step:
            return


def _previous(reusable: dict, url: str, sha256: str) -> Spans | None:
    old = reusable.get(url)
    return [(r.start, r.end) for r in old[1]] if old and old[0] == sha256 else None


@dataclass(frozen=True)
class _Range:
    """Range `index` of a store's documents, which the worker reads itself; `previous`: url
    -> (sha256, spans) of the documents in it whose spans may be reused."""

    ranges: DocumentRanges
    index: int
    previous: dict


def _ranges(ranges: DocumentRanges, reusable: dict) -> Iterator[_Range]:
    urls = sorted(reusable)
    for i in range(len(ranges)):
        lo = bisect.bisect_left(urls, ranges.starts[i]) if i else 0
        hi = bisect.bisect_left(urls, ranges.starts[i + 1]) if i + 1 < len(ranges) else len(urls)
        yield _Range(ranges, i, {u: (reusable[u][0], [(r.start, r.end) for r in reusable[u][1]])
                                 for u in urls[lo:hi]})


def chunk_task(task: list | _Range, **job) -> tuple[list[ChunkedBatch], tuple | None]:
    """`chunk_batch` of a batch (None: nothing read), or of a store range read here in
    batches of BATCH_CHARS at most, with (urls, hashes, documents chunked again)."""
    if not isinstance(task, _Range):
        return [chunk_batch(task, **job)], None
    urls, hashes, batches, docs, chars, again = [], [], [], [], 0, 0
    for url, sha, text in task.ranges.read(task.index):
        old = task.previous.get(url)
        spans = old[1] if old and old[0] == sha else None
        urls.append(url)
        hashes.append(sha)
        docs.append((text, spans))
        again += spans is None
        chars += len(text)
        if chars >= BATCH_CHARS:
            batches.append(chunk_batch(docs, **job))
            docs, chars = [], 0
    if docs or not batches:
        batches.append(chunk_batch(docs, **job))
    return batches, (urls, hashes, again)


def _run(tasks: Iterator, job: dict, workers: int, after: Callable | None = None,
         between: Callable | None = None) -> Iterator[tuple[list[ChunkedBatch], tuple]]:
    """Results of `chunk_task` over the tasks, in order; at most 2 per worker in flight.
    `between(pool)`, each time the caller has taken a result, may give the workers more work
    to do between batches; `after(pool)`, once the caller has taken the last result, gives
    the idle workers more work, and shuts the pool down when it has taken it; otherwise the
    pool closes here."""
    context, between = _fork_context(), between or (lambda pool: None)
    if workers <= 1 or context is None:
        for task in tasks:
            yield chunk_task(task, **job)
        return
    if job["use_compiled"] and job["count"] and not job["keep_texts"]:
        warm_up()  # load the compiled pass once here: every forked worker inherits it
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_setup,
                               initargs=(os.getpid(),))
    pending = []
    try:
        for task in tasks:
            pending.append(pool.submit(chunk_task, task, **job))
            if len(pending) >= 2 * workers:
                yield pending.pop(0).result()
                between(pool)
        while pending:
            yield pending.pop(0).result()
            if pending:
                between(pool)
        if after is not None:
            after(pool)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    if after is None:
        pool.shutdown(wait=True)


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
PR_SET_PDEATHSIG = 1  # Linux prctl: a signal for this process when its parent dies


def _worker_setup(parent: int) -> None:
    _die_with(parent)
    _keep_freed_memory()
    # Ctrl-C at a terminal signals every process of the command: the build's process stops
    # the pool (`_run`); a worker taking it too printed a traceback, or left the pool hanging
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _die_with(parent: int) -> None:
    """In a worker process (Linux): killed when the build's process dies, even by SIGKILL.
    An orphan would wait on its task queue for ever, holding the build lock's file (every
    forked process shares it), so that no build of the home could start again."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the pool's own checks only
        return
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)


def _keep_freed_memory() -> None:
    """In a worker process (glibc): freed memory stays in the process for the next batch.
    glibc otherwise gives every block of a few MB back to the kernel when it is freed, and
    the next batch faults in fresh zeroed pages again: a third of the compiled pass's time
    (a worker's memory stays at its high-water mark instead, about 200 MB at 1M chunks)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)
        libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
    except (OSError, AttributeError):  # another C library: its own policy
        pass


def _fork_context():
    """Forked workers start at once and need no `__main__` guard in the caller's script; only
    a process without other Python threads forks safely. None: work in this process."""
    if "fork" not in get_all_start_methods() or threading.active_count() > 1:
        return None
    return get_context("fork")


def chunk_batch(docs: list[tuple[str, Spans | None]], *, size: int, overlap: int,
                count: bool, keep_texts: bool, use_compiled: bool = False) -> ChunkedBatch:
    """Windows of each (text, previous spans) and the term counts of all of them (through
    index/text/tokens.py's compiled pass if `use_compiled` and numba is there)."""
    with _gc_paused():
        return _chunk_batch(docs, size=size, overlap=overlap, count=count, keep_texts=keep_texts,
                            use_compiled=use_compiled)


@contextmanager
def _gc_paused():
    """The cyclic garbage collector off for a while: a batch makes millions of small acyclic
    objects (words, tuples) that would trigger useless collections (a quarter of the time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _chunk_batch(docs, *, size, overlap, count, keep_texts, use_compiled=False) -> ChunkedBatch:
    if use_compiled and count and not keep_texts:
        done = compiled_batch(docs, size=size, overlap=overlap)
        if done is not None:
            return ChunkedBatch(*done, texts=None)
    docs = [(_decoded(text), old) for text, old in docs]
    n_words, n_chunks, starts, ends, pieces = [], [], [], [], []
    for text, old in docs:
        count_words, spans, chunk_pieces = windows(text, size=size, overlap=overlap)
        if old is not None and old != spans:
            spans, chunk_pieces = old, [_pieces(text[a:b]) for a, b in old]
        n_words.append(count_words)
        n_chunks.append(len(spans))
        starts.extend(a for a, _ in spans)
        ends.extend(b for _, b in spans)
        pieces.extend(chunk_pieces)
    return ChunkedBatch(np.array(n_words, dtype=np.int64), np.array(n_chunks, dtype=np.int64),
                        np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64),
                        count_pieces(pieces) if count else None,
                        [" ".join(p) for p in pieces] if keep_texts else None)


def _decoded(text: str | bytes) -> str:
    if isinstance(text, str):
        return text
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as e:
        raise StoreError(f"a document's text in the store is not valid UTF-8 ({e}): add or"
                         " crawl that document again") from None


def windows(text: str, *, size: int, overlap: int) -> tuple[int, Spans, list[list[str]]]:
    """Word count, window spans and each window's words, as `chunk_words` cuts them."""
    if not splits_like_java(text):
        spans = words(text)
        ws = [text[a:b] for a, b in spans]
        offsets = [a for a, _ in spans]
    else:
        ws = text.split()
        offsets = None
    n = len(ws)
    starts = window_starts(n, size=size, overlap=overlap) if n else []
    if offsets is None and len(starts) > 1:
        offsets = _offsets(text, ws)
    spans, pieces = [], []
    for s in starts:
        e = min(s + size, n) - 1
        if offsets is None:  # one window over the whole (stripped) text
            spans.append((len(text) - len(text.lstrip()), len(text.rstrip())))
        else:
            spans.append((offsets[s], offsets[e] + len(ws[e])))
        pieces.append(ws[s:e + 1])
    return n, spans, pieces


def _offsets(text: str, ws: list[str]) -> list[int]:
    """Character offset of each word, from word and gap lengths (fast-path texts only)."""
    lead = len(text) - len(text.lstrip())
    gaps = _GAP.findall(text, lead, len(text.rstrip()))
    steps = np.empty(len(ws), dtype=np.int64)
    steps[0] = lead
    steps[1:] = np.fromiter(map(len, ws[:-1]), np.int64, len(ws) - 1) + \
        np.fromiter(map(len, gaps), np.int64, len(gaps))
    return np.cumsum(steps).tolist()


def _pieces(text: str) -> list[str]:
    """The words of a span of text (Java split)."""
    if not splits_like_java(text):
        return [text[a:b] for a, b in words(text)]
    return text.split()
