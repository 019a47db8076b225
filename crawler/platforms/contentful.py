"""Contentful's Content Delivery API: the entries URL a user gives
(`https://cdn.contentful.com/spaces/S/environments/E/entries?access_token=T&content_type=C`),
recognised by its answer (`sys.type` "Array", `items` of `sys` + `fields`, `skip`, `total`),
read 1,000 entries a request by `skip` up to `total`. Bodies may be Rich Text, Markdown or
HTML. A document's URL is the entry's own API URL (no token in it) unless `--json-url`
gives a template for the public page (`https://site/blog/{fields.slug}`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from ..errors import CrawlError
from ..found import Discovery, Start
from ..jsonapi import crawl_json
from ..options import Context, JsonApiOptions
from ..paging import lookup, with_param
from .common import missing, preset, start_json

LIMIT = 1000  # the API's largest page
OPTIONS = JsonApiOptions(
    items="items", title="fields.title|fields.name|fields.headline",
    body="fields.body|fields.content|fields.text|fields.description", body_format="auto",
    modified="sys.updatedAt", offset_param="skip", total_path="total",
    meta=(("content_type", "sys.contentType.sys.id"), ("language", "sys.locale"),
          ("created", "sys.createdAt"), ("tags", "metadata.tags.*.sys.id"),
          ("slug", "fields.slug")))


def detect(start: Start) -> Discovery | None:
    """An entries list of the Delivery (or Preview) API."""
    data = start_json(start)
    if isinstance(data, dict) and lookup(data, "sys.type") == "Array" \
            and isinstance(data.get("items"), list) and "total" in data:
        return Discovery("contentful", start.url, f"Contentful entries, {data['total']} in all",
                         api_root=start.url)
    if isinstance(data, dict) and lookup(data, "sys.type") == "Error":
        raise CrawlError(f"Contentful refuses {start.url.split('?')[0]}: {data.get('message')}"
                         f" ({lookup(data, 'sys.id')}); check the space, environment and"
                         " access_token= (a Content Delivery API token)")
    if start.strict or urlsplit(start.url).hostname.endswith(".contentful.com"):
        return missing(start, "no Contentful entries list at this URL",
                       "give the Delivery API's entries URL: https://cdn.contentful.com/spaces/"
                       "SPACE/environments/master/entries?access_token=TOKEN")
    return None


def read(ctx: Context, found: Discovery) -> Iterator:
    url = found.api_root
    query = dict(parse_qsl(urlsplit(url).query))
    if "limit" not in query:
        url = with_param(url, "limit", LIMIT)
    if "order" not in query:  # a stable order, so that skip pages neither skip nor repeat
        url = with_param(url, "order", "sys.createdAt")
    parts = urlsplit(found.api_root)
    entries = urlunsplit((*parts[:2], parts.path.rstrip("/"), "", ""))
    return crawl_json(ctx, url, opts=preset(ctx, replace(OPTIONS, url=entries + "/{sys.id}")),
                      source="contentful")
