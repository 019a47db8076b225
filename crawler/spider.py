"""Link-following HTML crawl of one site, bounded by a page budget.

Listing pages (several <article>s), noindex pages and pages whose canonical URL is another
one are read for links but not stored; a page repeating another's text (a trap) is neither
stored nor followed. On later crawls stored pages are revalidated with
ETag / Last-Modified (their links are remembered, so a 304 still leads on), and stored
pages that the links no longer reach are checked once: 404 or 410 deletes them.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from urllib.parse import urlsplit

from .errors import FetchError
from .events import Notice
from .html import HtmlPage
from .options import DEFAULT_HTML_PAGES, Context
from .pages import Job, Result, fetch_all, plan, store_result
from .store import plain, text_hash
from .urls import normalize

SKIP_EXTENSIONS = re.compile(
    r"\.(jpe?g|png|gif|webp|avif|svg|ico|bmp|pdf|zip|gz|tgz|rar|7z|mp[34]|m4a|ogg|wav|avi|mov"
    r"|webm|css|js|json|xml|rss|atom|txt|csv|docx?|xlsx?|pptx?|odt|ods|epub|woff2?|ttf|eot)$",
    re.I)
FRONTIER_EVERY = 20  # pages between two saves of the pages still to visit
SKIP_PATHS = re.compile(
    r"/(wp-admin|wp-login\.php|wp-json|xmlrpc\.php|feed|trackback|wp-content|wp-includes)(/|$|\?)"
    r"|[?&](replytocom|share|s|preview|feed|rest_route|wc-ajax|add-to-cart)=", re.I)


def crawl_html(ctx: Context, start_url: str, start_page: HtmlPage | None, site: str) -> Iterator:
    """Events of a breadth-first crawl from the start page; the pages still to visit are
    saved every FRONTIER_EVERY pages, and a crawl cut short (Ctrl-C, a kill) visits them
    first next time, instead of walking its stored pages again before any new one."""
    budget = ctx.options.max_pages or DEFAULT_HTML_PAGES
    stored = set(ctx.store.hashes())
    repeats = _Repeats(ctx.store.hashes("html"))
    seen = {normalize(start_url)}
    queue: deque[Job] = deque()
    planned = [1, False]  # pages fetched or queued (the start page counts), budget hit

    def enqueue(links) -> None:
        for link in links:
            try:
                link = normalize(link)
            except ValueError:  # a malformed URL (bad port or host): not followed
                continue
            if link in seen or not _crawlable(ctx, link):
                continue
            if planned[0] >= budget:
                planned[1] = True
                return
            seen.add(link)
            planned[0] += 1
            queue.append(plan(ctx, link, stored) or Job(link))

    frontier = f"{site}#html-frontier"
    enqueue([] if ctx.options.full else ctx.site_state(frontier).get("urls") or [])
    if start_page is not None:
        start = Job(normalize(start_url))
        yield from _handle(ctx, start, Result("page", start_page), site, stored, enqueue,
                           repeats)
    for done, (job, result) in enumerate(fetch_all(ctx, queue), start=1):
        if result.final_url:
            seen.add(normalize(result.final_url))
        yield from _handle(ctx, job, result, site, stored, enqueue, repeats)
        if done % FRONTIER_EVERY == 0:  # a crawl cut short starts there next time
            ctx.set_site_state(frontier, {"urls": [job.url, *(j.url for j in queue)]})
    ctx.set_site_state(frontier, {})  # read to its end: nothing to resume
    if repeats.found:
        url, original = repeats.found[0]
        yield Notice(f"{len(repeats.found)} pages repeated the text of another page (a crawler"
                     f" trap: {url} repeats {original}); they were not stored, nor their"
                     " links followed")
    if planned[1]:
        yield Notice(f"stopped at {budget} pages (--max-pages); raise it to crawl further")
    revisit = deque(plan(ctx, url, stored) or Job(url)
                    for url in ctx.known("html", site) if normalize(url) not in seen)
    for job, result in fetch_all(ctx, revisit):
        yield from store_result(ctx, job, result, source="html", site=site, stored=stored,
                                keep_links=True)


def _handle(ctx: Context, job: Job, result: Result, site: str, stored: set[str],
            enqueue, repeats: _Repeats) -> Iterator:
    page = result.page
    if result.kind == "not_modified":
        repeats.unchanged(job.url)
        enqueue((ctx.doc_state(job.url) or {}).get("links", []))
    elif result.kind == "page":
        canonical = normalize(page.canonical) if page.canonical else None
        if canonical and canonical != normalize(job.url) and ctx.fetcher.on_site(canonical):
            enqueue([*page.links, canonical])
            return
        if repeats.repeated(job, result):
            if job.url in repeats.stored:  # an earlier crawl stored it: a copy of the original
                yield from store_result(ctx, job, Result("gone"), source="html", site=site,
                                        stored=stored)
            return
        enqueue(page.links)
        if page.is_listing or page.noindex:
            return
    yield from store_result(ctx, job, result, source="html", site=site, stored=stored,
                            keep_links=True)


class _Repeats:
    """The pages of this crawl by their text: a page giving the text another URL gave (a
    trap's /a/a/a/, a listing's pages past its last, a calendar's empty months under a new
    session) is a repeat, neither stored nor followed: its links lead to more of the same."""

    def __init__(self, stored: dict[str, str]):
        self.stored = stored  # url -> text hash of the pages this source stored
        self.owners: dict[str, str] = {}  # text hash -> the first URL that gave it
        self.found: list[tuple[str, str]] = []  # (repeat, original)

    def unchanged(self, url: str) -> None:
        """A stored page answered 304: its stored text is this crawl's too."""
        if url in self.stored:
            self.owners.setdefault(self.stored[url], url)

    def repeated(self, job: Job, result: Result) -> bool:
        if not result.page.text:
            return False
        try:  # where the page is stored: where its redirects ended (pages._stored_url)
            final = normalize(result.final_url) if result.final_url else job.url
        except ValueError:
            final = job.url
        original = self.owners.setdefault(text_hash(plain(result.page.text)), final)
        if original in (job.url, final):
            return False
        self.found.append((job.url, original))
        return True


def _crawlable(ctx: Context, url: str) -> bool:
    path = urlsplit(url).path
    pdf = ctx.options.pdfs and path.lower().endswith(".pdf")
    if SKIP_EXTENSIONS.search(path) and not pdf or SKIP_PATHS.search(url):
        return False
    try:
        ctx.fetcher.check(url)
    except FetchError:  # off-site, disallowed by robots.txt, not http(s): not followed
        return False
    return True
