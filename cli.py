"""The `busca` command line: the only module that prints, exits or reads the environment."""

from __future__ import annotations

import json
import logging
import re
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import click

from busca import __version__
from busca.crawler.files import Problem, read_files
from busca.crawler.store import Store, StoreError
from busca.index import build as index_build
from busca.index.analyzers import UnknownAnalyzer
from busca.index.chunking import OVERLAP, SIZE, ChunkingError
from busca.index.storage import IndexFormatError, IndexNotFound, load_index
from busca.index.tfidf import EmptyVocabulary
from busca.search import core
from busca.search.lexical import NoSearchableTerms

DEFAULT_HOME = ".busca"
FIXTURES = Path(__file__).parent / "fixtures"

# Library errors that are the user's to fix: one line, exit 1, no traceback.
USER_ERRORS: tuple[type[Exception], ...] = (
    StoreError, IndexNotFound, IndexFormatError, index_build.NothingToIndex,
    index_build.UnknownMethodError, ChunkingError, UnknownAnalyzer, core.UnknownMethod,
    EmptyVocabulary,
)


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except USER_ERRORS as e:
            raise click.ClickException(str(e)) from None


class Progress:
    """A one-line progress display on stderr: `stage done/total`."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.stage = None
        self.tty = sys.stderr.isatty()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.quiet:
            return
        if stage != self.stage:
            if self.stage is not None and self.tty:
                click.echo("", err=True)
            self.stage = stage
            if not self.tty:
                click.echo(f"{stage}…", err=True)
        if self.tty:
            of = f"/{total}" if total else ""
            click.echo(f"\r{stage}: {done}{of}", err=True, nl=False)

    def close(self) -> None:
        if self.tty and self.stage is not None and not self.quiet:
            click.echo("", err=True)
        self.stage = None


def _store(ctx) -> Store:
    return Store(ctx.obj["home"])


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", envvar="BUSCA_HOME", default=DEFAULT_HOME, show_default=True,
              type=click.Path(file_okay=False), help="Folder that holds the corpus (env BUSCA_HOME).")
@click.option("-v", "--verbose", count=True, help="More log output on stderr.")
@click.version_option(__version__, prog_name="busca")
@click.pass_context
def cli(ctx, home, verbose):
    """Crawl a site into a local index and search it from the terminal.

    Example: busca crawl https://example.com && busca index && busca search "pergunta"
    """
    logging.basicConfig(level=logging.WARNING - 10 * min(verbose, 2), stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    ctx.ensure_object(dict)
    ctx.obj.setdefault("home", home)


@cli.command()
@click.argument("files", nargs=-1, required=True)
@click.pass_context
def add(ctx, files):
    """Put local files in the store: .jsonl ({"url","title","text"} per line), .txt, .md, .html.

    Example: busca add artigos.jsonl notas/*.md
    """
    counts = {"added": 0, "updated": 0, "unchanged": 0}
    problems = 0
    with _store(ctx) as store:
        for item in read_files(list(files)):
            if isinstance(item, Problem):
                problems += 1
                click.echo(f"skipped {item.where}: {item.message}", err=True)
            else:
                counts[store.put(item)] += 1
        total = store.count()
    summary = ", ".join(f"{n} {what}" for what, n in counts.items())
    click.echo(f"{summary}; {total} documents in {ctx.obj['home']}")
    if problems:
        raise click.ClickException(f"{problems} input(s) skipped, see the messages above")


@cli.command()
@click.option("--size", default=SIZE, show_default=True, type=click.IntRange(min=1),
              help="Words per window.")
@click.option("--overlap", default=OVERLAP, show_default=True, type=click.IntRange(min=0),
              help="Words shared by consecutive windows (less than --size).")
@click.option("--methods", default=",".join(index_build.METHODS), show_default=True,
              help="Comma-separated methods to build.")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
@click.pass_context
def index(ctx, size, overlap, methods, quiet):
    """Split the stored documents into word windows and build the index.

    Example: busca index --size 200 --overlap 40
    """
    if overlap >= size:
        raise click.BadParameter(f"must be smaller than --size ({size})", param_hint="--overlap")
    progress = Progress(quiet)
    options = dict(ctx.obj.get("index_options", {}))
    with _store(ctx) as store:
        manifest = index_build.build_index(
            store, size=size, overlap=overlap, methods=_split(methods), options=options,
            on_progress=progress)
    progress.close()
    click.echo(f"indexed {manifest['documents']} documents, {manifest['words']} words →"
               f" {manifest['chunks']} chunks ({manifest['rechunked_documents']} documents"
               f" re-chunked); methods: {', '.join(manifest['methods'])}")


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


@cli.command()
@click.argument("query")
@click.option("-k", default=core.K, show_default=True, type=click.IntRange(min=1),
              help="How many passages to return.")
@click.option("--method", default="tfidf", show_default=True, help="Ranking method.")
@click.option("--min-score", type=float, default=None,
              help="Drop hits below this score (default: the calibrated floor, if any).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per hit.")
@click.pass_context
def search(ctx, query, k, method, min_score, as_json):
    """Top-k passages for a question, with score, title, URL and snippet.

    Example: busca search "qual o prazo do reembolso?" -k 5
    """
    if not query.strip():
        raise click.BadParameter("the question is empty", param_hint="QUERY")
    index = load_index(ctx.obj["home"])
    min_score = _floor(index, method, min_score)
    with _store(ctx) as store:
        try:
            hits = core.search(index, store, query, method=method, k=k, min_score=min_score)
        except NoSearchableTerms as e:
            click.echo(f"no hits: {e}", err=True)
            return
    if as_json:
        for hit in hits:
            click.echo(json.dumps(_hit_json(hit), ensure_ascii=False))
    elif not hits:
        click.echo(f"nothing found: no passage scores {min_score:.4f} or more"
                   " (lower --min-score to see weaker matches)")
    else:
        _print_hits(hits, query)


def _floor(index, method: str, min_score: float | None) -> float | None:
    if min_score is not None:
        return min_score
    floor = core.floor_of(index, method)
    if floor is not None:
        click.echo(f"using the calibrated floor {floor:.4f} for {method}"
                   " (override with --min-score)", err=True)
    return floor


def _hit_json(hit: core.Hit) -> dict:
    return {"rank": hit.rank, "score": hit.score, "url": hit.url, "title": hit.title,
            "chunk_id": hit.chunk_id, "start": hit.start, "end": hit.end, "text": hit.text,
            "method": hit.method}


def _print_hits(hits: list[core.Hit], query: str) -> None:
    for hit in hits:
        click.echo(f"{hit.rank}. {hit.score:.4f}  {hit.title}  <{hit.url}>")
        click.echo(f"   {snippet(hit.text, query)}")


def snippet(text: str, query: str, width: int = 240) -> str:
    """About `width` characters of `text` around the first query word it contains."""
    lowered = text.lower()
    positions = [m.start() for w in re.findall(r"[^\W_]{3,}", query.lower())
                 if (m := re.search(r"\b" + re.escape(w), lowered))]
    start = max(0, min(positions) - width // 4) if positions else 0
    if start:
        start = text.find(" ", start) + 1 or start
    piece = text[start:start + width]
    if start + width < len(text):
        piece = piece.rsplit(" ", 1)[0] + " …"
    return ("… " if start else "") + piece


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.pass_context
def stats(ctx, as_json):
    """Documents, words, chunks and vocabulary of the index, with its parameters.

    Example: busca stats --json
    """
    manifest = load_index(ctx.obj["home"]).manifest
    figures = {key: manifest[key] for key in ("documents", "words", "chunks")}
    figures["vocabulary"] = {m: e["vocabulary"] for m, e in manifest["methods"].items()
                             if "vocabulary" in e}
    figures.update(chunker=manifest["chunker"], methods=manifest["methods"],
                   build=manifest["build"], busca_version=manifest["busca_version"])
    if as_json:
        click.echo(json.dumps(figures, ensure_ascii=False, indent=2))
        return
    c = manifest["chunker"]
    click.echo(f"documents   {figures['documents']:>10,}")
    click.echo(f"words       {figures['words']:>10,}")
    click.echo(f"chunks      {figures['chunks']:>10,}   ({c['kind']}: {c['size']} per window,"
               f" {c['overlap']} overlap)")
    for method, entry in manifest["methods"].items():
        detail = ", ".join(f"{k} {v}" for k, v in entry.items() if k != "vocabulary")
        size = f"{entry['vocabulary']:>10,} terms" if "vocabulary" in entry else " " * 16
        click.echo(f"{method:<11} {size}   ({detail})")


@cli.command()
@click.option("--keep", type=click.Path(file_okay=False), default=None,
              help="Keep the demo corpus in this folder instead of a temporary one.")
@click.pass_context
def demo(ctx, keep):
    """The whole story offline on the bundled fixture site (FaQuAD, CC BY 4.0).

    Example: busca demo
    """
    with _demo_home(keep) as home:
        ctx.obj["home"] = str(home)
        _title("1. Put the fixture site's 39 articles in a fresh store")
        ctx.invoke(add, files=[str(FIXTURES / "site" / "articles.jsonl")])
        _title("2. Index them: 200-word windows, 40 words of overlap, TF-IDF")
        ctx.invoke(index, quiet=True)
        _title("3. The corpus in the seed's four figures")
        ctx.invoke(stats)
        for question in DEMO_QUESTIONS:
            _title(f'4. busca search "{question}"')
            ctx.invoke(search, query=question, k=3)


DEMO_QUESTIONS = (
    "Quando foi fundada a Universidade Federal de Mato Grosso do Sul?",
    "o que é um sistema de informação?",
)


@contextmanager
def _demo_home(keep: str | None):
    if keep:
        yield Path(keep)
        return
    home = Path(tempfile.mkdtemp(prefix="busca-demo-"))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _title(text: str) -> None:
    click.echo("")
    click.secho(f"== {text}", bold=True)


# --- end of commands ---


def main() -> None:
    """Console-script entry point."""
    cli(obj={})


if __name__ == "__main__":
    main()
