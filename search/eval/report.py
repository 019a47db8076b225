"""Render an Evaluation: a terminal table for people, Markdown for a report, a JSON dict.

The text and Markdown forms share every section; only the table syntax and the length of
long lists differ (the terminal shows the first few, the report everything)."""

from __future__ import annotations

import dataclasses
import math
import re
import unicodedata
from collections import Counter
from pathlib import Path

from ...index.dense.dense_models import is_dense
from .answerability import REPEATS
from .floors import Calibration
from .runs import folder_for, write_files
from .summary import Evaluation, Pair

TERMINAL_LIST = 15  # fixed/broken questions shown per pair in the terminal
TERMINAL_QUESTIONS = 80  # the per-question table is printed up to this many questions


def render_text(ev: Evaluation) -> str:
    """The terminal report."""
    return "\n".join(_sections(ev, md=False)) + "\n"


def render_markdown(ev: Evaluation) -> str:
    """The Markdown report, stamped with date, busca version and index parameters."""
    return re.sub(r"\n{3,}", "\n\n", "\n".join(_sections(ev, md=True))) + "\n"


def write_markdown(ev: Evaluation, path: str | Path) -> Path:
    """Write the Markdown report to `path`, in a folder that exists (else FileNotFoundError:
    no folder is made), under a temporary name first: a failed write keeps the old report."""
    path = folder_for(path)
    write_files({path: render_markdown(ev)})
    return path


def to_json(ev: Evaluation) -> dict:
    """Everything, as JSON-ready data (NaN becomes null)."""
    questions = [{"id": q.id, "question": q.text, "trecho": q.trecho, "url": q.url,
                  "tags": q.tags, "answerable": q.answerable} for q in ev.golden.questions]
    per_question = {s: [{"id": o.question_id, "first_rank": o.first_rank, "ranks": o.ranks,
                         "top_score": o.top_score, "first_score": o.first_score}
                        for o in out] for s, out in ev.outcomes.items()}
    problems = {label: [{"id": p.question.id, "reason": p.reason,
                         "split_across": p.split_across, "partial": p.partial} for p in found]
                for label, found in ev.problems.items()}
    data = {"info": ev.info, "metrics": [m.name for m in ev.metrics], "key": ev.key.name,
            "summary": ev.summary, "slices": ev.slices, "pairs": ev.pairs,
            "subsets": ev.subsets, "floors": ev.floors,
            "answerability": ev.answerability, "label_problems": problems,
            "trecho_found_in": ev.found_in, "warning": ev.warning, "questions": questions,
            "per_question": per_question}
    return _plain(data)


def _plain(x):
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _plain(dataclasses.asdict(x))
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _sections(ev: Evaluation, md: bool) -> list[str]:
    lines = _header(ev, md)
    for part in (_labels, _metrics, _slices, _pairs, _per_question, _subsets, _floors,
                 _answerability):
        lines += part(ev, md)
    return lines


def _title(text: str, md: bool, level: int = 2) -> list[str]:
    return ["", "#" * level + " " + text, ""] if md else ["", f"== {text}"]


def _one_line(text) -> str:
    """`text` with every run of whitespace, line breaks included, as one space: a question,
    id or tag value from the golden set is free text, and a line break in it would end a
    table row or a list item in the middle."""
    return " ".join(str(text).split())


# what makes Markdown text live: a backslash (it would unescape what follows), an HTML tag or
# autolink (<script>, <img onerror=…>), a link or image ([x](javascript:…))
_MD_ACTIVE = re.compile(r"[\\<\[\]]")


def _text(text, md: bool) -> str:
    """Free text (a question, id, tag value, URL) on one line; in Markdown with what would
    make it live backslash-escaped, so a report rendered by any Markdown tool shows it as
    typed (`busca misses --golden` drafts questions from what visitors of busca serve
    typed), not as HTML or a javascript: link."""
    line = _one_line(text)
    return _MD_ACTIVE.sub(lambda m: "\\" + m.group(), line) if md else line


def _cell(text, md: bool) -> str:
    """A table cell on one line, as `_text`; in Markdown with `|` escaped, or a `|` in a
    question, id or tag value would split its cell in two and shift every cell after it."""
    line = _text(text, md)
    return line.replace("|", r"\|") if md else line


def _table(headers: list[str], rows: list[list[str]], md: bool) -> list[str]:
    headers = [_cell(h, md) for h in headers]
    rows = [[_cell(c, md) for c in r] for r in rows]
    if md:
        out = ["", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        return out + ["| " + " | ".join(r) + " |" for r in rows]
    widths = [max(_shown(str(c)) for c in col) for col in zip(headers, *rows)]
    fmt = lambda r: "  ".join(c + " " * (w - _shown(c))  # noqa: E731
                              for c, w in zip(r, widths)).rstrip()
    return [fmt(headers)] + [fmt(r) for r in rows]


def _shown(text: str) -> int:
    """The columns a terminal gives `text`: none for a combining accent, two for a wide
    character (🔗, 日), so a cell after "ação" typed on a Mac or a question with 🔗 lines up."""
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _num(x: float | None, digits: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _ci(est) -> str:
    if est.n == 0:
        return "—"
    return f"{est.mean:.3f} ({est.low:.2f}–{est.high:.2f})"


def _header(ev: Evaluation, md: bool) -> list[str]:
    i = ev.info
    index = i.get("index", {})
    lines = ["# busca eval report", ""] if md else []
    lines += [
        f"golden set: {i.get('golden')} — {i.get('answerable')} answerable,"
        f" {i.get('unanswerable')} unanswerable questions",
        f"index: {index.get('documents')} documents, {index.get('chunks')} chunks,"
        f" chunker {index.get('chunker')}, build {index.get('build')}" if "runs" not in i
        else f"comparing two saved runs of {index.get('documents')} documents",
        f"date {i.get('date')}, busca {i.get('busca_version')}; intervals: bootstrap 95%,"
        f" {i.get('bootstrap', {}).get('resamples')} resamples, seed"
        f" {i.get('bootstrap', {}).get('seed')} (Wilson where every question scores 0 or 1)",
    ]
    models = [f"{m} = {e['encoder']}" for m, e in index.get("methods", {}).items()
              if is_dense(m) and "encoder" in e]
    if models and "runs" not in i:  # which model each dense method is, side by side
        lines.append("dense models: " + ", ".join(models))
    if i.get("per_doc"):  # busca eval --per-doc: figures not comparable with a window run's
        lines.append("relevance judged per document (--per-doc): each document ranked at its"
                     " best window, relevant if one of its windows holds the answer")
    if "fusion" in i:  # busca eval --weights / --fusion
        lines.append(_fusion_line(i["fusion"]))
    if "filter" in i:  # busca eval --filter
        lines.append(_filter_line(i["filter"]))
    for name, run in i.get("runs", {}).items():
        ri = run.get("index", {})
        lines.append(f"run {name}: {run.get('path')} — {ri.get('chunks')} chunks, chunker"
                     f" {ri.get('chunker')}, made {run.get('date')}")
    if md:
        lines = lines[:2] + [f"- {x}" for x in lines[2:]]
        for method, entry in index.get("methods", {}).items():
            lines.append(f"- method `{method}`: " + ", ".join(f"{k} {v}" for k, v in entry.items()))
    return lines


def _fusion_line(fusion: dict) -> str:
    weights = ", ".join(f"{m} {w:g}" for m, w in fusion.get("weights", {}).items())
    return (f"fused methods ranked by {fusion.get('fusion')} ({weights or 'default weights'};"
            f" window {fusion.get('window')}), not by the build's settings")


def _filter_line(scope: dict) -> str:
    dropped = scope.get("dropped", 0)
    return (f"filter: {' '.join(scope.get('filters', []))} — ranked among"
            f" {scope.get('chunks')} chunks; {dropped} labelled question"
            f"{'' if dropped == 1 else 's'} dropped (every relevant document outside the"
            " filter)")


def _labels(ev: Evaluation, md: bool) -> list[str]:
    if not ev.problems:
        return []
    lines = _title("Labels checked against the chunks", md)
    for label, problems in ev.problems.items():
        counts = Counter(ev.found_in.get(label, {}).values())
        parts = []
        if counts:
            parts.append("trechos found in " + ", ".join(
                f"{c} chunk{'s' if c != 1 else ''}: {n}" for c, n in sorted(counts.items())))
        by_doc = len(ev.golden.answerable) - sum(counts.values())
        if by_doc:
            missing = sum(1 for p in problems if p.question.trecho is None and not p.partial)
            parts.append(f"{by_doc - missing} of {by_doc} questions labelled by document have"
                         " a relevant document in the index")
        lines.append(f"[{label}] " + ("; ".join(parts) or "no answerable question"))
        zero = [p for p in problems if not p.partial]
        if zero:
            lines.append(f"{len(zero)} labelled question(s) no chunk answers"
                         " (they score 0 — fix the label or the chunking):")
            lines += [_problem(p, md) for p in zero]
        partial = [p for p in problems if p.partial]
        if partial:
            lines.append(f"{len(partial)} question(s) with relevant documents the index lacks"
                         " (busca add them, or drop them from the qrels):")
            lines += [_problem(p, md) for p in partial]
    return lines


def _problem(p, md: bool) -> str:
    """One label problem as a list item, on one line whatever the question holds."""
    return (f"- {_text(p.question.id, md)}: {_text(p.question.text, md)} —"
            f" {_text(p.reason, md)}")


def _metrics(ev: Evaluation, md: bool) -> list[str]:
    n = len(ev.golden.answerable)
    lines = _title(f"Metrics on {n} answerable questions (mean, 95% interval)", md)
    headers = ["method"] + [m.name for m in ev.metrics]
    rows = [[s] + [_ci(est[m.name]) for m in ev.metrics] for s, est in ev.summary.items()]
    latency = ev.info.get("latency_ms") or {}
    if "rerank" in ev.info and all(s in latency for s in ev.summary):  # what it costs
        headers.append("ms/question")
        rows = [row + [f"{latency[s]:.1f}"] for row, s in zip(rows, ev.summary)]
    lines += _table(headers, rows, md)
    return lines + (["", f"warning: {ev.warning}"] if ev.warning else [])


def _slices(ev: Evaluation, md: bool) -> list[str]:
    lines = []
    for tag, groups in ev.slices.items():
        lines += _title(f"By {_text(tag, md)}", md)
        headers = [tag, "n", "method"] + [m.name for m in ev.metrics]
        rows = []
        for value, systems in groups.items():
            for s, est in systems.items():
                n = str(next(iter(est.values())).n)
                rows.append([value, n, s] + [_ci(est[m.name]) for m in ev.metrics])
        lines += _table(headers, rows, md)
    return lines


def _pairs(ev: Evaluation, md: bool) -> list[str]:
    if not ev.pairs:
        return _title("Fixed and broken questions", md) + [
            "one method only: save this run with --run-out, change something, and compare"
            " the two runs with --compare RUN_A RUN_B"]
    texts = {q.id: _text(q.text, md) for q in ev.golden.questions}
    lines = _title("Method against method (b − a, paired)", md)
    if not ev.golden.answerable:
        return lines + ["no answerable question to compare the methods on: add some with"
                        " the trecho that answers them"]
    headers = ["a → b", "metric", "difference (95% interval)", "p (sign flip)"]
    rows = [[f"{p.a} → {p.b}", name, f"{d.mean:+.3f} ({d.low:+.2f} to {d.high:+.2f})",
             "<0.001" if d.p_value < 0.001 else _num(d.p_value)]
            for p in ev.pairs for name, d in p.differences.items()]
    lines += _table(headers, rows, md)
    for p in ev.pairs:
        lines += _pair_lists(p, texts, md)
    return lines


def _pair_lists(p: Pair, texts: dict, md: bool) -> list[str]:
    lines = ["", f"{p.a} → {p.b}: first relevant rank better for {p.wins}, equal for"
             f" {p.ties}, worse for {p.losses} questions; on {p.key}: {len(p.fixed)} fixed,"
             f" {len(p.broken)} broken"]
    for word, ids in (("fixed", p.fixed), ("broken", p.broken)):
        shown = ids if md else ids[:TERMINAL_LIST]
        lines += [f"  {word}: {_one_line(i)}: {texts.get(i, '')}" if not md
                  else f"- {word}: {_text(i, md)}: {texts.get(i, '')}" for i in shown]
        if len(shown) < len(ids):
            lines.append(f"  … and {len(ids) - len(shown)} more {word} (--report or --json)")
    return lines


def _per_question(ev: Evaluation, md: bool) -> list[str]:
    questions = ev.golden.questions
    lines = _title("First relevant rank per question", md)
    if not md and len(questions) > TERMINAL_QUESTIONS:
        return lines + [f"{len(questions)} questions: see --report FILE.md or --json"]
    systems = list(ev.outcomes)
    headers = ["id", "question"] + systems
    rows = []
    for n, q in enumerate(questions):
        text = _one_line(q.text)  # its length on one line, before any cut
        text = text if len(text) <= 60 or md else text[:57] + "…"
        ranks = [_rank(ev.outcomes[s][n].first_rank) if q.answerable else "(no answer)"
                 for s in systems]
        rows.append([q.id, text] + ranks)
    return lines + _table(headers, rows, md)


def _sig(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def _rank(rank: int | None) -> str:
    return "—" if rank is None else str(rank)


def _subsets(ev: Evaluation, md: bool) -> list[str]:
    lines = _title("Why a few questions mislead: recall@1 over 1,000 random subsets", md)
    rows = []
    for s, ranges in ev.subsets.items():
        full = ev.summary[s].get("recall@1")
        for r in ranges:
            rows.append([s, str(r.size), f"{r.low:.2f}–{r.high:.2f}", f"{r.p05:.2f}–{r.p95:.2f}",
                         _num(full.mean) if full else "—"])
    if not rows:
        return lines + ["too few answerable questions for subsets of 5 and 10"]
    return lines + _table(["method", "questions", "min–max", "90% of subsets", "all"], rows, md)


def _floors(ev: Evaluation, md: bool) -> list[str]:
    lines = _title("Score floor: answerable vs unanswerable questions", md)
    for s, cal in ev.floors.items():
        if not isinstance(cal, Calibration):
            lines.append(f"{s}: {cal}")
            continue
        lines += ["", f"{s}: floor {cal.floor:.4g}, {_does(cal.chosen)} (target: keep"
                  f" {cal.keep:.0%}; separation J = {cal.separation:.2f}); lowest answerable"
                  f" best hit {_sig(cal.lowest_answerable)}, highest unanswerable"
                  f" {_sig(cal.highest_unanswerable)}",
                  f"alternative, the best separation (Youden J = {cal.youden.separation:.2f}):"
                  f" floor {cal.youden.floor:.4g}, {_does(cal.youden)}"]
        if cal.warning:
            lines += ["", f"warning: {cal.warning}"]
        headers = ["floor", f"answered, relevant in top {cal.k}", "answerable refused",
                   "unanswerable refused"]
        rows = [[f"{r.floor:.4g}" + _mark(r.floor, cal), _num(r.answered_right, 2),
                 _num(r.answerable_refused, 2), _num(r.unanswerable_refused, 2)]
                for r in cal.rows]
        lines += _table(headers, rows, md)
    return lines


def _does(choice) -> str:
    """'keeps 95% of answerable questions, refuses 43% (20%–68%) of 14 unanswerable ones'."""
    r = choice.refused
    return (f"keeps {choice.kept:.0%} of answerable questions, refuses {r.value:.0%}"
            f" ({r.low:.0%}–{r.high:.0%}, 95% Wilson interval) of {r.n} unanswerable ones")


def _mark(floor: float, cal: Calibration) -> str:
    return " ←" if floor == cal.floor else " (J)" if floor == cal.youden.floor else ""


def _answerability(ev: Evaluation, md: bool) -> list[str]:
    if not ev.answerability:
        return []
    first = next(iter(ev.answerability.values()))
    targets = [r.keep for r in first.signals[0].refusals]
    lines = _title("Answerability: unanswerable questions refused at a share of answerable"
                   " ones kept", md)
    lines += ["", f"each signal and its cut fitted on {first.folds - 1} of {first.folds}"
              " stratified folds (the cut on out-of-fold scores), measured on the held-out"
              f" fold (pooled), the mean of {REPEATS} shuffles of the folds; refused with its"
              " 95% Wilson interval; logistic = the model over every feature; shared = the"
              " question-level model over the base methods' features (the same for every"
              " method)"]
    headers = ["method", "signal", "AUC"]
    for t in targets:
        headers += [f"kept (target {t:.0%})", f"refused at {t:.0%}"]
    rows = []
    for system, a in ev.answerability.items():
        for sig in a.signals:
            row = [system, sig.name, _num(sig.auc, 2)]
            for r in sig.refusals:
                row += [f"{r.kept:.0%}", _share(r.refused)]
            rows.append(row)
    lines += _table(headers, rows, md)
    for system, a in ev.answerability.items():
        for sig in (s for s in a.signals if s.training):
            lines.append(f"{system}: {sig.name} on its own training questions (not a measure): "
                         + ", ".join(f"keeps {r.kept:.0%}, refuses {r.refused.value:.0%} at"
                                     f" {r.keep:.0%}" for r in sig.training))
    return lines


def _share(share) -> str:
    return f"{share.value:.0%} ({share.low:.0%}–{share.high:.0%}) of {share.n}"
