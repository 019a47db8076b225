"""The search page `/`: a form whose state lives in the URL (`/?q=…&method=…`), hits with
analyzer-aware highlighting, and the compare view (every method in a column, the same
passage linked across columns). Server-rendered: the page works without JavaScript."""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import HTMLResponse

from ..search import highlight
from . import access, facetview, params
from .engine import Engine
from .errors import error_for_client, for_client, status_of
from .html import (esc, hit_title, href, lang_of, marked, meta_line, notice, page, rank_score,
                   source_link)

COMPARE = "compare"
PALETTE = 8  # colours that tie one passage's cards together across columns
MORE = 10  # passages a "more passages" link adds to k
OUTCOME = "outcome"  # the id of the line saying what a search found, which describes the box


def home(request: Request) -> HTMLResponse:
    """GET /?q=&method=&k=&filter= (repeatable)"""
    engine: Engine = access.engine_for(request)
    args = request.query_params
    try:
        methods = engine.methods()
    except Exception as e:  # no index yet: say how to make one
        status = status_of(e)
        if status is None:
            raise
        return page("busca", _form("", "", [], params.K, outcome=True)
                    + notice(error_for_client(request, e, status), ident=OUTCOME),
                    active="search", status=status)
    raw_q = args.get("q", "")
    method = args.get("method") or ("hybrid" if "hybrid" in methods else params.METHOD)
    filters: tuple = ()
    try:
        params.query_string(args, params.PAGE, "/")
        k = params.integer(args.get("k"), "k", default=params.K, low=1, high=params.MAX_K)
        if method != COMPARE:
            method = params.method(method)
        filters = params.filters(args.getlist("filter"))
        q = params.question(raw_q) if raw_q.strip() else ""
        results = _faceted(engine, q, method, k, filters,
                           lambda note: for_client(request, note)) if q else ""
        status, outcome = 200, bool(q) and method != COMPARE
    except Exception as e:
        status = status_of(e)
        if status is None:
            raise
        k, results, outcome = (params.K, notice(error_for_client(request, e, status),
                                                ident=OUTCOME), True)
    title = f"{raw_q} — busca" if raw_q.strip() else "busca"
    return page(title, _form(raw_q, method, methods, k, filters, outcome=outcome)
                + _sign_in(request) + results, active="search", status=status)


def _sign_in(request: Request) -> str:
    """With --tokens, to a browser that sent no token: what it sees and a link to /login."""
    seen = access.unsigned(request)
    return (f'<p class="meta signin">{esc(seen)} · <a href="{href("/login")}">sign in</a>'
            ' with a token to see more</p>' if seen else "")


def _faceted(engine: Engine, q: str, method: str, k: int, filters: tuple,
             told: Callable[[object], str] = str) -> str:
    """The results with the active filters as chips above and the facets beside them."""
    results = _results(engine, q, method, k, filters, told)
    side = facetview.panel(engine.facets(filters), q, method, k, filters)
    return (f'<div class="faceted"><div class="results"><h2 class="sr-only">Results</h2>'
            f'{facetview.chips(q, method, k, filters)}{results}</div>{side}</div>')


def _form(q: str, method: str, methods: list[str], k: int, filters: tuple = (), *,
          outcome: bool = False) -> str:
    """The search form, under the page's heading (unseen); with `outcome`, the box is
    described by the line saying what the search found (a screen reader reads it there)."""
    described = f' aria-describedby="{OUTCOME}"' if outcome else ""
    options = [*methods, COMPARE] if len(methods) > 1 else methods
    switch = "".join(
        f'<label class="switch"><input type="radio" name="method" value="{esc(m)}"'
        f'{" checked" if m == method else ""}><span>{esc(m)}</span></label>' for m in options)
    return f"""<h1 class="sr-only">Search</h1>
<form id="search" method="get" action="{href("/")}" role="search">
<input id="q" name="q" type="search" value="{esc(q)}" maxlength="{params.MAX_QUERY}"
 placeholder="Ask a question…" autofocus aria-label="question"{described}>
<input type="hidden" name="k" value="{k}">{facetview.hidden(filters)}
<button type="submit">Search</button>
<div class="methods" role="radiogroup" aria-label="method">{switch}</div>
</form>
"""


def _results(engine: Engine, q: str, method: str, k: int, filters: tuple = (),
             told: Callable[[object], str] = str) -> str:
    if method == COMPARE:
        return _compare(engine, q, k, filters, told)
    found = engine.search(q, method=method, k=k, filters=filters)
    analyzer, lang = engine.analyzer(method), engine.lang()
    if not found.hits:
        why = found.note or ("no passage passes the floor" if found.floor is not None
                             else "nothing found")
        return notice(f"nothing found: {why}", "empty", ident=OUTCOME)
    floor = f" · floor {found.floor:.4f}" if found.floor is not None else ""
    items = "".join(_hit(h, q, analyzer, lang) for h in found.hits)
    more = _more(q, method, k, filters, len(found.hits))
    return (f'<p class="meta" id="{OUTCOME}">{len(found.hits)} passages · {esc(method)}'
            f' ({esc(analyzer)} analyzer){esc(floor)} · <a href="{_compare_url(q, k, filters)}">compare'
            f' the methods</a>{more}</p><ol class="hits" id="hits">{items}</ol>')


def _more(q: str, method: str, k: int, filters: tuple, shown: int) -> str:
    """A link to the same search with MORE passages more, when k were shown and k is below
    its cap (fewer than k: there are no more)."""
    if shown < k or k >= params.MAX_K:
        return ""
    url = href("/", q=q, method=method, k=min(k + MORE, params.MAX_K),
               filter=[str(f) for f in filters])
    return f' · <a class="more" href="{url}">more passages</a>'


def _compare_url(q: str, k: int, filters: tuple) -> str:
    return href("/", q=q, method=COMPARE, k=k, filter=[str(f) for f in filters])


def _hit(hit, q: str, analyzer: str, lang: str) -> str:
    text, spans = highlight.snippet(hit.text, q, analyzer)
    full = marked(hit.text, highlight.spans(hit.text, q, analyzer))
    return (f'<li class="hit" data-chunk="{hit.chunk_id}"><div class="head">'
            f'{rank_score(hit.rank, hit.score)}{hit_title(hit.title, lang)}</div>'
            f'<div class="src">{source_link(hit.url)}</div>{meta_line(hit.meta)}'
            f'<p class="snippet"{lang_of(lang)}>{marked(text, spans)}</p>'
            f'<details><summary>whole passage (chunk {hit.chunk_id},'
            f' characters {hit.start}–{hit.end})</summary>'
            f'<p class="full"{lang_of(lang)}>{full}</p>'
            f'</details></li>')


def _compare(engine: Engine, q: str, k: int, filters: tuple = (),
             told: Callable[[object], str] = str) -> str:
    """The compare view; `told`: a method's note as the client may read it (errors.public)."""
    comparison, _ = engine.compare(q, methods=None, k=k, filters=filters)
    colour = {row.chunk_id: n % PALETTE for n, row in enumerate(comparison.rows)}
    ranks = {row.chunk_id: row.ranks for row in comparison.rows}
    shown = {m: {h.chunk_id for h in hits} for m, hits in comparison.columns.items()}
    columns, lang = [], engine.lang()
    for method, hits in comparison.columns.items():
        analyzer = engine.analyzer(method)
        cards = "".join(_card(method, h, q, analyzer, lang, colour[h.chunk_id],
                              ranks[h.chunk_id], shown) for h in hits)
        if not hits:
            cards = notice(told(comparison.notes.get(method) or "nothing found"), "empty")
        columns.append(f'<section class="column" data-method="{esc(method)}"><h2>{esc(method)}'
                       f' <small>{esc(analyzer)}</small></h2>{cards}</section>')
    legend = ("A passage keeps its colour in every column; under each card, its rank under"
              f" every other method (— not in the first {comparison.depth}; a link when"
              " that column shows it).")
    longest = max((len(hits) for hits in comparison.columns.values()), default=0)
    return (f'<p class="meta">{esc(legend)}{_more(q, COMPARE, k, filters, longest)}</p>'
            f'<div class="compare cols-{len(columns)}" id="compare">{"".join(columns)}</div>')


def _card(method: str, hit, q: str, analyzer: str, lang: str, colour: int, ranks: dict,
          shown: dict) -> str:
    text, spans = highlight.snippet(hit.text, q, analyzer)
    links = " ".join(_rank_link(m, r, hit.chunk_id, hit.chunk_id in shown.get(m, ()))
                     for m, r in ranks.items() if m != method)
    return (f'<article class="card p{colour}" id="{esc(_anchor(method, hit.chunk_id))}"'
            f' data-chunk="{hit.chunk_id}"><div class="head">{rank_score(hit.rank, hit.score)}'
            f'{hit_title(hit.title, lang)}</div><div class="src">{source_link(hit.url)}</div>'
            f'<p class="snippet"{lang_of(lang)}>{marked(text, spans)}</p>'
            f'<div class="ranks">{links}</div>'
            f'</article>')


def _rank_link(method: str, rank: int | None, chunk_id: int, on_page: bool) -> str:
    label = f"{esc(method)} {rank if rank is not None else '—'}"
    if on_page:
        return f'<a class="rank-link" href="#{esc(_anchor(method, chunk_id))}">{label}</a>'
    return f'<span class="rank-link missing">{label}</span>'


def _anchor(method: str, chunk_id: int) -> str:
    return f"{method}-{chunk_id}"
