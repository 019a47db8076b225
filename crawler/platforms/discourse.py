"""Discourse: topics listed by `/latest.json?page=N` (no bodies there), each read from
`/t/ID.json` only when its `bumped_at` changed since the last crawl; category names from
`/site.json`."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

from ..errors import CrawlStopped, FetchError
from ..events import Failed, Notice, Stored
from ..found import Discovery, Start
from ..html import body_text, join_url, title_text
from ..options import Context
from ..store import Document
from .common import missing, probe_json


def detect(start: Start) -> Discovery | None:
    """A generator naming Discourse, or (forced) a /latest.json that lists topics."""
    if start.generator().startswith("discourse"):
        return Discovery("discourse", start.url, "generator Discourse", api_root=start.origin)
    if start.strict and probe_json(start, start.origin + "/latest.json", "topic_list"):
        return Discovery("discourse", start.url, "/latest.json answers", api_root=start.origin)
    return missing(start, "no Discourse topic list (/latest.json does not answer)")


def read(ctx: Context, found: Discovery) -> Iterator:
    site = f"{found.api_root}#discourse"
    topics, cut = yield from _list(ctx, found.api_root + "/latest.json")
    complete = cut is None
    stored, seen = set(ctx.store.hashes("discourse")), set()
    categories = _categories(ctx, found.api_root) if topics else {}
    for topic in topics:
        url = f"{found.api_root}/t/{topic['slug']}/{topic['id']}"
        seen.add(url)
        state = ctx.doc_state(url) or {}
        if not ctx.options.full and url in stored and state.get("bumped") == topic["bumped_at"]:
            yield Stored(url, "unchanged", fetched=False)
            continue
        event = _topic(ctx, found.api_root, topic, url, categories)
        if isinstance(event, Stored):
            ctx.set_doc_state(url, {"source": "discourse", "site": site,
                                    "bumped": topic["bumped_at"]})
        else:
            complete = False
        yield event
    if complete:
        yield from ctx.delete_missing("discourse", site, seen)
    if cut:
        raise CrawlStopped(cut)


def _list(ctx: Context, url: str):
    """Every topic of the paged list, and None when it was read to its end, "" when it was
    stopped on purpose (a loop, --max-pages, a page of topics already listed), or why a page
    failed. Either way read in part: nothing is deleted."""
    topics, pages = {}, set()
    while url:
        if url in pages or (ctx.options.max_pages and len(pages) >= ctx.options.max_pages):
            yield Notice(f"topic list stopped after {len(pages)} pages")
            return list(topics.values()), ""
        pages.add(url)
        try:
            listing = _list_page(ctx, url)
        except FetchError as e:
            if len(pages) == 1:
                raise CrawlStopped(f"cannot read {url}: {e.reason}") from None
            yield Failed(url, e.reason)
            return list(topics.values()), (f"the topic list broke off at {url} ({e.reason});"
                                           " nothing was deleted")
        page = _listed_topics(listing)
        if page and all(topic["id"] in topics for topic in page):
            yield Notice(f"{url} lists only topics already listed; stopped there: the list"
                         " was read in part, nothing deleted")
            return list(topics.values()), ""
        for topic in page:
            topics.setdefault(topic["id"], topic)
        url = _json_page(url, listing.get("more_topics_url"))
    return list(topics.values()), None


def _list_page(ctx: Context, url: str) -> dict:
    """The `topic_list` object of one page; FetchError if there is none."""
    response = ctx.fetcher.get(url)
    if response.status != 200:
        raise FetchError(url, f"HTTP {response.status}")
    data = response.json()
    listing = data.get("topic_list") if isinstance(data, dict) else None
    if not isinstance(listing, dict):
        raise FetchError(url, "the answer has no topic_list object")
    return listing


def _listed_topics(listing: dict) -> list[dict]:
    """The topics of a list page that have an id, a slug and a bumped_at."""
    topics = listing.get("topics")
    return [t for t in topics if isinstance(t, dict) and isinstance(t.get("id"), (int, str))
            and isinstance(t.get("slug"), str) and isinstance(t.get("bumped_at"), str)] \
        if isinstance(topics, list) else []


def _json_page(url: str, more: str | None) -> str | None:
    """The next list page: `more_topics_url` is relative and names the HTML page (/latest?…)."""
    if not isinstance(more, str) or not more:
        return None
    target = join_url(url, more)
    if target is None:
        return None
    parts = urlsplit(target)
    path = parts.path if parts.path.endswith(".json") else parts.path.rstrip("/") + ".json"
    return urlunsplit(parts._replace(path=path))


def _categories(ctx: Context, root: str) -> dict:
    """{category id: name} from `/site.json` ({} when it does not answer: ids are kept)."""
    try:
        response = ctx.fetcher.get(root + "/site.json")
        found = response.json().get("categories") if response.status == 200 else None
    except (FetchError, AttributeError):
        return {}
    return {c["id"]: c["name"] for c in _list_of(found) if isinstance(c, dict)
            and isinstance(c.get("name"), str) and isinstance(c.get("id"), (int, str))}


def _topic(ctx: Context, root: str, topic: dict, url: str, categories: dict):
    api = f"{root}/t/{topic['id']}.json"
    try:
        response = ctx.fetcher.get(api)
        if response.status != 200:
            raise FetchError(api, f"HTTP {response.status}")
        data = response.json()
        posts = data["post_stream"]["posts"]
        if not isinstance(posts, list):
            raise TypeError
    except (FetchError, KeyError, TypeError) as e:
        return Failed(url, getattr(e, "reason", f"no posts in {api}"))
    posts = [p for p in posts if isinstance(p, dict)]
    text = "\n".join(filter(None, (body_text(p["cooked"]) for p in posts
                                   if isinstance(p.get("cooked"), str))))
    if not text:
        return Failed(url, "a topic without text; nothing stored")
    title = next((t for t in (data.get("title"), topic.get("title")) if isinstance(t, str)), "")
    modified = data.get("last_posted_at")
    document = Document(url, title_text(title), text, "discourse",
                        modified if isinstance(modified, str) else topic["bumped_at"],
                        meta=_meta(data, posts, categories) or None)
    return Stored(url, ctx.put(document))


def _meta(data: dict, posts: list[dict], categories: dict) -> dict:
    tags = [t.get("name") if isinstance(t, dict) else t for t in _list_of(data.get("tags"))]
    section = data.get("category_id")
    section = categories.get(section, section) if isinstance(section, (int, str)) else None
    authors = {p["username"] for p in posts if isinstance(p.get("username"), str)}
    created = data.get("created_at")
    meta = {"section": section, "tags": [t for t in tags if isinstance(t, str) and t] or None,
            "authors": sorted(authors) or None,
            "created": created if isinstance(created, str) else None}
    return {k: v for k, v in meta.items() if v is not None}


def _list_of(value) -> list:
    return value if isinstance(value, list) else []
