"""Substack: the archive API (`/api/v1/archive?sort=new&offset=N&limit=50`) lists every post
without its body; a post's body comes from `/api/v1/posts/SLUG`, fetched again only when the
archive shows a change (its date, word count or opening text) since the last crawl. A
paid post gives its public part only (`audience` says so in the metadata)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from urllib.parse import quote, urlsplit

from ..errors import CrawlStopped, FetchError
from ..events import Failed, Notice, Stored
from ..found import Discovery, Start
from ..html import body_text, title_text
from ..options import Context
from ..store import Document
from .common import missing

LIMIT = 50
ARCHIVE = "/api/v1/archive?sort=new&offset={offset}&limit={limit}"


def detect(start: Start) -> Discovery | None:
    """A Substack page (its CDN in the page, or a *.substack.com host) whose archive answers."""
    marked = "substackcdn.com" in start.html \
        or (urlsplit(start.url).hostname or "").endswith(".substack.com")
    if not (marked or start.strict):
        return None
    if _archive_answers(start):
        return Discovery("substack", start.url, "Substack, /api/v1/archive answers",
                         api_root=start.origin)
    return missing(start, "no Substack archive (/api/v1/archive does not answer)")


def _archive_answers(start: Start) -> bool:
    try:
        response = start.fetcher.get(start.origin + ARCHIVE.format(offset=0, limit=1))
        return response.status == 200 and isinstance(response.json(), list)
    except FetchError:
        return False


def read(ctx: Context, found: Discovery) -> Iterator:
    site = f"{found.api_root}#substack"
    posts, complete = yield from _archive(ctx, found.api_root)
    stored, seen = set(ctx.store.hashes("substack")), set()
    for post in posts:
        url = post.get("canonical_url") or f"{found.api_root}/p/{post['slug']}"
        seen.add(url)
        mark = _mark(post)
        state = ctx.doc_state(url) or {}
        if not ctx.options.full and url in stored and state.get("mark") == mark:
            yield Stored(url, "unchanged", fetched=False)
            continue
        event = _post(ctx, found.api_root, post, url)
        if isinstance(event, Stored):
            ctx.set_doc_state(url, {"source": "substack", "site": site, "mark": mark})
        else:
            complete = False
        yield event
    if complete:
        yield from ctx.delete_missing("substack", site, seen)


def _mark(post: dict) -> str:
    """What the archive shows of a post's version: its dates, word count and opening text."""
    seen = "|".join(str(post.get(k) or "") for k in ("post_date", "updated_at", "wordcount",
                                                      "truncated_body_text"))
    return hashlib.sha256(seen.encode()).hexdigest()[:16]


def _archive(ctx: Context, root: str):
    """Every post the archive lists (offset pages until an empty one), and whether it was
    read to its end."""
    posts, offset, pages = {}, 0, 0
    while True:
        if ctx.options.max_pages and pages >= ctx.options.max_pages:
            yield Notice(f"archive stopped after {pages} pages (--max-pages)")
            return list(posts.values()), False
        url = root + ARCHIVE.format(offset=offset, limit=LIMIT)
        pages += 1
        try:
            response = ctx.fetcher.get(url)
            if response.status != 200:
                raise FetchError(url, f"HTTP {response.status}")
            page = response.json()
            if not isinstance(page, list):
                raise FetchError(url, "the archive is not a list of posts")
        except FetchError as e:
            if pages == 1:
                raise CrawlStopped(f"cannot read {url}: {e.reason}") from None
            yield Failed(url, e.reason)
            return list(posts.values()), False
        page = [p for p in page if isinstance(p, dict) and p.get("slug")]
        if not page:
            return list(posts.values()), True
        for post in page:
            posts.setdefault(post["slug"], post)
        offset += len(page)


def _post(ctx: Context, root: str, listed: dict, url: str):
    api = f"{root}/api/v1/posts/{quote(listed['slug'])}"
    try:
        response = ctx.fetcher.get(api)
        if response.status != 200:
            raise FetchError(api, f"HTTP {response.status}")
        post = response.json()
        html = post["body_html"] if isinstance(post, dict) else None
    except (FetchError, KeyError) as e:
        return Failed(url, getattr(e, "reason", f"no body_html in {api}"))
    text = body_text(html or "")
    if not text:
        return Failed(url, "a post without text (a podcast or a paid post's empty preview);"
                           " nothing stored")
    document = Document(url, title_text(post.get("title") or listed.get("title") or ""), text,
                        "substack", post.get("updated_at") or post.get("post_date"),
                        meta=_meta(post) or None)
    return Stored(url, ctx.put(document))


def _meta(post: dict) -> dict:
    authors = [b.get("name") for b in post.get("publishedBylines") or [] if isinstance(b, dict)]
    tags = [t.get("name") for t in post.get("postTags") or [] if isinstance(t, dict)]
    meta = {"authors": [a for a in authors if a], "tags": [t for t in tags if t],
            "published": post.get("post_date"), "audience": post.get("audience"),
            "section": post.get("section_name"), "subtitle": post.get("subtitle")}
    return {k: v for k, v in meta.items() if v not in (None, "", [])}
