"""The use cases over one corpus home: what `busca` does, as one object (`busca.open`).

`Corpus` adds, crawls, indexes, searches, builds context, compares, evaluates and calibrates;
its options are keyword arguments with the CLI's names and defaults, gathered into frozen
spec values (`SearchSpec`, `ContextSpec`). The CLI, the shell and `busca serve` parse their
input into the same specs and call the same use cases (`search_build`, `context_build`), so
a search option is one field here, one branch of the use case and one line per front end.
This layer sits above search/ and search/eval/ and below serve/ and the cli; it never prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import index as indexing
from . import search as searching
from .search.collapse import PER_DOC
from .search.context import MAX_CHARS, PER_DOC as CONTEXT_PER_DOC, Context
from .search.fusion import FUSION, RRF_K, WINDOW, FusionSettings
from .search.hits import Hit
from .search.scorers import K

if TYPE_CHECKING:  # loaded only by the use cases that need them
    from .crawler.store import Document
    from .index.dense.rerank_api import RerankSettings
    from .search.compare import Comparison
    from .search.eval.golden import Golden
    from .search.eval.summary import Evaluation

METHOD = "tfidf"  # busca search's default method
HYBRID_AS_SEARCH = FusionSettings(floors=True)  # hybrid as `busca search` uses it by default
WARM_UP = "aquecimento"  # encoded when a dense ranker loads, so no question waits for it


@dataclass(frozen=True)
class SearchSpec:
    """What a search is asked with: `busca search`'s options, with its defaults."""

    method: str = METHOD
    k: int = K
    min_score: float | None = None  # None: the method's calibrated floor, if any
    per_doc: int = PER_DOC  # windows of one document at most (0 = no limit)
    fusion: str = FUSION  # hybrid only: how the methods' scores are fused
    window: int = WINDOW
    rrf_k: float = RRF_K
    weights: Mapping[str, float] | None = None  # None: the default weights
    log: bool = True  # record the question in the query log (if the home logs)
    filters: tuple = ()  # Filter values (search/filters.py), or their texts: "category=Python"
    rerank: RerankSettings | None = None  # re-score the top `rerank.top` with this server

    def __post_init__(self):
        object.__setattr__(self, "filters", searching.parse_filters(self.filters))

    def fusion_settings(self, floor: float | None) -> FusionSettings | None:
        """Hybrid's settings as a value (None for other methods); a hybrid hit must pass
        one component's calibrated floor unless a floor is given."""
        if not indexing.is_hybrid(self.method):
            return None
        return searching.check_settings(FusionSettings(
            fusion=self.fusion, window=self.window, rrf_k=self.rrf_k,
            weights=dict(self.weights or {}), floors=floor is None))


@dataclass(frozen=True)
class ContextSpec(SearchSpec):
    """What `busca context` is asked with: a search, per_doc 2, and a character budget."""

    per_doc: int = CONTEXT_PER_DOC
    max_chars: int = MAX_CHARS


@dataclass(frozen=True)
class Result:
    """The hits of one search after the floor, and how they were found."""

    question: str
    method: str
    hits: tuple[Hit, ...]
    floor: float | None
    note: str = ""  # why nothing could match (no word of the question is in the index)
    build: str = ""
    calibrated: bool = False  # the floor is the method's calibrated one (none was given)
    fusion: dict | None = None  # hybrid's settings, as --json prints them
    unlogged: str = ""  # why a question asked to be logged was not ("read-only")
    seconds: float = 0.0
    ranked: int = 0  # hits ranked before the floor (0 when a server answered)
    rerank: str = ""  # the re-ranker (KIND:MODEL) whose scores the hits carry, if any
    refused: bool = False  # the answerability model refused the question (`note` says why)

    def to_json(self, **extra: Any) -> dict:
        """The form of GET /api/search (`extra` goes after the build, before the note)."""
        out = {"query": self.question, "method": self.method,
               "hits": [_without_method(h.to_json()) for h in self.hits],
               "floor": self.floor, "build": self.build, **extra}
        if self.rerank:
            out["rerank"] = self.rerank
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_json(cls, data: dict) -> Result:
        """The result `to_json` gave."""
        method = data["method"]
        hits = tuple(Hit.from_json(h, method=method) for h in data["hits"])
        return cls(data["query"], method, hits, data["floor"], str(data.get("note") or ""),
                   data["build"], rerank=str(data.get("rerank") or ""))

    def lines(self) -> list[dict]:
        """`busca search --json`: one object per hit (hybrid's settings on each)."""
        fused = {"fusion": self.fusion} if self.fusion else {}
        return [{**h.to_json(), **fused} for h in self.hits]


def _without_method(hit: dict) -> dict:
    del hit["method"]
    return hit


Remote = Callable[[str, SearchSpec, str], "Result | Context | None"]
Notify = Callable[[str, Any], None]


def search_build(build, home, question: str, spec: SearchSpec, *,
                 remote: Remote | None = None, notify: Notify | None = None) -> Result:
    """The search use case on one build: the floor (given or calibrated), hybrid's fusion,
    the per-document cap, the query log; `remote(question, spec, build_id)` may answer
    instead (a running busca serve), or give None. `notify(what, value)` hears, as they
    happen, ("floor", the calibrated floor used) and ("unlogged", "read-only")."""
    floor, calibrated, fusion = _prepare(build, spec, notify)
    spec, unlogged = _log_policy(home, spec, notify)
    described = searching.describe_fusion(build, fusion, spec.method) if fusion else None
    found = remote(question, spec, build.manifest.build) if remote else None
    if isinstance(found, Result):
        return replace(found, calibrated=calibrated, fusion=described, unlogged=unlogged)
    started, note = time.perf_counter(), ""
    rerank = reranker(spec.rerank)
    allowed = _allowed(build, home, spec.filters)
    try:
        hits = searching.collapse.search(build, home, question, method=spec.method,
                                         k=rerank.depth(spec.k) if rerank else spec.k,
                                         per_doc=spec.per_doc, fusion=fusion, allowed=allowed)
    except searching.NoSearchableTerms as e:
        hits, note = [], str(e)
    if allowed is not None and not allowed.any():
        note = "no document matches the filters " + " ".join(map(str, spec.filters))
    kept = tuple(h for h in hits if floor is None or h.score >= floor)
    refused = bool(kept) and searching.refusal(build, question, spec.method, spec.min_score)
    if refused:
        kept, note = (), refused.reason  # the stored answerability model (issue 30)
    if rerank and kept:  # the re-ranker's scores, or its server's error: never a silent skip
        kept = tuple(rerank(question, kept, spec.k))
    seconds = time.perf_counter() - started
    _log(home, spec, "search", question, hits[:spec.k], floor, started, refused=bool(refused))
    return Result(question, spec.method, kept, floor, note, build.manifest.build, calibrated,
                  described, unlogged, seconds, len(hits), rerank.label if rerank else "",
                  refused=bool(refused))


def _allowed(build, home, filters):
    """The mask of the chunks the filters allow (None without filters)."""
    if not filters:
        return None
    return searching.allowed(build, home, filters)


def context_build(build, home, question: str, spec: ContextSpec, *,
                  remote: Remote | None = None, notify: Notify | None = None) -> Context:
    """The context use case on one build: passages above the floor, fitted to max_chars
    (`remote` and `notify` as in `search_build`)."""
    floor, _, fusion = _prepare(build, spec, notify)
    spec, _ = _log_policy(home, spec, notify)
    found = remote(question, spec, build.manifest.build) if remote else None
    if isinstance(found, Context):
        return found
    started = time.perf_counter()
    found = searching.build_context(build, home, question, method=spec.method, k=spec.k,
                                    max_chars=spec.max_chars, min_score=spec.min_score,
                                    fusion=fusion, per_doc=spec.per_doc,
                                    rerank=reranker(spec.rerank),
                                    allowed=_allowed(build, home, spec.filters))
    _log(home, spec, "context", question, found.hits, floor, started)
    return found


def _prepare(build, spec: SearchSpec,
             notify: Notify | None) -> tuple[float | None, bool, FusionSettings | None]:
    """The floor, whether it is the calibrated one, and hybrid's settings (checked)."""
    method = indexing.resolve(build.manifest.methods, spec.method)
    if spec.min_score is not None:
        floor, calibrated = searching.check_floor(spec.min_score), False
    else:
        floor = searching.floor_of(build, spec.method)
        calibrated = floor is not None
        if calibrated and notify:
            notify("floor", floor)
    if indexing.is_dense(method) or method == indexing.HYBRID:
        searching.require_vectors(build, method if indexing.is_dense(method) else "dense")
    return floor, calibrated, spec.fusion_settings(floor)


def reranker(settings: RerankSettings | None):
    """The re-ranking stage of these settings (a search.rerank.Reranker), or None."""
    if settings is None:
        return None
    from .search.rerank import Reranker

    return Reranker.of(settings)


def _log_policy(home, spec: SearchSpec, notify: Notify | None) -> tuple[SearchSpec, str]:
    """The spec with `log` off when the home cannot log, and why ("read-only")."""
    if not spec.log:
        return spec, ""
    querylog = searching.querylog  # loaded only when the question may be logged
    if querylog.read_only(home) and querylog.is_enabled(home):
        if notify:
            notify("unlogged", "read-only")
        return replace(spec, log=False), "read-only"
    return spec, ""


def _log(home, spec: SearchSpec, command: str, question: str, hits, floor, started, *,
         refused: bool = False) -> None:
    if spec.log:
        searching.querylog.log_call(home, command=command, query=question, method=spec.method,
                                    k=spec.k, scores=[h.score for h in hits], floor=floor,
                                    started=started, refused=refused)


def compare_build(build, home, question: str, *, methods: Sequence[str] | None = None,
                  k: int = K, per_doc: int = 0, include: Sequence[int] = (),
                  rerank: RerankSettings | None = None) -> Comparison:
    """The compare use case on one build: hybrid as `busca search` uses it by default."""
    names = list(methods) if methods else searching.default_methods(build)
    return searching.compare_methods(build, home, question, methods=names, k=k,
                                     per_doc=per_doc, include=list(include),
                                     fusion=HYBRID_AS_SEARCH,
                                     rerank=reranker(rerank))


def prepare(ranker) -> None:
    """Load what a ranker (or each ranker a hybrid fuses) loads lazily, now: a large index's
    int8 copy (index/dense/vectors.py), its window tables and codes (index/lexical/maxscore.py)."""
    for part in getattr(ranker, "rankers", {}).values() or [ranker]:
        if hasattr(part, "prepare"):
            part.prepare()


class Corpus:
    """One corpus home (a folder or a postgresql:// URL) and every use case over it."""

    def __init__(self, home: indexing.Home, *, embed: Mapping | None = None):
        self.home = home
        self.embed = dict(embed or {})
        self._build: indexing.Build | None = None

    @property
    def location(self) -> str:
        return str(self.home.location)

    @property
    def build(self) -> indexing.Build:
        """The live build (IndexNotFound before the first `index`), loaded once: its rankers
        and encoder stay in memory across calls, and a newer build (`busca index` here or in
        another process, new floors) replaces it at the next call, as in `busca serve`."""
        current = self.home.current()
        if self._build is None or self._build.manifest != current.manifest:
            self._build = current
        return self._build

    def warm(self) -> None:
        """Load every method's ranker (and encoder) now, so no question waits for them."""
        build = self.build
        for method in searching.available_methods(build):
            fusion = SearchSpec(method=method).fusion_settings(None)
            ranker = searching.scorer(build, method, fusion)
            if indexing.is_dense(method):
                ranker.top(WARM_UP, 1)  # some encoders load their tables at the first text
            prepare(ranker)

    def close(self) -> None:
        self.home.close()

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- documents -------------------------------------------------------------------
    def add(self, documents: Iterable[Document]) -> dict[str, int]:
        """Store documents (a URL already stored is replaced); added/updated/unchanged."""
        counts = {"added": 0, "updated": 0, "unchanged": 0}
        for doc in documents:
            counts[self.home.put(doc)] += 1
        return counts

    def add_files(self, paths: Sequence[str | Path]) -> dict[str, int]:
        """`busca add`: .jsonl, .txt, .md, .html files; a file it cannot read is an error."""
        from .crawler import Problem, read_files
        from .crawler.errors import CrawlError

        documents = []
        for item in read_files([str(p) for p in paths]):
            if isinstance(item, Problem):
                raise CrawlError(f"cannot add {item.where}: {item.message}")
            documents.append(item)
        return self.add(documents)

    def crawl(self, url: str, **options: Any) -> Iterator:
        """`busca crawl`: the crawl's events (the last one, Finished, has the report)."""
        from .crawler import CrawlOptions, crawl

        return crawl(url, self.home, options=CrawlOptions(**options))

    def index(self, *, size: int = indexing.SIZE, overlap: int = indexing.OVERLAP,
              methods: Sequence[str] = indexing.DEFAULT, dense: str | None = None,
              titles: str | None = None, options: Mapping | None = None,
              on_progress: Callable | None = None,
              on_note: Callable[[str], None] | None = None) -> indexing.Manifest:
        """`busca index`: chunk the documents, build `methods` (and the dense models of
        `dense`, else the previous build's; the titles indexed with the windows for the
        methods `titles` names, else the previous build's) and publish it; its manifest."""
        names, models, kept, entries = indexing.methods_for(self.home, methods, dense=dense)
        if kept and on_note:
            on_note(f"keeping the dense models {kept} (--dense none drops them)")
        options = dict(options or {})
        if models:
            options.update(dense_models=models, servers=self.servers(models, entries),
                           vector_cache=getattr(self.home, "home", None))
        if titles is not None:
            options["titles"] = indexing.titled_methods(titles, names, indexing.TITLES)
        return indexing.build_index(self.home, size=size, overlap=overlap, methods=names,
                                    options=options, on_progress=on_progress)

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
        spec = replace(spec or SearchSpec(), **options)
        return search_build(self.build, self.home, question, spec)

    def context(self, question: str, spec: ContextSpec | None = None, /,
                **options: Any) -> Context:
        """`busca context`: the passages for an LLM prompt (`.answered`, `render`)."""
        spec = replace(spec or ContextSpec(), **options)
        return context_build(self.build, self.home, question, spec)

    def compare(self, question: str, *, methods: Sequence[str] | None = None, k: int = K,
                per_doc: int = 0, include: Sequence[int] = (),
                rerank: RerankSettings | None = None) -> Comparison:
        """`busca compare`: each method's top k and every hit's rank under each method
        (with `rerank`, a column METHOD+rerank after each)."""
        return compare_build(self.build, self.home, question, methods=methods, k=k,
                             per_doc=per_doc, include=include, rerank=rerank)

    def stats(self) -> dict:
        """`busca stats --json`: the build's figures, or the documents without an index, and
        the metadata's facet counts when the documents have metadata."""
        facets = searching.facets(self.home)
        shown = {"facets": facets} if facets else {}
        try:
            return {**self.build.manifest.figures(), **shown}
        except indexing.IndexNotFound:
            return {"documents": self.home.count(), "index": None, **shown}

    # --- evaluation ------------------------------------------------------------------
    def evaluate(self, golden: Golden | str | Path, *, methods: Sequence[str] | None = None,
                 ks: Sequence[int] | None = None, key: str | None = None,
                 by: Sequence[str] | None = None,
                 on_progress: Callable | None = None) -> Evaluation:
        """`busca eval`: recall@k, MRR, nDCG (`.summary[method][metric].mean`) and the
        floors per method on a golden set."""
        from .search import eval as evaluation

        golden = _golden(golden)
        metrics = evaluation.default_metrics(tuple(ks) if ks else evaluation.KS)
        metric = evaluation.parse_metric(key or evaluation.KEY)
        depth = max(evaluation.DEPTH, metric.k, *(m.k for m in metrics))
        return evaluation.evaluate_index(golden, self.build, self.home, methods=methods,
                                         metrics=metrics, key=metric, by=by, depth=depth,
                                         on_progress=on_progress).evaluation

    def calibrate(self, golden: Golden | str | Path, **options: Any) -> dict[str, float]:
        """`busca eval --calibrate`: store each method's floor in the live build; the floors."""
        from .search import eval as evaluation

        return evaluation.store_floors(self.home, self.evaluate(golden, **options).floors)


def _golden(golden) -> Golden:
    if isinstance(golden, (str, Path)):
        from .search.eval import load_golden

        return load_golden(golden)
    return golden


def open(location: str | Path, *, embed: Mapping | None = None,  # noqa: A001
         create: bool = True) -> Corpus:
    """The corpus at `location`: a folder (created unless `create` is False) or a
    postgresql:// URL; `embed`: settings of openai:MODEL embedding servers."""
    return Corpus(indexing.open_home(location, embed=embed, create=create), embed=embed)


__all__ = ["Context", "ContextSpec", "Corpus", "Hit", "Result", "SearchSpec", "open",
           "search_build", "context_build", "compare_build"]
