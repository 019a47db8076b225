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
    posts, cut = yield from _archive(ctx, found.api_root)
    complete = cut is None
    stored, seen = set(ctx.store.hashes("substack")), set()
    for post in posts:
        url = _url(post, found.api_root)
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
    if cut:
        raise CrawlStopped(cut)


def _url(post: dict, root: str) -> str:
    canonical = post.get("canonical_url")
    if isinstance(canonical, str) and canonical.startswith(("http://", "https://")):
        return canonical
    return f"{root}/p/{post['slug']}"


def _slug(post) -> str | None:
    """A listed post's slug as text (a number is taken as its digits), or None."""
    slug = post.get("slug") if isinstance(post, dict) else None
    if isinstance(slug, int) and not isinstance(slug, bool):
        slug = str(slug)
    return slug if isinstance(slug, str) and slug.strip() else None


def _mark(post: dict) -> str:
    """What the archive shows of a post's version: its dates, word count and opening text."""
    seen = "|".join(str(post.get(k) or "") for k in ("post_date", "updated_at", "wordcount",
                                                      "truncated_body_text"))
    return hashlib.sha256(seen.encode()).hexdigest()[:16]


def _archive(ctx: Context, root: str):
    """Every post the archive lists (offset pages until an empty one), and None when it was
    read to its end, "" when it was stopped on purpose (--max-pages, a page of posts already
    listed), or why a page failed. Either way read in part: nothing is deleted."""
    posts, offset, pages = {}, 0, 0
    while True:
        if ctx.options.max_pages and pages >= ctx.options.max_pages:
            yield Notice(f"archive stopped after {pages} pages (--max-pages)")
            return list(posts.values()), ""
        url = root + ARCHIVE.format(offset=offset, limit=LIMIT)
        pages += 1
        try:
            page = _archive_page(ctx, url)
        except FetchError as e:
            if pages == 1:
                raise CrawlStopped(f"cannot read {url}: {e.reason}") from None
            yield Failed(url, e.reason)
            return list(posts.values()), (f"the archive broke off at {url} ({e.reason});"
                                          " nothing was deleted")
        if not page:
            return list(posts.values()), None
        if all(post["slug"] in posts for post in page):
            yield Notice(f"{url} lists only posts already listed (the archive ignores its"
                         " offset?); stopped there: read in part, nothing deleted")
            return list(posts.values()), ""
        for post in page:
            posts.setdefault(post["slug"], post)
        offset += len(page)


def _archive_page(ctx: Context, url: str) -> list[dict]:
    """The posts of one archive page (those with a slug, as text); FetchError if none."""
    response = ctx.fetcher.get(url)
    if response.status != 200:
        raise FetchError(url, f"HTTP {response.status}")
    page = response.json()
    if not isinstance(page, list):
        raise FetchError(url, "the archive is not a list of posts")
    return [{**p, "slug": slug} for p in page if (slug := _slug(p))]


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
    text = body_text(html if isinstance(html, str) else "")
    if not text:
        return Failed(url, "a post without text (a podcast or a paid post's empty preview);"
                           " nothing stored")
    title = _text(post, "title") or _text(listed, "title")
    modified = _text(post, "updated_at") or _text(post, "post_date") or None
    document = Document(url, title_text(title), text, "substack", modified,
                        meta=_meta(post) or None)
    return Stored(url, ctx.put(document))


def _text(post: dict, key: str) -> str:
    """A field that should be text: a number as its digits, anything else as ""."""
    value = post.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) else ""


def _names(value) -> list[str]:
    """The `name` of each object in a list (bylines, tags); [] for anything else."""
    items = value if isinstance(value, list) else []
    return [n for i in items if isinstance(i, dict) and isinstance(n := i.get("name"), str) and n]


def _meta(post: dict) -> dict:
    meta = {"authors": _names(post.get("publishedBylines")), "tags": _names(post.get("postTags")),
            "published": _text(post, "post_date"), "audience": _text(post, "audience"),
            "section": _text(post, "section_name"), "subtitle": _text(post, "subtitle")}
    return {k: v for k, v in meta.items() if v not in (None, "", [])}
