"""Blogger: the blog's Atom feed `/feeds/posts/default`, every page of it (Blogger caps
`max-results` and links the next page with `rel="next"` and `start-index`)."""

from __future__ import annotations

from collections.abc import Iterator

from ..feed import crawl_feed
from ..found import Discovery, Start, origin_of
from ..options import Context
from .common import missing

FEED = "/feeds/posts/default?max-results=500"


def detect(start: Start) -> Discovery | None:
    """Blogger's generator tag, or (forced) a page linking /feeds/posts/default."""
    linked = start.page is not None and any("/feeds/posts/default" in f for f in start.page.feeds)
    if start.generator() == "blogger" or start.strict and linked:
        feed = start.origin + FEED
        return Discovery("blogger", start.url, "generator Blogger, paged Atom feed",
                         api_root=feed, feeds=(feed,))
    return missing(start, "no Blogger feed (no generator tag, no /feeds/posts/default link)")


def read(ctx: Context, found: Discovery) -> Iterator:
    return crawl_feed(ctx, found.feeds, f"{origin_of(found.start)}#blogger", source="blogger")
