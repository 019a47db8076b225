"""RSS 2.0 and Atom feeds: full text from content:encoded / <content>, else the item's page.

A feed lists only the latest items (WordPress: 10), so a feed crawl never deletes anything,
unless it is a paged feed (Atom `<link rel="next">`, as Blogger's) read to its last page.
"""

from __future__ import annotations

import codecs
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from html.entities import name2codepoint
from urllib.parse import urlsplit
from xml.etree import ElementTree

from .errors import CrawlStopped, FetchError, failed
from .events import Expected, Failed, Notice, Stored
from .html import body, headings_meta, join_url, title_text
from .listing import Memo
from .options import Context
from .pages import fetch_all, noting_stored, plan, store_result
from .urls import normalize
from .store import Document, iso_date

CONTENT = "{http://purl.org/rss/1.0/modules/content/}encoded"
ATOM = "{http://www.w3.org/2005/Atom}"
XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"


@dataclass(frozen=True)
class FeedItem:
    link: str
    title: str
    html: str  # full content; "" when the feed only has a summary
    modified: str | None
    meta: dict | None = None  # categories, authors, published date


MAX_FEED_PAGES = 500


def parse_feed(body: bytes, base: str) -> list[FeedItem]:
    """Items of an RSS 2.0 or Atom feed; ValueError if it is neither."""
    return parse_feed_page(body, base)[0]


def parse_feed_page(body: bytes, base: str) -> tuple[list[FeedItem], str | None]:
    """(items, the next page's URL from an Atom `<link rel="next">`, if any). A feed with
    blank lines before its `<?xml` or with HTML's entities (`&nbsp;`, a bare `&`) is read as
    browsers and feed readers read it."""
    body = body.removeprefix(codecs.BOM_UTF8).lstrip()
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as e:
        try:
            root = ElementTree.fromstring(_entities_repaired(body))
        except ElementTree.ParseError:
            raise ValueError(f"malformed XML ({e})") from None
    if root.tag == "rss":
        channel = root.find("channel")
        links = channel.findall(f"{ATOM}link") if channel is not None else []
        return [_rss_item(item, base) for item in root.iter("item")], _next(links, base)
    if root.tag == f"{ATOM}feed":
        base = _based(root, base)
        entries = [_atom_entry(entry, _based(entry, base)) for entry in root.iter(f"{ATOM}entry")]
        return entries, _next(root.findall(f"{ATOM}link"), base)
    raise ValueError(f"<{root.tag}> is neither RSS nor Atom")


def _entities_repaired(body: bytes) -> bytes:
    """`body` with HTML's named entities as numeric ones, and a bare `&` as `&amp;` (XML
    knows only five names)."""
    def numeric(match: re.Match) -> bytes:
        name = match.group(1).decode("ascii")
        if name in ("amp", "lt", "gt", "quot", "apos"):
            return match.group(0)
        point = name2codepoint.get(name)
        return f"&#{point};".encode() if point else b"&amp;" + match.group(0)[1:]
    body = re.sub(rb"&([A-Za-z][A-Za-z0-9]*);", numeric, body)
    return re.sub(rb"&(?!#?[A-Za-z0-9]+;)", b"&amp;", body)


def _based(element, base: str) -> str:
    """The base URL inside `element`: its xml:base resolved against `base` (Atom)."""
    given = element.get(XML_BASE)
    return (join_url(base, given.strip()) or base) if given else base


def _next(links, base: str) -> str | None:
    href = next((a.get("href") for a in links if a.get("rel") == "next" and a.get("href")), None)
    return join_url(base, href.strip()) if href else None


def _link(base: str, href: str) -> str:
    """An item's document URL (no fragment, no utm_*…: as the sitemap and the HTML crawl give
    it), or "" when `href` is blank (not the feed's own URL) or no valid URL."""
    url = join_url(base, href.strip()) if href.strip() else None
    return normalize(url) if url else ""


def _rss_item(item, base: str) -> FeedItem:
    link = _link(base, item.findtext("link") or item.findtext("guid") or "")
    return FeedItem(link, item.findtext("title") or "", item.findtext(CONTENT) or "",
                    _rfc822(item.findtext("pubDate")))


def _atom_entry(entry, base: str) -> FeedItem:
    links = entry.findall(f"{ATOM}link")
    href = next((a.get("href") for a in links if a.get("rel", "alternate") == "alternate"), "")
    content = entry.find(f"{ATOM}content")
    html = _content(content) if content is not None else ""
    meta = {"tags": [c.get("term") for c in entry.findall(f"{ATOM}category") if c.get("term")],
            "authors": [a.findtext(f"{ATOM}name") for a in entry.findall(f"{ATOM}author")
                        if a.findtext(f"{ATOM}name")],
            "published": entry.findtext(f"{ATOM}published")}
    return FeedItem(_link(base, href or ""), entry.findtext(f"{ATOM}title") or "", html,
                    _iso(entry.findtext(f"{ATOM}updated")),
                    {k: v for k, v in meta.items() if v} or None)


def _content(content) -> str:
    """An Atom <content>'s HTML: its text, or its XHTML children as markup (type="xhtml")."""
    if content.get("type") != "xhtml":
        return content.text or ""
    for node in content.iter():
        node.tag = node.tag.rsplit("}", 1)[-1]  # html, not ns0:html
    return "".join(ElementTree.tostring(child, encoding="unicode") for child in content)


def _iso(value: str | None) -> str | None:
    """An Atom date (RFC 3339) as it is, or None when it is not one ("yesterday"): the dates
    a JSONL line or POST /api/documents gives are stored the same way (store.iso_date)."""
    return iso_date(value)


def _rfc822(value: str | None) -> str | None:
    """An RSS pubDate (RFC 822) as ISO 8601, or None (store.iso_date)."""
    return iso_date(value)


def crawl_feed(ctx: Context, feeds: tuple[str, ...], site: str, *,
               source: str = "feed") -> Iterator:
    """Events of storing the items of the site's main feed, page after page when it is paged
    (Atom rel="next"); a paged feed read to its end deletes the items it no longer has."""
    url = next((f for f in feeds if "comments" not in f), feeds[0])
    items, unchanged, pages, complete = yield from _read_pages(ctx, url, f"{url}#{source}")
    yield Expected(len(items) + len(unchanged))
    yield from (Stored(link, "unchanged", fetched=False) for link in unchanged)
    if pages == 1:
        yield Notice(f"the feed lists its {len(items)} latest items only; use --source sitemap"
                     " or wordpress for the whole site")
    stored = set(ctx.store.hashes())
    queue, seen = deque(), set(unchanged)
    for item in items:
        seen.add(item.link)
        if not item.link:
            yield Failed(url, f"feed item without a link: {item.title[:60]!r}")
            complete = False
        elif urlsplit(item.link).scheme not in ("http", "https"):
            yield Failed(item.link[:100], "a feed item whose link is no web page; skipped")
        elif item.html:
            yield _store_item(ctx, item, site, source)
        elif (job := plan(ctx, item.link, stored)) is not None:
            queue.append(job)
    for job, result in fetch_all(ctx, queue):
        yield from noting_stored(store_result(ctx, job, result, source=source, site=site,
                                              stored=stored), seen)
    if complete and pages > 1:
        yield from ctx.delete_missing(source, site, seen)


def _read_pages(ctx: Context, url: str, listing: str):
    """(items of every page read, links of pages unchanged since the last crawl (304),
    pages, whether the last page was reached)."""
    items: dict[str, FeedItem] = {}
    unchanged: list[str] = []
    read: list[str] = []
    memo = Memo(ctx, listing)
    while url and len(read) < MAX_FEED_PAGES:
        if url in read:
            yield Failed(url, "the feed's next page is one already read (a paging loop)")
            return list(items.values()), unchanged, len(read), False
        try:
            headers = memo.headers(url)
            response = ctx.fetcher.get(url, headers=headers)
            if response.status == 304 and headers:
                read.append(url)
                links, url = memo.replay(url)
                unchanged += links
                continue
            if response.status != 200:
                raise FetchError(url, f"HTTP {response.status}", status=response.status)
            page, following = parse_feed_page(response.body, response.url)
        except (FetchError, ValueError) as e:
            if not read:
                raise CrawlStopped(f"the feed {url} is unusable:"
                                   f" {getattr(e, 'reason', e)}") from None
            if failed(e):
                ctx.broken.append(f"the feed page {url} could not be read ({e.reason})")
            yield Failed(url, f"feed page unusable: {getattr(e, 'reason', e)}")
            return list(items.values()), unchanged, len(read), False
        read.append(url)
        for item in page:
            items.setdefault(item.link, item)
        if page and all(item.link and item.html for item in page):  # stored from the feed
            memo.remember(url, response.headers, [item.link for item in page], following)
        url = following
    return list(items.values()), unchanged, len(read), not url


def _store_item(ctx: Context, item: FeedItem, site: str, source: str):
    text, headings = body(item.html)
    if not text:
        return Failed(item.link, "empty body in the feed; nothing to store")
    document = Document(item.link, title_text(item.title), text, source, item.modified,
                        meta={**(item.meta or {}), **headings_meta(headings)} or None)
    status = ctx.put(document)
    ctx.set_doc_state(item.link, {"source": source, "site": site})
    return Stored(item.link, status)
