"""MediaWiki: every article through api.php, `generator=allpages` with the wikitext of its
latest revision, paged by merging the `continue` object into the next request.

A later crawl sweeps the same generator with `prop=info` only (no text: each page's URL and
`lastrevid`), then asks for the text of the pages whose revision changed, 50 `pageids` a
request; pages gone from a complete sweep are deleted."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urljoin

from ..errors import FetchError
from ..events import Failed, Stored
from ..found import Discovery, Start
from ..jsonapi import crawl_json, store_item
from ..paging import lookup, next_page
from ..options import Context, JsonApiOptions
from .common import missing, probe_json

PAGES = "?action=query&generator=allpages&gapnamespace=0&gapfilterredir=nonredirects"
TEXT = ("&prop=revisions|info&inprop=url&rvprop=content|timestamp|user|ids&rvslots=main"
        "&format=json&formatversion=2")
QUERY = PAGES + "&gaplimit=50" + TEXT
SWEEP = PAGES + "&gaplimit=500&prop=info&inprop=url&format=json&formatversion=2"
BATCH = 50  # pageids per request (api.php's limit for anonymous clients)
OPTIONS = JsonApiOptions(
    items="query.pages", url="fullurl", title="title", body="revisions.0.slots.main.content",
    modified="revisions.0.timestamp", continue_path="continue", body_format="wikitext",
    meta=(("language", "pagelanguage"), ("authors", "revisions.0.user"),
          ("revision", "revisions.0.revid")))
_EDIT_URI = re.compile(r"""<link[^>]+rel=["']EditURI["'][^>]+href=["']([^"'?]+)""", re.I)


def detect(start: Start) -> Discovery | None:
    """A page whose generator is MediaWiki names its api.php in its EditURI link."""
    marked = start.generator().startswith("mediawiki")
    if not (marked or start.strict):
        return None
    match = _EDIT_URI.search(start.html)
    if match:
        api = urljoin(start.url, match.group(1))
        return Discovery("mediawiki", start.url, "generator MediaWiki, EditURI link",
                         api_root=api)
    for path in ("/w/api.php", "/api.php"):
        api = start.origin + path
        if probe_json(start, api + "?action=query&meta=siteinfo&format=json", "query"):
            return Discovery("mediawiki", start.url, f"{path} answers", api_root=api)
    return missing(start, "no MediaWiki api.php (no EditURI link; /w/api.php and /api.php"
                          " do not answer)")


def read(ctx: Context, found: Discovery) -> Iterator:
    site = found.api_root + QUERY  # the listing every document of this wiki is kept under
    if ctx.options.full or not ctx.known("mediawiki", site):
        yield from crawl_json(ctx, site, opts=OPTIONS, source="mediawiki")
        return
    revisions, complete = yield from _sweep(ctx, found.api_root + SWEEP)
    changed = []
    for url, (pageid, revision) in revisions.items():
        stored = ctx.store.get(url)
        if stored is not None and (stored.meta or {}).get("revision") == revision:
            yield Stored(url, "unchanged", fetched=False)
        else:
            changed.append(pageid)
    for start in range(0, len(changed), BATCH):
        ids = "|".join(map(str, changed[start:start + BATCH]))
        batch = f"{found.api_root}?action=query&pageids={ids}{TEXT}"
        complete = (yield from _texts(ctx, batch, site)) and complete
    if complete:
        yield from ctx.delete_missing("mediawiki", site, set(revisions))


def _sweep(ctx: Context, url: str):
    """{page URL: (pageid, lastrevid)} of every article, and whether the sweep was whole."""
    found, first = {}, url
    while url:
        data = yield from _get(ctx, url)
        if data is None:
            return found, False
        for page in lookup(data, "query.pages") or []:
            if isinstance(page, dict) and isinstance(page.get("fullurl"), str):
                found[page["fullurl"]] = (page.get("pageid"), page.get("lastrevid"))
        url = next_page(data, OPTIONS, url, first=first, count=0)
    return found, True


def _texts(ctx: Context, url: str, site: str):
    """Store the pages of one pageids request; True if every one was stored."""
    data = yield from _get(ctx, url)
    pages = lookup(data, "query.pages") if data is not None else None
    if not isinstance(pages, list):
        return False
    whole = True
    for number, page in enumerate(pages, start=1):
        event = store_item(ctx, page, OPTIONS, (url, number, site, "mediawiki"))
        whole = whole and isinstance(event, Stored)
        yield event
    return whole


def _get(ctx: Context, url: str):
    try:
        response = ctx.fetcher.get(url)
        if response.status != 200:
            raise FetchError(url, f"HTTP {response.status}")
        return response.json()
    except FetchError as e:
        yield Failed(url, e.reason)
        return None
