"""The first sources, as registry entries: WordPress, the generic JSON API, sitemaps, feeds
and HTML links (their detectors and readers; the work is in the modules they call)."""

from __future__ import annotations

from collections.abc import Iterator

from . import discover
from .errors import CrawlError
from .feed import crawl_feed
from .found import Discovery, Start, origin_of
from .jsonapi import crawl_json
from .options import Context
from .sitemap import crawl_sitemaps
from .spider import crawl_html
from .wordpress import crawl_wordpress


def sitemap_given(start: Start) -> Discovery | None:
    """The start URL is itself a sitemap."""
    if discover.xml_kind(start.response) == "sitemap":
        return Discovery("sitemap", start.url, "the URL is a sitemap", sitemaps=(start.url,))
    return None


def feed_given(start: Start) -> Discovery | None:
    """The start URL is itself a feed."""
    if discover.xml_kind(start.response) == "feed":
        return Discovery("feed", start.url, "the URL is a feed", feeds=(start.url,))
    return None


def wordpress_detect(start: Start) -> Discovery | None:
    return discover.find_wordpress(start)


def sitemap_detect(start: Start) -> Discovery | None:
    found = discover.find_sitemaps(start.url, start.fetcher, start.notes)
    if found is None and start.strict:
        raise CrawlError(f"no sitemap at {start.url}: robots.txt names none and "
                         f"{', '.join(discover.SITEMAP_PROBES)} are missing; try --source html")
    return found


def feed_detect(start: Start) -> Discovery | None:
    if start.page is not None and start.page.feeds:
        return Discovery("feed", start.url, "feed linked from the page", feeds=start.page.feeds,
                         notes=tuple(start.notes))
    if start.strict:
        raise CrawlError(f"no RSS/Atom feed linked from {start.url}; pass the feed's"
                         " own URL, or try --source sitemap")
    return None


def html_detect(start: Start) -> Discovery:
    if start.response.status >= 400:
        raise CrawlError(_unreadable_start(start))
    notes = list(start.notes)
    if not start.strict:
        notes.append(f"no WordPress API, sitemap or feed found at {start.url};"
                     " following its links instead")
    return Discovery("html", start.url, "following same-host links", page=start.page,
                     notes=tuple(notes))


def _unreadable_start(start: Start) -> str:
    """Why an HTML crawl cannot begin at a start page that answers an error."""
    status = start.response.status
    if start.strict:  # --source html: no other source was looked for
        return (f"the start page {start.url} answers HTTP {status}, so it has no links to"
                " follow (--source html starts from it); check the URL")
    return f"{start.url} answers HTTP {status} and no API, sitemap or feed was found; check the URL"


def read_wordpress(ctx: Context, found: Discovery) -> Iterator:
    return crawl_wordpress(ctx, found.api_root)


def read_json(ctx: Context, found: Discovery) -> Iterator:
    return crawl_json(ctx, found.api_root or found.start)


def read_sitemap(ctx: Context, found: Discovery) -> Iterator:
    return crawl_sitemaps(ctx, found.sitemaps, f"{origin_of(found.start)}#sitemap")


def read_feed(ctx: Context, found: Discovery) -> Iterator:
    return crawl_feed(ctx, found.feeds, f"{origin_of(found.start)}#feed")


def read_html(ctx: Context, found: Discovery) -> Iterator:
    return crawl_html(ctx, found.start, found.page, f"{origin_of(found.start)}#html")
