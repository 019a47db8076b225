"""`Corpus`: one corpus home (a folder or a postgresql:// URL) and every use case over it."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .. import index as indexing
from ..index.machine import user_cache
from ..errors import BuscaError
from ..search.context import Context
from ..search.scorers import COMPARE_K
from .documents import (Added, Removed, add_documents, add_files, crawl_site,
                        remove_documents)
from .evaluate import Calibrated, EvalSpec, calibrate, evaluate_golden, tune_fusion
from .live import Live, LiveBuild
from .stats import Stats, stats
from .questions import compare_build, context_build, method_names, search_build
from .specs import (BadSpec, ContextSpec, IndexSpec, Result, SearchSpec, UnknownOption,
                    check_embed, with_options)

if TYPE_CHECKING:  # loaded only by the use cases that need them
    from ..crawler.events import CrawlReport
    from ..crawler.options import CrawlOptions
    from ..crawler.store import Document
    from ..index.dense.rerank_api import RerankSettings
    from ..search.compare import Comparison
    from ..search.eval.golden import Golden
    from ..search.eval.harness import Harness
    from ..search.eval.summary import Evaluation

T = TypeVar("T")


class Corpus:
    """One corpus home (a folder or a postgresql:// URL) and every use case over it."""

    def __init__(self, home: indexing.Home, *, embed: Mapping | None = None,
                 live: LiveBuild | None = None):
        self._home, self._owner = home, threading.get_ident()
        self._local = threading.local()  # the home as each other thread opened it
        self._closed = False
        self.embed = dict(embed or {})
        self._own_live = live is None  # its build is let go of at close()
        self.live = live or LiveBuild()  # shared by the corpora of one server's threads

    def __repr__(self) -> str:
        return f"Corpus({indexing.redact(self.location)!r}{', closed' if self._closed else ''})"

    @property
    def home(self) -> indexing.Home:
        """The home's handle for this thread: the one given in the thread that made the
        Corpus, opened again in any other (a local store's SQLite connection stays in its
        thread), so that threads can share one Corpus and its loaded build."""
        owner = threading.get_ident() == self._owner
        held = None if owner else getattr(self._local, "held", None)
        if self._closed:  # closed by its owner: no thread goes on, nor answers from the build
            if held is not None:
                self._local.held = None
                held.home.close()
            from ..crawler.store import StoreError

            raise StoreError(f"the corpus {indexing.redact(self.location)} was closed (close()"
                             " or the end of a with block): open the home again (busca.open)")
        if owner:
            return self._home
        if held is None:
            held = self._local.held = _ThreadHome(indexing.open_home(
                self.location, embed=self.embed, create=False))
        return held.home

    @property
    def location(self) -> str:
        return str(self._home.location)

    @property
    def build(self) -> indexing.Build:
        """The live build (IndexNotFound before the first `index`), loaded once: its rankers
        and encoder stay in memory across calls, and a newer build (`busca index` here or in
        another process, new floors) replaces it at the next call, as in `busca serve`."""
        return self.live.current(self.home).index

    def run(self, work: Callable[[Live], T]) -> T:
        """`work(live)` on the live build, run again if a newer one replaced it meanwhile."""
        return self.live.run(self.home, work)

    def warm(self) -> None:
        """Load every method's ranker (and encoder) now, so no question waits for them."""
        self.live.warm_up(self.build)

    def close(self) -> None:
        """Close the home. Closed by the thread that made the Corpus, it is closed for every
        thread (their own handles close at their next call, which is an error, or with the
        thread); closed by another thread, only that thread's handle closes."""
        self._close(None, None, None)

    def _close(self, *exc) -> None:
        """`close`, the home closed as a with block ending with `exc` (LocalHome: one this
        open created that holds nothing after an error is not kept)."""
        if threading.get_ident() != self._owner:
            held = getattr(self._local, "held", None)
            self._local.held = None
            if held is not None:
                held.home.close()
        elif not self._closed:  # (a second close does nothing)
            self._closed = True
            self._home.__exit__(*exc)
            if self._own_live:  # its arrays, chunk table and encoders: no file left open
                self.live = LiveBuild()

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc) -> None:
        self._close(*exc)

    def __reduce__(self):
        """Pickled (sent to a worker process) or copied: the same home opened again, with
        its own handle (an SQLite connection cannot be pickled, nor shared)."""
        return _reopen, (self.location, self.embed)

    # --- documents -------------------------------------------------------------------
    def add(self, documents: Iterable[Document | dict]) -> Added:
        """Store documents (a URL already stored is replaced): how many were added, updated,
        updated in their metadata alone or unchanged, or repeated in the list (`duplicate`:
        one URL, in any spelling, given twice; the last kept, as `busca add` counts it), and
        the documents in the home. A dict is read as a .jsonl line and a POST /api/documents
        item are (its groups kept when it gives none: `add_documents`). Every document is
        checked before the first is stored (BadDocument: none stored)."""
        return add_documents(self.home, documents)

    def add_files(self, paths: Sequence[str | Path], *, groups: Sequence[str] = (),
                  notify: Callable[[str, Any], None] | None = None,
                  on_progress: Callable | None = None) -> Added:
        """`busca add`: .jsonl, .txt, .md, .html (.pdf) files, each stamped with `groups`
        (who may read it); an input it cannot read is an error, or with `notify`, skipped
        and told ("skipped", problem), as the CLI does; `on_progress("storing documents",
        done, 0)` every 1,000 documents."""
        paths = [paths] if isinstance(paths, (str, Path)) else paths  # one file
        return add_files(self.home, paths, groups=groups, notify=notify,
                         on_progress=on_progress)

    def remove(self, ids: str | Path | Iterable[str | Path], *, prefix: bool = False,
               on_progress: Callable | None = None) -> Removed:
        """`busca remove`: delete documents by id (a URL in any spelling, a file path as
        `add_files` names it, a .jsonl line's url; with `prefix`, every document under each
        URL or folder) and their crawl state; what was deleted, the ids that named none, and
        the documents left. The index keeps their chunks until the next `index`.
        `on_progress("removing documents", done, total)` every 1,000 a prefix removes."""
        return remove_documents(self.home, ids, prefix=prefix, on_progress=on_progress)

    def crawl(self, url: str, **options: Any) -> Iterator:
        """The crawl's events (the last one, Finished, has the report); options of
        CrawlOptions."""
        from ..crawler import CrawlOptions, crawl

        return crawl(url, self.home, options=with_options(CrawlOptions(), options))

    def crawl_site(self, url: str, options: CrawlOptions | None = None, *,
                   notify: Callable[[Any], None] | None = None,
                   on_progress: Callable | None = None) -> CrawlReport:
        """`busca crawl`: the site's documents into the home; the crawl's report (`notify`
        and `on_progress` as in corpus.documents.crawl_site)."""
        from ..crawler import CrawlOptions

        return crawl_site(self.home, url, options or CrawlOptions(), notify=notify,
                          on_progress=on_progress)

    def index(self, spec: IndexSpec | None = None, /, *, on_progress: Callable | None = None,
              on_note: Callable[[str], None] | None = None,
              **options: Any) -> indexing.Manifest:
        """`busca index`: chunk the documents in the spec's windows (else the previous
        build's), build the spec's methods (and the dense models
        of `dense`, else the previous build's, with e5-small's `sparse` unless `sparse` is False;
        the titles indexed with the windows for the
        methods `titles` names, else the previous build's) and publish it; its manifest.
        Options as the CLI's (`size`, `overlap`, `methods`, `dense`, `titles`, `threads`, …)."""
        spec = with_options(spec or IndexSpec(), options)
        before, unread = _live_manifest(self.home)
        names, models, kept, entries = indexing.methods_for(self.home, spec.methods,
                                                            dense=spec.dense, sparse=spec.sparse)
        if kept and on_note:
            on_note(f"keeping the dense models {kept} (--dense none drops them)")
            if spec.sparse is None and indexing.sparse_left_out(names, models):
                on_note("this index's hybrid fuses bm25 and dense only: --sparse adds"
                        " e5-small's sparse head from the same pass, and hybrid fuses it"
                        " (measured better on every set: docs/eval.md)")
        if not models and (spec.dense_groups or spec.dense_blend is not None):
            raise BadSpec("dense_groups and dense_blend (--dense-groups, --dense-blend) shape"
                          " dense vectors, and this build has no dense model: add one"
                          " (--dense e5-small) or leave them out")
        built = spec.build_options()
        if models:
            built.update(dense_models=models, servers=self.servers(models, entries),
                         vector_cache=self.vector_cache())
        if spec.titles is not None:
            built["titles"] = indexing.titled_methods(spec.titles, names, indexing.TITLES)
        size, overlap = indexing.window_for(self.home, spec.size, spec.overlap)
        manifest = indexing.build_index(self.home, size=size, overlap=overlap, methods=names,
                                        options=built, on_progress=on_progress)
        if on_note and (spec.size, spec.overlap) == (None, None) \
                and (size, overlap) != (indexing.SIZE, indexing.OVERLAP):
            on_note(f"kept the previous build's windows: {size} words, overlap {overlap}"
                    " (--size and --overlap change them)")
        if on_note:
            for note in _build_notes(before, unread, manifest):
                on_note(note)
        return manifest

    def vector_cache(self) -> Path | None:
        """The folder of the vector cache of openai:MODEL encoders (an interrupted encode
        resumes from it): a local home's own folder; for a PostgreSQL home, the user's cache
        (`$XDG_CACHE_HOME/busca/vectors`: vectors by model, server and text hash, never a text);
        None when there is none to write."""
        local = getattr(self.home, "home", None)
        if local is not None:
            return local
        folder = user_cache()
        try:
            (folder / "vectors").mkdir(parents=True, exist_ok=True)
        except (OSError, TypeError):  # no cache folder (TypeError: None) or not writable
            return None
        return folder / "vectors"

    def servers(self, models, entries: dict) -> dict:
        """Model name -> ServerSettings of each openai:MODEL model: this corpus's embed
        settings over those the previous build stored; fails when there is no URL."""
        servers = {}
        for model in models:
            if model.encoder.startswith(indexing.OPENAI_PREFIX):
                servers[model.name] = indexing.server_settings(entries.get(model.name, {}),
                                                               **self.embed)
                indexing.check_server(model.encoder, servers[model.name])
        return servers

    # --- questions -------------------------------------------------------------------
    def search(self, question: str, spec: SearchSpec | None = None, /,
               **options: Any) -> Result:
        """`busca search`: top-k hits above the floor; options as the CLI's (`method`, `k`,
        `min_score`, `per_doc`, `fusion`, `window`, `rrf_k`, `weights`, `log`)."""
        spec = with_options(_spec(spec, SearchSpec), options)
        return self.run(lambda live: search_build(live.index, self.home, question, spec))

    def context(self, question: str, spec: ContextSpec | None = None, /,
                **options: Any) -> Context:
        """`busca context`: the passages for an LLM prompt (`.answered`, `render`)."""
        spec = with_options(_spec(spec, ContextSpec), options)
        return self.run(lambda live: context_build(live.index, self.home, question, spec))

    def compare(self, question: str, *, methods: Sequence[str] | None = None,
                k: int = COMPARE_K,
                per_doc: int = 0, include: Sequence[int] = (),
                rerank: RerankSettings | None = None, filters: Sequence = (),
                **unknown: Any) -> Comparison:
        """`busca compare`: each method's top k and every hit's rank under each method
        (with `rerank`, a column METHOD+rerank after each; `filters` as search's)."""
        if unknown:  # as search's and context's options: a BuscaError, not a TypeError
            raise UnknownOption(f"unknown option {', '.join(map(repr, unknown))}: compare"
                                " takes methods, k, per_doc, include, rerank, filters")
        return self.run(lambda live: compare_build(
            live.index, self.home, question, methods=methods, k=k, per_doc=per_doc,
            include=include, rerank=rerank, filters=filters))

    def stats(self) -> dict:
        """`busca stats --json`: the build's figures and the documents stored since it
        (`pending`), or the documents without an index, and the metadata's facet counts when
        the documents have metadata."""
        return self.statistics().to_json()

    def statistics(self, *, detail: bool = False) -> Stats:
        """`busca stats`: the figures as a value, with the documents stored since the build
        (`detail`: also each method's settings); read again on the newer build if one
        replaced it meanwhile, as a question is (`run`)."""
        try:
            return self.run(lambda live: stats(self.home, lambda: live.index, detail=detail))
        except indexing.IndexNotFound:  # no index yet: the documents' figures
            return stats(self.home, lambda: self.build, detail=detail)

    # --- evaluation ------------------------------------------------------------------
    def evaluate(self, golden: Golden | str | Path, *, methods: Sequence[str] | None = None,
                 ks: Sequence[int] | None = None, key: str | None = None,
                 by: Sequence[str] | None = None,
                 on_progress: Callable | None = None) -> Evaluation:
        """`busca eval`: recall@k, MRR, nDCG (`.summary[method][metric].mean`) and the
        floors per method on a golden set."""
        from ..search import eval as evaluation

        methods = method_names(methods)  # a list, or "bm25,dense" as compare takes it
        by = [t.strip() for t in by.split(",") if t.strip()] if isinstance(by, str) else by
        if ks is not None:  # as busca eval -k takes them: whole numbers of 1 or more
            ks = evaluation.parse_ks(",".join(map(str, (ks,) if isinstance(ks, (int, str))
                                                  else ks)))
        spec = EvalSpec(methods=tuple(methods) if methods else None, key=key,
                        metrics=tuple(evaluation.default_metrics(tuple(ks))) if ks else (),
                        by=tuple(by) if by else None)
        return self.run_eval(golden, spec, on_progress=on_progress).evaluation

    def run_eval(self, golden: Golden | str | Path, spec: EvalSpec | None = None, *,
                 on_progress: Callable | None = None) -> Harness:
        """`busca eval` with every option (`EvalSpec`): the evaluation and its run."""
        return evaluate_golden(self, _golden(golden), spec or EvalSpec(),
                               on_progress=on_progress)

    def calibrate(self, golden: Golden | str | Path, **options: Any) -> dict[str, float]:
        """`busca eval --calibrate`: store each method's floor in the live build; the floors."""
        try:  # the options evaluate takes
            inspect.signature(self.evaluate).bind(golden, **options)
        except TypeError as e:
            raise UnknownOption(f"{e}: calibrate takes evaluate's options (methods, ks, key,"
                                " by, on_progress)") from None
        return self.store_calibration(self.evaluate(golden, **options)).floors

    def store_calibration(self, evaluated: Evaluation, *,
                          notify: Callable[[str, Any], None] | None = None) -> Calibrated:
        """Store the floors and answerability models an evaluation calibrated."""
        return calibrate(self, evaluated, notify=notify)

    def tune_fusion(self, golden: Golden | str | Path, spec: EvalSpec | None = None, *,
                    save: bool = False, on_progress: Callable | None = None):
        """`busca eval --tune-fusion`: the tuning and the dense share it chooses (`save`:
        stored in the live build)."""
        return tune_fusion(self, _golden(golden), spec or EvalSpec(), save=save,
                           on_progress=on_progress)


class _ThreadHome:
    """A thread's own handle of the home, closed when the thread ends (its thread-local data
    is dropped then): an SQLite connection left to the garbage collector kept its file open
    meanwhile, and a server making a thread per request ran out of file descriptors."""

    def __init__(self, home: indexing.Home):
        self.home = home

    def __del__(self) -> None:
        try:
            self.home.close()
        except Exception:  # noqa: BLE001 - a handle that cannot close is left to the collector
            pass


def _live_manifest(home) -> tuple[indexing.Manifest | None, BuscaError | None]:
    """(the manifest of the build the next one starts from, or None; why the live build
    could not be read, or None). `previous()`: a PostgreSQL home's builds read it on the
    primary — a `read=` standby may be away or behind."""
    previous = home.previous()
    if previous is not None:
        return previous.manifest, None
    try:
        return home.current().manifest, None
    except indexing.IndexNotFound:
        return None, None
    except BuscaError as e:  # another format, damaged: the build starts from the defaults
        return None, e


def _build_notes(before, unread: BuscaError | None, after: indexing.Manifest) -> list[str]:
    """What a build did not carry over from the previous one, and how to get it back (the
    settings of a build of another format version, which its manifest still tells)."""
    notes = []
    if unread is not None:
        flags = indexing.settings_flags(getattr(unread, "previous", {}), after)
        again = (f"the previous one had other settings: busca index {' '.join(flags)} builds"
                 " with them again" if flags else "--size, --overlap and --dense choose others")
        notes.append(f"the previous index could not be read ({str(unread).split(' — ')[0]}):"
                     f" this build took the defaults — windows of {after.chunker['size']}"
                     f" words, overlap {after.chunker['overlap']}, methods"
                     f" {', '.join(after.methods)}; {again}, and busca eval GOLDEN"
                     " --calibrate calibrates the floors again")
    floors, models = indexing.dropped_calibration(before, after)
    if floors or models:
        lost = ([f"the calibrated floors of {', '.join(floors)}"] if floors else []) + (
            [f"the answerability models of {', '.join(models)}"] if models else [])
        notes.append(f"dropped {' and '.join(lost)}: the settings that give their scores"
                     " meaning changed (the analyzer, the windows, a model); busca eval GOLDEN"
                     " --calibrate calibrates them again")
    return notes


def _golden(golden) -> Golden:
    from ..search.eval import Golden, load_golden

    if isinstance(golden, (str, Path)):
        return load_golden(golden)
    if not isinstance(golden, Golden):
        raise BadSpec(f"give the golden set as a path or busca.load_golden(path), not a"
                      f" {type(golden).__name__}")
    return golden


def _spec(spec: object, kind: type[T]) -> T:
    """The spec passed second (None: the defaults); a method name there is a slip."""
    if spec is None:
        return kind()
    if not isinstance(spec, kind):
        call = "context" if kind.__name__ == "ContextSpec" else "search"
        example = f"{call}(question, method={spec!r})" if isinstance(spec, str) else \
            f"{call}(question, {kind.__name__}(…)) or {call}(question, k=5)"
        raise BadSpec(f"the second argument is a {kind.__name__}, not"
                      f" {type(spec).__name__} {str(spec)[:60]!r}: e.g. {example}")
    return spec


def _reopen(location: str, embed: Mapping) -> Corpus:
    """A pickled or copied Corpus: its home opened again (never created)."""
    return open(location, embed=embed, create=False)


def open(location: str | Path, *, embed: Mapping | None = None,  # noqa: A001
         create: bool = True) -> Corpus:
    """The corpus at `location`: a folder (created unless `create` is False) or a
    postgresql:// URL; `embed`: settings of openai:MODEL embedding servers."""
    if not isinstance(location, (str, Path)) or not str(location).strip():
        raise BadSpec(f"open takes a folder or a postgresql:// URL, not {location!r} (for the"
                      " working folder, say open('.'))")
    check_embed(embed)
    return Corpus(indexing.open_home(location, embed=embed, create=create), embed=embed)
