"""MediaWiki: every article through api.php. A sweep of `generator=allpages` with `prop=info`
only (no text: each page's URL and `lastrevid`, paged by merging the `continue` object into
the next request), then the wikitext of the latest revision and the visible categories of the
pages that are new or whose revision changed, 50 `pageids` a request. A request whose answer
is cut (`rvcontinue`, `clcontinue`: a response over the server's size limit gives some pages
without their text) is continued until every page of the batch is whole; pages gone from a
complete sweep are deleted."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urljoin

from ..errors import CrawlStopped, FetchError
from ..events import Failed, Notice, Stored
from ..found import Discovery, Start
from ..jsonapi import store_item
from ..paging import lookup, next_page
from ..options import Context, JsonApiOptions
from .common import missing, probe_json

PAGES = "?action=query&generator=allpages&gapnamespace=0&gapfilterredir=nonredirects"
TEXT = ("&prop=revisions|info|categories&inprop=url&rvprop=content|timestamp|user|ids"
        "&rvslots=main&clshow=!hidden&cllimit=max&format=json&formatversion=2")
# The key a wiki's documents are kept under (the listing URL earlier versions read; kept so
# that their homes' documents stay this wiki's).
QUERY = PAGES + ("&gaplimit=50&prop=revisions|info&inprop=url&rvprop=content|timestamp|user|ids"
                 "&rvslots=main&format=json&formatversion=2")
SWEEP = PAGES + "&gaplimit=500&prop=info&inprop=url&format=json&formatversion=2"
BATCH = 50  # pageids per request (api.php's limit for anonymous clients)
OPTIONS = JsonApiOptions(
    items="query.pages", url="fullurl", title="title", body="revisions.0.slots.main.content",
    modified="revisions.0.timestamp", continue_path="continue", body_format="wikitext",
    meta=(("language", "pagelanguage"), ("authors", "revisions.0.user"),
          ("revision", "revisions.0.revid"), ("categories", "category_names")))
_EDIT_URI = re.compile(  # to the next tag, the first rel kept (see found._GENERATOR)
    r"""<link(?>[^<>]+?rel=["']EditURI["'])[^<>]+href=["']([^"'?]+)""", re.I)


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
    revisions, cut = yield from _sweep(ctx, found.api_root + SWEEP)
    complete = cut is None
    changed = []
    for url, (pageid, revision) in revisions.items():
        stored = None if ctx.options.full else ctx.store.written(url)
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
    if cut:
        raise CrawlStopped(cut)


def _sweep(ctx: Context, url: str):
    """{page URL: (pageid, lastrevid)} of every article, and None when the sweep was whole,
    "" when it was stopped on purpose (a continuation asked before, --max-pages), or why a
    request failed. Either way read in part: nothing is deleted."""
    found, first, asked = {}, url, set()
    while url:
        stop = _sweep_stop(ctx, url, asked)
        if stop:
            yield Notice(stop)
            return found, ""
        asked.add(url)
        try:
            data = _get(ctx, url)
        except FetchError as e:
            yield Failed(url, e.reason)
            return found, (f"the list of the wiki's pages broke off at {url} ({e.reason});"
                           " nothing was deleted")
        for page in _pages(data):
            if isinstance(page.get("fullurl"), str):
                found[page["fullurl"]] = (page.get("pageid"), page.get("lastrevid"))
        url = next_page(data, OPTIONS, url, first=first, count=0)
    return found, None


def _sweep_stop(ctx: Context, url: str, asked: set) -> str | None:
    """Why the sweep stops before asking `url`, or None."""
    if url in asked:
        return ("the wiki's page list gives a continuation already asked (it goes round in"
                f" circles); stopped after {len(asked)} requests: the list was read in part,"
                " nothing deleted")
    if ctx.options.max_pages and len(asked) >= ctx.options.max_pages:
        return (f"the wiki's page list stopped after {len(asked)} requests (--max-pages):"
                " read in part, nothing deleted")
    return None


def _pages(data: dict) -> list[dict]:
    """The pages of an answer (`query.pages`), those that are objects."""
    pages = lookup(data, "query.pages")
    return [p for p in pages if isinstance(p, dict)] if isinstance(pages, list) else []


MOST_CONTINUED = 100  # requests that continue one batch's texts (a wiki that never ends)


def _texts(ctx: Context, url: str, site: str):
    """Store the pages of one pageids request, continued until each page is whole; True if
    every one was stored."""
    pages = yield from _whole_pages(ctx, url)
    if pages is None:
        return False
    whole = True
    for number, page in enumerate(pages, start=1):
        event = store_item(ctx, page, OPTIONS, (url, number, site, "mediawiki"))
        whole = whole and isinstance(event, Stored)
        yield event
    return whole


def _whole_pages(ctx: Context, first: str):
    """The batch's pages, their parts merged across the continued answers; None if one
    request failed."""
    pages, url, asked = {}, first, set()
    while url and url not in asked:
        if len(asked) >= MOST_CONTINUED:
            yield Failed(url, f"the wiki continued one batch of pages past {MOST_CONTINUED}"
                              " requests without an end; that batch was not stored")
            return None
        asked.add(url)
        try:
            data = _get(ctx, url)
        except FetchError as e:
            yield Failed(url, e.reason)
            return None
        for page in _pages(data):
            if isinstance(page.get("pageid"), int):
                _merge(pages.setdefault(page["pageid"], {}), page)
        url = next_page(data, OPTIONS, url, first=first, count=0)
    for page in pages.values():
        titles = [c.get("title", "") for c in page.pop("categories", []) if isinstance(c, dict)]
        page["category_names"] = [t.split(":", 1)[-1] for t in dict.fromkeys(titles) if t]
    return list(pages.values())


def _merge(into: dict, part: dict) -> None:
    """One answer's part of a page into what earlier answers gave of it."""
    for key, value in part.items():
        if key == "categories" and isinstance(value, list):
            into.setdefault(key, []).extend(value)
        elif key == "revisions" and value:
            into[key] = value
        else:
            into.setdefault(key, value)


def _get(ctx: Context, url: str) -> dict:
    """The JSON answer of api.php; FetchError when there is none, CrawlStopped when the API
    answers with an error (readapidenied: the wiki is not readable anonymously)."""
    response = ctx.fetcher.get(url)
    if response.status != 200:
        raise FetchError(url, f"HTTP {response.status}")
    data = response.json()
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        raise CrawlStopped(_api_error(error, url))
    if not isinstance(data, dict) or "query" not in data:
        keys = ", ".join(map(str, data)) if isinstance(data, dict) else type(data).__name__
        raise FetchError(url, f"the answer has no 'query' (it has: {keys[:200] or 'nothing'})")
    return data


def _api_error(error: dict, url: str) -> str:
    code, info = str(error.get("code", "?"))[:80], str(error.get("info", ""))[:200]
    hint = ("; the wiki does not let anonymous clients read its API"
            if code in ("readapidenied", "permissiondenied") else "")
    return f"api.php answers the error '{code}'" + (f" ({info})" if info else "") + \
        f" at {url}{hint}"
