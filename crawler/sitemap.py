"""Sitemaps (sitemaps.org 0.9): indexes followed, `lastmod` used to skip unchanged pages.

WordPress's taxonomy and user sitemaps (and Yoast's category/tag/author ones) list archive
pages, not articles, so they are skipped.
"""

from __future__ import annotations

import codecs
import gzip
import io
import re
from collections import deque
from collections.abc import Iterator
from xml.etree import ElementTree

from .errors import FetchError, failed
from .events import Expected, Failed, Notice, Stored
from .html import join_url
from .options import Context
from .pages import fetch_all, noting_stored, plan, still_gone, store_result
from .urls import normalize

MAX_SITEMAPS = 1000
ARCHIVE_SITEMAPS = re.compile(
    r"wp-sitemap-(taxonomies|users)-|sitemap=(taxonomies|users)"
    r"|/(category|post_tag|tag|author|format)-sitemap\d*\.xml", re.I)
_ROOT = re.compile(rb"<(?:[\w-]+:)?(urlset|sitemapindex)[\s>]")


def looks_like_sitemap(head: bytes) -> bool:
    """True if these first bytes open a sitemap or sitemap index."""
    return _ROOT.search(head) is not None


def parse_sitemap(body: bytes, *, max_bytes: int) -> tuple[str, list[tuple[str, str | None]]]:
    """("urlset" | "sitemapindex", [(loc, lastmod)]); ValueError if it is not a sitemap."""
    if body[:2] == b"\x1f\x8b":
        body = gzip.GzipFile(fileobj=io.BytesIO(body)).read(max_bytes + 1)
        if len(body) > max_bytes:
            raise ValueError(f"uncompressed sitemap over {max_bytes:,} bytes, the cap (the"
                             " sitemaps standard allows 50 MB; a larger one should be split)")
    body = body.removeprefix(codecs.BOM_UTF8).lstrip()  # blank lines before <?xml (a plugin's)
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as e:
        raise ValueError(f"malformed XML ({e})") from None
    kind = _local(root.tag)
    if kind not in ("urlset", "sitemapindex"):
        raise ValueError(f"<{kind}> is not a sitemap")
    entries = []
    for child in root:
        if _local(child.tag) not in ("url", "sitemap"):
            continue
        fields = {_local(c.tag): (c.text or "").strip() for c in child}
        if fields.get("loc"):
            entries.append((fields["loc"], fields.get("lastmod") or None))
    return kind, entries


def crawl_sitemaps(ctx: Context, sitemaps: tuple[str, ...], site: str) -> Iterator:
    """Events of fetching every article page the sitemaps list."""
    entries: dict[str, str | None] = {}
    complete = yield from _collect(ctx, sitemaps, entries)
    yield Expected(len(entries))
    stored = set(ctx.store.hashes())
    queue, gone = deque(), 0
    for url, lastmod in entries.items():
        if url not in stored and still_gone(ctx, url, lastmod):
            gone += 1
            continue
        job = plan(ctx, url, stored, lastmod)
        if job is None:
            yield Stored(url, "unchanged", fetched=False)
        else:
            queue.append(job)
    if gone:
        yield Notice(f"{gone} sitemap URLs answered 404 or 410 last time and their lastmod is"
                     " the same: not asked again (--full asks every URL)")
    budget = ctx.options.max_pages
    if budget and len(queue) > budget:
        yield Notice(f"fetching {budget} of {len(queue)} pages (--max-pages)")
        queue = deque(list(queue)[:budget])
        complete = False
    present = set(entries)
    for job, result in fetch_all(ctx, queue):
        yield from noting_stored(store_result(ctx, job, result, source="sitemap", site=site,
                                              stored=stored), present)
    if complete:
        yield from ctx.delete_missing("sitemap", site, present)


def _collect(ctx: Context, sitemaps: tuple[str, ...], entries: dict) -> Iterator:
    """Read sitemaps breadth-first into `entries`; returns True if all were read."""
    queue, seen, complete, skipped = deque(sitemaps), set(), True, 0
    while queue and len(seen) < MAX_SITEMAPS:
        url = queue.popleft()
        if url in seen:
            continue
        seen.add(url)
        try:
            response = ctx.fetcher.get(url, max_bytes=ctx.fetcher.sitemap_cap)
            if response.status != 200:
                raise FetchError(url, f"HTTP {response.status}", status=response.status)
            kind, items = parse_sitemap(response.body, max_bytes=ctx.fetcher.sitemap_cap)
        except (FetchError, ValueError) as e:
            complete = False
            if failed(e):
                ctx.broken.append(f"the sitemap {url} could not be read ({e.reason})")
            yield Failed(url, f"sitemap unusable: {getattr(e, 'reason', e)}")
            continue
        for loc, lastmod in items:
            full = join_url(url, loc)
            if full is None:
                yield Failed(loc, f"malformed URL in the sitemap {url}; skipped")
            elif kind == "sitemapindex":
                if not ARCHIVE_SITEMAPS.search(full):
                    queue.append(full)
            elif _allowed(ctx, full):
                entries.setdefault(normalize(full), lastmod)  # /p#comments, /p?utm_…: /p
            else:
                skipped += 1
    unread = {u for u in queue if u not in seen}
    if unread:  # a listing read in part must not delete what it did not reach
        complete = False
        yield Notice(f"read {len(seen)} sitemaps and left {len(unread)} unread (at most"
                     f" {MAX_SITEMAPS}: a huge sitemap index, or one that lists itself under"
                     " new URLs); nothing stored is deleted this time")
    if skipped:
        yield Notice(f"{skipped} sitemap URLs skipped: on another host or disallowed by"
                     " robots.txt")
    return complete


def _allowed(ctx: Context, url: str) -> bool:
    try:
        ctx.fetcher.check(url)
    except FetchError:
        return False
    return True


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]
