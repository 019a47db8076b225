"""The `busca` command line: the only module that prints, exits or reads the environment."""

from __future__ import annotations

import json
import logging
import re
import shutil
import sys
import tempfile
import time
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
from busca.search import context as answer_context
from busca.search import querylog
from busca.index import dense as index_dense
from busca.index import encoders
from busca.search import dense as search_dense
from busca.search import fusion as hybrid_fusion

DEFAULT_HOME = ".busca"
FIXTURES = Path(__file__).parent / "fixtures"

# Library errors that are the user's to fix: one line, exit 1, no traceback.
USER_ERRORS: tuple[type[Exception], ...] = (
    StoreError, IndexNotFound, IndexFormatError, index_build.NothingToIndex,
    index_build.UnknownMethodError, ChunkingError, UnknownAnalyzer, core.UnknownMethod,
    EmptyVocabulary,
)
USER_ERRORS += (encoders.EncoderError, index_dense.BadVectors, search_dense.EncoderMismatch,
                search_dense.NoVectors, search_dense.EmptyQuery, hybrid_fusion.FusionError)


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
            self.started = time.perf_counter()
            if not self.tty:
                click.echo(f"{stage}…", err=True)
        if self.tty:
            of = f"/{total}" if total else ""
            click.echo(f"\r{stage}: {done}{of}{self._rate(done)}", err=True, nl=False)

    def _rate(self, done: int) -> str:
        elapsed = time.perf_counter() - self.started
        return f" ({done / elapsed:.1f}/s)" if done and elapsed >= 1 else ""

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
@click.option("--dense", "dense", default=None, metavar="NAME",
              help="Also build dense vectors (and hybrid) with this encoder: "
                   + ", ".join(encoders.encoder_names()) + "; 'none' drops them. Default: the"
                   " previous index's encoder, if any.")
@click.option("--threads", default=encoders.THREADS, show_default=True,
              type=click.IntRange(min=1), help="Threads for the dense encoder.")
@click.pass_context
def index(ctx, size, overlap, methods, quiet, dense, threads):
    """Split the stored documents into word windows and build the index.

    Example: busca index --size 200 --overlap 40 --dense use
    """
    if overlap >= size:
        raise click.BadParameter(f"must be smaller than --size ({size})", param_hint="--overlap")
    progress = Progress(quiet)
    options = dict(ctx.obj.get("index_options", {}))
    methods = _with_dense(ctx, methods, dense, threads, options)
    with _store(ctx) as store:
        manifest = index_build.build_index(
            store, size=size, overlap=overlap, methods=_split(methods), options=options,
            on_progress=progress)
    progress.close()
    click.echo(f"indexed {manifest['documents']} documents, {manifest['words']} words →"
               f" {manifest['chunks']} chunks ({manifest['rechunked_documents']} documents"
               f" re-chunked); methods: {', '.join(manifest['methods'])}")
    _echo_dense(manifest)


def _with_dense(ctx, methods: str, dense: str | None, threads: int, options: dict) -> str:
    """`methods` plus dense and hybrid when an encoder is asked for (or kept from before)."""
    names = [m for m in _split(methods) if dense != "none" or m not in ("dense", "hybrid")]
    if dense is None and "dense" not in names:
        dense = index_dense.previous_encoder(Path(ctx.obj["home"]))
        if dense:
            click.echo(f"keeping the dense vectors of {dense} (--dense none drops them)", err=True)
    if dense and dense != "none":
        options.update(dense=dense, threads=threads)
        names += [m for m in ("dense", "hybrid") if m not in names]
    return ",".join(names)


def _echo_dense(manifest: dict) -> None:
    entry = manifest["methods"].get("dense")
    if entry:
        rate = f" at {entry['chunks_per_second']} chunks/s" if entry["chunks_per_second"] else ""
        click.echo(f"dense: {entry['encoder']} ({entry['dimension']} dimensions), encoded"
                   f" {entry['encoded']} chunks{rate}, reused {entry['reused']}")
        if entry.get("truncated"):
            share = entry["truncated"] / max(entry["encoded"], 1)
            click.echo(f"warning: {entry['truncated']} of {entry['encoded']} chunks ({share:.0%})"
                       f" exceed the model's {entry['max_length']} tokens and were truncated",
                       err=True)


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
@click.option("--no-log", is_flag=True, help="Do not record this query in the query log.")
@click.option("--fusion", type=click.Choice(hybrid_fusion.FUSIONS), default=hybrid_fusion.FUSION,
              show_default=True, help="hybrid: reciprocal-rank fusion or min-max weighted sum.")
@click.option("--window", default=hybrid_fusion.WINDOW, show_default=True,
              type=click.IntRange(min=1), help="hybrid: top hits of each method that are fused.")
@click.option("--rrf-k", default=hybrid_fusion.RRF_K, show_default=True,
              type=click.FloatRange(min=0), help="hybrid: the RRF constant k.")
@click.option("--weights", default=None, metavar="M=W,...",
              help="hybrid: methods and weights, e.g. bm25=1,dense=0.5 [default: "
                   + hybrid_fusion.describe_default() + "]")
@click.pass_context
def search(ctx, query, k, method, min_score, as_json, no_log, fusion, window, rrf_k, weights):
    """Top-k passages for a question, with score, title, URL and snippet.

    Example: busca search "qual o prazo do reembolso?" -k 5
    """
    if not query.strip():
        raise click.BadParameter("the question is empty", param_hint="QUERY")
    index = load_index(ctx.obj["home"])
    min_score = _floor(index, method, min_score)
    fused = _configure_hybrid(index, method, fusion, window, rrf_k, weights, min_score)
    with _store(ctx) as store:
        started = time.perf_counter()
        try:
            hits = core.search(index, store, query, method=method, k=k)
        except NoSearchableTerms as e:
            _log_query(store, no_log, "search", query, method, k, [], min_score, started)
            click.echo(f"no hits: {e}", err=True)
            return
        _log_query(store, no_log, "search", query, method, k, hits, min_score, started)
        hits = [h for h in hits if min_score is None or h.score >= min_score]
    if as_json:
        for hit in hits:
            click.echo(json.dumps({**_hit_json(hit), **fused}, ensure_ascii=False))
    elif not hits and min_score is None:
        click.echo("nothing found: no passage passes the floor of any of the fused methods"
                   " (give --min-score 0 to see weaker matches)")
    elif not hits:
        click.echo(f"nothing found: no passage scores {min_score:.4f} or more"
                   " (lower --min-score to see weaker matches)")
    else:
        _print_hits(hits, query)


def _configure_hybrid(index, method, fusion, window, rrf_k, weights, min_score) -> dict:
    """Apply the hybrid options; {"fusion": settings} for --json output, else {}."""
    if method in ("dense", hybrid_fusion.METHOD):
        search_dense.require_vectors(index)
    if method != hybrid_fusion.METHOD:
        return {}
    parsed = hybrid_fusion.parse_weights(weights) if weights else {}
    settings = hybrid_fusion.configure(index, fusion=fusion, window=window, rrf_k=rrf_k,
                                       weights=parsed, floors=min_score is None)
    return {"fusion": hybrid_fusion.describe(index, settings)}


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


# --- answer-ready context and the query log (issue 7) ---

NOT_FOUND_EXIT = 3  # `busca context` found nothing above the floor: skip the LLM call


def _log_query(store: Store, no_log: bool, command: str, query: str, method: str, k: int,
               hits, floor: float | None, started: float) -> None:
    """Append one search/context call to the query log (unless --no-log or turned off)."""
    if no_log:
        return
    scores = [h.score for h in hits]
    answered = any(floor is None or s >= floor for s in scores)
    querylog.record(store, command=command, query=query, method=method, k=k, scores=scores,
                    floor=floor, answered=answered, seconds=time.perf_counter() - started)


@cli.command()
@click.argument("question")
@click.option("-k", default=core.K, show_default=True, type=click.IntRange(min=1),
              help="How many windows to gather (overlapping ones are merged).")
@click.option("--method", default="tfidf", show_default=True, help="Ranking method.")
@click.option("--min-score", type=float, default=None,
              help="The floor: below it nothing is found (default: the calibrated floor).")
@click.option("--max-chars", default=answer_context.MAX_CHARS, show_default=True,
              type=click.IntRange(min=1),
              help="Characters of passage text at most; passages are cut at sentence ends.")
@click.option("--template", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Prompt template file with {context} and {question} placeholders.")
@click.option("--lang", type=click.Choice(answer_context.LANGS), default="pt",
              show_default=True, help="Language of the default instruction.")
@click.option("--json", "as_json", is_flag=True,
              help="The passages with URL, title, spans and scores, and the prompt, as JSON.")
@click.option("--no-log", is_flag=True, help="Do not record this question in the query log.")
@click.pass_context
def context(ctx, question, k, method, min_score, max_chars, template, lang, as_json, no_log):
    """A prompt for any LLM: instruction, passages cited as [fonte: URL], then the question.

    Exits with code 3 and no prompt when no passage reaches the floor ("não encontrei").

    Example: busca context "qual o prazo do reembolso?" --max-chars 3000 > prompt.txt
    """
    if not question.strip():
        raise click.BadParameter("the question is empty", param_hint="QUESTION")
    text = _read_template(template) if template else None
    found = _emit_context(ctx, question, method=method, k=k, min_score=min_score,
                          max_chars=max_chars, template=text, lang=lang, as_json=as_json,
                          log=not no_log)
    if not found:
        ctx.exit(NOT_FOUND_EXIT)


def _read_template(path: str) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise click.BadParameter(f"cannot read {path}: {e}", param_hint="--template") from None
    try:
        answer_context.check_template(text)
    except answer_context.TemplateError as e:
        raise click.BadParameter(f"{path}: {e}", param_hint="--template") from None
    return text


def _emit_context(ctx, question: str, *, method: str = "tfidf", k: int = core.K,
                  min_score: float | None = None, max_chars: int = answer_context.MAX_CHARS,
                  template: str | None = None, lang: str = "pt", as_json: bool = False,
                  log: bool = True) -> bool:
    """Print the prompt (or its JSON form); False, with "não encontrei" on stderr, if none."""
    index = load_index(ctx.obj["home"])
    min_score = _floor(index, method, min_score)
    _configure_hybrid(index, method, hybrid_fusion.FUSION, hybrid_fusion.WINDOW,
                      hybrid_fusion.RRF_K, None, min_score)  # as `search` does by default
    with _store(ctx) as store:
        started = time.perf_counter()
        try:
            found = answer_context.build_context(index, store, question, method=method, k=k,
                                                 max_chars=max_chars, min_score=min_score)
        except answer_context.ContextTooSmall as e:
            raise click.BadParameter(str(e), param_hint="--max-chars") from None
        _log_query(store, not log, "context", question, method, k, found.hits, min_score,
                   started)
    if not found.answered:
        click.echo(_not_found(found), err=True)
        return False
    prompt = answer_context.render(found, lang=lang, template=template)
    if as_json:
        prompt = json.dumps(answer_context.context_dict(found, prompt=prompt),
                            ensure_ascii=False, indent=2) + "\n"
    click.echo(prompt, nl=not prompt.endswith("\n"))
    return True


def _not_found(found: answer_context.Context) -> str:
    why = found.reason or "no passage matches the question"
    if found.method == hybrid_fusion.METHOD and found.floor is None and not found.reason:
        why = "no passage passes the floor of any of the fused methods"
    if found.hits and found.floor is not None:
        why = (f"no passage scores {found.floor:.4f} or more (best"
               f" {max(found.scores):.4f}); lower --min-score to see weaker matches")
    return f"não encontrei (nothing found): {why} — no prompt was written"


@cli.command()
@click.option("--since", type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S",
                                              "%Y-%m-%d %H:%M"]), default=None,
              help="Only questions asked on or after this date (local time).")
@click.option("--below", type=float, default=None,
              help="Also count answered questions whose best score is under this.")
@click.option("--golden", type=click.Path(dir_okay=False), default=None,
              help="Write the misses to this new file as a golden-set skeleton to label.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per missed question.")
@click.pass_context
def misses(ctx, since, below, golden, as_json):
    """Logged questions that found nothing or only low scores, most frequent first.

    Example: busca misses --since 2026-01-01 --golden perguntas.json
    """
    with _store(ctx) as store:
        found = querylog.misses(store, since=since, below=below)
        if not querylog.is_enabled(store):
            click.echo('note: the query log is off ("busca log on" to record questions)',
                       err=True)
    if golden:
        _write_golden(golden, found)
    elif as_json:
        for m in found:
            click.echo(json.dumps({"question": m.query, "count": m.count, "best": m.best,
                                   "reason": m.reason, "first": m.first, "last": m.last,
                                   "methods": list(m.methods)}, ensure_ascii=False))
    elif not found:
        click.echo("no missed questions in the query log"
                   + (f" since {since:%Y-%m-%d %H:%M}" if since else ""))
    else:
        click.echo(f"{'count':>5}  {'best':>6}  {'last asked (UTC)':<16}  question")
        for m in found:
            best = f"{m.best:.4f}" if m.best is not None else "—"
            click.echo(f"{m.count:>5}  {best:>6}  {m.last[:16].replace('T', ' '):<16}"
                       f"  {m.query}")


def _write_golden(path: str, found: list[querylog.Miss]) -> None:
    if not found:
        click.echo(f"no missed questions in the query log; {path} not written")
        return
    try:
        n = querylog.write_golden(path, found)
    except (FileExistsError, OSError) as e:
        raise click.ClickException(str(e)) from None
    click.echo(f'wrote {n} questions to {path}: fill in each "trecho" (or set it to null'
               f" when the site has no answer), then run: busca eval {path}")


@cli.command("log")
@click.argument("state", required=False, type=click.Choice(["on", "off"]))
@click.pass_context
def log_setting(ctx, state):
    """Turn the query log of search and context on or off; no argument shows its state.

    Example: busca log off
    """
    with _store(ctx) as store:
        if state is not None:
            querylog.set_enabled(store, state == "on")
        on = querylog.is_enabled(store)
        n = len(store.logged_queries())
    click.echo(f"query log: {'on' if on else 'off'} ({n} queries logged)")


# --- end of commands ---


def main() -> None:
    """Console-script entry point."""
    cli(obj={})


if __name__ == "__main__":
    main()
