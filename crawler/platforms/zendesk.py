"""Zendesk Help Center: `/api/v2/help_center/LOCALE/articles.json`, cursor pages of 100
(`page[size]`, `links.next` while `meta.has_more`), with the sections' and authors' names
sideloaded (`include=sections,users`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..found import Discovery, Start
from ..jsonapi import crawl_json
from ..options import Context, JsonApiOptions
from .common import missing, probe_json

PAGE = "?page%5Bsize%5D=100&include=sections,users"  # sideloads: section and author names
OPTIONS = JsonApiOptions(
    items="articles", url="html_url", title="title", body="body", modified="updated_at",
    next_path="links.next", more_path="meta.has_more",
    meta=(("section", "section_id"), ("tags", "label_names"), ("authors", "author_id"),
          ("language", "locale"), ("created", "created_at")),
    names=(("section", "sections", "id", "name"), ("authors", "users", "id", "name")))
_LOCALE = re.compile(r"/hc/([a-z]{2}(?:-[a-z0-9]+)?)(?:/|$)", re.I)


def detect(start: Start) -> Discovery | None:
    """A Help Center page (Zendesk's theme assets, `HelpCenter` script, a /hc/ URL)."""
    marked = "zdassets.com" in start.html or "HelpCenter." in start.html
    if not (marked or start.strict):
        return None
    locale = _locale(start)
    api = f"{start.origin}/api/v2/help_center/{locale}/articles.json"
    if marked or probe_json(start, api + "?per_page=1", "articles"):
        return Discovery("zendesk", start.url, f"Zendesk Help Center, locale {locale}",
                         api_root=api)
    return missing(start, f"no Zendesk Help Center API ({api} does not answer)")


def _locale(start: Start) -> str:
    match = _LOCALE.search(start.url)
    if match:
        return match.group(1).lower()
    lang = re.search(r"""<html[^<>]+lang=["']([\w-]+)""", start.html, re.I)  # to the next tag
    return lang.group(1).lower() if lang else "en-us"


def read(ctx: Context, found: Discovery) -> Iterator:
    return crawl_json(ctx, found.api_root + PAGE, opts=OPTIONS, source="zendesk")
