"""The server's view of one home: a `Corpus` per server thread, all sharing one live build
(corpus/live.py: swapped when `busca index` publishes a new one, warmed when loaded, a request
caught by a swap run again), and the few library calls the API makes (search, compare,
context, chunk, add, remove, rebuild). This is the only module of `serve/` that queries a build or
writes to the home.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from .. import index as indexing
from .. import search as searching
from ..corpus import (ContextSpec, Corpus, Result, SearchSpec, compare_build, context_build,
                      search_build)
from ..corpus.live import Live, LiveBuild
from ..index.dense.rerank_api import RerankError, RerankSettings
from ..index.text.chunking import chunker_label
from .errors import BuildRunning, public_methods

T = TypeVar("T")


class Engine:
    """Answers queries on the live build of `location`; safe to call from many threads."""

    def __init__(self, location, *, log_queries: bool = True, embed: dict | None = None,
                 rerank: RerankSettings | None = None, warm: bool = True,
                 create: bool = True):
        """`create`: a folder home missing when it is first opened is made (False: a front
        end that only reads, busca mcp, answers HomeNotFound instead of leaving an empty home
        behind, e.g. after the home was removed while it ran; the other threads' handles never
        create it)."""
        self.location, self.create = location, create
        self.embed = dict(embed or {})  # openai:MODEL server settings (busca serve --embed-*)
        self.rerank = rerank  # the re-ranking stage (busca serve --rerank), if any
        self.log_queries = log_queries
        self._live = LiveBuild(warm=warm)  # every ranker loaded before a request needs it
        self._writing, self._opening = threading.Lock(), threading.Lock()
        self._building = False  # a rebuild runs: adds and removes are refused (409)
        self._corpus: Corpus | None = None

    # --- the live build --------------------------------------------------------------
    def corpus(self) -> Corpus:
        """The corpus every thread shares, opened on first use (`Corpus.home` gives each
        thread its own handle: SQLite connections stay in one thread), on the shared build."""
        with self._opening:
            if self._corpus is None:
                home = indexing.open_home(self.location, embed=self.embed, create=self.create)
                self._corpus = Corpus(home, embed=self.embed, live=self._live)
            return self._corpus

    def home(self) -> indexing.Home:
        """This thread's handle on the home."""
        return self.corpus().home

    def live(self) -> Live:
        """The build the home serves now, loaded once; IndexNotFound if there is none."""
        return self._live.current(self.home())

    def damage(self, live: Live) -> str | None:
        """What makes the served build unreadable now, a file or table gone since it was
        loaded (the build's `check`: one folder listing or one catalog query), or None."""
        try:
            live.index.check()
        except (indexing.IndexFormatError, indexing.PostgresError) as e:
            return str(e)
        return None

    def last_build(self) -> str | None:
        """The build loaded last (None before the first), without asking the home."""
        return self._live.last()

    def run(self, work: Callable[[Live], T]) -> T:
        """`work(live)`, run again on the newer build if `busca index` swapped it meanwhile."""
        return self.corpus().run(work)

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

        # the method checked as Corpus.search checks it (dense:NAME resolved, its message)
        return self.run(lambda live: search_build(live.index, self.home(), query, spec))

    def compare(self, query: str, *, methods: list[str] | None, k: int, per_doc: int = 0,
                rerank: bool | None = None, filters: tuple = ()):
        """The methods side by side, as `busca compare` (corpus.compare_build: hybrid as
        search uses it), and the build it ran on (`rerank` as in `search`: a METHOD+rerank
        column after each method; `filters`: only the chunks of the documents passing
        them)."""
        settings = self.reranking(rerank)

        return self.run(lambda live: (compare_build(
            live.index, self.home(), query, methods=methods, k=k, per_doc=per_doc,
            rerank=settings, filters=filters), live.build))

    def context(self, question: str, spec: ContextSpec | None = None, /, *,
                log_query: bool | None = None, rerank: bool | None = None,
                **options) -> tuple[searching.Context, str]:
        """What `busca context` finds, a search.Context, and the build it ran on (options
        as `Corpus.context`, `log_query` and `rerank` as in `search`)."""
        spec = replace(spec or ContextSpec(), **options, log=self._logs(log_query),
                       rerank=self.reranking(rerank))

        return self.run(lambda live: (context_build(live.index, self.home(), question, spec),
                                      live.build))

    def chunk(self, chunk_id: int) -> searching.Hit | None:
        """One chunk of the live build with its text and source, or None."""
        def work(live: Live):
            if not 0 <= chunk_id < live.manifest.chunks:
                return None
            hits = searching.hits_for(live.index, self.home(), [chunk_id], [0.0], "")
            return hits[0] if hits else None

        return self.run(work)

    def stats(self) -> dict:
        """What `busca stats --json` prints (before the first index: the documents and
        "index": null), each method's entry as a client may read it (errors.public_methods:
        no model folder, no model server's URL)."""
        figures = self.corpus().stats()
        if "methods" in figures:
            figures["methods"] = public_methods(figures["methods"])
        return figures

    def model_servers(self) -> list[str]:
        """The URLs of the user's model servers this server may ask, which a client is not
        told (errors.public): --embed-url, each openai:MODEL's of the build loaded last (no
        look at the home), --rerank-url."""
        live = self._live.loaded()
        stored = [(entry.get("server") or {}).get("url")
                  for entry in (live.manifest.methods.values() if live is not None else ())]
        urls = [self.embed.get("url"), *stored, self.rerank.url if self.rerank else None]
        return [url for url in urls if isinstance(url, str) and url]

    def facets(self, filters: tuple = ()) -> dict:
        """Facet counts (search/facets.py) of the documents passing `filters`."""
        return searching.facets(self.home(), filters=filters)

    def methods(self) -> list[str]:
        return searching.available_methods(self.live().index)

    def analyzer(self, method: str) -> str:
        """The analyzer whose terms explain `method`'s hits (for highlighting)."""
        return searching.highlight.analyzer_for(self.live().manifest.methods, method)

    def lang(self) -> str:
        """The language of the indexed texts, as the context prompt speaks it (pt or en)."""
        return searching.prompt_lang(self.live().manifest.methods)

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
    def add(self, documents: list[dict]) -> dict:
        """Store document objects as `Corpus.add` does (a .jsonl line's fields; one without
        groups keeps those of its stored version); counts of added/updated/metadata_updated/
        unchanged. BuildRunning (409) while a rebuild runs: the request is not kept waiting
        (an add or a remove of another request is waited for)."""
        def work():
            added = self.corpus().add(documents)
            return {**added.counts, "documents": added.documents}

        return self._write(work)

    def remove(self, ids: list[str], *, prefix: bool = False) -> dict:
        """Delete documents as `busca remove` does (Corpus.remove); what it did as JSON.
        BuildRunning (409) while a rebuild runs."""
        return self._write(lambda: self.corpus().remove(ids, prefix=prefix).to_json())

    def _write(self, work: Callable[[], T]) -> T:
        """`work()`, one store write at a time (two requests' adds were a 409 saying a build
        ran); BuildRunning while a rebuild runs."""
        with self._writing:
            if self._building:
                raise BuildRunning()
            return work()

    def rebuild(self, *, size: int | None = None, overlap: int | None = None,
                on_note: Callable[[str], None] | None = None):
        """`busca index` with the live build's chunker and methods (dense kept); the new
        manifest; `on_note` hears what the build could not keep, as busca index's stderr.
        BuildRunning (409) while another rebuild runs; an add or a remove in flight is waited
        for."""
        with self._writing:
            if self._building:
                raise BuildRunning()
            self._building = True
        try:
            corpus = self.corpus()
            previous = corpus.home.previous()
            lexical = [m for m in (previous.manifest.methods if previous is not None
                                   else indexing.DEFAULT)
                       if not (indexing.is_dense(m) or indexing.is_hybrid(m))]
            return corpus.index(size=size, overlap=overlap, methods=lexical, workers=1,
                                threads=1, on_note=on_note)  # the requests keep the other cores
        finally:
            with self._writing:
                self._building = False
