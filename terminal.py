"""`busca shell` and `busca compare`, and how output meets a terminal: colour only on a
terminal and never with NO_COLOR, the terminal's width, a pager only when asked.

cli.py adds these commands to its group (`cli.add_command`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import replace

import click

from . import display, shell
from . import index as indexing
from . import search as searching
from .search import eval as evaluation

HISTORY_ENV = "BUSCA_HISTORY"
HYBRID_AS_SEARCH = searching.FusionSettings(floors=True)  # busca search's default hybrid
GOLDEN_ROWS = 3  # chunks holding the golden passage shown even when no method ranks them


def style_for_stdout() -> display.Style:
    """Colour on a terminal unless NO_COLOR is set (to anything); the terminal's width."""
    tty = sys.stdout.isatty()
    colour = tty and not os.environ.get("NO_COLOR")
    width = shutil.get_terminal_size((display.WIDTH, 24)).columns if tty else display.WIDTH
    return display.Style(colour=colour, width=max(width, 40), wrap=tty)


def emit(text: str, *, pager: bool = False) -> None:
    """Print `text`; through the user's pager ($PAGER, else less) only when asked."""
    if pager and sys.stdout.isatty():
        click.echo_via_pager(text)
    else:
        click.echo(text, nl=False)


def history_path() -> str:
    return os.environ.get(HISTORY_ENV) or shell.HISTORY


def _home(ctx) -> indexing.Home:
    return indexing.open_home(ctx.obj["home"])


def run_session(ctx, *, method: str, k: int, per_doc: int | None, min_score: float | None,
                as_json: bool, no_log: bool) -> None:
    """Load the index once and answer questions: readline on a terminal, else stdin lines."""
    settings = shell.Settings(method=method, k=k, per_doc=per_doc, min_score=min_score)
    interactive = sys.stdin.isatty() and not as_json
    with _home(ctx) as home:
        session = shell.Session(home.current(), home, settings, style=style_for_stdout(),
                                as_json=as_json, log=not no_log)
        if interactive:
            shell.run_terminal(session, history_path())
        else:
            shell.run_pipe(session, sys.stdin)


@click.command("shell")
@click.option("--method", default="tfidf", show_default=True, help="Ranking method to start with.")
@click.option("-k", default=searching.K, show_default=True, type=click.IntRange(min=1),
              help="How many passages to show.")
@click.option("--per-doc", type=click.IntRange(min=0), default=None,
              help="At most N windows of one article (0 = no limit) [default: search 0,"
                   " compare 0, context 2].")
@click.option("--min-score", type=float, default=None,
              help="Drop hits below this score (default: the calibrated floor, if any).")
@click.option("--json", "as_json", is_flag=True,
              help="Read questions from stdin, one per line; one JSON line per answer.")
@click.option("--no-log", is_flag=True, help="Do not record the questions in the query log.")
@click.pass_context
def shell_command(ctx, method, k, per_doc, min_score, as_json, no_log):
    """Ask question after question; the index and the encoder are loaded once.

    On a terminal: line editing, history (~/.busca_history, or $BUSCA_HISTORY), :method,
    :k, :per-doc, :compare, :context, :help; Ctrl-D leaves. From a pipe: one question per
    line.

    Example: printf 'qual o prazo?\\n:method bm25\\nqual o prazo?\\n' | busca shell --json
    """
    run_session(ctx, method=method, k=k, per_doc=per_doc, min_score=min_score,
                as_json=as_json, no_log=no_log)


@click.command("compare")
@click.argument("query")
@click.option("--methods", default=None,
              help="Comma-separated methods [default: tfidf,bm25,dense,hybrid, those the"
                   " index has].")
@click.option("-k", default=5, show_default=True, type=click.IntRange(min=1),
              help="Hits shown per method.")
@click.option("--per-doc", type=click.IntRange(min=0), default=0, show_default=True,
              help="At most N windows of one article in each ranking (0 = no limit).")
@click.option("--golden", type=click.Path(exists=True), default=None,
              help="Golden set: mark the chunks holding the labelled passage (QUERY may be a"
                   " question's id).")
@click.option("--json", "as_json", is_flag=True, help="The comparison as one JSON object.")
@click.option("--pager", is_flag=True, help="Show the table through $PAGER.")
@click.pass_context
def compare_command(ctx, query, methods, k, per_doc, golden, as_json, pager):
    """The methods side by side: every hit once, with its rank under each method (— where a
    method did not rank it in its first 100).

    Example: busca compare "como o PC roda vários programas?" --methods tfidf,dense -k 3
    """
    question, gains = _golden_question(ctx, golden, query) if golden else (None, {})
    query = question.text if question else query
    if not query.strip():
        raise click.BadParameter("the question is empty", param_hint="QUERY")
    include = [g for g in gains if isinstance(g, int)][:GOLDEN_ROWS]
    with _home(ctx) as home:
        index = home.current()
        names = _split(methods) if methods else searching.default_methods(index)
        if not names:
            raise click.BadParameter("name at least one method", param_hint="--methods")
        result = searching.compare_methods(index, home, query, methods=names, k=k, per_doc=per_doc,
                                   include=include, fusion=HYBRID_AS_SEARCH)
    relevant = {r.chunk_id for r in result.rows if r.chunk_id in gains or r.url in gains}
    if as_json:
        data = searching.comparison_dict(result)
        if question:
            data["relevant"] = sorted(relevant)
        click.echo(json.dumps(data, ensure_ascii=False, indent=1))
        return
    style = style_for_stdout()
    analyzer = searching.highlight.analyzer_for(index.manifest.methods, "bm25")
    text = display.compare_text(result, analyzer, style,
                                relevant=relevant, focus=question.trecho if question else None)
    if question is not None and not question.answerable:
        text += "the golden set marks this question as unanswerable\n"
    elif question is not None and not gains:
        text += "no chunk of the index holds the golden passage\n"
    emit(f"{style.paint(query, bold=True)}\n{text}", pager=pager)


def _golden_question(ctx, path: str, query: str):
    """The golden question whose id or text (whitespace and case aside) is `query`, and its
    relevant units in the live index (chunk ids, or URLs for a BEIR set)."""
    golden = evaluation.load_golden(path)
    wanted = " ".join(query.split()).casefold()
    for q in golden.questions:
        if q.id == query or " ".join(q.text.split()).casefold() == wanted:
            break
    else:
        raise click.BadParameter(f"{query!r} is neither the id nor the text of a question in"
                                 f" {path}", param_hint="QUERY")
    with _home(ctx) as home:
        table = evaluation.chunk_table(home.current(), home)
    (judged,) = evaluation.judge(replace(golden, questions=(q,)), table).items
    return q, dict(judged.gains)


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def print_hits(index, hits, query: str, method: str, *, pager: bool = False) -> None:
    """`busca search`'s hits for people: highlighted, wrapped to the terminal."""
    analyzer = searching.highlight.analyzer_for(index.manifest.methods, method)
    emit(display.hits_text(hits, query, analyzer, style_for_stdout()), pager=pager)

