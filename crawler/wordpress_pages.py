"""Reading one WordPress REST API listing: paging, page-size refusals, item checks.

`pages()` follows `Link rel="next"` (else `X-WP-TotalPages`; past either, a full page asks
for the next one while fewer posts than `X-WP-Total` were read) until an empty page, and
yields each page's usable posts, with events for what went wrong on the way: an API page
that failed, a post that is malformed (skipped and counted), a `per_page` the site refuses
(HTTP 400 `rest_invalid_param`: the crawl goes on at the largest size the site accepts,
remembered in its crawl state). A listing that brings the posts and is refused before its first page
raises ApiUnusable. A listing that ends with fewer posts read than its `X-WP-Total` is read
in part: its crawl deletes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .errors import ApiUnusable, CrawlStopped, FetchError, failed
from .events import Expected, Failed, Notice
from .html import join_url
from .options import Context
from .urls import normalize

INVALID_PAGE = b"rest_post_invalid_page_number"
# WordPress's words for a per_page above the site's maximum:
# "per_page must be between 1 (inclusive) and 10 (inclusive)"
_BETWEEN = re.compile(r"between\s+\d+\D*?(?<!\s)\s+and\s+(\d+)", re.I)  # spaces read once


@dataclass
class Listing:
    """What one listing learnt while paging: the crawl decides from it whether to delete."""

    site: str  # the crawl-state key of the API and post type
    essential: bool = False  # the listing that brings the posts: its failure is the API's
    complete: bool = True
    capped: bool = False  # stopped by --max-pages
    read: int = 0  # pages read
    malformed: int = 0  # items skipped: the posts they stand for may exist, so no deletions


@dataclass(frozen=True)
class Page:
    """One API page's usable posts."""

    number: int
    posts: list


def malformed(post) -> str | None:
    """What makes an API item unusable as a post (None when it is usable)."""
    if not isinstance(post, dict):
        return f"not a JSON object but {type(post).__name__}"
    if not isinstance(post.get("id"), int) or isinstance(post.get("id"), bool):
        return "no numeric id"
    link = post.get("link")
    if not isinstance(link, str) or not link.startswith(("http://", "https://")) \
            or join_url(link, "") is None:  # a bad port or host
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


def _valid_posts(url: str, posts: list, listing: Listing) -> Iterator:
    """Failed for each unusable item (counted: a listing with any deletes nothing), and
    last the list of usable posts."""
    usable = []
    for number, post in enumerate(posts, start=1):
        problem = malformed(post)
        if problem is None:  # stored under the URL the sitemap and the feed give it
            usable.append({**post, "link": normalize(post["link"])})
            continue
        listing.malformed += 1
        post_id = post.get("id") if isinstance(post, dict) else None
        where = f"{url} (item {number}" + (f", id {post_id})" if post_id is not None else ")")
        yield Failed(where, f"malformed post skipped: {problem}")
    return usable


def pages(ctx: Context, url: str, listing: Listing, *, expect: bool = False) -> Iterator:
    """Each page's list of posts (or an event), following Link rel=next / X-WP-TotalPages."""
    first, seen, fetched, total_pages = _page_number(url), set(), 0, None
    counted, total = (first - 1) * _per_page(url), None  # posts read (or skipped), X-WP-Total
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
            if failed(e):
                ctx.broken.append(f"API page {url} could not be read ({e.reason})")
            yield Failed(url, e.reason)
            url = with_page(url, number + 1) if total_pages and number < total_pages else None
            continue
        if response.status == 400 and INVALID_PAGE in response.body:
            break
        smaller = _smaller_page(response, url) if response.status == 400 else None
        if smaller is not None:
            yield _learn_size(ctx, listing.site, url, *smaller)
            url = _resized(url, smaller[0])
            first, seen, fetched, total_pages = _page_number(url), set(), fetched - 1, None
            counted = (first - 1) * smaller[0]
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
        total = max(total or 0, _int(response.headers.get("X-WP-Total")) or 0) or None
        if expect and fetched == 1 and _int(response.headers.get("X-WP-Total")) is not None:
            yield Expected(_int(response.headers["X-WP-Total"]))
        next_url = _next(response, url, number, total_pages)
        try:
            posts = response.json()
        except FetchError as e:
            listing.complete = False
            if listing.essential and not listing.read and response.is_html():
                raise ApiUnusable(url, "an HTML page, not JSON") from None  # auto: sitemap
            yield Failed(url, e.reason)
            url = next_url
            continue
        if not isinstance(posts, list):
            listing.complete = False
            yield Failed(url, "expected a JSON list of posts")
            return
        if not posts and number > first:
            if total_pages and number <= total_pages:  # the count lies, or the site glitched
                listing.complete = False
                yield Notice(f"API page {number} is empty although X-WP-TotalPages says"
                             f" {total_pages}; paging stopped (nothing deleted this time)")
            break
        counted += len(posts)
        if next_url is None and _more(posts, url, counted, total):
            next_url = with_page(url, number + 1)  # headers missing, or a page count too small
        listing.read += 1
        usable = yield from _valid_posts(url, posts, listing)
        yield Page(number, usable)
        url = next_url
    yield from _short(listing, counted, total)


def _short(listing: Listing, counted: int, total: int | None) -> Iterator:
    """A listing that ended with fewer posts read than its X-WP-Total is read in part (its
    page count too small, or posts deleted while it was paged): nothing is deleted."""
    if listing.complete and total is not None and counted < total:
        listing.complete = False
        yield Notice(f"the API listing ended after {counted} of the {total} posts its"
                     " X-WP-Total counts; nothing deleted this time")


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


def _loop(url: str, number: int, pages: range, seen: set, listing: Listing):
    """Link rel=next back to a page already read: go on by page number while pages remain."""
    missing = [n for n in pages if n not in seen]
    if missing:
        yield Notice(f"the API's Link rel=\"next\" loops back to page {number}; going on"
                     f" with page {missing[0]} of {pages.stop - 1} (X-WP-TotalPages)")
        return with_page(url, missing[0])
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
            if target:  # before X-WP-TotalPages, which some sites get wrong (too small)
                return target
    if total_pages and number < total_pages:
        return with_page(url, number + 1)
    return None


def _more(posts: list, url: str, counted: int, total: int | None) -> bool:
    """Whether a page the headers call the last asks for the next one: it is full and
    X-WP-Total, when given, counts more posts than were read."""
    return len(posts) >= _per_page(url) and (total is None or counted < total)


def _per_page(url: str) -> int:
    return _int(dict(parse_qsl(urlsplit(url).query)).get("per_page")) or 10  # WP's default


def _page_number(url: str) -> int:
    value = dict(parse_qsl(urlsplit(url).query)).get("page", "1")
    return int(value) if value.isdigit() else 1


def with_page(url: str, number: int) -> str:
    parts = urlsplit(url)
    query = {**dict(parse_qsl(parts.query)), "page": str(number)}
    return urlunsplit((*parts[:3], urlencode(query, safe="/,"), ""))


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
