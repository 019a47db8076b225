"""WordPress REST API: `/wp/v2/posts` (and pages), full or incremental.

A first crawl (or `--full`) lists every post, 100 per page, oldest id first, asking only for
the stored fields. Later crawls ask for what changed since the last high-water mark
(`modified_after`, compared by WordPress with the local `modified` column), then sweep the
whole collection with `_fields=id,link,modified,modified_gmt` (no bodies) to find deleted
posts and anything the first request could not see (same-second edits, posts published
from the schedule, a run killed part way); those are fetched with `include=`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from .errors import CrawlStopped, FetchError
from .events import Expected, Failed, Notice, Stored
from .html import body_text, join_url, title_text
from .options import Context
from .store import Document

FIELDS = "id,link,modified,modified_gmt,title,content"
SWEEP_FIELDS = "id,link,modified,modified_gmt"
INVALID_PAGE = b"rest_post_invalid_page_number"


def api_url(root: str, route: str, params: dict) -> str:
    """URL of `route` under an API root, pretty (`/wp-json/`) or `?rest_route=` style."""
    parts = urlsplit(root)
    query = dict(parse_qsl(parts.query))
    if "rest_route" in query:
        query["rest_route"] = query["rest_route"].rstrip("/") + "/" + route
        return urlunsplit((*parts[:3], urlencode({**query, **params}, safe="/,"), ""))
    base = root if root.endswith("/") else root + "/"
    return urljoin(base, route) + ("?" + urlencode(params, safe=",") if params else "")


def crawl_wordpress(ctx: Context, api_root: str) -> Iterator:
    """Events of crawling each requested post type of the API at `api_root`."""
    for kind in ctx.options.types:
        site = f"{api_root}#{kind}"
        state = ctx.site_state(site)
        if ctx.options.full or not state.get("started"):
            state = {"started": True, "page": 0}
            ctx.set_site_state(site, state)
        if "page" in state:  # a full pass, new or interrupted
            yield from _full(ctx, api_root, kind, site, state["page"])
        else:
            yield from _incremental(ctx, api_root, kind, site, state)


@dataclass
class _Listing:
    complete: bool = True
    capped: bool = False  # stopped by --max-pages


@dataclass(frozen=True)
class _Page:
    number: int
    posts: list


def _full(ctx: Context, root: str, kind: str, site: str, done: int) -> Iterator:
    """List every post with its body; an interrupted pass resumes after its last page."""
    listing, seen, newest, fetched = _Listing(), set(), "", set()
    url = _list_url(ctx, root, kind, fields=FIELDS)
    if done:
        yield Notice(f"resuming the interrupted crawl of {kind} at API page {done + 1}")
        url = _with_page(url, done + 1)
    for page in _pages(ctx, url, listing, expect=not done):
        if not isinstance(page, _Page):
            yield page
            continue
        for post in page.posts:
            if isinstance(post, dict):
                seen.add(post.get("link"))
                fetched.add(post.get("id"))
                newest = max(newest, str(post.get("modified", "")))
            yield _store_post(ctx, post, site)
        ctx.set_site_state(site, {"started": True, "page": page.number})
    if listing.capped:
        return  # the next run resumes after the last page read
    if done or not listing.complete:
        yield from _reconcile(ctx, root, kind, site, fetched)
    else:
        yield from ctx.delete_missing("wordpress", site, seen)
        ctx.set_site_state(site, {"started": True, "hwm": newest or None})


def _incremental(ctx: Context, root: str, kind: str, site: str, state: dict) -> Iterator:
    """What changed since the high-water mark, then a reconciling sweep."""
    fetched: set = set()
    if state.get("hwm"):
        url = _list_url(ctx, root, kind, fields=FIELDS, modified_after=state["hwm"])
        yield from _fetch_posts(ctx, url, site, fetched)
    yield from _reconcile(ctx, root, kind, site, fetched)


def _reconcile(ctx: Context, root: str, kind: str, site: str, fetched: set) -> Iterator:
    """Sweep ids and dates without bodies; fetch what differs, delete what is gone."""
    sweep, swept = _Listing(), {}
    for page in _pages(ctx, _list_url(ctx, root, kind, fields=SWEEP_FIELDS), sweep, expect=True):
        if isinstance(page, _Page):
            swept.update((p.get("id"), p) for p in page.posts if isinstance(p, dict))
        else:
            yield page
    stored = ctx.store.hashes("wordpress")
    stale = []
    for post_id, post in swept.items():
        if post_id in fetched:
            continue
        known = ctx.doc_state(str(post.get("link"))) or {}
        same = known.get("id") == post_id and known.get("modified_gmt") == post.get("modified_gmt")
        if same and known.get("skipped"):
            continue
        if same and post.get("link") in stored:
            yield Stored(post["link"], "unchanged", fetched=False)
        else:
            stale.append(post_id)
    for start in range(0, len(stale), ctx.options.per_page):
        batch = ",".join(str(i) for i in stale[start:start + ctx.options.per_page])
        yield from _fetch_posts(ctx, _list_url(ctx, root, kind, fields=FIELDS, include=batch),
                                site, fetched)
    if sweep.complete:
        yield from ctx.delete_missing("wordpress", site, {p.get("link") for p in swept.values()})
        newest = max((str(p.get("modified", "")) for p in swept.values()), default="")
        ctx.set_site_state(site, {"started": True, "hwm": newest or None})


def _fetch_posts(ctx: Context, url: str, site: str, fetched: set) -> Iterator:
    for page in _pages(ctx, url, _Listing()):
        if not isinstance(page, _Page):
            yield page
            continue
        for post in page.posts:
            fetched.add(post.get("id") if isinstance(post, dict) else None)
            yield _store_post(ctx, post, site)


def _list_url(ctx: Context, root: str, kind: str, **params) -> str:
    params = {"per_page": ctx.options.per_page, "_fields": params.pop("fields"), **params,
              "orderby": "id", "order": "asc"}
    return api_url(root, f"wp/v2/{kind}", params)


def _store_post(ctx: Context, post, site: str):
    """Store one post object; the event that says what happened."""
    if not isinstance(post, dict) or not post.get("link") or "id" not in post:
        return Failed(site, f"a post without id or link: {str(post)[:80]}")
    url, content = post["link"], post.get("content") or {}
    state = {"source": "wordpress", "site": site, "id": post["id"],
             "modified_gmt": post.get("modified_gmt")}
    text = "" if content.get("protected") else body_text(str(content.get("rendered") or ""))
    if not text:
        ctx.set_doc_state(url, {**state, "skipped": True})
        if ctx.store.delete(url):  # its old text is no longer public
            return Stored(url, "deleted", fetched=True)
        if content.get("protected"):
            return Failed(url, "password-protected post; its text is not public")
        return Failed(url, "empty body; nothing to store")
    title = title_text(str((post.get("title") or {}).get("rendered") or ""))
    modified = f"{post['modified_gmt']}+00:00" if post.get("modified_gmt") else None
    status = ctx.store.put(Document(url, title, text, "wordpress", modified))
    ctx.set_doc_state(url, state)
    return Stored(url, status)


def _pages(ctx: Context, url: str, listing: _Listing, *, expect: bool = False) -> Iterator:
    """Each page's list of posts (or an event), following Link rel=next / X-WP-TotalPages."""
    first, seen, fetched, total_pages = _page_number(url), set(), 0, None
    while url:
        number = _page_number(url)
        if number in seen:
            url = yield from _loop(url, number, range(first, (total_pages or 0) + 1), seen, listing)
            continue
        if ctx.options.max_pages and fetched >= ctx.options.max_pages:
            listing.complete, listing.capped = False, True
            yield Notice(f"stopped after {fetched} API pages (--max-pages)")
            return
        seen.add(number)
        fetched += 1
        try:
            response = ctx.fetcher.get(url)
        except FetchError as e:
            listing.complete = False
            yield Failed(url, e.reason)
            url = _with_page(url, number + 1) if total_pages and number < total_pages else None
            continue
        if response.status == 400 and INVALID_PAGE in response.body:
            return
        if response.status in (401, 403):
            raise CrawlStopped(f"the site refuses its API to anonymous clients (HTTP"
                               f" {response.status} from {url}); stopped without retrying")
        if response.status != 200:
            listing.complete = False
            yield Failed(url, f"HTTP {response.status}")
            return
        total_pages = _int(response.headers.get("X-WP-TotalPages")) or total_pages
        if expect and fetched == 1 and _int(response.headers.get("X-WP-Total")) is not None:
            yield Expected(_int(response.headers["X-WP-Total"]))
        next_url = _next(response, url, number, total_pages)
        try:
            posts = response.json()
        except FetchError as e:
            listing.complete = False
            yield Failed(url, e.reason)
            url = next_url
            continue
        if not isinstance(posts, list):
            listing.complete = False
            yield Failed(url, "expected a JSON list of posts")
            return
        yield _Page(number, posts)
        url = next_url


def _loop(url: str, number: int, pages: range, seen: set, listing: _Listing):
    """Link rel=next back to a page already read: go on by page number while pages remain."""
    missing = [n for n in pages if n not in seen]
    if missing:
        yield Notice(f"the API's Link rel=\"next\" loops back to page {number}; going on"
                     f" with page {missing[0]} of {pages.stop - 1} (X-WP-TotalPages)")
        return _with_page(url, missing[0])
    if pages:
        yield Notice(f"the API's Link rel=\"next\" loops back to page {number} after all"
                     f" {pages.stop - 1} pages were read; paging stopped")
        return None
    listing.complete = False
    yield Failed(url, "Link rel=\"next\" loops back to a page already read and the API"
                      " gives no page count; paging stopped")
    return None


def _next(response, url: str, number: int, total_pages: int | None) -> str | None:
    link = response.headers.get("Link", "")
    for part in link.split(","):
        if 'rel="next"' in part or "rel=next" in part:
            target = join_url(url, part.split(">")[0].strip(" <"))
            if target and (total_pages is None or _page_number(target) <= total_pages):
                return target
    if total_pages and number < total_pages:
        return _with_page(url, number + 1)
    return None


def _page_number(url: str) -> int:
    value = dict(parse_qsl(urlsplit(url).query)).get("page", "1")
    return int(value) if value.isdigit() else 1


def _with_page(url: str, number: int) -> str:
    parts = urlsplit(url)
    query = {**dict(parse_qsl(parts.query)), "page": str(number)}
    return urlunsplit((*parts[:3], urlencode(query, safe="/,"), ""))


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
