"""Ghost: the Content API (`/ghost/api/content/posts/`), with the public key every Ghost page
carries in its head (`data-key` of the portal or search script); pages by number in
`meta.pagination.next`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urljoin

from ..errors import ApiRefused, ApiUnusable
from ..found import Discovery, Start
from ..jsonapi import crawl_json
from ..options import Context, JsonApiOptions
from .common import attribute, missing

QUERY = "posts/?key={key}&limit=50&formats=html&include=tags,authors"
OPTIONS = JsonApiOptions(
    items="posts", url="url", title="title", body="html", modified="updated_at",
    page_param="page", next_path="meta.pagination.next",
    meta=(("tags", "tags.*.name"), ("authors", "authors.*.name"),
          ("section", "primary_tag.name"), ("published", "published_at")))
_KEY = re.compile(r"[0-9a-f]{26}")
KEY_COMMAND = ("busca crawl '{root}ghost/api/content/posts/?key=KEY' --source json"
               " --json-items posts --json-body html")


def detect(start: Start) -> Discovery | None:
    """A Ghost page: its generator, and the Content API key and URL in a script tag."""
    key = attribute(start, "data-key")
    ghost = start.generator().startswith("ghost")
    if not (ghost or start.strict or key and attribute(start, "data-ghost")):
        return None
    if not key or not _KEY.fullmatch(key):
        if ghost:
            start.notes.append("a Ghost site, but its page carries no Content API key"
                               " (data-key); looking for a sitemap instead")
        return missing(start, "no Ghost Content API key (data-key) in the page",
                       "give the key: " + KEY_COMMAND.format(root="URL/"))
    api = attribute(start, "data-api") or urljoin(attribute(start, "data-sodo-search")
                                                  or start.origin + "/", "ghost/api/content/")
    api = api if api.endswith("/") else api + "/"
    return Discovery("ghost", start.url, "generator Ghost, Content API key in the page",
                     api_root=api + QUERY.format(key=key))


def read(ctx: Context, found: Discovery) -> Iterator:
    """The posts; in auto mode, a Content API refusing the page's key (401/403 to its first
    page: a key regenerated, a cached page) is ApiUnusable, so the crawl goes on with the
    next source, saying how to give a valid key."""
    try:
        yield from crawl_json(ctx, found.api_root, opts=OPTIONS, source="ghost")
    except ApiRefused as e:
        if ctx.options.source != "auto" or not e.first:
            raise
        root = found.api_root.split("ghost/api/content/")[0]
        raise ApiUnusable(e.url, e.reason, api="Ghost Content", hint="to read the API, give a"
                          f" valid key: {KEY_COMMAND.format(root=root)}") from None
