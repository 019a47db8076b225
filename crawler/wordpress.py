"""WordPress REST API: `/wp/v2/posts` (and pages), full or incremental.

A first crawl (or `--full`) lists every post, 100 per page, oldest id first, asking only for
the stored fields. Later crawls ask for what changed since the last high-water mark
(`modified_after`, compared by WordPress with the local `modified` column), then sweep the
whole collection with `_fields=id,link,modified,modified_gmt` (no bodies) to find deleted
posts and anything the first request could not see (same-second edits, posts published
from the schedule, a run killed part way); those are fetched with `include=`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from busca.crawler.errors import CrawlStopped, FetchError
from busca.crawler.events import Expected, Failed, Notice, Stored
from busca.crawler.html import body_text, join_url, title_text
from busca.crawler.options import Context
from busca.crawler.store import Document

from .errors import ApiUnusable

FIELDS = "id,link,modified,modified_gmt,title,content"
SWEEP_FIELDS = "id,link,modified,modified_gmt"
INVALID_PAGE = b"rest_post_invalid_page_number"
# WordPress's words for a per_page above the site's maximum:
# "per_page must be between 1 (inclusive) and 10 (inclusive)"
_BETWEEN = re.compile(r"between\s+\d+\D*?\s+and\s+(\d+)", re.I)


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
    stored = False
    for kind in ctx.options.types:
        site = f"{api_root}#{kind}"
        try:
            for event in _crawl_type(ctx, api_root, kind, site):
                stored = stored or isinstance(event, Stored)
                yield event
        except ApiUnusable as e:
            if ctx.options.source == "auto" and not stored:
                raise  # crawl() goes on with the next source
            yield Failed(e.url, e.reason)


def _crawl_type(ctx: Context, api_root: str, kind: str, site: str) -> Iterator:
    state = ctx.site_state(site)
    if ctx.options.full or not state.get("started"):
        state = {"started": True, "page": 0}  # the page size is learnt again too
        ctx.set_site_state(site, state)
    if "page" in state:  # a full pass, new or interrupted
        yield from _full(ctx, api_root, kind, site, state["page"])
    else:
        yield from _incremental(ctx, api_root, kind, site, state)


def page_size(ctx: Context, site: str) -> int:
    """Posts per API page: --per-page, or less when the site refused it (kept in the state)."""
    learnt = ctx.site_state(site).get("per_page")
    return min(ctx.options.per_page, learnt) if isinstance(learnt, int) and learnt > 0 \
        else ctx.options.per_page


def _save(ctx: Context, site: str, **state) -> None:
    """Replace the site's state, keeping the page size it has learnt."""
    learnt = ctx.site_state(site).get("per_page")
    ctx.set_site_state(site, {"started": True, **state,
                              **({"per_page": learnt} if learnt else {})})


@dataclass
class _Listing:
    site: str
    essential: bool = False  # the listing that brings the posts: its failure is the API's
    complete: bool = True
    capped: bool = False  # stopped by --max-pages
    read: int = 0  # pages read
    malformed: int = 0  # items skipped: the posts they stand for may exist, so no deletions


@dataclass(frozen=True)
class _Page:
    number: int
    posts: list


def _full(ctx: Context, root: str, kind: str, site: str, done: int) -> Iterator:
    """List every post with its body; an interrupted pass resumes after its last page."""
    listing, seen, newest, fetched = _Listing(site, essential=not done), set(), "", set()
    url = _list_url(ctx, root, kind, fields=FIELDS)
    if done:
        yield Notice(f"resuming the interrupted crawl of {kind} at API page {done + 1}")
        url = _with_page(url, done + 1)
    for page in _pages(ctx, url, listing, expect=not done):
        if not isinstance(page, _Page):
            yield page
            continue
        for post in page.posts:
            seen.add(post["link"])
            fetched.add(post["id"])
            newest = max(newest, str(post.get("modified") or ""))
            yield _store_post(ctx, post, site)
        _save(ctx, site, page=page.number)
    if listing.capped:
        return  # the next run resumes after the last page read
    if done or not listing.complete:
        yield from _reconcile(ctx, root, kind, site, fetched)
    else:
        if not listing.malformed:
            yield from ctx.delete_missing("wordpress", site, seen)
        _save(ctx, site, hwm=newest or None)


def _incremental(ctx: Context, root: str, kind: str, site: str, state: dict) -> Iterator:
    """What changed since the high-water mark, then a reconciling sweep."""
    fetched: set = set()
    if state.get("hwm"):
        url = _list_url(ctx, root, kind, fields=FIELDS, modified_after=state["hwm"])
        yield from _fetch_posts(ctx, url, site, fetched)
    yield from _reconcile(ctx, root, kind, site, fetched)


def _reconcile(ctx: Context, root: str, kind: str, site: str, fetched: set) -> Iterator:
    """Sweep ids and dates without bodies; fetch what differs, delete what is gone."""
    sweep, swept = _Listing(site, essential=True), {}
    for page in _pages(ctx, _list_url(ctx, root, kind, fields=SWEEP_FIELDS), sweep, expect=True):
        if isinstance(page, _Page):
            swept.update((p["id"], p) for p in page.posts)
        else:
            yield page
    stored = ctx.store.hashes("wordpress")
    stale = []
    for post_id, post in swept.items():
        if post_id in fetched:
            continue
        known = ctx.doc_state(post["link"]) or {}
        same = known.get("id") == post_id and known.get("modified_gmt") == post.get("modified_gmt")
        if same and known.get("skipped"):
            continue
        if same and post.get("link") in stored:
            yield Stored(post["link"], "unchanged", fetched=False)
        else:
            stale.append(post_id)
    size = page_size(ctx, site)
    for start in range(0, len(stale), size):
        batch = ",".join(str(i) for i in stale[start:start + size])
        yield from _fetch_posts(ctx, _list_url(ctx, root, kind, fields=FIELDS, include=batch),
                                site, fetched)
    if sweep.complete:
        if not sweep.malformed:
            yield from ctx.delete_missing("wordpress", site, {p["link"] for p in swept.values()})
        newest = max((str(p.get("modified") or "") for p in swept.values()), default="")
        _save(ctx, site, hwm=newest or None)


def _fetch_posts(ctx: Context, url: str, site: str, fetched: set) -> Iterator:
    for page in _pages(ctx, url, _Listing(site)):
        if not isinstance(page, _Page):
            yield page
            continue
        for post in page.posts:
            fetched.add(post["id"])
            yield _store_post(ctx, post, site)


def _list_url(ctx: Context, root: str, kind: str, **params) -> str:
    params = {"per_page": page_size(ctx, f"{root}#{kind}"), "_fields": params.pop("fields"),
              **params,
              "orderby": "id", "order": "asc"}
    return api_url(root, f"wp/v2/{kind}", params)


def malformed(post) -> str | None:
    """What makes an API item unusable as a post (None when it is usable)."""
    if not isinstance(post, dict):
        return f"not a JSON object but {type(post).__name__}"
    if not isinstance(post.get("id"), int) or isinstance(post.get("id"), bool):
        return "no numeric id"
    link = post.get("link")
    if not isinstance(link, str) or not link.startswith(("http://", "https://")):
        return f"link is {_show(link)}, not a URL"
    for name in ("title", "content"):
        if post.get(name) is not None and not isinstance(post[name], dict):
            return f"{name} is {_show(post[name])}, not an object"
    for name in ("modified", "modified_gmt"):
        if post.get(name) is not None and not isinstance(post[name], str):
            return f"{name} is {_show(post[name])}, not a date"
    return None


def _show(value) -> str:
    return "missing" if value is None else f"{type(value).__name__} {str(value)[:40]!r}"


def _valid_posts(url: str, posts: list, listing: _Listing) -> Iterator:
    """Failed for each unusable item (counted: a listing with any deletes nothing), and
    last the list of usable posts."""
    usable = []
    for number, post in enumerate(posts, start=1):
        problem = malformed(post)
        if problem is None:
            usable.append(post)
            continue
        listing.malformed += 1
        post_id = post.get("id") if isinstance(post, dict) else None
        where = f"{url} (item {number}" + (f", id {post_id})" if post_id is not None else ")")
        yield Failed(where, f"malformed post skipped: {problem}")
    return usable


def _store_post(ctx: Context, post: dict, site: str):
    """Store one post object (checked by `malformed`); the event that says what happened."""
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
        smaller = _smaller_page(response, url) if response.status == 400 else None
        if smaller is not None:
            yield _learn_size(ctx, listing.site, url, *smaller)
            url = _resized(url, smaller[0])
            first, seen, fetched, total_pages = _page_number(url), set(), fetched - 1, None
            continue
        if response.status in (401, 403):
            raise CrawlStopped(f"the site refuses its API to anonymous clients (HTTP"
                               f" {response.status} from {url}); stopped without retrying")
        if response.status != 200:
            listing.complete = False
            reason = f"HTTP {response.status}{_api_error(response)}"
            if listing.essential and not listing.read:
                raise ApiUnusable(url, reason)
            yield Failed(url, reason)
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
        listing.read += 1
        usable = yield from _valid_posts(url, posts, listing)
        yield _Page(number, usable)
        url = next_url


def _smaller_page(response, url: str) -> tuple[int, str] | None:
    """After a 400: the page size to try when the API refuses this per_page (the maximum it
    names, else half), with the API's words; None for any other 400."""
    try:
        error = response.json()
    except FetchError:
        return None
    if not isinstance(error, dict) or error.get("code") != "rest_invalid_param":
        return None
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    params = data.get("params") if isinstance(data.get("params"), dict) else {}
    words = str(params.get("per_page") or error.get("message") or "")
    current = _int(dict(parse_qsl(urlsplit(url).query)).get("per_page"))
    if "per_page" not in params and "per_page" not in words or not current or current <= 1:
        return None
    match = _BETWEEN.search(words)
    limit = int(match.group(1)) if match else 0
    return (limit if 1 <= limit < current else current // 2), words[:200]


def _learn_size(ctx: Context, site: str, url: str, size: int, words: str) -> Notice:
    """Remember the accepted page size for this site (incremental runs start with it)."""
    ctx.set_site_state(site, {**ctx.site_state(site), "per_page": size})
    current = dict(parse_qsl(urlsplit(url).query)).get("per_page")
    return Notice(f"the WordPress API refuses per_page={current} ({words});"
                  f" reading {size} posts per page")


def _resized(url: str, size: int) -> str:
    """`url` with per_page=size, at the page that holds the first post not yet read."""
    query = dict(parse_qsl(urlsplit(url).query))
    skipped = (_page_number(url) - 1) * (_int(query.get("per_page")) or size)
    parts = urlsplit(url)
    query.update(per_page=str(size), page=str(skipped // size + 1))
    return urlunsplit((*parts[:3], urlencode(query, safe="/,"), ""))


def _api_error(response) -> str:
    """ " (code: message)" from a WordPress error body, or ""."""
    try:
        error = response.json()
    except FetchError:
        return ""
    if not isinstance(error, dict) or not error.get("code"):
        return ""
    return f" ({str(error['code'])[:60]}: {str(error.get('message', ''))[:160]})"


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
