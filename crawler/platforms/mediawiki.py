"""MediaWiki: every article through api.php, `generator=allpages` with the wikitext of its
latest revision, paged by merging the `continue` object into the next request."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urljoin

from ..found import Discovery, Start
from ..jsonapi import crawl_json
from ..options import Context, JsonApiOptions
from .common import missing, probe_json

QUERY = ("?action=query&generator=allpages&gapnamespace=0&gapfilterredir=nonredirects"
         "&gaplimit=50&prop=revisions|info&inprop=url&rvprop=content|timestamp|user"
         "&rvslots=main&format=json&formatversion=2")
OPTIONS = JsonApiOptions(
    items="query.pages", url="fullurl", title="title", body="revisions.0.slots.main.content",
    modified="revisions.0.timestamp", continue_path="continue", body_format="wikitext",
    meta=(("language", "pagelanguage"), ("authors", "revisions.0.user"),
          ("touched", "touched")))
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
    return crawl_json(ctx, found.api_root + QUERY, opts=OPTIONS, source="mediawiki")
