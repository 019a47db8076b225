"""Helpers the platform sources share: markers in the start page, probes, whole-site files."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from html import unescape

from ..errors import CrawlError, CrawlStopped, FetchError
from ..events import Expected, Stored
from ..found import Start
from ..listing import conditional_headers
from ..options import Context
from ..store import Document


def missing(start: Start, what: str, hint: str = "try --source sitemap") -> None:
    """None in auto mode; with the source forced, the CrawlError saying what is missing."""
    if start.strict:
        raise CrawlError(f"{what} at {start.url}; {hint}")
    return None


def attribute(start: Start, name: str) -> str | None:
    """The first value of an HTML attribute (`data-key="…"`) in the start page."""
    match = re.search(rf"""\s{re.escape(name)}\s*=\s*["']([^"']+)""", start.html)
    return unescape(match.group(1)) if match else None


def probe_json(start: Start, url: str, key: str) -> dict | None:
    """The JSON object at `url` when it answers 200 and has `key`, else None."""
    try:
        response = start.fetcher.get(url)
        data = response.json() if response.status == 200 else None
    except FetchError:
        return None
    return data if isinstance(data, dict) and key in data else None


def read_whole(ctx: Context, url: str, source: str,
               parse: Callable[[bytes, str], list[Document]]) -> Iterator:
    """Events of reading one file that holds the whole site (a search index, llms-full.txt):
    fetched again only when its ETag / Last-Modified changed; pages gone from it deleted."""
    site = f"{url}#{source}"
    state = ctx.site_state(site)
    headers = {} if ctx.options.full else conditional_headers(state)
    try:
        response = ctx.fetcher.get(url, headers=headers)
    except FetchError as e:
        raise CrawlStopped(f"cannot read {url}: {e.reason}") from None
    known = ctx.known(source, site)
    if response.status == 304:
        yield Expected(len(known))
        for doc_url in known:
            yield Stored(doc_url, "unchanged", fetched=False)
        return
    if response.status != 200:
        raise CrawlStopped(f"cannot read {url}: HTTP {response.status}")
    documents = parse(response.body, response.url)
    yield Expected(len(documents))
    for document in documents:
        status = ctx.put(document)
        ctx.set_doc_state(document.url, {"source": source, "site": site})
        yield Stored(document.url, status)
    if documents:
        yield from ctx.delete_missing(source, site, {d.url for d in documents})
    ctx.set_site_state(site, {"etag": response.headers.get("ETag"),
                              "last_modified": response.headers.get("Last-Modified")})



def start_json(start: Start):
    """The start URL's answer as JSON (a headless CMS's endpoint), or None."""
    if start.html:
        return None
    try:
        return start.response.json()
    except FetchError:
        return None


def preset(ctx: Context, opts):
    """A platform's JSON options, with the user's `--json-url` template (the public page of
    each item, e.g. `https://site/blog/{slug}`) in place of the preset's when given."""
    given = ctx.options.json.url
    return replace(opts, url=given) if given != type(opts).url else opts
