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

from collections.abc import Iterator

from .errors import CrawlStopped, FetchError
from .listing import Memo
from .events import Failed, Notice, Stored
from .html import body as html_body, headings_meta, join_url, title_text
from .options import Context, JsonApiOptions
from .markdown import markdown_to_text
from .paging import MISSING, fill, first, lookup, next_page, pages_itself, without
from .richtext import is_rich, rich_to_text
from .store import Document
from .wikitext import wikitext_to_text

_MISSING = MISSING


def crawl_json(ctx: Context, list_url: str, *, opts: JsonApiOptions | None = None,
               source: str = "json") -> Iterator:
    """Events of reading every page of the list and storing its items (as `source`; the
    platform presets pass their own options)."""
    opts = opts or ctx.options.json
    site = without(list_url, opts.page_param, opts.offset_param, opts.cursor_param)
    seen_pages, seen_urls, complete, url = set(), set(), True, list_url
    before = None  # the previous page's items
    memo = Memo(ctx, f"{site}#{source}")
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
        answer = yield from _page(ctx, url, memo.headers(url), first=len(seen_pages) == 1)
        if answer is None:
            complete = False
            break
        response, data = answer
        if response.status == 304:  # the page and its documents are as last time
            urls, url = memo.replay(url)
            seen_urls.update(urls)
            yield from (Stored(u, "unchanged", fetched=False) for u in urls)
            continue
        stored, whole = [], True
        items = _items(data, opts, url)
        if items and items == before:  # a server that ignores the page parameter
            yield Failed(url, f"this page lists the same {len(items)} items as the page before:"
                              " the API ignores its paging parameter (check --json-page-param,"
                              " --json-offset-param or --json-cursor-param); stopped")
            complete = False
            break
        before = items
        names = sideloaded(data, opts.names)
        for number, item in enumerate(items, start=1):
            event = store_item(ctx, item, opts, (url, number, site, source), names)
            if isinstance(event, Stored):
                stored.append(event.url)
            else:
                whole = False  # an item we could not read may be a stored document
            yield event
        seen_urls.update(stored)
        complete = complete and whole
        try:
            following = next_page(data, opts, url, first=list_url, count=len(items))
        except FetchError as e:
            yield Failed(e.url, e.reason)
            complete = False
            break
        if whole:
            memo.remember(url, response.headers, stored, following)
        url = following
    yield from _delete_missing(ctx, (site, source), opts, seen_urls, complete=complete)


def _delete_missing(ctx: Context, where: tuple[str, str], opts: JsonApiOptions, seen: set[str],
                    *, complete: bool) -> Iterator:
    """Delete stored items the listing no longer has, only when it surely is the whole list."""
    site, source = where
    missing = [url for url in ctx.known(source, site) if url not in seen]
    if not missing:
        return
    if not pages_itself(opts):
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
        yield from ctx.delete_missing(source, site, seen)


def _page(ctx: Context, url: str, headers: dict, *, first: bool):
    """(response, its JSON) of a 200, (response, None) of a 304, or None: the page failed."""
    try:
        response = ctx.fetcher.get(url, headers=headers)
        if response.status in (401, 403):
            raise CrawlStopped(f"the API refuses anonymous clients (HTTP {response.status}"
                               f" from {url}); does it need a key in the URL?")
        if response.status == 304 and headers:
            return response, None
        if response.status != 200:
            raise FetchError(url, f"HTTP {response.status}")
        return response, response.json()
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


def sideloaded(data, names: tuple[tuple[str, str, str, str], ...]) -> dict[str, dict]:
    """{meta name: {id: name}} from the lists a page sideloads (Zendesk's `sections`,
    JSON:API's `included`)."""
    tables: dict[str, dict] = {}
    for meta, path, key, name in names:
        found = lookup(data, path)
        for entry in found if isinstance(found, list) else []:
            ident, label = first(entry, key), first(entry, name)
            if isinstance(label, str) and ident is not MISSING:
                tables.setdefault(meta, {})[str(ident)] = label
    return tables


def _named(meta: dict | None, tables: dict[str, dict]) -> dict | None:
    """The metadata with ids replaced by their sideloaded names (unknown ids kept)."""
    if not meta or not tables:
        return meta
    for key, table in tables.items():
        value = meta.get(key)
        if isinstance(value, list):
            meta[key] = [table.get(str(v), v) for v in value]
        elif value is not None:
            meta[key] = table.get(str(value), value)
    return meta


def store_item(ctx: Context, item, opts: JsonApiOptions, at: tuple[str, int, str, str],
               names: dict[str, dict] | None = None):
    """Store one item of a listing page (`at`: page URL, item number, site, source; `names`:
    what the page sideloads, for ids in the metadata): Stored, or Failed naming the missing
    field."""
    page_url, number, site, source = at
    where = f"{page_url} item {number}"
    url = _item_url(item, opts.url, page_url)
    body = first(item, opts.body)
    if not url:
        return Failed(where, f"no URL at '{opts.url}'{_fields_hint(item)}; set --json-url")
    if not (isinstance(body, str) or opts.body_format == "auto" and is_rich(body)):
        return Failed(url, f"no text at '{opts.body}'{_fields_hint(item)}; set --json-body")
    text, headings = body_text_of(body, opts.body_format)
    if not text:
        return Failed(url, "empty body; nothing to store")
    title = first(item, opts.title)
    modified = first(item, opts.modified) if opts.modified else None
    document = Document(url, title_text(title) if isinstance(title, str) else "", text, source,
                        str(modified) if modified not in (None, MISSING) else None,
                        meta={**(_named(item_meta(item, opts.meta), names or {}) or {}),
                              **headings_meta(headings)} or None)
    status = ctx.put(document)
    ctx.set_doc_state(url, {"source": source, "site": site})
    return Stored(url, status)


def item_meta(item, paths: tuple[tuple[str, str], ...]) -> dict | None:
    """The metadata named by (name, dotted path) pairs; empty and missing values left out."""
    meta = {}
    for name, path in paths:
        value = first(item, path)
        if isinstance(value, list):
            value = [v if isinstance(v, (str, int)) else str(v) for v in value]
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            value = value if isinstance(value, int) else str(value)
        if value in (None, "", [], MISSING) or isinstance(value, (dict, bool)):
            continue
        meta[name] = value
    return meta or None


def body_text_of(body, body_format: str) -> tuple[str, tuple]:
    """(text, headings) of a body field: HTML or text; wikitext; or, with "auto", also
    Markdown (a string without tags) and structured rich text (richtext.py)."""
    if body_format == "wikitext":
        return wikitext_to_text(body), ()
    if body_format == "auto" and is_rich(body):
        return rich_to_text(body), ()
    text, headings = html_body(body)
    if body_format == "auto" and not headings and "<" not in body:
        return markdown_to_text(body), ()
    return text, headings


def _item_url(item, spec: str, page_url: str) -> str | None:
    value = fill(spec, item) if "{" in spec else first(item, spec)
    if not isinstance(value, (str, int)) or value in ("", MISSING):
        return None
    return join_url(page_url, str(value))


def _fields_hint(item) -> str:
    return f" (the item has: {', '.join(list(item)[:15])})" if isinstance(item, dict) else ""
