"""The sources busca can read a site through, registered in one place.

Each source is one module with `read(ctx, found) -> events`; detectors are functions
`detect(start) -> Discovery | None` (found.py). `STEPS` is the order `--source auto` tries
them in: platform markers in the start page first (cheap and specific), then the WordPress
API, sitemaps, a linked feed, and last the site's own links. A forced `--source NAME` runs
only that source's steps, strictly (a missing source is an error that names another one).

This module imports nothing: the command line lists `NAMES` without loading requests, and
the modules are imported when a crawl needs them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

_BUILTIN = "busca.crawler.builtin"


@dataclass(frozen=True)
class Source:
    """A named way to read a site: its module, and what it reads (for help and docs)."""

    name: str
    module: str
    reads: str
    endpoint_given: bool = False  # the crawl URL is the endpoint itself: no discovery


SOURCES = (
    Source("wordpress", _BUILTIN, "the WordPress REST API (/wp-json/wp/v2/posts)"),
    Source("mediawiki", "busca.crawler.platforms.mediawiki",
           "MediaWiki's api.php (generator=allpages, continue)"),
    Source("drupal", "busca.crawler.platforms.drupal", "Drupal's JSON:API (/jsonapi/node/*)"),
    Source("zendesk", "busca.crawler.platforms.zendesk",
           "the Zendesk Help Center API (/api/v2/help_center/LOCALE/articles.json)"),
    Source("mkdocs", "busca.crawler.platforms.mkdocs", "MkDocs' /search/search_index.json"),
    Source("ghost", "busca.crawler.platforms.ghost",
           "Ghost's Content API (/ghost/api/content/posts/, key from the page)"),
    Source("discourse", "busca.crawler.platforms.discourse",
           "Discourse's /latest.json, then /t/ID.json per topic"),
    Source("blogger", "busca.crawler.platforms.blogger",
           "Blogger's paged Atom feed (/feeds/posts/default)"),
    Source("llms", "busca.crawler.platforms.llms",
           "/llms-full.txt (Docusaurus, GitBook, Mintlify)"),
    Source("json", _BUILTIN, "a JSON API described by the --json-* options", endpoint_given=True),
    Source("sitemap", _BUILTIN, "sitemaps (robots.txt, /wp-sitemap.xml, /sitemap.xml)"),
    Source("feed", _BUILTIN, "an RSS or Atom feed, following Atom rel=\"next\" pages"),
    Source("html", _BUILTIN, "the site's pages, following same-host links"),
)
NAMES = tuple(s.name for s in SOURCES)
_BY_NAME = {s.name: s for s in SOURCES}

# (source, module, detector): the order of --source auto.
STEPS = (
    ("sitemap", _BUILTIN, "sitemap_given"),
    ("feed", _BUILTIN, "feed_given"),
    *((s.name, s.module, "detect") for s in SOURCES if s.module != _BUILTIN),
    ("wordpress", _BUILTIN, "wordpress_detect"),
    ("sitemap", _BUILTIN, "sitemap_detect"),
    ("feed", _BUILTIN, "feed_detect"),
    ("html", _BUILTIN, "html_detect"),
)


def source(name: str) -> Source:
    """The registered source called `name`; KeyError if there is none."""
    return _BY_NAME[name]


def detectors(name: str = "auto", *, skip: tuple[str, ...] = ()):
    """(source name, detect function) in the order to try for `--source name`."""
    for step, module, function in STEPS:
        if (name in ("auto", step)) and step not in skip:
            yield step, getattr(importlib.import_module(module), function)


def reader(name: str):
    """The `read(ctx, found)` function of source `name`."""
    entry = _BY_NAME[name]
    module = importlib.import_module(entry.module)
    return getattr(module, f"read_{name}" if entry.module == _BUILTIN else "read")
