"""Drupal: every node type the JSON:API root lists (`/jsonapi/node/article`…), body in
`attributes.body.processed`, URL from the path alias, paged by `links.next.href`; the
article type's tags by name (`include=field_tags`)."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import CrawlStopped, FetchError
from ..found import Discovery, Start
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
    try:
        response = ctx.fetcher.get(found.api_root)
        links = response.json().get("links", {}) if response.status == 200 else {}
    except (FetchError, AttributeError):
        links = {}
    types = [link["href"] for name, link in links.items()
             if name.startswith("node--") and isinstance(link, dict) and "href" in link]
    if not types:
        raise CrawlStopped(f"the JSON:API root {found.api_root} lists no node types")
    for href in types:
        tagged = TAGGED if href.rstrip("/").endswith("/node/article") else ""
        yield from crawl_json(ctx, href + PAGE + tagged, opts=OPTIONS, source="drupal")
