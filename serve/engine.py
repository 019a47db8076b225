"""The server's view of one corpus home: the live build, swapped when `busca index` publishes
a new one, and the few library calls the API makes (search, compare, context, chunk, add,
rebuild). This is the only module of `serve/` that calls index/ and search/.

Swap without failed requests: every request reads the `CURRENT` pointer (one small file);
when it names another build, the first request to notice loads it (reusing the loaded dense
encoder, so no model is reloaded) and every later request uses it. A request that ran on a
build swapped out meanwhile — its chunk rows may already be gone — is run again on the new one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..crawler.store import Document, Store
from ..index import build as index_build
from ..index import dense as index_dense
from ..index import storage
from ..index.chunking import chunker_label
from ..search import collapse, core, highlight, querylog
from ..search import compare as search_compare
from ..search import context as answer_context
from ..search import dense as search_dense
from ..search import fusion
from ..search.lexical import NoSearchableTerms
from .errors import BuildRunning

log = logging.getLogger(__name__)

T = TypeVar("T")
RETRIES = 3  # a request re-run on a newer build at most this many times


@dataclass(frozen=True)
class Live:
    """One loaded build: `plain` ranks as `busca search --min-score X` does; `floored` is the
    same build whose hybrid keeps only hits passing a component's calibrated floor (the CLI's
    default when no --min-score is given)."""

    version: tuple  # (folder, manifest mtime): a change means another build or new floors
    plain: storage.Index
    floored: storage.Index

    @property
    def build(self) -> str:
        return self.plain.build

    def index_for(self, method: str, min_score: float | None) -> storage.Index:
        return self.floored if method == fusion.METHOD and min_score is None else self.plain


@dataclass(frozen=True)
class Found:
    """Hits of one search after the floor, with the floor used and why nothing matched."""

    hits: list[core.Hit]
    floor: float | None
    note: str = ""
    build: str = ""


class Engine:
    """Answers queries on the live build of `home`; safe to call from many threads."""

    def __init__(self, home: str | Path, *, log_queries: bool = True):
        self.home = Path(home)
        self.log_queries = log_queries
        self._live: Live | None = None
        self._swap = threading.Lock()
        self._writing = threading.Lock()
        self._encoders: dict[str, object] = {}
        self._local = threading.local()

    # --- the live build --------------------------------------------------------------
    def store(self) -> Store:
        """This thread's connection to the store (SQLite connections stay in one thread)."""
        store = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = Store(self.home)
        return store

    def live(self) -> Live:
        """The build `CURRENT` names now, loaded once (again when its manifest changes, e.g.
        `busca eval --calibrate` stored floors); IndexNotFound if there is none."""
        version = self._version()
        live = self._live
        if live is not None and live.version == version:
            return live
        with self._swap:
            version = self._version()
            if self._live is None or self._live.version != version:
                started = time.perf_counter()
                self._live = self._load(version)
                log.info("serving build %s (%d chunks), loaded in %.0f ms", self._live.build,
                         self._live.plain.manifest["chunks"],
                         1000 * (time.perf_counter() - started))
            return self._live

    def _version(self) -> tuple:
        """What identifies the live build: its folder and its manifest's modification time."""
        path = storage.current_dir(self.home)
        if path is None:
            return (None, 0)
        try:
            return (path, (path / storage.MANIFEST).stat().st_mtime_ns)
        except OSError:
            return (path, 0)

    def _load(self, version: tuple) -> Live:
        plain = storage.load_index(self.home)
        self._warm(plain)
        floored = storage.Index(plain.home, plain.path, plain.manifest,
                                {**plain._arrays, "_scorers": dict(plain._arrays["_scorers"])})
        if fusion.METHOD in core.available_methods(plain):
            for index, floors in ((plain, False), (floored, True)):
                index._arrays["_scorers"].pop(fusion.METHOD, None)
                fusion.configure(index, fusion=fusion.FUSION, window=fusion.WINDOW,
                                 rrf_k=fusion.RRF_K, weights={}, floors=floors)
        return Live(version, plain, floored)

    def _warm(self, index: storage.Index) -> None:
        """Load every scorer now (dense with the encoder already in memory, if any)."""
        cache = index._arrays.setdefault("_scorers", {})
        methods = core.available_methods(index)
        if "dense" in methods:
            entry = index.methods["dense"]
            encoder = self._encoders.get(entry["encoder"])
            cache["dense"] = search_dense.DenseScorer(index, encoder=encoder)
            self._encoders[entry["encoder"]] = cache["dense"].encoder
            cache["dense"].embed("aquecimento")  # the encoder loads its tables lazily
        for method in methods:
            core.scorer(index, method)

    def run(self, work: Callable[[Live], T]) -> T:
        """`work(live)`, run again on the newer build if `busca index` swapped it meanwhile."""
        for attempt in range(RETRIES + 1):
            live = self.live()
            try:
                result = work(live)
            except (core.StaleIndex, storage.IndexFormatError, OSError):
                if attempt < RETRIES and self._swapped(live):
                    continue
                raise
            if attempt == RETRIES or not self._swapped(live):
                return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _swapped(self, live: Live) -> bool:
        return self._version() != live.version

    # --- queries ---------------------------------------------------------------------
    def search(self, query: str, *, method: str, k: int, min_score: float | None = None,
               per_doc: int = 0) -> Found:
        """Hits as `busca search --json` prints them (same floor rules)."""
        def work(live: Live) -> Found:
            index = live.index_for(method, min_score)
            core.scorer(index, method)  # UnknownMethod before anything else
            floor = min_score if min_score is not None else core.floor_of(index, method)
            started, note = time.perf_counter(), ""
            try:
                hits = collapse.search(index, self.store(), query, method=method, k=k,
                                       per_doc=per_doc)
            except NoSearchableTerms as e:
                hits, note = [], str(e)
            self._log("search", query, method, k, hits, floor, started)
            kept = [h for h in hits if floor is None or h.score >= floor]
            return Found(kept, floor, note, live.build)

        return self.run(work)

    def compare(self, query: str, *, methods: list[str] | None, k: int, per_doc: int = 0):
        """The methods side by side (search/compare.py) and the build it ran on."""
        def work(live: Live):
            index = live.plain
            chosen = methods or search_compare.default_methods(index)
            return search_compare.compare(index, self.store(), query, methods=chosen, k=k,
                                          per_doc=per_doc), live.build

        return self.run(work)

    def context(self, question: str, *, method: str, k: int, max_chars: int,
                min_score: float | None = None, per_doc: int = 0):
        """What `busca context` finds: an answer_context.Context."""
        def work(live: Live):
            index = live.index_for(method, min_score)
            core.scorer(index, method)
            started = time.perf_counter()
            found = answer_context.build_context(index, self.store(), question, method=method,
                                                 k=k, max_chars=max_chars, min_score=min_score,
                                                 per_doc=per_doc)
            self._log("context", question, method, k, found.hits, found.floor, started)
            return found

        return self.run(work)

    def chunk(self, chunk_id: int) -> core.Hit | None:
        """One chunk of the live build with its text and source, or None."""
        def work(live: Live):
            if not 0 <= chunk_id < live.plain.manifest["chunks"]:
                return None
            hits = core.hits_for(live.plain, self.store(), [chunk_id], [0.0], "")
            return hits[0] if hits else None

        return self.run(work)

    def stats(self) -> dict:
        """The figures of `busca stats --json`."""
        manifest = self.live().plain.manifest
        figures = {key: manifest[key] for key in ("documents", "words", "chunks")}
        figures["vocabulary"] = {m: e["vocabulary"] for m, e in manifest["methods"].items()
                                 if "vocabulary" in e}
        figures.update(chunker=manifest["chunker"], methods=manifest["methods"],
                       build=manifest["build"], busca_version=manifest["busca_version"])
        return figures

    def methods(self) -> list[str]:
        return core.available_methods(self.live().plain)

    def analyzer(self, method: str) -> str:
        """The analyzer whose terms explain `method`'s hits (for highlighting)."""
        return highlight.analyzer_for(self.live().plain.methods, method)

    def describe_items(self, items: list[str], chunker: str) -> dict[str, tuple]:
        """Run-file items (`url#position` or a URL) -> (title, url, chunk text or None); the
        text only when the live build was cut by the same chunker as the run."""
        store = self.store()
        rows = {}
        try:
            live = self.live()
        except (storage.IndexNotFound, storage.IndexFormatError):
            live = None
        if live is not None and chunker == chunker_label(live.plain.manifest["chunker"]):
            wanted = set(items)
            rows = {key: row for row in store.chunks(live.build)
                    if (key := f"{row.url}#{row.position}") in wanted}
        out = {}
        for item in items:
            url, sep, position = item.rpartition("#")
            url = url if sep and position.isdigit() else item
            doc = store.get(url)
            row = rows.get(item)
            text = doc.text[row.start:row.end] if doc is not None and row is not None else None
            out[item] = (doc.title if doc is not None else url, url, text)
        return out

    def _log(self, command, query, method, k, hits, floor, started) -> None:
        if not self.log_queries:
            return
        scores = [h.score for h in hits]
        answered = any(floor is None or s >= floor for s in scores)
        querylog.record(self.store(), command=command, query=query, method=method, k=k,
                        scores=scores, floor=floor, answered=answered,
                        seconds=time.perf_counter() - started)

    # --- writes (only with --token) ----------------------------------------------------
    def add(self, documents: list[Document]) -> dict:
        """Store documents as `busca add` does; counts of added/updated/unchanged."""
        counts = {"added": 0, "updated": 0, "unchanged": 0}
        with self._writing:
            store = self.store()
            for doc in documents:
                counts[store.put(doc)] += 1
            return {**counts, "documents": store.count()}

    def rebuild(self, *, size: int | None = None, overlap: int | None = None) -> dict:
        """`busca index` with the live build's chunker and methods (dense kept); the manifest.

        BuildRunning if another rebuild is under way."""
        if not self._writing.acquire(blocking=False):
            raise BuildRunning()
        try:
            return self._rebuild(size, overlap)
        finally:
            self._writing.release()

    def _rebuild(self, size: int | None, overlap: int | None) -> dict:
        try:
            manifest = self.live().plain.manifest
            chunker, methods = manifest["chunker"], list(manifest["methods"])
        except storage.IndexNotFound:
            chunker, methods = {}, list(index_build.METHODS)
        options: dict = {"workers": 1}
        encoder = index_dense.previous_encoder(self.home)
        if encoder:
            options["dense"] = encoder
        size = size or chunker.get("size") or index_build.SIZE
        overlap = overlap if overlap is not None else chunker.get("overlap", index_build.OVERLAP)
        return index_build.build_index(self.store(), size=size, overlap=overlap,
                                       methods=methods, options=options)
