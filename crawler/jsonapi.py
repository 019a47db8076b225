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

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .errors import ApiRefused, CrawlStopped, FetchError
from .listing import Memo
from .events import Failed, Notice, Stored
from .html import body as html_body, headings_meta, join_url, title_text
from .options import Context, JsonApiOptions
from .markdown import markdown_text
from .paging import MISSING, fill, first, lookup, next_page, pages_itself, without
from .richtext import is_rich, rich_to_text
from .store import Document
from .urls import doc_key
from .wikitext import wikitext_to_text

_MISSING = MISSING


@dataclass
class _Listing:
    """What reading one listing found so far."""

    pages: set = field(default_factory=set)  # page URLs asked
    stored: set = field(default_factory=set)  # documents stored (or unchanged) this time
    listed: set = field(default_factory=set)  # item URLs the listing named
    complete: bool = True  # read to its end, every item stored: missing ones may be deleted
    cut: str | None = None  # why the listing broke off part way (the crawl then stops)
    repeated: int = 0  # items naming a URL an earlier item named


def crawl_json(ctx: Context, list_url: str, *, opts: JsonApiOptions | None = None,
               source: str = "json") -> Iterator:
    """Events of reading every page of the list and storing its items (as `source`; the
    platform presets pass their own options). CrawlStopped at the end when a page failed
    part way (what was stored stays, nothing is deleted)."""
    opts = opts or ctx.options.json
    site = without(list_url, opts.page_param, opts.offset_param, opts.cursor_param)
    listing, url, before = _Listing(), list_url, None
    memo = Memo(ctx, f"{site}#{source}")
    while url:
        stop = _stop_before(ctx, listing, url)
        if stop is None:
            listing.pages.add(url)
            url, before, stop = yield from _read_page(ctx, listing, (url, before),
                                                      (opts, memo, list_url, site, source))
        if stop is not None:
            listing.complete = False
            yield stop
            break
    if listing.repeated:
        yield Notice(f"{listing.repeated} item{'s' if listing.repeated > 1 else ''} repeated a"
                     " URL already listed; the first item of each URL was kept")
    yield from _delete_missing(ctx, (site, source), opts, listing.stored,
                               complete=listing.complete)
    if listing.cut:
        raise CrawlStopped(listing.cut)


def _stop_before(ctx: Context, listing: _Listing, url: str):
    """The event that ends the listing before asking `url` (a loop, --max-pages), or None."""
    if url in listing.pages:
        return Failed(url, "the next page is one already read (a paging loop); stopped")
    if ctx.options.max_pages and len(listing.pages) >= ctx.options.max_pages:
        return Notice(f"stopped after {len(listing.pages)} pages (--max-pages)")
    return None


def _read_page(ctx: Context, listing: _Listing, where: tuple, how: tuple):
    """Read one page and store its items: (the next page, its items, the event that ends
    the listing or None)."""
    url, before = where
    opts, memo, list_url, site, source = how
    try:
        response, data = _page(ctx, url, memo.headers(url), first=len(listing.pages) == 1)
    except FetchError as e:
        return None, before, _broke_off(listing, e)
    if response.status == 304:  # the page and its documents are as last time
        urls, following = memo.replay(url)
        listing.stored.update(urls)
        listing.listed.update(urls)
        yield from (Stored(u, "unchanged", fetched=False) for u in urls)
        return following, before, None
    items = _items(data, opts, url)
    stop = _repeats(items, before, listing, opts, url)
    if stop is not None:
        return None, items, stop
    stored, whole = yield from _store_page(ctx, listing, (data, items), opts,
                                           (url, site, source))
    try:
        following = next_page(data, opts, url, first=list_url, count=len(items))
    except FetchError as e:
        return None, items, _broke_off(listing, e)
    if whole:
        memo.remember(url, response.headers, stored, following)
    return following, items, None


def _broke_off(listing: _Listing, error: FetchError) -> Failed:
    listing.cut = (f"the listing broke off at {error.url} ({error.reason}); the pages before"
                   " it were stored and nothing was deleted")
    return Failed(error.url, error.reason)


def _repeats(items: list, before, listing: _Listing, opts: JsonApiOptions, url: str):
    """The event that ends a listing whose page repeats what was read (a server that ignores
    its paging parameter, a cursor that goes round in circles), or None."""
    if items and items == before:
        return Failed(url, f"this page lists the same {len(items)} items as the page before:"
                           " the API ignores its paging parameter (check --json-page-param,"
                           " --json-offset-param or --json-cursor-param); stopped")
    urls = [_item_url(item, opts.url, url) for item in items]
    if urls and all(u in listing.listed for u in urls):
        return Notice(f"{url} lists only items already listed (its paging goes round in"
                      " circles); stopped there: the listing was read in part, nothing deleted")
    return None


def _store_page(ctx: Context, listing: _Listing, page: tuple, opts: JsonApiOptions,
                at: tuple[str, str, str]):
    """Store a page's items, each URL once: (the stored URLs, whether every item was)."""
    data, items = page
    url, site, source = at
    names = sideloaded(data, opts.names)
    stored, whole = [], True
    for number, item in enumerate(items, start=1):
        item_url = _item_url(item, opts.url, url)
        if item_url in listing.listed:
            listing.repeated += 1
            continue
        if item_url:
            listing.listed.add(item_url)
        event = store_item(ctx, item, opts, (url, number, site, source), names)
        if isinstance(event, Stored):
            stored.append(event.url)
        elif isinstance(event, Failed):
            whole = False  # an item we could not read may be a stored document
        yield event
    listing.stored.update(stored)
    listing.complete = listing.complete and whole
    return stored, whole


def _delete_missing(ctx: Context, where: tuple[str, str], opts: JsonApiOptions, seen: set[str],
                    *, complete: bool) -> Iterator:
    """Delete stored items the listing no longer has, only when it surely is the whole list."""
    site, source = where
    listed = {doc_key(url) for url in seen}
    missing = [url for url in ctx.known(source, site) if doc_key(url) not in listed]
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
    """(response, its JSON) of a 200, (response, None) of a 304; FetchError when a later
    page fails (CrawlStopped when the first one does)."""
    try:
        response = ctx.fetcher.get(url, headers=headers)
        if response.status in (401, 403):
            said = _refusal(response)
            ask = ("is the key in the URL right?" if re.search(r"[?&][\w-]*(key|token)=", url)
                   else "does it need a key in the URL?")
            raise ApiRefused(f"the API refuses anonymous clients (HTTP {response.status}"
                             f" from {url}{said}); {ask}", url, f"HTTP {response.status}{said}",
                             first=first)
        if response.status == 304 and headers:
            return response, None
        if response.status != 200:
            raise FetchError(url, f"HTTP {response.status}")
        return response, response.json()
    except FetchError as e:
        if first:
            raise CrawlStopped(f"cannot read the JSON API at {url}: {e.reason}") from None
        raise


def _refusal(response) -> str:
    """The API's own words for a refusal (Ghost's `errors[0].message`, Strapi's
    `error.message`, a plain `message` or `error`), quoted after a colon; "" if none."""
    try:
        data = json.loads(response.body)
    except ValueError:
        return ""
    for path in ("errors.0.message", "error.message", "message", "error"):
        said = lookup(data, path) if isinstance(data, dict) else _MISSING
        if isinstance(said, str) and said.strip():
            return f': "{said.strip()[:200]}"'
    return ""


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
    if urlsplit(url).scheme not in ("http", "https"):
        return Notice(f"{where} skipped: its URL {url[:80]!r} is not http(s)")
    if body is MISSING and (empty := _empty_at(item, opts.body)):
        return Failed(url, f"the item's body ('{empty}') is empty; nothing stored")
    if not (isinstance(body, str) or opts.body_format == "auto" and is_rich(body)):
        return Failed(url, f"no text at '{opts.body}'{_fields_hint(item)}; set --json-body")
    text, headings = body_text_of(body, opts.body_format)
    if not text:
        return Failed(url, "empty body; nothing to store")
    title = _title(item, opts.title, url, strict=source == "json")
    if isinstance(title, Failed):
        return title
    modified = first(item, opts.modified) if opts.modified else None
    document = Document(url, title, text, source,
                        str(modified) if modified not in (None, MISSING) else None,
                        meta={**(_named(item_meta(item, opts.meta), names or {}) or {}),
                              **headings_meta(headings)} or None)
    status = ctx.put(document)
    ctx.set_doc_state(url, {"source": source, "site": site})
    return Stored(url, status)


def _title(item, paths: str, url: str, *, strict: bool) -> str | Failed:
    """The item's title; "" (the document is then named by its URL) when the item has the
    field but empty, or lacks the default `title`. `strict` (`--source json`, whose
    `--json-title` the user can fix): Failed when the item lacks every path given, or holds
    an object or a list there; a platform preset's paths that an item lacks give ""."""
    title = first(item, paths)
    if isinstance(title, str):
        return title_text(title)
    if isinstance(title, (int, float)) and not isinstance(title, bool):
        return str(title)
    lacking = title is MISSING and not _empty_at(item, paths)
    if not strict or title is MISSING and (not lacking or paths == JsonApiOptions.title):
        return ""
    what = _fields_hint(item) if lacking else f" (it holds {_kind(title)})"
    return Failed(url, f"no title at '{paths}'{what}; set --json-title")


def _kind(value) -> str:
    """What a non-text value is, for a message: "an object with: rendered, raw", "a list"."""
    if isinstance(value, dict):
        return f"an object with: {', '.join(list(value)[:15])}"
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"


def _empty_at(item, paths: str) -> str | None:
    """The first of `|`-separated paths that the item has, empty ("" or null); else None."""
    for path in paths.split("|"):
        if lookup(item, path.strip()) in ("", None):
            return path.strip()
    return None


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
        return markdown_text(body)
    return text, headings


def _item_url(item, spec: str, page_url: str) -> str | None:
    value = fill(spec, item) if "{" in spec else first(item, spec)
    if not isinstance(value, (str, int)) or value in ("", MISSING):
        return None
    return join_url(page_url, str(value))


def _fields_hint(item) -> str:
    return f" (the item has: {', '.join(list(item)[:15])})" if isinstance(item, dict) else ""
