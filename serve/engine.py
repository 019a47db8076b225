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
from dataclasses import dataclass
from typing import TypeVar

from .. import index as indexing
from .. import search as searching
from ..crawler import Document
from ..index.chunking import chunker_label
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


@dataclass(frozen=True)
class Found:
    """Hits of one search after the floor, with the floor used and why nothing matched."""

    hits: list[searching.Hit]
    floor: float | None
    note: str = ""
    build: str = ""


def fusion_for(method: str, min_score: float | None) -> searching.FusionSettings | None:
    """Hybrid's settings (`hybrid`, `hybrid:NAME`) as `busca search` uses them by default: a
    hybrid hit must pass a component's calibrated floor unless a min_score is given."""
    if not indexing.is_hybrid(method):
        return None
    return searching.FusionSettings(floors=min_score is None)


class Engine:
    """Answers queries on the live build of `location`; safe to call from many threads."""

    def __init__(self, location, *, log_queries: bool = True, embed: dict | None = None):
        self.location = location
        self.embed = dict(embed or {})  # openai:MODEL server settings (busca serve --embed-*)
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
                ranker.embed("aquecimento")  # some encoders load their tables lazily
                if hasattr(ranker, "prepare"):
                    ranker.prepare()  # the local int8 copy of a large index (index/vectors.py)
                self._encoders[key] = ranker.encoder
        for method in searching.available_methods(index):
            ranker = searching.scorer(index, method)
            if not indexing.is_dense(method) and hasattr(ranker, "prepare"):
                ranker.prepare()  # a large index's window tables and codes (index/maxscore.py)
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
    def search(self, query: str, *, method: str, k: int, min_score: float | None = None,
               per_doc: int = 0, log_query: bool | None = None) -> Found:
        """Hits as `busca search --json` prints them (same floor rules); `log_query`: record
        the question in the query log (None: as the server was started, --no-log or not)."""
        def work(live: Live) -> Found:
            fusion = fusion_for(method, min_score)
            searching.scorer(live.index, method, fusion)  # UnknownMethod before anything else
            floor = min_score if min_score is not None else searching.floor_of(live.index, method)
            started, note = time.perf_counter(), ""
            try:
                hits = searching.collapse.search(live.index, self.home(), query, method=method,
                                                 k=k, per_doc=per_doc, fusion=fusion)
            except searching.NoSearchableTerms as e:
                hits, note = [], str(e)
            self._log("search", query, method, k, hits, floor, started, log_query)
            kept = [h for h in hits if floor is None or h.score >= floor]
            return Found(kept, floor, note, live.build)

        return self.run(work)

    def compare(self, query: str, *, methods: list[str] | None, k: int, per_doc: int = 0):
        """The methods side by side (search.compare) and the build it ran on."""
        def work(live: Live):
            chosen = methods or searching.default_methods(live.index)
            return searching.compare_methods(live.index, self.home(), query, methods=chosen,
                                             k=k, per_doc=per_doc), live.build

        return self.run(work)

    def context(self, question: str, *, method: str, k: int, max_chars: int,
                min_score: float | None = None, per_doc: int = searching.CONTEXT_PER_DOC,
                log_query: bool | None = None):
        """What `busca context` finds, a search.Context, and the build it ran on
        (`log_query` as in `search`)."""
        def work(live: Live):
            fusion = fusion_for(method, min_score)
            searching.scorer(live.index, method, fusion)
            started = time.perf_counter()
            found = searching.build_context(live.index, self.home(), question, method=method,
                                            k=k, max_chars=max_chars, min_score=min_score,
                                            fusion=fusion, per_doc=per_doc)
            self._log("context", question, method, k, found.hits, found.floor, started,
                      log_query)
            return found, live.build

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

    def _log(self, command, query, method, k, hits, floor, started, wanted=None) -> None:
        if self.log_queries if wanted is None else wanted:
            searching.querylog.log_call(self.home(), command=command, query=query,
                                        method=method, k=k, scores=[h.score for h in hits],
                                        floor=floor, started=started)

    # --- writes (only with --token) ----------------------------------------------------
    def add(self, documents: list[Document]) -> dict:
        """Store documents as `busca add` does; counts of added/updated/unchanged."""
        counts = {"added": 0, "updated": 0, "unchanged": 0}
        with self._writing:
            home = self.home()
            for doc in documents:
                counts[home.put(doc)] += 1
            return {**counts, "documents": home.count()}

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
            names, models, _, entries = indexing.methods_for(home, lexical, dense=None)
            return indexing.build_index(
                home, size=size or chunker.get("size") or indexing.SIZE,
                overlap=overlap if overlap is not None else chunker.get("overlap",
                                                                        indexing.OVERLAP),
                methods=names, options=self._build_options(home, models, entries))
        finally:
            self._writing.release()

    def _build_options(self, home, models, entries: dict) -> dict:
        """`busca index`'s options for the kept dense models (their servers, as the CLI)."""
        options: dict = {"workers": 1}
        if models:
            servers = {m.name: indexing.server_settings(entries.get(m.name, {}), **self.embed)
                       for m in models if m.encoder.startswith(indexing.OPENAI_PREFIX)}
            options.update(dense_models=models, servers=servers,
                           vector_cache=getattr(home, "home", None))
        return options
