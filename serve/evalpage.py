"""The evaluation page `/eval`: the saved runs of this home — recall@k per method as a chart,
the slices by tag (paraphrase vs lexical), the per-question wins and losses of two methods,
and, for a clicked question, both rankings with the relevant passages marked."""

from __future__ import annotations

import math
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse

from . import access, params
from .engine import Engine
from .errors import BadParameter, error_for_client, status_of
from .html import (CURRENT, esc, hit_title, href, lang_of, notice, page, rank_score,
                   source_link, table)
from .runview import RunView, list_runs, load, system_tag

SHOWN = 10  # ranks shown per method in a question's detail
LEXICAL = ("tfidf", "bm25")


def eval_page(request: Request) -> HTMLResponse:
    """GET /eval?run=&a=&b=&q= (with --tokens: the write token only)"""
    engine, folder = access.whole(request), request.app.state.runs
    args = request.query_params
    try:
        params.query_string(args, params.EVAL, "/eval")
    except BadParameter as e:
        return page("eval — busca", "<h1>Evaluation</h1>" + notice(str(e)), active="eval",
                    status=e.status)
    names = list_runs(folder)
    if not names:
        return page("eval — busca", "<h1>Evaluation</h1>" + notice(
            "no saved runs in the runs folder: save one with busca eval GOLDEN --run-out"
            " HOME/runs/NAME.json (or DIR/NAME.json, DIR the folder of busca serve --runs"
            " DIR)", "empty"), active="eval")
    try:
        view = load(folder, args["run"]) if args.get("run") else _newest(folder, names)
    except Exception as e:  # a damaged run file is shown as such, not as a 500
        status = status_of(e)
        if status is None:
            raise
        return page("eval — busca", _picker(names, "")
                    + notice(error_for_client(request, e, status)),
                    active="eval", status=status)
    try:
        a, b = _pair(view, args.get("a"), args.get("b"))
    except BadParameter as e:
        return page("eval — busca", _picker(names, view.name) + notice(str(e)), active="eval",
                    status=e.status)
    parts = [_picker(names, view.name), _info(view), _chart(view), _slices(view),
             _wins(view, a, b)]
    qid = args.get("q")
    if qid:
        parts.append(_detail(engine, view, a, b, qid))
    return page(f"{view.name} — eval — busca", "".join(parts), active="eval")


def _newest(folder, names: list[str]) -> RunView:
    """The newest run that can be read (a damaged newer one is listed, not shown)."""
    for name in names[:-1]:
        try:
            return load(folder, name)
        except Exception as e:  # noqa: BLE001
            if status_of(e) is None:
                raise
    return load(folder, names[-1])


def _pair(view: RunView, a: str | None, b: str | None) -> tuple[str, str]:
    """The two methods compared: those asked (BadParameter naming the run's own when one is
    not in it: it was replaced silently), else a lexical one and another."""
    systems = view.systems
    for name, given in (("a", a), ("b", b)):
        if given and given not in systems:
            raise BadParameter(f"{name}={given[:60]!r} is not a method of the run {view.name}:"
                               f" it has {', '.join(systems)} (pick the run with run=NAME)")
    lexical = next((s for s in systems if s in LEXICAL), systems[0])
    other = next((s for s in ("dense", "hybrid", "bm25") if s in systems and s != lexical),
                 systems[-1])
    return a or lexical, b or other


def _picker(names: list[str], current: str) -> str:
    links = "".join(f'<li><a href="{href("/eval", run=n)}"'
                    f'{CURRENT if n == current else ""}>{esc(n)}</a></li>'
                    for n in names)
    return (f'<h1>Evaluation</h1><nav class="runs" aria-label="saved runs"><ul>{links}</ul>'
            '</nav>')


def _info(view: RunView) -> str:
    info, golden = view.evaluation.info, view.evaluation.golden
    answerable = sum(q.answerable for q in golden.questions)
    return (f'<p class="meta">run <b>{esc(view.name)}</b> · {esc(info.get("date", ""))} · golden'
            f' {esc(_name(info.get("golden")))} · {answerable} answerable,'
            f' {len(golden.questions) - answerable} unanswerable · chunker'
            f' {esc(view.chunker or "?")}</p>'
            + (f'<p class="meta">warning: {esc(view.evaluation.warning)}</p>'
               if view.evaluation.warning else ''))


def _name(path: object) -> str:
    """The file or folder name of a path a run names (its folders are the server's)."""
    return Path(path).name if isinstance(path, str) else ""


def _chart(view: RunView) -> str:
    """recall@k per method as grouped bars (inline SVG, no script)."""
    ev = view.evaluation
    metrics = [m.name for m in ev.metrics if m.kind == "recall"]
    systems = view.systems
    width, height, left, bottom = 680, 260, 40, 30
    group = (width - left) / max(len(metrics), 1)
    bar = (group - 20) / max(len(systems), 1)
    plot = height - bottom - 10
    shapes = [f'<line x1="{left}" y1="{10 + plot * (1 - y)}" x2="{width}"'
              f' y2="{10 + plot * (1 - y)}" class="grid"/><text x="{left - 6}"'
              f' y="{14 + plot * (1 - y)}" class="axis" text-anchor="end">{y:.2f}</text>'
              for y in (0, 0.25, 0.5, 0.75, 1)]
    for g, metric in enumerate(metrics):
        x0 = left + g * group + 10
        shapes.append(f'<text x="{x0 + (group - 20) / 2}" y="{height - 8}" class="axis"'
                      f' text-anchor="middle">{esc(metric)}</text>')
        for s, system in enumerate(systems):
            est = ev.summary[system][metric]
            value = 0.0 if math.isnan(est.mean) else est.mean
            h = plot * value
            shapes.append(f'<rect x="{x0 + s * bar:.1f}" y="{10 + plot - h:.1f}"'
                          f' width="{bar - 2:.1f}" height="{h:.1f}" class="bar m{s % 8}">'
                          f'<title>{esc(system)} {esc(metric)} {value:.3f}'
                          f' ({est.low:.2f}–{est.high:.2f})</title></rect>')
    legend = "".join(f'<span class="key m{s % 8}">{esc(system)}</span>'
                     for s, system in enumerate(systems))
    return (f'<h2>recall@k per method</h2><figure class="chart"><svg id="chart" viewBox="0 0'
            f' {width} {height}" role="img" aria-label="recall at k per method: the figures'
            f' are in the table below">{"".join(shapes)}</svg><figcaption>{legend}</figcaption>'
            f'</figure>{_figures(ev, metrics, systems)}')


def _figures(ev, metrics: list[str], systems: list[str]) -> str:
    """The chart's figures as a table (what a screen reader reads, and the exact values):
    each method's recall@k with its interval, as the slices' table shows them."""
    rows = [[esc(system)] + [_estimate(ev.summary[system][metric]) for metric in metrics]
            for system in systems]
    return ('<details class="figures"><summary>the figures</summary>'
            + table(["method", *metrics], rows) + '</details>')


def _slices(view: RunView) -> str:
    ev = view.evaluation
    key = ev.key.name
    if not ev.slices:
        why = ("the golden set has no tag with 2 to 12 values" if view.tags_from else
               "the golden set named in the run could not be read, so its tags are unknown")
        return f"<h2>{esc(key)} by tag</h2>" + notice(why, "empty")
    out = [f"<h2>{esc(key)} by tag</h2>"]
    for tag, groups in ev.slices.items():
        rows = []
        for value, by_system in groups.items():
            n = next(iter(by_system.values()))[key].n if by_system else 0
            rows.append([f"{esc(tag)} = {esc(value)}", str(n)] +
                        [_estimate(by_system[s][key]) for s in view.systems])
        out.append(table([tag, "questions", *view.systems], rows, cls="slices"))
    return "".join(out)


def _estimate(est) -> str:
    if math.isnan(est.mean):
        return "—"
    return f'{est.mean:.3f} <small>({est.low:.2f}–{est.high:.2f})</small>'


def _wins(view: RunView, a: str, b: str) -> str:
    ev = view.evaluation
    switch = " ".join(f'<a href="{href("/eval", run=view.name, a=x, b=y)}"'
                      f'{CURRENT if (x, y) == (a, b) else ""}>{esc(x)} → {esc(y)}</a>'
                      for x in view.systems for y in view.systems if x != y)
    first_a = {o.question_id: o.first_rank for o in ev.outcomes[a]}
    first_b = {o.question_id: o.first_rank for o in ev.outcomes[b]}
    rows, counts = [], {"win": 0, "loss": 0, "tie": 0}
    order = {"loss": 0, "win": 1, "tie": 2}
    for q in sorted((q for q in ev.golden.questions if q.answerable),
                    key=lambda q: order[_verdict(first_a[q.id], first_b[q.id])]):
        verdict = _verdict(first_a[q.id], first_b[q.id])
        counts[verdict] += 1
        tags = ", ".join(f"{k}={v}" for k, v in q.tags.items())
        link = href("/eval", run=view.name, a=a, b=b, q=q.id) + "#detail"
        rows.append([f'<a class="question" href="{link}">{esc(q.text)}</a>', esc(tags),
                     _rank(first_a[q.id]), _rank(first_b[q.id]),
                     f'<span class="verdict {verdict}">{_VERDICTS[verdict]}</span>'])
    summary = (f"{esc(b)} better on {counts['win']} questions, worse on {counts['loss']},"
               f" tied on {counts['tie']} (first relevant rank)")
    return (f'<h2>Question by question: {esc(a)} → {esc(b)}</h2><p class="pairs">{switch}</p>'
            f'<p class="meta">{summary}</p>' +
            table(["question", "tags", f"{a} rank", f"{b} rank", ""], rows, cls="wins"))


_VERDICTS = {"win": "won", "loss": "lost", "tie": "tie"}


def _verdict(a: int | None, b: int | None) -> str:
    ra, rb = a or math.inf, b or math.inf
    return "win" if rb < ra else "loss" if rb > ra else "tie"


def _rank(rank: int | None) -> str:
    return "—" if rank is None else str(rank)


def _detail(engine: Engine, view: RunView, a: str, b: str, qid: str) -> str:
    question = next((q for q in view.evaluation.golden.questions if q.id == qid), None)
    if question is None:
        return notice(f"no question {qid!r} in this run")
    relevant = view.relevant.get(qid, {})
    lists = {s: view.rankings.get(system_tag(s), {}).get(qid, [])[:SHOWN] for s in (a, b)}
    items = list(dict.fromkeys(i for ranked in lists.values() for i, _ in ranked))
    described = engine.describe_items(items, view.chunker)
    lang = _lang(engine)
    columns = "".join(_ranking(s, lists[s], relevant, described, lang) for s in (a, b))
    answer = (f'<p class="meta">answer (trecho): {esc(question.trecho)}</p>'
              if question.trecho else "")
    return (f'<section id="detail" class="detail"><h2>{esc(question.text)}</h2>{answer}'
            f'<div class="compare cols-2">{columns}</div></section>')


def _lang(engine: Engine) -> str:
    """The live index's language for the passages' texts ("" without a live index)."""
    try:
        return engine.lang()
    except Exception as e:  # noqa: BLE001 - no index: the run's items are shown all the same
        if status_of(e) is None:
            raise
        return ""


def _ranking(system: str, ranked, relevant: dict, described: dict, lang: str) -> str:
    cards = []
    for rank, (item, score) in enumerate(ranked, start=1):
        title, url, text = described.get(item, (item, item, None))
        mark = relevant.get(item, 0) > 0
        body = (f'<p class="snippet"{lang_of(lang)}>{esc(text[:400])}'
                f'{"…" if len(text) > 400 else ""}</p>') if text else ""
        cards.append(f'<article class="card{" relevant" if mark else ""}"'
                     f' data-item="{esc(item)}"><div class="head">{rank_score(rank, score)}'
                     f'{hit_title(title, lang if title != item else "")}'
                     f'{"<span class=badge>relevant</span>" if mark else ""}'
                     f'</div><div class="src">{source_link(url, item)}</div>{body}</article>')
    if not cards:
        cards.append(notice("no ranking saved for this question", "empty"))
    return f'<section class="column"><h2>{esc(system)}</h2>{"".join(cards)}</section>'
