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
    topics, complete = yield from _list(ctx, found.api_root + "/latest.json")
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


def _list(ctx: Context, url: str):
    """Every topic of the paged list, and whether it was read to its end."""
    topics, pages = {}, set()
    while url:
        if url in pages or (ctx.options.max_pages and len(pages) >= ctx.options.max_pages):
            yield Notice(f"topic list stopped after {len(pages)} pages")
            return list(topics.values()), False
        pages.add(url)
        try:
            response = ctx.fetcher.get(url)
            if response.status != 200:
                raise FetchError(url, f"HTTP {response.status}")
            listing = response.json().get("topic_list") or {}
        except (FetchError, AttributeError) as e:
            if len(pages) == 1:
                raise CrawlStopped(f"cannot read {url}: {getattr(e, 'reason', e)}") from None
            yield Failed(url, getattr(e, "reason", str(e)))
            return list(topics.values()), False
        for topic in listing.get("topics") or []:
            if isinstance(topic, dict) and {"id", "slug", "bumped_at"} <= set(topic):
                topics.setdefault(topic["id"], topic)
        url = _json_page(url, listing.get("more_topics_url"))
    return list(topics.values()), True


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
    return {c["id"]: c["name"] for c in found or [] if isinstance(c, dict)
            and isinstance(c.get("name"), str) and "id" in c}


def _topic(ctx: Context, root: str, topic: dict, url: str, categories: dict):
    api = f"{root}/t/{topic['id']}.json"
    try:
        response = ctx.fetcher.get(api)
        if response.status != 200:
            raise FetchError(api, f"HTTP {response.status}")
        data = response.json()
        posts = data["post_stream"]["posts"]
    except (FetchError, KeyError, TypeError) as e:
        return Failed(url, getattr(e, "reason", f"no posts in {api}"))
    text = "\n".join(filter(None, (body_text(p.get("cooked") or "") for p in posts
                                   if isinstance(p, dict))))
    if not text:
        return Failed(url, "a topic without text; nothing stored")
    tags = [t.get("name") if isinstance(t, dict) else t for t in data.get("tags") or []]
    section = data.get("category_id")
    meta = {"section": categories.get(section, section), "tags": [t for t in tags if t] or None,
            "authors": sorted({p.get("username") for p in posts if p.get("username")}) or None,
            "created": data.get("created_at")}
    document = Document(url, title_text(data.get("title") or topic.get("title") or ""), text,
                        "discourse", data.get("last_posted_at") or topic["bumped_at"],
                        meta={k: v for k, v in meta.items() if v is not None} or None)
    return Stored(url, ctx.put(document))
