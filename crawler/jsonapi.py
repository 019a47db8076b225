"""A site's own JSON API: a list URL, where the items are, which fields hold what, how to page.

Example (Ghost's Content API):

    busca crawl "https://demo.ghost.io/ghost/api/content/posts/?key=KEY&limit=50" \\
        --source json --json-items posts --json-url url --json-title title \\
        --json-body html --json-modified updated_at --json-page-param page \\
        --json-next meta.pagination.next

Paths are dotted (`data.items`, `title.rendered`; a number indexes a list). `--json-url`
may also be a template filled from the item (`https://site/artigos/{slug}`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .errors import CrawlStopped, FetchError
from .events import Failed, Notice, Stored
from .html import body_text, join_url, title_text
from .options import Context, JsonApiOptions
from .store import Document

_MISSING = object()


def lookup(data, path: str):
    """The value at a dotted path ("" is the data itself); _MISSING if absent."""
    for key in filter(None, path.split(".")):
        if isinstance(data, dict) and key in data:
            data = data[key]
        elif isinstance(data, list) and re.fullmatch(r"-?\d+", key) and -len(data) <= int(key) < len(data):
            data = data[int(key)]
        else:
            return _MISSING
    return data


def crawl_json(ctx: Context, list_url: str) -> Iterator:
    """Events of reading every page of the list and storing its items."""
    opts = ctx.options.json
    site = _without(list_url, opts.page_param)
    seen_pages, seen_urls, complete, url = set(), set(), True, list_url
    while url:
        if url in seen_pages:
            yield Failed(url, "the next page is one already read (a paging loop); stopped")
            complete = False
            break
        if ctx.options.max_pages and len(seen_pages) >= ctx.options.max_pages:
            yield Notice(f"stopped after {len(seen_pages)} pages (--max-pages)")
            complete = False
            break
        seen_pages.add(url)
        data = yield from _page(ctx, url, first=len(seen_pages) == 1)
        if data is None:
            complete = False
            break
        items = _items(data, opts, url)
        for number, item in enumerate(items, start=1):
            event = _store_item(ctx, item, opts, url, number, site)
            if isinstance(event, Stored):
                seen_urls.add(event.url)
            else:
                complete = False  # an item we could not read may be a stored document
            yield event
        try:
            url = _next_url(data, opts, url, bool(items))
        except FetchError as e:
            yield Failed(e.url, e.reason)
            complete = False
            break
    yield from _delete_missing(ctx, site, seen_urls, complete=complete)


def _delete_missing(ctx: Context, site: str, seen: set[str], *, complete: bool) -> Iterator:
    """Delete stored items the listing no longer has, only when it surely is the whole list."""
    opts = ctx.options.json
    missing = [url for url in ctx.known("json", site) if url not in seen]
    if not missing:
        return
    if not (opts.page_param or opts.next_path):
        yield Notice(f"{len(missing)} stored documents of this API were not in the page read;"
                     " nothing deleted, since without --json-page-param or --json-next busca"
                     " cannot tell the page is the whole list")
    elif not complete:
        yield Notice(f"{len(missing)} stored documents of this API were not seen; nothing"
                     " deleted, since the listing was not read to its end without failures")
    elif len(missing) > len(seen):
        yield Notice(f"the API listed {len(seen)} items but {len(missing)} stored documents"
                     " are missing from it; nothing deleted (check the --json-* options)")
    else:
        yield from ctx.delete_missing("json", site, seen)


def _page(ctx: Context, url: str, *, first: bool):
    try:
        response = ctx.fetcher.get(url)
        if response.status in (401, 403):
            raise CrawlStopped(f"the API refuses anonymous clients (HTTP {response.status}"
                               f" from {url}); does it need a key in the URL?")
        if response.status != 200:
            raise FetchError(url, f"HTTP {response.status}")
        return response.json()
    except FetchError as e:
        if first:
            raise CrawlStopped(f"cannot read the JSON API at {url}: {e.reason}") from None
        yield Failed(url, e.reason)
        return None


def _items(data, opts: JsonApiOptions, url: str) -> list:
    items = lookup(data, opts.items)
    if isinstance(items, list):
        return items
    keys = ", ".join(list(data)[:12]) if isinstance(data, dict) else type(data).__name__
    where = f"'{opts.items}'" if opts.items else "the top level"
    raise CrawlStopped(f"no list of items at {where} of {url} (its keys: {keys});"
                       " set --json-items to the dotted path of the list")


def _store_item(ctx: Context, item, opts: JsonApiOptions, page_url: str, number: int, site: str):
    where = f"{page_url} item {number}"
    url = _item_url(item, opts.url, page_url)
    body = lookup(item, opts.body)
    if not url:
        return Failed(where, f"no URL at '{opts.url}'{_fields_hint(item)}; set --json-url")
    if not isinstance(body, str):
        return Failed(url, f"no text at '{opts.body}'{_fields_hint(item)}; set --json-body")
    text = body_text(body)
    if not text:
        return Failed(url, "empty body; nothing to store")
    title = lookup(item, opts.title)
    modified = lookup(item, opts.modified) if opts.modified else None
    document = Document(url, title_text(title) if isinstance(title, str) else "", text, "json",
                        str(modified) if modified not in (None, _MISSING) else None)
    status = ctx.store.put(document)
    ctx.set_doc_state(url, {"source": "json", "site": site})
    return Stored(url, status)


def _item_url(item, spec: str, page_url: str) -> str | None:
    if "{" in spec:
        try:
            value = spec.format_map(item if isinstance(item, dict) else {})
        except (KeyError, IndexError, ValueError, AttributeError, TypeError):
            return None
    else:
        value = lookup(item, spec)
    if not isinstance(value, (str, int)) or value in ("", _MISSING):
        return None
    return join_url(page_url, str(value))


def _fields_hint(item) -> str:
    return f" (the item has: {', '.join(list(item)[:15])})" if isinstance(item, dict) else ""


def _next_url(data, opts: JsonApiOptions, url: str, had_items: bool) -> str | None:
    if opts.next_path:
        value = lookup(data, opts.next_path)
        if isinstance(value, int) and not isinstance(value, bool) and opts.page_param:
            return _with_param(url, opts.page_param, value)
        if isinstance(value, str) and value.strip():
            target = join_url(url, value.strip())
            if target is None:
                raise FetchError(url, f"malformed next-page URL {value.strip()[:100]!r}")
            return target
        return None
    if opts.page_param and had_items:
        current = dict(parse_qsl(urlsplit(url).query)).get(opts.page_param, "1")
        return _with_param(url, opts.page_param, int(current) + 1 if current.isdigit() else 2)
    return None


def _with_param(url: str, name: str, value) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != name]
    return urlunsplit((*parts[:3], urlencode([*query, (name, str(value))], safe="/,"), ""))


def _without(url: str, name: str | None) -> str:
    if not name:
        return url
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != name]
    return urlunsplit((*parts[:3], urlencode(query, safe="/,"), ""))
