"""The server's view of one home: the live build, swapped when `busca index` publishes a new
one, and the few library calls the API makes (search, compare, context, chunk, add,
rebuild). This is the only module of `serve/` that queries a build or writes to the home.

Swap without failed requests: every request asks the home for its current build's manifest
(local homes: the `CURRENT` pointer and one small JSON file); when it differs from the one
loaded — another build, or new calibrated floors — the first request to notice loads the new
build (reusing the dense encoder already in memory) and every later request uses it. A request
that ran on a build swapped out meanwhile is run again on the new one.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from .. import index as indexing
from .. import search as searching
from ..corpus import (WARM_UP, ContextSpec, Corpus, Result, SearchSpec, context_build,
                      prepare, reranker, search_build)
from ..index.dense.rerank_api import RerankError, RerankSettings
from ..crawler import Document
from ..index.text.chunking import chunker_label
from .errors import BuildRunning

log = logging.getLogger(__name__)

T = TypeVar("T")
RETRIES = 3  # a request re-run on a newer build at most this many times
RETRY_ON = (searching.StaleIndex, indexing.IndexFormatError, indexing.IndexNotFound, OSError,
            sqlite3.Error)


@dataclass(frozen=True)
class Live:
    """One loaded build."""

    index: object  # an index.Build
    manifest: indexing.Manifest

    @property
    def build(self) -> str:
        return self.manifest.build


class Engine:
    """Answers queries on the live build of `location`; safe to call from many threads."""

    def __init__(self, location, *, log_queries: bool = True, embed: dict | None = None,
                 rerank: RerankSettings | None = None):
        self.location = location
        self.embed = dict(embed or {})  # openai:MODEL server settings (busca serve --embed-*)
        self.rerank = rerank  # the re-ranking stage (busca serve --rerank), if any
        self.log_queries = log_queries
        self._live: Live | None = None
        self._swap = threading.Lock()
        self._writing = threading.Lock()
        self._encoders: dict[str, object] = {}
        self._local = threading.local()

    # --- the live build --------------------------------------------------------------
    def home(self) -> indexing.Home:
        """This thread's handle on the home (SQLite connections stay in one thread)."""
        home = getattr(self._local, "home", None)
        if home is None:
            home = self._local.home = indexing.open_home(self.location, embed=self.embed)
        return home

    def live(self) -> Live:
        """The build the home serves now, loaded once; IndexNotFound if there is none."""
        for attempt in range(RETRIES + 1):
            try:
                return self._live_now()
            except RETRY_ON:  # read while `busca index` swapped builds and removed the old one
                if attempt == RETRIES:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def last_build(self) -> str | None:
        """The build loaded last (None before the first), without asking the home."""
        return self._live.build if self._live is not None else None

    def _live_now(self) -> Live:
        current = self.home().current()
        live = self._live
        if live is not None and live.manifest == current.manifest:
            return live
        with self._swap:
            if self._live is None or self._live.manifest != current.manifest:
                started = time.perf_counter()
                self._warm(current)
                self._live = Live(current, current.manifest)
                log.info("serving build %s (%d chunks), loaded in %.0f ms", current.manifest.build,
                         current.manifest.chunks, 1000 * (time.perf_counter() - started))
            return self._live

    def _warm(self, index) -> None:
        """Load every ranker and the chunk table now; each dense model reuses the encoder
        already in memory (the build's own dense ranker: exact in memory on a local home,
        pgvector on a PostgreSQL one), so no request loads one."""
        for method in index.methods:
            if indexing.is_dense(method):
                entry = index.manifest.entry(method)
                key = (method, entry["encoder"], entry["dimension"])
                ranker = index.ranker(method, encoder=self._encoders.get(key))
                ranker.embed(WARM_UP)  # some encoders load their tables lazily
                prepare(ranker)
                self._encoders[key] = ranker.encoder
        for method in searching.available_methods(index):
            if not indexing.is_dense(method):
                prepare(searching.scorer(index, method))
        index.chunks([0])  # opens the build's chunk table while its files surely exist

    def run(self, work: Callable[[Live], T]) -> T:
        """`work(live)`, run again on the newer build if `busca index` swapped it meanwhile."""
        for attempt in range(RETRIES + 1):
            live = self.live()
            try:
                result = work(live)
            except RETRY_ON:
                if attempt < RETRIES and self._swapped(live):
                    continue
                raise
            if attempt == RETRIES or not self._swapped(live):
                return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _swapped(self, live: Live) -> bool:
        try:
            return self.home().current().manifest != live.manifest
        except (indexing.IndexNotFound, indexing.IndexFormatError):
            return False

    # --- queries ---------------------------------------------------------------------
    def search(self, query: str, spec: SearchSpec | None = None, /, *,
               log_query: bool | None = None, rerank: bool | None = None,
               **options) -> Result:
        """Hits as `busca search --json` prints them (the same use case); options as
        `Corpus.search`; `log_query`: record the question in the query log (None: as the
        server was started, --no-log or not); `rerank`: re-rank (None: when started with
        --rerank)."""
        spec = replace(spec or SearchSpec(), **options, log=self._logs(log_query),
                       rerank=self.reranking(rerank))

        def work(live: Live) -> Result:
            searching.scorer(live.index, spec.method, spec.fusion_settings(spec.min_score))
            return search_build(live.index, self.home(), query, spec)  # UnknownMethod first

        return self.run(work)

    def compare(self, query: str, *, methods: list[str] | None, k: int, per_doc: int = 0,
                rerank: bool | None = None, filters: tuple = ()):
        """The methods side by side (search.compare) and the build it ran on (`rerank` as
        in `search`: a METHOD+rerank column after each method; `filters`: only the chunks
        of the documents passing them)."""
        settings = self.reranking(rerank)

        def work(live: Live):
            chosen = methods or searching.default_methods(live.index)
            allowed = searching.allowed(live.index, self.home(), filters) if filters else None
            return searching.compare_methods(live.index, self.home(), query, methods=chosen,
                                             k=k, per_doc=per_doc, rerank=reranker(settings),
                                             allowed=allowed), live.build

        return self.run(work)

    def context(self, question: str, spec: ContextSpec | None = None, /, *,
                log_query: bool | None = None, rerank: bool | None = None,
                **options) -> tuple[searching.Context, str]:
        """What `busca context` finds, a search.Context, and the build it ran on (options
        as `Corpus.context`, `log_query` and `rerank` as in `search`)."""
        spec = replace(spec or ContextSpec(), **options, log=self._logs(log_query),
                       rerank=self.reranking(rerank))

        def work(live: Live):
            searching.scorer(live.index, spec.method, spec.fusion_settings(spec.min_score))
            return context_build(live.index, self.home(), question, spec), live.build

        return self.run(work)

    def chunk(self, chunk_id: int) -> searching.Hit | None:
        """One chunk of the live build with its text and source, or None."""
        def work(live: Live):
            if not 0 <= chunk_id < live.manifest.chunks:
                return None
            hits = searching.hits_for(live.index, self.home(), [chunk_id], [0.0], "")
            return hits[0] if hits else None

        return self.run(work)

    def stats(self) -> dict:
        """The figures of `busca stats --json`."""
        return self.live().manifest.figures()

    def methods(self) -> list[str]:
        return searching.available_methods(self.live().index)

    def analyzer(self, method: str) -> str:
        """The analyzer whose terms explain `method`'s hits (for highlighting)."""
        return searching.highlight.analyzer_for(self.live().manifest.methods, method)

    def describe_items(self, items: list[str], chunker: str) -> dict[str, tuple]:
        """Run-file items (`url#position` or a URL) -> (title, url, chunk text or None); the
        text only when the live build was cut by the same chunker as the run."""
        home, rows = self.home(), {}
        try:
            live = self.live()
        except (indexing.IndexNotFound, indexing.IndexFormatError):
            live = None
        if live is not None and chunker == chunker_label(live.manifest.chunker):
            wanted = set(items)
            rows = {key: row for row in live.index.chunks()
                    if (key := f"{row.url}#{row.position}") in wanted}
        out = {}
        for item in items:
            url, sep, position = item.rpartition("#")
            url = url if sep and position.isdigit() else item
            doc, row = home.get(url), rows.get(item)
            text = doc.text[row.start:row.end] if doc is not None and row is not None else None
            out[item] = (doc.title if doc is not None else url, url, text)
        return out

    def reranking(self, wanted: bool | None) -> RerankSettings | None:
        """The re-ranking settings of a request: the server's unless it asks for none."""
        if wanted and self.rerank is None:
            raise RerankError("this busca serve re-ranks nothing: start it with --rerank"
                              " KIND:MODEL --rerank-url URL, or drop rerank")
        return self.rerank if wanted is not False else None

    def _logs(self, wanted: bool | None) -> bool:
        return self.log_queries if wanted is None else wanted

    # --- writes (only with --token) ----------------------------------------------------
    def add(self, documents: list[Document]) -> dict:
        """Store documents as `busca add` does; counts of added/updated/unchanged."""
        with self._writing:
            home = self.home()
            return {**Corpus(home).add(documents), "documents": home.count()}

    def rebuild(self, *, size: int | None = None, overlap: int | None = None):
        """`busca index` with the live build's chunker and methods (dense kept); the new
        manifest. BuildRunning (409) while another rebuild runs."""
        if not self._writing.acquire(blocking=False):
            raise BuildRunning()
        try:
            home = self.home()
            previous = home.previous()
            chunker = previous.manifest.chunker if previous is not None else {}
            lexical = [m for m in (previous.manifest.methods if previous is not None
                                   else indexing.DEFAULT)
                       if not (indexing.is_dense(m) or indexing.is_hybrid(m))]
            return Corpus(home, embed=self.embed).index(
                size=size or chunker.get("size") or indexing.SIZE,
                overlap=overlap if overlap is not None else chunker.get("overlap",
                                                                        indexing.OVERLAP),
                methods=lexical, options={"workers": 1})
        finally:
            self._writing.release()
