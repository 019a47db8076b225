"""`busca eval`'s use cases: a golden set on the live build or on temporary builds cut by
other chunkers, two saved runs compared, hybrid's fusion tuned, and the floors (and
answerability models) an evaluation calibrated stored in the live build."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import index as indexing
from .. import search as searching
from ..search import eval as evaluation

if TYPE_CHECKING:
    from ..index.dense.rerank_api import RerankSettings
    from ..search.fusion import FusionSettings
    from ..search.eval.golden import Golden
    from ..search.eval.harness import Harness
    from ..search.eval.summary import Evaluation

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class EvalSpec:
    """What `busca eval` is asked with, parsed: its options, with its defaults."""

    methods: tuple[str, ...] | None = None  # None: every method of the index
    metrics: tuple = ()  # Metric values (recall@k, MRR, nDCG); (): evaluation.KS's
    key: Any = None  # the Metric questions count as fixed or broken on (None: evaluation.KEY)
    by: tuple[str, ...] | None = None  # tags (or meta.FIELD) reported apart (None: each tag
    #                                    with 2 to 12 values)
    chunkers: tuple = ()  # chunker specs: evaluate temporary builds cut by them instead
    per_doc: bool = False  # judge documents at their best window, not windows
    threads: int = indexing.THREADS
    keep: float = evaluation.KEEP  # the share of answerable questions each floor keeps
    rerank: RerankSettings | None = None
    options: Mapping = field(default_factory=dict)  # build options of the temporary builds
    filters: tuple = ()  # Filter values (or texts): judge and rank within what they allow
    fusion: FusionSettings | None = None  # how the fused rows rank (None: as the build stored)

    def __post_init__(self):
        object.__setattr__(self, "filters", searching.parse_filters(self.filters))

    @property
    def metric(self):
        """The key metric as a value."""
        key = self.key or evaluation.KEY
        return evaluation.parse_metric(key) if isinstance(key, str) else key

    def all_metrics(self) -> tuple:
        return tuple(self.metrics) or tuple(evaluation.default_metrics(evaluation.KS))

    def depth(self) -> int:
        """How deep each method ranks: enough for every cutoff."""
        return max(evaluation.DEPTH, self.metric.k, *(m.k for m in self.all_metrics()))


def evaluate_golden(corpus, golden: Golden, spec: EvalSpec, *,
                    on_progress: Progress | None = None) -> Harness:
    """The golden set's questions on the live build (or on temporary builds, one per chunker
    of `spec.chunkers`; the live build is not touched): the evaluation and its run."""
    shared = dict(metrics=spec.all_metrics(), key=spec.metric, by=spec.by, depth=spec.depth(),
                  per_doc=spec.per_doc, threads=spec.threads, on_progress=on_progress,
                  keep=spec.keep, fusion=spec.fusion)
    methods = list(spec.methods) if spec.methods else None
    if not spec.chunkers:
        return evaluation.evaluate_index(golden, corpus.build, corpus.home, methods=methods,
                                         rerank=spec.rerank, filters=spec.filters, **shared)
    if spec.filters or evaluation.scope.meta_keys(spec.by):
        raise evaluation.scope.ScopeError("--filter and --by meta.FIELD evaluate the live"
                                          " build: they cannot be combined with --chunkers")
    options = {**spec.options, **_dense_options(corpus), "threads": spec.threads}
    return evaluation.evaluate_chunkers(golden, corpus.home, list(spec.chunkers),
                                        methods=methods or _chunker_methods(corpus),
                                        options=options, **shared)


def _dense_options(corpus) -> dict:
    """Build options for temporary builds: the live build's dense models, with their servers."""
    _, models, _, entries = indexing.methods_for(corpus.home, [], dense=None)
    if not models:
        return {}
    return {"dense_models": models, "servers": corpus.servers(models, entries),
            "vector_cache": corpus.vector_cache()}


def _chunker_methods(corpus) -> list[str]:
    try:
        return searching.available_methods(corpus.build)
    except (indexing.IndexNotFound, indexing.IndexFormatError):
        return list(indexing.DEFAULT)


def compare_runs(golden: Golden, paths: Sequence[str], spec: EvalSpec) -> Evaluation:
    """Two saved runs (busca eval --run-out) compared on the golden set; RunError when they
    have no method in common."""
    first, second = (evaluation.load_run(p) for p in paths)
    golden = evaluation.scope.runs_scope(golden, first, second)  # runs made with --filter
    deepest = max((*spec.all_metrics(), spec.metric), key=lambda m: m.k)
    systems = evaluation.align(golden, first, second, deepest=deepest)
    pairs = evaluation.run_pairs(list(systems))
    if not pairs:
        raise evaluation.RunError(f"{paths[0]} and {paths[1]} have no method in common")
    info = {**second.info, "golden": golden.path,
            "runs": {"A": {**first.info, "path": paths[0]}, "B": {**second.info, "path": paths[1]}},
            "answerable": len(golden.answerable),
            "unanswerable": len(golden.unanswerable)}
    return evaluation.summarize(golden, systems, spec.all_metrics(), key=spec.metric,
                                by=spec.by, pairs=pairs, info=info, keep=spec.keep)


def tune_fusion(corpus, golden: Golden, spec: EvalSpec, *, save: bool = False,
                on_progress: Progress | None = None):
    """Hybrid's fusion, k and weights tried on the live build (on `spec.methods`, or the
    default pair): the tuning and, for a pair, the min-max dense share it chooses (stored with
    `save`; None for three or more methods, whose weights `busca search --weights` takes)."""
    build = corpus.build
    searching.require_vectors(build)
    components = list(spec.methods) if spec.methods else None
    if save and components and len(components) != 2:
        raise searching.FusionError("--save stores the dense share of a pair (--methods"
                                    " bm25,dense); with three or more methods, search with"
                                    " the --weights the tuning prints")
    result = evaluation.tune_fusion(golden, build, corpus.home, metric=spec.metric,
                                    components=components, by=spec.by, on_progress=on_progress)
    if len(result.components) != 2:
        return result, None
    choice = evaluation.tuning.choose_share(result)
    if save:
        _check_evaluated(corpus.home, build.manifest.build, "its dense share does",
                         "busca eval GOLDEN --tune-fusion --save")
        evaluation.tuning.save_share(corpus.home, choice)
    return result, choice


@dataclass(frozen=True)
class Calibrated:
    """What `busca eval --calibrate` stored: each method's floor, and the methods whose
    answerability model it stored."""

    floors: dict[str, float]
    models: dict[str, tuple]  # method -> (its held-out signal, the model stored): the better
    #                           of its own and the shared (question-level) one


def _check_evaluated(home, evaluated: str | None, what: str = "its floors do",
                     again: str = "busca eval GOLDEN --calibrate") -> None:
    """NoFloorToStore unless the build a calibration (floors, a fusion's share) goes into
    (the live one; on a PostgreSQL home the primary's) is the build `evaluated`: a rebuild's
    scores are not the ones it was chosen on."""
    live = home.previous()
    if evaluated and live is not None and live.manifest.build != evaluated:
        raise evaluation.NoFloorToStore(
            f"the index was rebuilt since this evaluation (it evaluated build {evaluated}, the"
            f" live build is {live.manifest.build}): {what} not fit the new build's"
            f" scores — run {again} again (through a read= home, once the standby serves the"
            " new build)")


def calibrate(corpus, ev: Evaluation, *,
              notify: Callable[[str, Any], None] | None = None) -> Calibrated:
    """Store the floors (and answerability models) `ev` calibrated in the live build;
    `notify("hybrid left out", True)` first when hybrid's floor is not stored (fused scores
    have none: a hybrid hit must pass one component's floor)."""
    if evaluation.floors_to_store(ev.floors)[1] and notify:
        notify("hybrid left out", True)
    best = {m: found for m, a in ev.answerability.items() if (found := a.best())}
    models = {m: model.to_json() for m, (_, model) in best.items()}
    _check_evaluated(corpus.home, (ev.info.get("index") or {}).get("build"))
    floors = evaluation.store_floors(corpus.home, ev.floors, models)
    stored = corpus.build.manifest.methods
    return Calibrated(floors, {m: found for m, found in best.items() if m in stored})
