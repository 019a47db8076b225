"""Strapi 4 and 5: a collection of the REST API (`/api/articles`), recognised by its
`X-Powered-By: Strapi` header or its answer (`data`, `meta.pagination.pageCount`), read by
page number, 100 a page (Strapi's default `maxLimit`). Strapi 4 nests an entry's fields in
`attributes`; Strapi 5 gives them flat, with a `documentId`. Bodies may be HTML, Markdown or
Strapi 5 blocks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from urllib.parse import urlsplit, urlunsplit

from ..found import Discovery, Start
from ..jsonapi import crawl_json
from ..options import Context, JsonApiOptions
from ..paging import lookup, with_param
from .common import missing, preset, start_json

PAGE = "pagination[page]"
SIZE = 100


def _field(*names: str) -> str:
    """Alternative paths for Strapi 4 (`attributes.X`) and 5 (`X`)."""
    return "|".join(f"{p}{n}" for n in names for p in ("attributes.", ""))


OPTIONS = JsonApiOptions(
    items="data", title=_field("title", "name", "headline"),
    body=_field("content", "body", "text", "richText", "description"), body_format="auto",
    modified=_field("updatedAt"), page_param=PAGE,
    meta=(("language", _field("locale")), ("published", _field("publishedAt")),
          ("created", _field("createdAt")), ("slug", _field("slug"))))


def detect(start: Start) -> Discovery | None:
    """A Strapi collection endpoint: its header, or (forced) its answer's shape."""
    powered = "strapi" in start.response.headers.get("X-Powered-By", "").lower()
    data = start_json(start)
    shaped = isinstance(data, dict) and isinstance(data.get("data"), list) \
        and isinstance(lookup(data, "meta.pagination"), dict)
    if shaped and (powered or start.strict or "pageCount" in data["meta"]["pagination"]):
        version = "4" if any(isinstance(i, dict) and "attributes" in i for i in data["data"]) \
            else "5"
        return Discovery("strapi", start.url, f"Strapi {version} collection",
                         api_root=_collection(start.url))
    if powered or start.strict:
        return missing(start, "no Strapi collection at this URL",
                       "give a collection's endpoint: busca crawl https://CMS/api/articles")
    return None


def _collection(url: str) -> str:
    """The collection's URL without its query (the entries' own URLs hang from it)."""
    parts = urlsplit(url)
    return urlunsplit((*parts[:2], parts.path.rstrip("/"), "", ""))


def read(ctx: Context, found: Discovery) -> Iterator:
    root = found.api_root
    first = with_param(with_param(root, PAGE, 1), "pagination[pageSize]", SIZE)
    opts = preset(ctx, replace(OPTIONS, url=root + "/{documentId|id}"))
    return crawl_json(ctx, first, opts=opts, source="strapi")
