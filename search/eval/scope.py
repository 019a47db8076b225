"""`busca eval --filter` and `--by meta.FIELD` (issue #26): the golden set judged only within
the documents the filters allow, and the questions sliced by a metadata field of their
relevant documents.

A labelled question keeps only its relevant units inside the filter; one left with none is
dropped from the evaluation (counted in the report's `filter` line), never scored as a miss
nor as unanswerable: the filtered search could not have found it. Unlabelled (unanswerable)
questions stay as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from ...errors import BuscaError
from ..filters import field_values
from .golden import Golden
from .judge import ChunkTable, Judged, Judgement

META = "meta."  # `--by meta.FIELD`: slice by FIELD of each question's relevant documents


class ScopeError(BuscaError, ValueError):
    """`--filter` or `--by meta.FIELD` asked of what they cannot apply to."""


class UnknownField(ScopeError):
    """`--by meta.FIELD` names a field no indexed document has."""


def within(golden: Golden, judgement: Judgement, table: ChunkTable,
           allowed: np.ndarray) -> tuple[Golden, Judgement, int]:
    """The golden set and its judgement restricted to the chunks `allowed`, and how many
    labelled questions were dropped (all their relevant units outside it)."""
    urls = {u for i, u in enumerate(table.urls) if allowed[i]}
    items, dropped = [], 0
    for judged in judgement.items:
        inside = _inside(judged, urls, allowed)
        if judged.gains and not inside:
            dropped += 1
        else:
            items.append(replace(judged, gains=inside))
    kept = {j.question.id for j in items}
    problems = tuple(p for p in judgement.problems if p.question.id in kept)
    found_in = {q: n for q, n in judgement.found_in.items() if q in kept}
    return (replace(golden, questions=tuple(j.question for j in items)),
            Judgement(tuple(items), problems, found_in), dropped)


def _inside(judged: Judged, urls: set[str], allowed: np.ndarray) -> dict:
    if judged.level == "document":
        return {u: g for u, g in judged.gains.items() if u in urls}
    return {i: g for i, g in judged.gains.items() if allowed[int(i)]}


def runs_scope(golden: Golden, first, second) -> Golden:
    """The golden set two saved runs are compared on: runs made with `--filter` hold only
    the questions it kept, so both must have the same filters, and both must judge the same
    unit (windows, or documents with --per-doc); ScopeError otherwise."""
    levels = [("documents (--per-doc)" if run.info.get("per_doc") else "windows")
              for run in (first, second)]
    if levels[0] != levels[1]:
        raise ScopeError(f"{first.path} judges {levels[0]} and {second.path} {levels[1]}: a"
                         " difference between them would be the change of unit; compare runs"
                         " both made with --per-doc or both without")
    a, b = (run.info.get("filter", {}).get("filters") or [] for run in (first, second))
    if a != b:
        raise ScopeError(f"{first.path} and {second.path} were made with different --filter"
                         f" ({' '.join(a) or 'none'}; {' '.join(b) or 'none'}): compare runs"
                         " made within the same filters")
    if not a:
        return golden
    kept = {q for by_id in first.outcomes.values() for q in by_id}
    return replace(golden, questions=tuple(q for q in golden.questions if q.id in kept))


def meta_keys(by: Sequence[str] | None) -> list[str]:
    """The `meta.FIELD` keys among `by`."""
    return [k for k in by or () if k.startswith(META)]


def meta_values(judgement: Judgement, table: ChunkTable, store,
                keys: Sequence[str]) -> dict[str, Mapping[str, tuple[str, ...]]]:
    """Per `meta.FIELD` key: question id -> the values of FIELD among its relevant documents
    (a question on documents of several values is in each of their slices)."""
    if not keys:
        return {}
    records = {r[0]: r for r in store.records()}
    out = {}
    for key in keys:
        field = key[len(META):]
        if not any(field_values(r, field) for r in records.values()):
            raise UnknownField(f"--by {key}: no indexed document has the field {field!r};"
                               f" fields they have: {_fields(records.values())}")
        out[key] = {j.question.id: _values(j, table, records, field) for j in judgement.items}
    return out


def _values(judged: Judged, table: ChunkTable, records: Mapping, field: str) -> tuple[str, ...]:
    urls = (judged.gains if judged.level == "document"
            else {table.urls[int(i)] for i in judged.gains})
    found = {v for u in urls if u in records for v in field_values(records[u], field)}
    return tuple(sorted(found))


def _fields(records) -> str:
    keys = sorted({k for r in records for k in (r[4] or {})})
    return ", ".join(keys) or "none (the documents carry no metadata)"
