"""WordPress REST API: `/wp/v2/posts` (and pages), full or incremental.

A first crawl (or `--full`) lists every post, 100 per page, oldest id first, asking only for
the stored fields, with `_embed=author,wp:term` for the metadata kept with each document
(categories and tags by name, author name, date, modified, post type: `post_meta`). Later
crawls ask for what changed since the last high-water mark (`modified_after`, compared by
WordPress with the local `modified` column), then sweep the whole collection with
`_fields=id,link,modified,modified_gmt,author,categories,tags` (no bodies) to find deleted
posts, posts whose author or terms alone changed (WordPress does not always bump
`modified` then) and anything the first request could not see (same-second edits, posts
published from the schedule, a run killed part way); those are fetched with `include=`.
A term renamed without any post changing is not seen until the post is fetched again. Paging, page
sizes the site refuses and malformed items are handled in wordpress_pages.py.
"""

from __future__ import annotations

import re

from collections.abc import Iterator
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from .errors import ApiUnusable
from .events import Failed, Notice, Stored
from .html import body_text, title_text
from .options import Context
from .store import Document
from .wordpress_pages import Listing, Page, pages, with_page

FIELDS = ("id,link,modified,modified_gmt,title,content,date,type,author,categories,tags,"
          "lang,_links,_embedded")  # lang: Polylang's, on a site that lists every language
EMBED = "author,wp:term"  # the author's and the terms' names, in the same response
SWEEP_FIELDS = "id,link,modified,modified_gmt,author,categories,tags"


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
    """Posts per API page: the options' per_page (100), or the smaller size the site accepted
    when it refused that one (kept in the site's crawl state)."""
    learnt = ctx.site_state(site).get("per_page")
    return min(ctx.options.per_page, learnt) if isinstance(learnt, int) and learnt > 0 \
        else ctx.options.per_page


def _save(ctx: Context, site: str, **state) -> None:
    """Replace the site's state, keeping the page size it has learnt."""
    learnt = ctx.site_state(site).get("per_page")
    ctx.set_site_state(site, {"started": True, **state,
                              **({"per_page": learnt} if learnt else {})})


def _full(ctx: Context, root: str, kind: str, site: str, done: int) -> Iterator:
    """List every post with its body; an interrupted pass resumes after its last page."""
    listing, seen, newest, fetched = Listing(site, essential=not done), set(), "", set()
    url = _list_url(ctx, root, kind, fields=FIELDS)
    if done:
        yield Notice(f"resuming the interrupted crawl of {kind} at API page {done + 1}")
        url = with_page(url, done + 1)
    for page in pages(ctx, url, listing, expect=not done):
        if not isinstance(page, Page):
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
    sweep, swept = Listing(site, essential=True), {}
    for page in pages(ctx, _list_url(ctx, root, kind, fields=SWEEP_FIELDS), sweep, expect=True):
        if isinstance(page, Page):
            swept.update((p["id"], p) for p in page.posts)
        else:
            yield page
    stored = ctx.store.hashes("wordpress")
    stale = []
    for post_id, post in swept.items():
        if post_id in fetched:
            continue
        known = ctx.doc_state(post["link"]) or {}
        same = (known.get("id"), known.get("modified_gmt"), known.get("terms")) == (
            post_id, post.get("modified_gmt"), _terms(post))
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
    for page in pages(ctx, url, Listing(site)):
        if not isinstance(page, Page):
            yield page
            continue
        for post in page.posts:
            fetched.add(post["id"])
            yield _store_post(ctx, post, site)


def _list_url(ctx: Context, root: str, kind: str, **params) -> str:
    fields = params.pop("fields")
    embed = {"_embed": EMBED} if fields == FIELDS else {}
    params = {"per_page": page_size(ctx, f"{root}#{kind}"), "_fields": fields, **embed,
              **params,
              "orderby": "id", "order": "asc"}
    return api_url(root, f"wp/v2/{kind}", params)


def _terms(post: dict) -> list:
    """The author and term ids the sweep compares: a change of tags alone is seen."""
    return [post.get("author"), post.get("categories"), post.get("tags")]


def post_meta(post: dict) -> dict | None:
    """A post's metadata: categories and tags (names, from `_embedded`), author, date,
    modified, post type and language (Polylang's `lang`); empty values left out."""
    embedded = post.get("_embedded") if isinstance(post.get("_embedded"), dict) else {}
    meta: dict = {}
    for group in embedded.get("wp:term") or []:
        for term in group if isinstance(group, list) else []:
            if isinstance(term, dict) and term.get("name"):
                key = TAXONOMIES.get(term.get("taxonomy"), str(term.get("taxonomy")))
                meta.setdefault(key, []).append(title_text(str(term["name"])))
    authors = [a.get("name") for a in embedded.get("author") or [] if isinstance(a, dict)]
    meta.update(author=next((a for a in authors if a), None), date=post.get("date"),
                modified=post.get("modified"), type=post.get("type"),
                language=post["lang"] if isinstance(post.get("lang"), str) else None)
    return {k: v for k, v in meta.items() if v not in (None, "", [])} or None


TAXONOMIES = {"category": "categories", "post_tag": "tags"}


def _store_post(ctx: Context, post: dict, site: str):
    """Store one post object (checked by `malformed`); the event that says what happened."""
    url, content = post["link"], post.get("content") or {}
    state = {"source": "wordpress", "site": site, "id": post["id"],
             "modified_gmt": post.get("modified_gmt"), "terms": _terms(post)}
    text = "" if content.get("protected") else without_shortcodes(
        body_text(str(content.get("rendered") or "")))
    if not text:
        ctx.set_doc_state(url, {**state, "skipped": True})
        if ctx.store.delete(url):  # its old text is no longer public
            return Stored(url, "deleted", fetched=True)
        if content.get("protected"):
            return Failed(url, "password-protected post; its text is not public")
        return Failed(url, "empty body; nothing to store")
    title = title_text(str((post.get("title") or {}).get("rendered") or ""))
    modified = f"{post['modified_gmt']}+00:00" if post.get("modified_gmt") else None
    status = ctx.put(Document(url, title or url, text, "wordpress", modified,
                              meta=post_meta(post)))
    ctx.set_doc_state(url, state)
    return Stored(url, status)


_CLOSER = re.compile(r"\[/([a-z][\w-]*)\]")
_WITH_ATTRIBUTES = re.compile(r"\[[a-z][\w-]*(?:\s+[\w-]+=(?:\"[^\"\]]*\"|'[^'\]]*'|[^\s\]]+))+\s*/?\]")


def without_shortcodes(text: str) -> str:
    """`text` without the WordPress shortcodes its site left unrendered (a plugin gone):
    `[caption id="…"]Legenda[/caption]` keeps "Legenda", `[gallery ids="1,2"]` goes; a
    bracket of plain text ("[sic]", "[1]") stays."""
    names = "|".join(map(re.escape, set(_CLOSER.findall(text))))
    if names:  # one pass for all names, none after the last "]" (each "[name" without a "]"
        cut = text.rfind("]") + 1  # after it read the text to its end: seconds a page)
        tags = rf"\[(?:{names})(?:\s[^\]]*)?\]|\[/(?:{names})\]"
        text = re.sub(tags, " ", text[:cut]) + text[cut:]
    return re.sub(r"[ \t]{2,}", " ", _WITH_ATTRIBUTES.sub(" ", text)).strip()
