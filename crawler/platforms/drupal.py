"""Drupal: every node type the JSON:API root lists (`/jsonapi/node/article`…), body in
`attributes.body.processed`, URL from the path alias, paged by `links.next.href`; the
article type's tags by name (`include=field_tags`)."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import CrawlStopped, FetchError
from ..found import Discovery, Start
from ..html import join_url
from ..jsonapi import crawl_json
from ..options import Context, JsonApiOptions
from .common import missing, probe_json

PAGE = "?page%5Blimit%5D=50&sort=drupal_internal__nid"
OPTIONS = JsonApiOptions(
    items="data", url="attributes.path.alias", title="attributes.title",
    body="attributes.body.processed", modified="attributes.changed", next_path="links.next.href",
    meta=(("language", "attributes.langcode"), ("created", "attributes.created"),
          ("tags", "relationships.field_tags.data.*.id")),
    names=(("tags", "included", "id", "attributes.name"),))
TAGGED = "&include=field_tags"  # the standard profile's article type: its tags' names


def detect(start: Start) -> Discovery | None:
    """A Drupal generator (meta tag or X-Generator header) and a JSON:API root that answers."""
    if not ("drupal" in start.generator() or start.strict):
        return None
    root = start.origin + "/jsonapi"
    if probe_json(start, root, "links"):
        return Discovery("drupal", start.url, "generator Drupal, /jsonapi answers",
                         api_root=root)
    return missing(start, "no Drupal JSON:API (/jsonapi does not answer; the core JSON:API"
                          " module may be off)")


def read(ctx: Context, found: Discovery) -> Iterator:
    types = _node_types(ctx, found.api_root)
    if not types:
        raise CrawlStopped(f"the JSON:API root {found.api_root} lists no node types")
    cut = None
    for href in types:
        tagged = TAGGED if href.rstrip("/").endswith("/node/article") else ""
        try:
            yield from crawl_json(ctx, href + PAGE + tagged, opts=OPTIONS, source="drupal")
        except CrawlStopped as e:  # one type cut short: the others are still read
            cut = cut or e
    if cut:
        raise cut


def _node_types(ctx: Context, root: str) -> list[str]:
    """The listing URL of each `node--*` type the JSON:API root links to."""
    try:
        response = ctx.fetcher.get(root)
        data = response.json() if response.status == 200 else {}
    except FetchError:
        data = {}
    links = data.get("links") if isinstance(data, dict) else None
    if not isinstance(links, dict):
        return []
    hrefs = [link.get("href") for name, link in links.items()
             if str(name).startswith("node--") and isinstance(link, dict)]
    return [url for href in hrefs if isinstance(href, str) and (url := join_url(root, href))]
