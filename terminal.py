"""`busca shell` and `busca compare`, and how output meets a terminal: colour only on a
terminal and never with NO_COLOR or TERM=dumb, the terminal's width, a pager only when
asked, and the readline loop (line editing, Tab completion, a private history file) of the
session.

cli.py adds these commands to its group (`commands(open_home, options)`), so they open the
home and take the shared options exactly as its own commands do.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import click

from . import corpus as api
from . import display, shell
from . import index as indexing
from . import search as searching
from .params import FiniteFloat, Whole, check_question, filter_option
from .search import eval as evaluation

HISTORY_ENV = "BUSCA_HISTORY"
GOLDEN_ROWS = 3  # chunks holding the golden passage shown even when no method ranks them
PROMPT = "busca:{method}> "
HISTORY_LENGTH = 1000
LEAVE = ("exit", "quit")  # typed alone at the terminal, as in psql or Python's REPL
RESET = "\x1b[0m"  # ANSI: back to the terminal's own colours


def style_for_stdout() -> display.Style:
    """Colour on a terminal unless NO_COLOR is set (to anything) or TERM is dumb (it draws
    escapes as text); the terminal's width."""
    return style_for(sys.stdout)


def style_for(stream) -> display.Style:
    """`style_for_stdout` for what is written to `stream` (the session's notes: stderr)."""
    tty = stream.isatty()
    colour = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    width = shutil.get_terminal_size((display.WIDTH, 24)).columns if tty else display.WIDTH
    return display.Style(colour=colour, width=max(width, 40), wrap=tty)


def emit(text: str, *, pager: bool = False) -> None:
    """Print `text`; through the user's pager ($PAGER, else less) only when asked."""
    if pager and sys.stdout.isatty() and _pager_parses():
        click.echo_via_pager(text)
    else:
        click.echo(text, nl=False)


def _pager_parses() -> bool:
    """Whether $PAGER splits into a command line (click's pager would raise on an unmatched
    quote); if not, a warning and the text printed as it is."""
    try:
        shlex.split(os.environ.get("PAGER", ""))
    except ValueError as e:
        click.echo(f"warning: cannot read $PAGER ({e}): printing without a pager", err=True)
        return False
    return True


def history_path() -> str:
    return os.environ.get(HISTORY_ENV) or shell.HISTORY


def run_session(home: indexing.Home, *, method: str, k: int, per_doc: int | None,
                min_score: float | None, as_json: bool, no_log: bool, rerank=None,
                filters: tuple = (), lang: str | None = None) -> None:
    """Load the index once and answer questions: readline on a terminal, else stdin lines
    (`rerank`: the re-ranking settings of every question; `filters`: the session's first;
    `lang`: :context's instruction)."""
    settings = shell.Settings(method=method, k=k, per_doc=per_doc, min_score=min_score,
                              rerank=rerank, filters=tuple(filters), lang=lang)
    on_terminal = sys.stdin.isatty() and not as_json  # only there are lines remembered
    session = shell.Session(home.current(), home, settings, style=style_for_stdout(),
                            err_style=style_for(sys.stderr), as_json=as_json, log=not no_log,
                            history=history_path() if on_terminal else None)
    if on_terminal:
        run_terminal(session, history_path())
    else:
        shell.run_pipe(session, sys.stdin)


def run_terminal(session: shell.Session, history: str | os.PathLike | None) -> int:
    """Read lines with readline editing and history until Ctrl-D or :quit. Ctrl-C drops the
    line or the answer even when busca was started with SIGINT ignored (from a background
    job or a runner that ignores it: Python then leaves it ignored, and Ctrl-C did nothing)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    path = _start_history(history, searching.available_methods(session.index))
    if path is None:  # :help must not name a file that keeps nothing
        session.history = None
    session.echo(f"busca — {session.index.manifest.get('chunks')} chunks,"
                 f" methods {', '.join(searching.available_methods(session.index))};"
                 " :help for commands, Ctrl-D to leave", err=True)
    while True:
        try:
            line = _read_line(PROMPT.format(method=session.settings.method), path is not None)
        except EOFError:
            session.echo("", err=True)
            break
        except KeyboardInterrupt:  # Ctrl-C drops the line being typed, as in Python's REPL
            session.echo("", err=True)
            continue
        if path is not None:
            path = _remember(line, path)  # None once the file cannot be written (said)
            if path is None:
                session.history = None
        if line.strip().lower() in LEAVE:
            break
        session.style = style_for_stdout()  # the window may have been resized meanwhile
        session.err_style = style_for(sys.stderr)
        try:
            if not session.handle(line):
                break
        except KeyboardInterrupt:  # Ctrl-C during an answer drops it; the session goes on
            if session.style.colour:  # the answer may stop inside a highlight: reset it
                session.echo(RESET, nl=False)
            session.echo("\ninterrupted", err=True)
    return session.answered


def _read_line(prompt: str, remember: bool) -> str:
    """input(), which edits the line with readline; with stdout in a file or a pipe (`busca
    shell > answers.txt`) input() has no readline and writes the prompt there, so the prompt
    goes to stderr, the terminal's line discipline edits, and the line joins readline's
    history by hand (`_remember` appends the history's last line to the file)."""
    if sys.stdout.isatty():
        return input(prompt)
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    line = line.removesuffix("\n")
    if remember and line.strip():
        import readline
        readline.add_history(line)
    return line


COMMANDS = (":method", ":k", ":per-doc", ":min-score", ":filter", ":compare", ":context", ":lang", ":settings", ":help",
            ":quit")


def _start_history(history, methods: list[str]) -> Path | None:
    """Tab completes :commands and method names; the history file (created private) is read."""
    try:
        import readline
    except ImportError:  # no readline on this platform: plain input(), no history
        return None
    readline.set_completer(_completer([*COMMANDS, *(f":method {m}" for m in methods)]))
    readline.set_completer_delims("")  # complete the whole line
    readline.parse_and_bind("tab: complete")
    if history is None:
        return None
    path = Path(os.path.expanduser(str(history)))
    try:
        if path.exists():
            readline.read_history_file(path)
        else:
            path.touch(mode=0o600)  # questions can be private
    except OSError as e:
        _cannot_keep(path, e)
        return None
    readline.set_history_length(HISTORY_LENGTH)
    return path


def _completer(words: list[str]):
    def complete(text: str, state: int) -> str | None:
        found = [w for w in words if w.startswith(text)] if text.startswith(":") else []
        return found[state] if state < len(found) else None
    return complete


def _remember(line: str, path: Path) -> Path | None:
    """Append the line to the history file at once: a killed session loses nothing; None
    (said once) when the file cannot be written."""
    if not line.strip():
        return path
    import readline
    try:
        readline.append_history_file(1, path)
        readline.set_history_length(HISTORY_LENGTH)
    except OSError as e:
        _cannot_keep(path, e)
        return None
    return path


def _cannot_keep(path: Path, e: OSError) -> None:
    reason = e.strerror or str(e)
    click.echo(f"warning: cannot keep the history in {path} ({reason}): this session's lines"
               f" are not saved; set {HISTORY_ENV} to a file you can write", err=True)


def commands(open_home: Callable, options: Callable = lambda f: f,
             rerank_of: Callable = lambda ctx: None) -> list[click.Command]:
    """`busca shell` and `busca compare`: `open_home(ctx)` opens the home as cli.py does,
    `options` adds cli.py's shared options (--embed-*, --rerank*) to each, and
    `rerank_of(ctx)` reads the re-ranking settings they give."""
    return [_shell_command(open_home, options, rerank_of),
            _compare_command(open_home, options, rerank_of)]


def _shell_command(open_home: Callable, options: Callable,
                   rerank_of: Callable) -> click.Command:
    @click.command("shell")
    @click.option("--method", default=api.METHOD, show_default=True,
                  help="Ranking method to start with.")
    @click.option("-k", default=searching.K, show_default=True, type=Whole(1),
                  help="How many passages to show.")
    @click.option("--per-doc", type=Whole(0), default=None,
                  help="At most N windows of one article (0 = no limit) [default: search 0,"
                       " compare 0, context 2].")
    @click.option("--min-score", type=FiniteFloat(), default=None,
                  help="Drop hits below this score (default: the calibrated floor, if any).")
    @click.option("--json", "as_json", is_flag=True,
                  help="Read questions from stdin, one per line; one JSON line per answer.")
    @click.option("--no-log", is_flag=True, help="Do not record the questions in the query log.")
    @click.option("--lang", type=click.Choice(searching.LANGS), default=None,
                  help="Language of :context's instruction (also :lang) [default: en when"
                  " the index's bm25 analyzer is en, else pt].")
    @filter_option
    @options
    @click.pass_context
    def shell_command(ctx, method, k, per_doc, min_score, as_json, no_log, lang, filters):
        """Ask question after question; the index and the encoder are loaded once.

        On a terminal: line editing, history (~/.busca_history, or $BUSCA_HISTORY), :method,
        :k, :per-doc, :min-score, :filter, :compare, :context, :lang, :help; Ctrl-D leaves.
        From a pipe: one question (or :command) per line.

        Example: printf 'qual o prazo?\\n:method bm25\\nqual o prazo?\\n' | busca shell --json
        """
        with open_home(ctx) as home:
            run_session(home, method=method, k=k, per_doc=per_doc, min_score=min_score,
                        as_json=as_json, no_log=no_log, rerank=rerank_of(ctx), filters=filters,
                        lang=lang)

    return shell_command


def _compare_command(open_home: Callable, options: Callable,
                     rerank_of: Callable) -> click.Command:
    @click.command("compare")
    @click.argument("query")
    @click.option("--methods", default=None,
                  help="Comma-separated methods [default: tfidf,bm25,dense,hybrid, those the"
                       " index has].")
    @click.option("-k", default=searching.COMPARE_K, show_default=True, type=Whole(1),
                  help="Hits shown per method.")
    @click.option("--per-doc", type=Whole(0), default=0, show_default=True,
                  help="At most N windows of one article in each ranking (0 = no limit).")
    @click.option("--golden", type=click.Path(exists=True), default=None,
                  help="Golden set: mark the chunks holding the labelled passage (QUERY may be"
                       " a question's id).")
    @click.option("--json", "as_json", is_flag=True, help="The comparison as one JSON object.")
    @click.option("--pager", is_flag=True, help="Show the table through $PAGER.")
    @filter_option
    @options
    @click.pass_context
    def compare_command(ctx, query, methods, k, per_doc, golden, as_json, pager, filters):
        """The methods side by side: every hit once, with its rank under each method (— where
        a method did not rank it in its first 100).

        Example: busca compare "como o PC roda vários programas?" --methods tfidf,dense -k 3
        """
        with open_home(ctx) as home:
            question, gains = _golden_question(home, golden, query) if golden else (None, {})
            result = _compare(home, question.text if question else query, methods, k, per_doc,
                              [g for g in gains if isinstance(g, int)][:GOLDEN_ROWS],
                              rerank_of(ctx), filters)
            analyzer = searching.highlight.analyzer_for(home.current().manifest.methods, "bm25")
        relevant = {r.chunk_id for r in result.rows if r.chunk_id in gains or r.url in gains}
        if as_json:
            data = result.to_json()
            if question:
                data["relevant"] = sorted(relevant)
            click.echo(json.dumps(data, ensure_ascii=False, indent=1))
            return
        _print_comparison(result, analyzer, relevant, question, bool(gains), pager)

    return compare_command


def _compare(home, query: str, methods: str | None, k: int, per_doc: int, include: list[int],
             rerank=None, filters=()):
    check_question(query, "QUERY")
    try:  # the library's reading of "bm25,dense" ("" names none: bad usage, not every one)
        names = api.method_names(methods)
    except api.specs.BadSpec as e:
        raise click.BadParameter(str(e), param_hint="--methods") from None
    return api.compare_build(home.current(), home, query, methods=names, k=k, per_doc=per_doc,
                             include=include, rerank=rerank, filters=filters)


def _print_comparison(result, analyzer: str, relevant: set[int], question, labelled: bool,
                      pager: bool) -> None:
    style = style_for_stdout()
    text = display.compare_text(result, analyzer, style, relevant=relevant,
                                focus=question.trecho if question else None)
    if question is not None and not question.answerable:
        text += "the golden set marks this question as unanswerable\n"
    elif question is not None and not labelled:
        text += "no chunk of the index holds the golden passage\n"
    emit(f"{style.paint(display.one_line(result.query), bold=True)}\n{text}",
         pager=pager)


def _golden_question(home, path: str, query: str):
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
    table = evaluation.chunk_table(home.current(), home)
    (judged,) = evaluation.judge(replace(golden, questions=(q,)), table).items
    return q, dict(judged.gains)


def print_hits(index, hits, query: str, method: str, *, pager: bool = False) -> None:
    """`busca search`'s hits for people: highlighted, wrapped to the terminal."""
    analyzer = searching.highlight.analyzer_for(index.manifest.methods, method)
    emit(display.hits_text(hits, query, analyzer, style_for_stdout()), pager=pager)

