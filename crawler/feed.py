"""RSS 2.0 and Atom feeds: full text from content:encoded / <content>, else the item's page.

A feed lists only the latest items (WordPress: 10), so a feed crawl never deletes anything.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from xml.etree import ElementTree

from .errors import CrawlStopped, FetchError
from .events import Expected, Failed, Notice, Stored
from .html import body_text, join_url, title_text
from .options import Context
from .pages import fetch_all, plan, store_result
from .store import Document

CONTENT = "{http://purl.org/rss/1.0/modules/content/}encoded"
ATOM = "{http://www.w3.org/2005/Atom}"


@dataclass(frozen=True)
class FeedItem:
    link: str
    title: str
    html: str  # full content; "" when the feed only has a summary
    modified: str | None


def parse_feed(body: bytes, base: str) -> list[FeedItem]:
    """Items of an RSS 2.0 or Atom feed; ValueError if it is neither."""
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as e:
        raise ValueError(f"malformed XML ({e})") from None
    if root.tag == "rss":
        return [_rss_item(item, base) for item in root.iter("item")]
    if root.tag == f"{ATOM}feed":
        return [_atom_entry(entry, base) for entry in root.iter(f"{ATOM}entry")]
    raise ValueError(f"<{root.tag}> is neither RSS nor Atom")


def _rss_item(item, base: str) -> FeedItem:
    link = join_url(base, (item.findtext("link") or item.findtext("guid") or "").strip()) or ""
    return FeedItem(link, item.findtext("title") or "", item.findtext(CONTENT) or "",
                    _rfc822(item.findtext("pubDate")))


def _atom_entry(entry, base: str) -> FeedItem:
    links = entry.findall(f"{ATOM}link")
    href = next((a.get("href") for a in links if a.get("rel", "alternate") == "alternate"), "")
    content = entry.find(f"{ATOM}content")
    html = content.text or "" if content is not None else ""
    return FeedItem(join_url(base, href or "") or "", entry.findtext(f"{ATOM}title") or "", html,
                    entry.findtext(f"{ATOM}updated"))


def _rfc822(value: str | None) -> str | None:
    try:
        return parsedate_to_datetime(value).isoformat() if value else None
    except (TypeError, ValueError):
        return None


def crawl_feed(ctx: Context, feeds: tuple[str, ...], site: str) -> Iterator:
    """Events of storing the items of the site's main feed."""
    url = next((f for f in feeds if "comments" not in f), feeds[0])
    try:
        response = ctx.fetcher.get(url)
        if response.status != 200:
            raise FetchError(url, f"HTTP {response.status}")
        items = parse_feed(response.body, response.url)
    except (FetchError, ValueError) as e:
        raise CrawlStopped(f"the feed {url} is unusable: {getattr(e, 'reason', e)}") from None
    yield Expected(len(items))
    yield Notice(f"the feed lists its {len(items)} latest items only; use --source sitemap"
                 " or wordpress for the whole site")
    stored = set(ctx.store.hashes())
    queue = deque()
    for item in items:
        if not item.link:
            yield Failed(url, f"feed item without a link: {item.title[:60]!r}")
        elif item.html:
            yield _store_item(ctx, item, site)
        elif (job := plan(ctx, item.link, stored)) is not None:
            queue.append(job)
    for job, result in fetch_all(ctx, queue):
        yield from store_result(ctx, job, result, source="feed", site=site, stored=stored)


def _store_item(ctx: Context, item: FeedItem, site: str):
    text = body_text(item.html)
    if not text:
        return Failed(item.link, "empty body in the feed; nothing to store")
    document = Document(item.link, title_text(item.title), text, "feed", item.modified)
    status = ctx.store.put(document)
    ctx.set_doc_state(item.link, {"source": "feed", "site": site})
    return Stored(item.link, status)
