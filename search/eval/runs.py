"""Saved runs: per-question outcomes of each system, so the next change can be compared.

`save_run(path, …)` writes `path` (JSON, format "busca-run" version 1) and, beside it,
`<stem>.trec` (TREC run: `qid Q0 item rank score tag`; items are `url#position` chunks or
document URLs) and `<stem>.qrels` (TREC qrels of the judged relevant items), readable by
trec_eval or ranx. A `path` named like those (run.trec, run.qrels) means the same three
files, the JSON as `<stem>.json`: no suffix is ever doubled; a name without one of these
suffixes keeps its whole name (`beside`). The folder must exist (but a
home's runs/, which is made). A run names its corpus by a fingerprint of the documents'
URLs and texts.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import numpy as np

from ...errors import BuscaError
from ...index.home.documents import DB_NAME
from ...index.home import storage
from .golden import Golden, Question
from .judge import ChunkTable, Judgement
from .metrics import Metric, Outcome

FORMAT = "busca-run"
VERSION = 1
TREC_SUFFIXES = (".trec", ".qrels")  # the files written beside the JSON run
RUNS = "runs"  # a home's folder of saved runs, which busca serve's /eval lists
NOT_INDEXED = "busca:not-indexed"  # the qrels item of a labelled question no unit answers


class RunError(BuscaError, ValueError):
    """A run file that cannot be read or compared."""


@dataclass(frozen=True)
class SavedRun:
    """A run file loaded back: outcomes per system and the corpus it was made on."""

    path: str
    corpus: dict
    info: dict
    outcomes: dict[str, dict[str, Outcome]]  # system -> question id -> outcome
    labels: dict[str, str] = field(default_factory=dict)  # question id -> label_of (if saved)


def label_of(question: Question) -> str:
    """A short digest of what a question was judged by (trecho, url, qrels): a run saved
    before a label was fixed would credit the fix to the method in --compare."""
    trecho = None if question.trecho is None else " ".join(question.trecho.split())
    text = json.dumps([trecho, question.url, sorted(question.qrels.items())],
                      ensure_ascii=False)  # the trecho as relevance reads it: spacing aside
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def fingerprint(documents: Mapping[str, str]) -> dict:
    """Number of documents and a sha256 over their sorted URLs and texts."""
    digest = hashlib.sha256()
    for url in sorted(documents):
        digest.update(url.encode("utf-8") + b"\x00" + documents[url].encode("utf-8") + b"\x00")
    return {"documents": len(documents), "fingerprint": digest.hexdigest()}


def save_run(path: str | Path, golden: Golden, outcomes: dict[str, list[Outcome]],
             judged: Mapping[str, tuple[Judgement, ChunkTable]], *, corpus: dict,
             info: dict) -> list[Path]:
    """Write the JSON run, the TREC run and the TREC qrels (one per chunker when several);
    returns the paths written. RunError when one would be the golden set's file;
    FileNotFoundError when the folder does not exist."""
    path = Path(path)
    files = run_files(path)
    _spare_golden(path, files, golden)
    folder_for(path)
    data = {"format": FORMAT, "version": VERSION, **info,
            "golden": str(Path(golden.path).resolve()),  # busca serve's /eval reads its tags
            "corpus": corpus,
            "questions": [{"id": q.id, "question": q.text, "answerable": q.answerable,
                           "label": label_of(q)} for q in golden.questions],
            "systems": {s: [_outcome_json(o) for o in out] for s, out in outcomes.items()}}
    texts = {files[0]: json.dumps(data, ensure_ascii=False, indent=2),
             files[1]: "".join(_trec_lines(outcomes))}
    for label, (judgement, table) in judged.items():
        suffix = ".qrels" if len(judged) == 1 else f".{_safe(label)}.qrels"
        texts[beside(path, suffix)] = "".join(_qrels_lines(judgement, table))
    write_files(texts)
    return list(texts)


def write_files(texts: Mapping[Path, str]) -> None:
    """Write each text to a temporary name beside its file, then rename every one into
    place: a write that fails (a full disk, ^C) leaves the files as they were, whole and
    together (a run's JSON, .trec and .qrels), and no temporary file."""
    temporary: dict[Path, Path] = {}
    try:
        for path, text in texts.items():
            temporary[path] = path.with_name(f"{path.name}.tmp-{uuid.uuid4().hex[:8]}")
            temporary[path].write_text(text, encoding="utf-8")
        for path, tmp in temporary.items():
            os.replace(tmp, path)
    finally:
        for tmp in temporary.values():
            tmp.unlink(missing_ok=True)


def run_files(path: str | Path) -> list[Path]:
    """The JSON run, TREC run and qrels that `save_run(path, …)` writes (one chunker)."""
    return [run_json(path), beside(path, ".trec"), beside(path, ".qrels")]


def run_json(path: str | Path) -> Path:
    """Where the JSON run given as `path` goes: `path`, or `<stem>.json` when `path` is
    named like its TREC run or qrels (run.trec: run.json beside run.trec and run.qrels)."""
    path = Path(path)
    return path.with_suffix(".json") if path.suffix.lower() in TREC_SUFFIXES else path


def beside(path: str | Path, suffix: str) -> Path:
    """The file written beside the run `path` with `suffix` (.trec, .qrels): a .json, .trec
    or .qrels suffix replaced, never added to (run.trec's TREC run is run.trec itself, not
    run.trec.trec; its JSON goes to run.json, see `run_json`); any other name kept whole
    (the TREC run of "antes 2026.12.05" is "antes 2026.12.05.trec", not "antes 2026.12.trec",
    which the next day's run would overwrite)."""
    path = Path(path)
    if path.suffix.lower() in (".json", *TREC_SUFFIXES):
        return path.with_suffix(suffix)
    return path.with_name(path.name + suffix)


def require_folder(path: str | Path) -> Path:
    """`path`, a file or folder busca eval is about to write; FileNotFoundError (the line
    busca misses --golden says) when the folder it goes in does not exist: an output never
    creates folders, where a slip in its path would make them anywhere — but a local home's
    runs/ folder, where busca serve's /eval lists runs (`folder_for` makes it)."""
    path = Path(path)
    return path if _home_runs(path.parent) else storage.require_folder(path)


def folder_for(path: str | Path) -> Path:
    """`path` if `require_folder` allows it, its folder made when it is a home's runs/."""
    path = require_folder(path)
    path.parent.mkdir(exist_ok=True)
    return path


def _home_runs(folder: Path) -> bool:
    """Whether `folder` is the runs/ folder of a local home (one holding busca.db)."""
    return folder.name == RUNS and (folder.parent / DB_NAME).is_file()


def _spare_golden(path: Path, files: list[Path], golden: Golden) -> None:
    """RunError when a file of the run `path` would overwrite the golden set's file (or an
    existing file of its BEIR folder)."""
    source = Path(golden.path).resolve()
    for file in files:
        written = file.resolve()
        if written.is_relative_to(source) and (written == source or written.exists()):
            raise RunError(f"the run {path} would overwrite the golden set {golden.path} with"
                           f" {file.name}: choose another name for --run-out")


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._:-" else "_" for c in name)


def _outcome_json(o: Outcome) -> dict:
    return {"id": o.question_id, "ranks": list(o.ranks), "gains": list(o.gains),
            "ideal": list(o.ideal), "top_score": o.top_score, "first_score": o.first_score}


def _trec_lines(outcomes: dict[str, list[Outcome]]):
    """A TREC run; scores with 9 significant digits, a float32 score read back exactly (6
    decimals tied different scores), and equal scores written apart (`falling`)."""
    for system, out in outcomes.items():
        tag = _safe(system)
        for o in out:
            for rank, (item, score) in enumerate(zip(o.units, falling(o.scores)), start=1):
                yield (f"{trec_name(o.question_id)} Q0 {trec_name(item)} {rank} {score}"
                       f" {tag}\n")


def falling(scores) -> list[str]:
    """Ranked scores as a run file writes them: float32 values (trec_eval reads a float),
    each to the 9 significant digits that give it back exactly, and one that does not fall
    below the one before written as the next float32 down, so that trec_eval, which orders
    equal scores by document name (descending), and ranx, which keeps the file's order, rank
    as busca did (equal scores by chunk id)."""
    out, last = [], np.float32(np.inf)
    for score in scores:
        written = np.float32(score)
        last = written if written < last else np.nextafter(last, np.float32(-np.inf))
        out.append(f"{float(last):.9g}")
    return out


def _qrels_lines(judgement: Judgement, table: ChunkTable):
    """The relevant units of every labelled question; one that no indexed unit answers gets
    the item NOT_INDEXED, which no run holds: busca scores it 0 and counts it, and so do
    trec_eval and ranx with it (without a line they would leave the question out)."""
    for j in judgement.items:
        units = [*j.gains.items(), *j.unindexed.items()]
        if not units and j.question.answerable:
            units = [(NOT_INDEXED, 1.0)]
        for unit, gain in units:
            name = table.name(unit) if j.level == "chunk" and unit != NOT_INDEXED else unit
            yield f"{trec_name(j.question.id)} 0 {trec_name(name)} {int(gain)}\n"


def trec_name(text: str) -> str:
    """An id or URL as one field of a TREC line: its whitespace and "%" percent-encoded
    (a question id "q 1" made a line of 7 fields; `unquote` gives the text back)."""
    return re.sub(r"[%\s]", lambda m: quote(m.group()), text)


def load_run(path: str | Path) -> SavedRun:
    """A run file written by `save_run`; RunError names what is wrong."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunError(f"{path}: no such run file (write one with --run-out)") from None
    except json.JSONDecodeError as e:
        if path.suffix.lower() in TREC_SUFFIXES:
            raise RunError(f"{path}: a TREC file, not a busca run: give the JSON run saved"
                           f" beside it, {run_json(path)}") from None
        raise RunError(f"{path}:{e.lineno}:{e.colno}: invalid JSON ({e.msg})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RunError(f"{path}: cannot read it ({e})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RunError(f"{path}: not a busca run file (write one with busca eval --run-out)")
    if data.get("version") != VERSION:
        raise RunError(f"{path}: run format version {data.get('version')}, this busca reads"
                       f" {VERSION}")
    try:
        outcomes = {s: {o["id"]: _outcome(o) for o in out} for s, out in data["systems"].items()}
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise RunError(f"{path}: damaged run file ({e!r})") from None
    wrong = [key for key, kind in _PARTS.items()
             if data.get(key) is not None and not isinstance(data[key], kind)]
    wrong += [f"questions[{n}]" for n, q in enumerate(data.get("questions") or [])
              if not isinstance(q, dict) or "id" not in q or "question" not in q]
    if wrong:
        raise RunError(f"{path}: damaged run file ({wrong[0]} is not what busca eval wrote):"
                       " write it again with --run-out")
    info = {k: v for k, v in data.items() if k not in ("systems", "questions", "corpus")}
    labels = {str(q["id"]): q["label"] for q in data.get("questions") or []
              if isinstance(q.get("label"), str)}  # runs saved before labels were kept: none
    return SavedRun(str(path), data.get("corpus", {}), info, outcomes, labels)


# the parts of a run file beyond its systems that readers take apart, and their types
_PARTS = {"corpus": dict, "index": dict, "filter": dict, "questions": list, "golden": str,
          "per_doc": bool, "bootstrap": dict, "latency_ms": dict}


def _outcome(o: dict) -> Outcome:
    return Outcome(str(o["id"]), tuple(int(r) for r in o["ranks"]),
                   tuple(float(g) for g in o["gains"]), tuple(float(g) for g in o["ideal"]),
                   o["top_score"], o["first_score"])


def align(golden: Golden, first: SavedRun, second: SavedRun, *,
          deepest: Metric | None = None) -> dict[str, list[Outcome]]:
    """Outcomes of both runs as systems "A:<method>" and "B:<method>", in golden order;
    RunError when a run ranked fewer hits per question than the metric `deepest` reads."""
    if first.corpus.get("fingerprint") != second.corpus.get("fingerprint"):
        count = second.corpus.get("documents")
        raise RunError(
            f"{second.path} was made on another corpus ({count} documents) than {first.path}"
            f" ({first.corpus.get('documents')} documents); compare runs of the same documents"
            if count != first.corpus.get("documents") else
            f"{second.path} was made on as many documents ({count}) as {first.path}, but with"
            " other URLs or texts (documents changed, crawled or added again between the"
            " runs); compare runs of the same documents")
    for run in (first, second):
        _require_depth(run, deepest)
    systems = {}
    for name, run in (("A", first), ("B", second)):
        for system, by_id in run.outcomes.items():
            missing = [q.id for q in golden.questions if q.id not in by_id]
            if missing:
                raise RunError(f"{run.path} lacks {len(missing)} questions of {golden.path}"
                               f" (first: {missing[0]!r}); was it made with another golden set?")
            systems[f"{name}:{system}"] = [by_id[q.id] for q in golden.questions]
        relabelled = [q for q in golden.questions
                      if q.id in run.labels and run.labels[q.id] != label_of(q)]
        if relabelled:
            q = relabelled[0]
            raise RunError(f"{run.path} judged {len(relabelled)} question(s) by another label"
                           f" than {golden.path} has (first: {q.id}: {q.text!r}): its gain or"
                           " loss would be the label's, not the change's; save the run again"
                           " with this golden set (--run-out), or compare with the golden set"
                           " both runs were made with")
    return systems


def _require_depth(run: SavedRun, metric: Metric | None) -> None:
    """RunError when `run` ranked fewer hits per question than `metric`'s cutoff: the
    relevant items below its depth were never seen, and would count as misses."""
    depth = run.info.get("depth")
    if metric is None or not isinstance(depth, int) or metric.k <= depth:
        return
    raise RunError(f"{run.path} ranked {depth} hits per question: {metric} would count every"
                   f" relevant item below rank {depth} as missed; compare at cutoffs up to"
                   f" {depth} (-k, --key), or save both runs again with -k {metric.k}")


def run_pairs(systems: list[str]) -> list[tuple[str, str]]:
    """A:m against B:m for every method m both runs have."""
    return [(s, "B:" + s[2:]) for s in systems if s.startswith("A:") and "B:" + s[2:] in systems]
