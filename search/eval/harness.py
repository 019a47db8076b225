"""`busca eval` end to end: judge the golden set, rank it with every method (of the live
index, or of temporary indexes cut by other chunkers) and summarize."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from ...version import __version__
from ...errors import BuscaError
from ...index.text.chunking import chunker_label
from ..scorers import available_methods
from .bootstrap import LEVEL, RESAMPLES, SEED
from .floors import KEEP
from .chunkers import temporary_indexes
from .answerability import question_features
from .golden import Golden
from ...index.dense.encoders import THREADS
from ...index.dense.rerank_api import SUFFIX, RerankSettings
from ..fusion import FusionSettings
from ..rerank import Reranker
from .judge import (DEPTH, ChunkTable, Judgement, chunk_table, index_rankers, judge,
                    per_document, rank_questions, reranked)
from .metrics import Metric
from .runs import fingerprint
from .scope import meta_keys, meta_values, within
from .summary import KEY, Evaluation, summarize


class NothingRelevant(BuscaError):
    """No labelled question of the golden set has a relevant chunk in the index."""


@dataclass
class Harness:
    """What one `busca eval` computed: the evaluation plus what a run file needs."""

    evaluation: Evaluation
    judged: dict[str, tuple[Judgement, ChunkTable]]  # chunker label -> judgement, table
    corpus: dict


def evaluate_index(golden: Golden, index, store, *, methods: Sequence[str] | None,
                   metrics: Sequence[Metric], key: Metric | str = KEY,
                   by: Sequence[str] | None = None, depth: int = DEPTH,
                   per_doc: bool = False, threads: int = THREADS,
                   on_progress: Callable | None = None, keep: float = KEEP,
                   rerank: RerankSettings | None = None, filters: Sequence = (),
                   fusion: FusionSettings | None = None) -> Harness:
    """Evaluate the live index's methods (default: all it has) on the golden set; `per_doc`:
    a hit is its document (relevant if it holds the answer), each at its best chunk; with
    `rerank`, also METHOD+rerank for each method; with `filters`, only within the documents
    they allow (search/eval/scope.py); with `fusion`, the fused methods rank by those settings
    instead of the build's. `info["latency_ms"]`: each system's mean ranking time per
    question."""
    methods = list(methods or available_methods(index))
    allowed = _allowed(index, store, filters)
    rankers = index_rankers(index, methods, depth=depth, threads=threads, allowed=allowed,
                            fusion=fusion)
    table = chunk_table(index, store)
    if rerank is not None:
        stage = Reranker.of(rerank)
        rankers.update({m + SUFFIX: reranked(rankers[m], table, stage) for m in methods})
    judgement = _judged(golden, table, per_doc)
    scope = {}
    if allowed is not None:
        golden, judgement, dropped = _within(golden, judgement, table, allowed)
        scope = {"filter": {"filters": [str(f) for f in filters], "dropped": dropped,
                            "chunks": int(allowed.sum())}}
    latency: dict[str, float] = {}
    outcomes = rank_questions(judgement, table, rankers, depth=depth, on_progress=on_progress,
                              latency=latency)
    info = {**_info(golden, index.manifest, table.label, depth, fusion), "per_doc": per_doc,
            "latency_ms": latency, **scope}
    if rerank is not None:
        info["rerank"] = rerank.describe()
    meta = meta_values(judgement, table, store, meta_keys(by))
    return _finish(golden, outcomes, {table.label: (judgement, table)}, table.documents,
                   metrics, key, by, info, keep, question_features(golden, outcomes, index),
                   meta)


def _allowed(index, store, filters):
    """The mask of the chunks `filters` allow (None without filters)."""
    if not filters:
        return None
    from ..filters import allowed

    return allowed(index, store, filters)


def _within(golden: Golden, judgement, table: ChunkTable, allowed):
    """`scope.within`; NothingRelevant when no labelled question is left."""
    golden, judgement, dropped = within(golden, judgement, table, allowed)
    if not any(j.gains for j in judgement.items):
        raise NothingRelevant(f"no labelled question of {golden.path} has a relevant chunk"
                              " among the documents the filters allow: widen the filters")
    return golden, judgement, dropped


def evaluate_chunkers(golden: Golden, store, chunkers: Sequence[dict], *,
                      methods: Sequence[str], metrics: Sequence[Metric],
                      key: Metric | str = KEY, by: Sequence[str] | None = None,
                      options: dict | None = None, depth: int = DEPTH,
                      per_doc: bool = False, threads: int = THREADS,
                      on_progress: Callable | None = None, keep: float = KEEP,
                      fusion: FusionSettings | None = None) -> Harness:
    """Evaluate `methods` on temporary indexes, one per chunker; systems are "method/chunker"
    (`fusion`: as in `evaluate_index`)."""
    documents = list(store.documents())
    outcomes, judged, features = {}, {}, {}
    with temporary_indexes(documents, chunkers, methods, options=options,
                           previous=store.previous(), on_progress=on_progress) as built:
        for table, index in built:
            judgement = _judged(golden, table, per_doc)
            rankers = index_rankers(index, methods, depth=depth, threads=threads, fusion=fusion)
            ranked = rank_questions(judgement, table, rankers, depth=depth,
                                    on_progress=on_progress)
            outcomes.update({f"{m}/{table.label}": o for m, o in ranked.items()})
            features.update({f"{m}/{table.label}": f for m, f in
                             question_features(golden, ranked, index).items()})
            judged[table.label] = (judgement, table)
    labels = ", ".join(chunker_label(c) for c in chunkers)
    chunks = " / ".join(str(len(table.urls)) for _, (_, table) in judged.items())
    info = _info(golden, {"documents": len(documents), "chunks": chunks,
                          "build": "temporary (--chunkers)"}, labels, depth, fusion)
    info["per_doc"] = per_doc
    docs = {d.url: d.text for d in documents}
    return _finish(golden, outcomes, judged, docs, metrics, key, by, info, keep, features)


def _judged(golden: Golden, table: ChunkTable, per_doc: bool = False) -> Judgement:
    judgement = judge(golden, table)
    if per_doc:
        judgement = per_document(judgement, table)
    labelled = [j for j in judgement.items if j.question.answerable]
    if labelled and not any(j.gains for j in labelled):
        hint = (f" — add its corpus: busca add {golden.corpus} && busca index"
                if golden.corpus else "; is it the golden set of this corpus?")
        raise NothingRelevant(_foreign_urls(golden, table) or f"no question of {golden.path}"
                              f" has a relevant chunk in the index{hint}")
    return judgement


def _foreign_urls(golden: Golden, table: ChunkTable) -> str | None:
    """When no URL the golden set names is in the index: the message, with one of them next
    to the nearest indexed URL (another host name, http for https, a missing slash)."""
    named = [u for q in golden.answerable for u in ([q.url] if q.url else []) + list(q.qrels)]
    indexed = sorted(table.documents)
    if not named or not indexed or any(u in table.documents for u in named):
        return None
    nearest = difflib.get_close_matches(named[0], indexed, n=1, cutoff=0) or indexed[:1]
    return (f"the URLs of {golden.path} are not in the index (none of its {len(set(named))}):"
            f" it names {named[0]}, the nearest indexed URL is {nearest[0]} — label the"
            f" questions with the URLs this corpus has, or add and index its corpus")


def _finish(golden, outcomes, judged, documents, metrics, key, by, info, keep,
            features, meta=None) -> Harness:
    evaluation = summarize(golden, outcomes, metrics, key=key, by=by, info=info, keep=keep,
                           features=features, meta=meta)
    evaluation.problems = {label: j.problems for label, (j, _) in judged.items()}
    evaluation.found_in = {label: j.found_in for label, (j, _) in judged.items()}
    return Harness(evaluation, judged, fingerprint(documents))


def _info(golden: Golden, manifest, chunker: str, depth: int,
          fusion: FusionSettings | None = None) -> dict:
    methods = manifest.get("methods", {})
    given = {"fusion": fusion.describe()} if fusion is not None else {}
    return {**given,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "busca_version": __version__,
        "golden": golden.path,
        "questions": len(golden.questions),
        "answerable": len(golden.answerable),
        "unanswerable": len(golden.unanswerable),
        "index": {"build": manifest.get("build"), "chunker": chunker,
                  "documents": manifest.get("documents"), "chunks": manifest.get("chunks"),
                  "methods": {m: {k: v for k, v in e.items() if not isinstance(v, dict)}
                              for m, e in methods.items()}},
        "depth": depth,
        "bootstrap": {"resamples": RESAMPLES, "seed": SEED, "level": LEVEL},
    }
