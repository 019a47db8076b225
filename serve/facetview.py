"""The search page's facets and filter chips (issue #26). Beside the results, each metadata
key's most frequent values with how many documents carry them, counted over the documents
the request may see (its token: serve/access.py) that pass its filters — the corpus as
filtered, not only the k hits shown. A value is a link adding `filter=KEY=VALUE` to the URL;
each active filter is a chip whose × removes it. Everything from the site is escaped."""

from __future__ import annotations

from ..search.filters import BadFilter, Filter, parse_filter
from .html import esc, href


def chips(q: str, method: str, k: int, filters: tuple) -> str:
    """The active filters, each a chip with a link that removes it (empty without any)."""
    if not filters:
        return ""
    texts = [str(f) for f in filters]
    items = "".join(
        f'<span class="chip" data-filter="{esc(text)}">{esc(text)}<a class="remove"'
        f' href="{_url(q, method, k, texts[:n] + texts[n + 1:])}"'
        f' aria-label="remove the filter {esc(text)}">×</a></span>'
        for n, text in enumerate(texts))
    clear = f'<a class="clear" href="{_url(q, method, k, [])}">clear</a>' if len(texts) > 1 else ""
    return f'<div class="chips" id="filters">{items}{clear}</div>'


def panel(counts: dict, q: str, method: str, k: int, filters: tuple) -> str:
    """Each key's top values and their document counts; a value links to the page with it
    added as a filter (or, when active, removed)."""
    if not counts:
        return ""
    active = [str(f) for f in filters]
    sections = "".join(
        f'<section class="facet" data-key="{esc(key)}"><h3>{esc(key)}</h3><ul>'
        + "".join(_value(key, value, n, q, method, k, active)
                  for value, n in facet["top"].items())
        + "</ul></section>" for key, facet in counts.items())
    return (f'<aside class="facets" id="facets" aria-label="facets"><h2>Filters</h2>'
            f'<p class="meta">documents per value, among those matching the filters</p>'
            f'{sections}</aside>')


def _value(key: str, value: str, n: int, q: str, method: str, k: int,
           active: list[str]) -> str:
    text = f"{key}={value}"
    count = f'<span class="count">{n}</span>'
    if not _linkable(key, value):  # a comma or a field no filter can name: shown, not linked
        return f'<li><span class="value">{esc(value)}</span> {count}</li>'
    if text in active:
        rest = [t for t in active if t != text]
        return (f'<li class="active"><a href="{_url(q, method, k, rest)}"'
                f' data-filter="{esc(text)}" aria-label="remove the filter {esc(text)}">'
                f'{esc(value)} ×</a> {count}</li>')
    return (f'<li><a href="{_url(q, method, k, [*active, text])}" data-filter="{esc(text)}">'
            f'{esc(value)}</a> {count}</li>')


def _linkable(key: str, value: str) -> bool:
    """Whether `key=value` reads back as exactly this one filter."""
    try:
        return parse_filter(f"{key}={value}") == Filter(key, "=", (value,))
    except BadFilter:
        return False


def _url(q: str, method: str, k: int, filters: list[str]) -> str:
    return href("/", q=q, method=method, k=k, filter=filters)


def hidden(filters: tuple) -> str:
    """The active filters as hidden fields of the search form: a new question keeps them."""
    return "".join(f'<input type="hidden" name="filter" value="{esc(f)}">' for f in filters)
