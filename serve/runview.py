"""Saved evaluation runs (`busca eval --run-out`) read back for the /eval page.

A run file gives each method's per-question outcomes; the `.trec` file beside it gives the
rankings themselves and the `.qrels` file the relevant items. The golden set named in the
run adds the question tags (paraphrase vs lexical slices); when that file cannot be read —
or is no regular file (a FIFO, a device), or is larger than MAX_GOLDEN — the questions stored
in the run are used, without tags. A run whose files are larger than MAX_RUN is a RunError.
Loaded runs are cached by path and modification time.
"""

from __future__ import annotations

import json
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from ..search.eval import (Evaluation, Golden, GoldenError, Question, default_metrics,
                           load_golden, summarize)
from ..search.eval import runs as eval_runs
from .errors import HttpError

MAX_RUNS = 200  # run files listed at most (newest first)
MAX_RUN = 200_000_000  # bytes of a run's .json, .trec or .qrels file read at most
MAX_GOLDEN = 100_000_000  # bytes of the golden set a run names read at most (else no tags)
KEY = "recall@3"


@dataclass(frozen=True)
class RunView:
    """One saved run, summarised, with its rankings and judgements."""

    name: str
    evaluation: Evaluation
    rankings: dict[str, dict[str, list[tuple[str, float]]]]  # system -> qid -> (item, score)
    relevant: dict[str, dict[str, float]]  # qid -> item -> gain
    chunker: str  # the label of the chunker the run was made with, e.g. words:200:40
    tags_from: str  # the golden file the tags came from ("" if none)

    @property
    def systems(self) -> list[str]:
        return list(self.evaluation.outcomes)


_cache: dict[tuple[str, int], RunView] = {}
_lock = threading.Lock()


def list_runs(folder: Path) -> list[str]:
    """File names of the run files in `folder`, newest first."""
    try:
        files = [p for p in folder.glob("*.json") if p.is_file() and _is_run(p)]
    except OSError:
        return []
    files.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    return [p.name for p in files[:MAX_RUNS]]


def _is_run(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(200)
    except OSError:
        return False
    return b'"busca-run"' in head


def load(folder: Path, name: str) -> RunView:
    """The run called `name` in `folder` (a name from `list_runs`, never a path; `.json` may
    be left out, as `busca eval --run-out` was given it); a 404 names the runs there."""
    runs = list_runs(folder)
    if name not in runs and f"{name}.json" in runs:
        name = f"{name}.json"
    if name not in runs:
        shown = ", ".join(runs[:5]) + (", …" if len(runs) > 5 else "") if runs else "none"
        raise HttpError(404, f"no saved run named {name[:80]!r} in the runs folder (its runs:"
                             f" {shown})")
    path = folder / name
    key = (str(path), path.stat().st_mtime_ns)
    with _lock:
        if key not in _cache:
            _cache[key] = _read(path)
        return _cache[key]


def _read(path: Path) -> RunView:
    for part in (path, path.with_suffix(".trec"), path.with_suffix(".qrels")):
        if part.exists() and not _bounded(part, MAX_RUN):
            raise eval_runs.RunError(
                f"{part.name}: larger than {MAX_RUN:,} bytes, or not a regular file: the eval"
                " page does not read it; save a smaller run with busca eval --run-out")
    run = eval_runs.load_run(path)
    if not run.outcomes:  # nothing to chart or compare (the page failed with a 500)
        raise eval_runs.RunError(f"{path.name}: the run holds no method's results — save it"
                                 " again with busca eval GOLDEN --run-out")
    try:
        return _view(path, run)
    except (KeyError, TypeError, AttributeError, ValueError) as e:  # what load_run let by
        raise eval_runs.RunError(f"{path.name}: damaged run file ({e!r})") from None


def _view(path: Path, run: eval_runs.SavedRun) -> RunView:
    golden, tags_from = _golden(path, run)
    outcomes = {s: [by_id[q.id] for q in golden.questions] for s, by_id in run.outcomes.items()}
    ev = summarize(golden, outcomes, default_metrics(), key=KEY, info=run.info)
    chunker = ((run.info.get("index") or {}).get("chunker")) or ""
    return RunView(path.name, ev, _trec(path.with_suffix(".trec")),
                   _qrels(path.with_suffix(".qrels")), str(chunker), tags_from)


def _golden(path: Path, run: eval_runs.SavedRun) -> tuple[Golden, str]:
    """The run's golden set (for tags) if readable and matching, else its stored questions."""
    named = run.info.get("golden")
    for candidate in ([Path(named), path.parent / named, path.parent / Path(named).name]
                      if named else []):
        if not _golden_bounded(candidate):
            continue
        try:
            golden = load_golden(str(candidate))
        except (GoldenError, OSError):
            continue
        if all(all(q.id in out for q in golden.questions) for out in run.outcomes.values()):
            return golden, str(candidate)
    data = json.loads(path.read_text(encoding="utf-8"))
    questions = tuple(Question(str(q["id"]), str(q["question"]),
                               trecho="" if q.get("answerable") else None)
                      for q in data.get("questions", []))
    return Golden(str(path), "json", questions), ""


def _bounded(path: Path, cap: int) -> bool:
    """Whether `path` is a regular file of at most `cap` bytes (a FIFO would hang the reader,
    /dev/zero or a huge file swell it)."""
    try:
        info = path.stat()
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size <= cap


def _golden_bounded(path: Path) -> bool:
    """Whether the golden set at `path` may be read: a file within MAX_GOLDEN, or a BEIR
    folder whose queries.jsonl and qrels/*.tsv are, together."""
    if not path.is_dir():
        return _bounded(path, MAX_GOLDEN)
    try:
        files = [path / "queries.jsonl", *(path / "qrels").glob("*.tsv")]
    except OSError:
        return False
    return all(_bounded(f, MAX_GOLDEN) for f in files) and \
        sum(f.stat().st_size for f in files) <= MAX_GOLDEN


def _trec(path: Path) -> dict[str, dict[str, list[tuple[str, float]]]]:
    out: dict[str, dict[str, list[tuple[str, float]]]] = {}
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError:
        return out
    for line in lines:
        parts = line.split()
        if len(parts) == 6:
            qid, _, item, _, score, tag = parts
            out.setdefault(tag, {}).setdefault(unquote(qid), []).append((unquote(item),
                                                                        float(score)))
    return out


def _qrels(path: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError:
        return out
    for line in lines:
        parts = line.split()
        if len(parts) == 4:
            out.setdefault(unquote(parts[0]), {})[unquote(parts[2])] = float(parts[3])
    return out


def system_tag(system: str) -> str:
    """The tag a system's lines carry in the .trec file (search/runs.py `_safe`)."""
    return "".join(c if c.isalnum() or c in "._:-" else "_" for c in system)
