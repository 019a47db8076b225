"""The interactive session: one process loads the index and the encoder once, then answers
question after question (`busca shell`, or `busca search` with no question).

`Session.handle` takes one line: a question or a `:command`. terminal.py drives it from a
terminal (readline editing, history); `run_pipe` from a pipe, one question per line, with
`--json` one JSON line per answer, so a script pipes its questions through one process.
Like cli.py, this module prints.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import click

from . import corpus as api
from .corpus.live import LiveBuild
from .corpus.specs import MOST
from . import display
from . import search as searching
from .errors import BuscaError
from .index import HYBRID, is_dense, is_hybrid

if TYPE_CHECKING:
    from .index.dense.rerank_api import RerankSettings

HISTORY = "~/.busca_history"  # read and written by terminal.py
FLOOR_OPTION = ":min-score"  # what "nothing found" tells a person to lower (JSON names
#                              --min-score, as busca search --json and busca context --json do)
PLAIN = display.Style()  # no colour: the stderr lines' style unless terminal.py gives one
WARM_UP = api.WARM_UP  # encoded when a dense method is chosen, so no question waits for it

HELP = """\
Type a question and press Enter. Commands:
  :method NAME     rank with NAME ({methods})
  :k N             show N passages
  :per-doc N       at most N windows of one article (0 = no limit)
  :min-score X     drop hits below X; :min-score clear: the calibrated floor
  :filter F=V      rank only documents matching F=V (also !=, >=, <=, ^=; repeatable);
                   :filter alone lists them, :filter clear removes them
  :compare [Q]     the methods side by side for Q (default: the last question)
  :context [Q]     the LLM prompt for Q (default: the last question)
  :lang L          the prompt's instruction in L ({langs}); :lang alone names it
  :settings        the current settings
  :help            this help
Ctrl-D (or :quit) leaves; {history}."""


RANKS = {"method", "m", "min-score", "compare", "c", "context"}  # :commands that need the
#                                                                  live build (the others
#                                                                  work on the one loaded)


class SessionError(BuscaError):
    """A `:command` the session cannot follow (unknown command, bad value)."""


@dataclass(frozen=True)
class Settings:
    """What the next question is answered with."""

    method: str = api.METHOD
    k: int = searching.K
    per_doc: int | None = None  # None: each command's default (search 0, context 2)
    min_score: float | None = None  # None: the method's calibrated floor
    rerank: RerankSettings | None = None  # the re-ranking stage of every question
    filters: tuple = ()  # search.Filter values: every question ranks only what they allow
    lang: str | None = None  # :context's instruction, as busca context --lang (None: the
    #                          index's, searching.prompt_lang)


class Session:
    """Answers questions on one loaded index; `handle` takes one line of input."""

    def __init__(self, index, store, settings: Settings, *,
                 style: display.Style, err_style: display.Style = PLAIN,
                 as_json: bool = False, log: bool = True,
                 echo: Callable[..., None] = click.echo, history: str | None = HISTORY):
        self.index, self.store, self.style = index, store, style
        self.err_style = err_style  # how the "(N hits, …)" line is drawn on stderr
        self.as_json, self.log, self.echo = as_json, log, echo
        self.history = history  # named by :help (None: not kept)
        self.fusion: searching.FusionSettings | None = None  # hybrid's settings, as a value
        self.settings = settings
        self.last: str | None = None
        self.answered = 0
        self.live = LiveBuild()  # the build the home serves now, asked at every line
        self.use(settings.method)

    # --- settings -----------------------------------------------------------------------
    def use(self, method: str) -> None:
        """Switch to `method`, loading its scorer (and encoder) now, not at the next question."""
        if method in ("dense", HYBRID):
            searching.require_vectors(self.index)  # the hint to add vectors
        min_score = self.settings.min_score
        fusion = api.SearchSpec(method=method, min_score=min_score).fusion_settings(min_score)
        ranker = searching.scorer(self.index, method, fusion)  # UnknownMethod lists them
        if is_dense(method) or is_hybrid(method):  # dense:NAME and hybrid:NAME too
            ranker.top(WARM_UP, 1)  # encode once now: some encoders load lazily
        api.prepare(ranker)
        self.settings, self.fusion = replace(self.settings, method=method), fusion

    def follow(self) -> None:
        """Answer on the home's live build: one `busca index` published meanwhile (by any
        process) is loaded at the next line and said once; new calibrated floors are taken."""
        live = self.live.current(self.store)
        if live.manifest == self.index.manifest:
            return
        rebuilt = live.build != self.index.manifest.build
        self.index = live.index
        if rebuilt:
            self._note(f"the index was rebuilt (build {live.build},"
                       f" {live.manifest.chunks} chunks): answering on it")
        try:
            self.use(self.settings.method)  # its ranker from the new build
        except BuscaError as e:  # the rebuild dropped it (busca index --dense none): said once
            self._fall_back(str(e))

    def _fall_back(self, why: str) -> None:
        """Answer with the default method (else the first the build has) when the session's
        cannot answer on the build now served; one line says which and why."""
        was, have = self.settings.method, searching.available_methods(self.index)
        for method in dict.fromkeys([api.METHOD, *have]):
            if method in have and method != was:
                try:
                    self.use(method)
                except BuscaError:
                    continue
                self._note(f"{was} cannot answer on this build ({display.one_line(why)}):"
                           f" answering with {method}; :method NAME chooses another")
                return
        raise SessionError(why)

    def floor(self, method: str | None = None) -> float | None:
        if self.settings.min_score is not None:
            return self.settings.min_score
        return searching.floor_of(self.index, method or self.settings.method)

    def _floor_text(self) -> str:
        """The floor that applies, as :settings and :min-score clear name it: a fused method
        keeps the hits that pass one component's calibrated floor."""
        floor = self.floor()
        if floor is not None:
            return f"{floor:g}"
        gates = searching.gate_floors(self.index, self.settings.method, self.fusion)
        if gates:
            return "one component's: " + " or ".join(f"{m} {f:g}" for m, f in gates.items())
        return "none"

    # --- one line of input --------------------------------------------------------------
    def handle(self, line: str) -> bool:
        """Answer a question or follow a `:command`; False when the session should end."""
        if not line.strip():  # a blank line (Enter alone) asks nothing
            return True
        line = api.asked(line).strip()  # (bytes that were not UTF-8 as U+FFFD: valid JSON)
        try:
            if line.startswith(":"):
                return self.command(line)
            self.follow()
            self.ask(line)
        except BuscaError as e:  # one line, and the session goes on
            self.error(str(e), line)
        return True

    def error(self, message: str, line: str) -> None:
        if self.as_json:
            self.echo(json.dumps({"input": line, "error": message}, ensure_ascii=False))
        else:
            self.echo(f"error: {display.strip_controls(message)}", err=True)

    def command(self, line: str) -> bool:
        name, _, arg = line[1:].partition(" ")
        name, arg = name.lower(), arg.strip()
        if name in ("q", "quit", "exit"):
            return False
        try:  # after :quit: a home whose index is gone still lets one leave
            self.follow()
        except BuscaError:  # :help, :settings, :k … still work on the index loaded;
            if name in RANKS:  # a command that ranks says why it cannot
                raise
        actions = {"method": self._method, "m": self._method, "k": self._k,
                   "min-score": self._min_score,
                   "per-doc": self._per_doc, "filter": self._filter, "compare": self.compare, "c": self.compare,
                   "context": self.context, "lang": self._lang, "settings": self._show,
                   "help": self._help, "h": self._help, "?": self._help}
        if name not in actions:
            raise SessionError(f"unknown command :{name}; type :help for the list")
        actions[name](arg)
        return True

    def _method(self, arg: str) -> None:
        if not arg:
            raise SessionError("name a method, e.g. :method hybrid; this index has: "
                               + ", ".join(searching.available_methods(self.index)))
        try:
            self.use(arg)
        except searching.UnknownMethod as e:  # the library's "(method X)": here one types
            if e.have is None:                # ":method X"
                raise
            from .index.methods import not_in_index

            raise SessionError(str(not_in_index(e.method, e.have, ask=":method"))) from None
        self._note(f"method {arg}")

    def _k(self, arg: str) -> None:
        self.settings = replace(self.settings, k=_number(arg, ":k", 1))
        self._note(f"k {self.settings.k}")

    def _per_doc(self, arg: str) -> None:
        self.settings = replace(self.settings, per_doc=_number(arg, ":per-doc", 0))
        self._note(f"per-doc {self.settings.per_doc}")

    def _min_score(self, arg: str) -> None:
        """`:min-score X` sets the floor, `:min-score clear` goes back to the calibrated one."""
        if arg.lower() == "clear":
            value = None
        else:
            try:
                value = float(arg)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise SessionError(":min-score takes a number, e.g. :min-score 0.5, or clear"
                                   " for the calibrated floor")
        self.settings = replace(self.settings, min_score=value)
        self.use(self.settings.method)  # hybrid's fusion takes the floor
        self._note(f"min-score {value:g}" if value is not None else
                   f"min-score calibrated ({self._floor_text()})")

    def _lang(self, arg: str) -> None:
        """`:lang en` chooses the prompt's language, `:lang` names it."""
        if arg and arg.lower() not in searching.LANGS:
            raise SessionError(f"unknown language {arg!r} for :lang; choose one of:"
                               f" {', '.join(searching.LANGS)}")
        if arg:
            self.settings = replace(self.settings, lang=arg.lower())
        self._note(f"lang {self.settings.lang or self._index_lang()}")

    def _filter(self, arg: str) -> None:
        """`:filter F=V` adds a filter, `:filter clear` drops them all, `:filter` lists them."""
        if arg.lower() == "clear":
            self.settings = replace(self.settings, filters=())
        elif arg:
            added = searching.parse_filters([arg])  # BadFilter: one line, the session goes on
            self.settings = replace(self.settings, filters=(*self.settings.filters, *added))
        self._note(f"filters {self._filters()}")

    def _filters(self) -> str:
        return " ".join(str(f) for f in self.settings.filters) or "none"

    def _show(self, _arg: str = "") -> None:
        s = self.settings
        per_doc = "each command's default" if s.per_doc is None else s.per_doc
        floor = self._floor_text()
        if floor == "none":
            floor += " (no floor calibrated: busca eval --calibrate)"
        self._note(f"method {s.method}, k {s.k}, per-doc {per_doc}, floor {floor},"
                   f" filters {self._filters()}, lang {s.lang or self._index_lang()}")

    def _index_lang(self) -> str:
        return f"{searching.prompt_lang(self.index.manifest.methods)} (the index's)"

    def _help(self, _arg: str = "") -> None:
        methods = ", ".join(searching.available_methods(self.index))
        kept = (f"the history is kept in {self.history}" if self.history
                else "the history is not kept")
        self.echo(HELP.format(methods=methods, history=kept, langs="|".join(searching.LANGS)),
                  err=self.as_json)

    def _note(self, text: str) -> None:
        self.echo(display.strip_controls(text), err=True)  # it repeats what was typed

    def _told(self, what: str, value) -> None:
        """What a use case tells: the documents a search left out (the floor is in the
        settings the session shows)."""
        if what == "left out":
            self.echo(display.left_out(value), err=True)

    # --- answers ------------------------------------------------------------------------
    def ask(self, question: str) -> list:
        """Rank `question` with the current settings and print the hits."""
        s = self.settings
        self.last = question
        spec = self.spec(api.SearchSpec, searching.collapse.PER_DOC)
        result = api.search_build(self.index, self.store, question, spec, notify=self._told)
        shown, floor, seconds = list(result.hits), result.floor, result.seconds
        self.answered += 1
        if self.as_json:
            # why nothing passed, as GET /api/search's "note" says it
            note = {"note": result.why_nothing("--min-score")} if not shown else {}
            filters = {"filters": [str(f) for f in s.filters]} if s.filters else {}
            reranked = {"rerank": result.rerank} if result.rerank else {}
            self.echo(json.dumps({"question": question, "method": s.method, "k": s.k,
                                  "per_doc": spec.per_doc, "floor": floor, **filters,
                                  **reranked,
                                  "seconds": round(seconds, 4),
                                  "hits": [h.to_json() for h in shown], **note},
                                 ensure_ascii=False))
            return shown
        if not shown:  # as busca search says it (no known word, filters, floor, refusal)
            self.echo(display.strip_controls(result.no_hits(FLOOR_OPTION)))
        else:
            analyzer = searching.highlight.analyzer_for(self.index.manifest.methods, s.method)
            self.echo(display.hits_text(shown, question, analyzer, self.style))
        hits_word = "hit" if len(shown) == 1 else "hits"
        self.echo(self.err_style.paint(f"({len(shown)} {hits_word}, {s.method},"
                                       f" {seconds * 1000:.0f} ms)", dim=True), err=True)
        return shown

    def spec(self, kind: type[api.SearchSpec], per_doc: int):
        """The session's settings as a spec of `kind` (`per_doc` unless the session set one)."""
        s = self.settings
        return kind(method=s.method, k=s.k, min_score=s.min_score, log=self.log,
                    per_doc=per_doc if s.per_doc is None else s.per_doc, rerank=s.rerank,
                    filters=s.filters)

    def compare(self, arg: str = "") -> None:
        question = self._question(arg, ":compare")
        s = self.settings
        fusion = self.fusion or searching.FusionSettings(floors=self.settings.min_score is None)
        result = api.compare_build(self.index, self.store, question, k=s.k,
                                   per_doc=s.per_doc or 0, rerank=s.rerank, filters=s.filters,
                                   fusion=fusion)
        if self.as_json:
            self.echo(json.dumps(result.to_json(), ensure_ascii=False))
        else:
            analyzer = searching.highlight.analyzer_for(self.index.manifest.methods, "bm25")
            self.echo(display.compare_text(result, analyzer, self.style), nl=False)

    def context(self, arg: str = "") -> None:
        question = self._question(arg, ":context")
        spec = replace(self.spec(api.ContextSpec, searching.CONTEXT_PER_DOC), log=False)
        found = api.context_build(self.index, self.store, question, spec, notify=self._told)
        lang = self.settings.lang
        prompt = searching.render(found, lang=lang) if found.answered else None
        if self.as_json:
            self.echo(json.dumps(searching.context_dict(found, prompt=prompt, lang=lang,
                                                        floor_option="--min-score"),
                                 ensure_ascii=False))
        elif prompt is None:
            self.echo(found.nothing_found(FLOOR_OPTION, lang=lang))
        else:
            self.echo(display.strip_controls(prompt), nl=not prompt.endswith("\n"))

    def _question(self, arg: str, command: str) -> str:
        question = arg or self.last
        if not question:
            raise SessionError(f"ask a question first, or give one: {command} QUESTION")
        self.last = question
        return question


def _number(arg: str, name: str, least: int) -> int:
    try:
        value = int(arg)
    except ValueError:
        value = least - 1
    if not least <= value <= MOST:  # the library's bound: a k of 2**64 broke the query log
        raise SessionError(f"{name} takes a whole number from {least} to {MOST:,}, e.g."
                           f" {name} 5")
    return value


# --- from a pipe ----------------------------------------------------------------------------

def run_pipe(session: Session, lines: Iterable[str]) -> int:
    """One question (or :command) per line; returns how many questions were answered."""
    for line in lines:
        if not session.handle(line):
            break
    return session.answered
