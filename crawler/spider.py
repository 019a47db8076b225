"""Link-following HTML crawl of one site, bounded by a page budget.

Listing pages (several <article>s), noindex pages and pages whose canonical URL is another
one are read for links but not stored; a page repeating another's text (a trap), the site's
"not found" page answered with 200 and a run of near copies of one URL pattern (traps.py) are
neither stored nor followed. On later crawls stored pages are revalidated with
ETag / Last-Modified (their links are remembered, so a 304 still leads on), and stored
pages that the links no longer reach are checked once: 404 or 410 deletes them.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit

from .errors import FetchError
from .events import Notice
from .html import HtmlPage
from .options import DEFAULT_HTML_PAGES, Context
from .pages import NOT_HTML, Job, Result, fetch_all, plan, store_result
from .store import plain, text_hash
from .traps import Chains, NotFound
from .urls import normalize

SKIP_EXTENSIONS = re.compile(
    r"\.(jpe?g|png|gif|webp|avif|svg|ico|bmp|tiff?|heic|pdf|zip|gz|tgz|bz2|xz|tar|rar|7z|mp[34]"
    r"|m4[av]|mpe?g|mkv|wmv|flac|aac|ogg|wav|avi|mov|webm|css|js|json|xml|rss|atom|txt|csv|ics"
    r"|docx?|xlsx?|pptx?|odt|ods|odp|epub|woff2?|ttf|eot|exe|msi|dmg|iso|apk|deb|rpm|jar)$",
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
    traps = _Traps(NotFound(ctx.fetcher, start_url, start_page), Chains())
    seen = {_visit(normalize(start_url))}
    queue: deque[Job] = deque()
    planned = [1, False]  # pages fetched or queued (the start page counts), budget hit

    def enqueue(links, by: str = "") -> None:
        for link in links:
            try:
                link = normalize(link)
            except ValueError:  # a malformed URL (bad port or host): not followed
                continue
            if _visit(link) in seen or not _crawlable(ctx, link):
                continue
            if planned[0] >= budget:
                planned[1] = True
                return
            seen.add(_visit(link))
            traps.chains.linked(link, by)
            planned[0] += 1
            queue.append(plan(ctx, link, stored) or Job(link))

    frontier = f"{site}#html-frontier"
    enqueue([] if ctx.options.full else ctx.site_state(frontier).get("urls") or [])
    if start_page is not None:
        start = Job(normalize(start_url))
        yield from _handle(ctx, start, Result("page", start_page), site, stored, enqueue,
                           repeats, traps)
    for done, (job, result) in enumerate(fetch_all(ctx, queue), start=1):
        if result.final_url:
            seen.add(_visit(normalize(result.final_url)))
        yield from _handle(ctx, job, result, site, stored, enqueue, repeats, traps)
        if done % FRONTIER_EVERY == 0:  # a crawl cut short starts there next time
            ctx.set_site_state(frontier, {"urls": [job.url, *(j.url for j in queue)]})
    ctx.set_site_state(frontier, {})  # read to its end: nothing to resume
    if repeats.found:
        url, original = repeats.found[0]
        yield Notice(f"{len(repeats.found)} pages repeated the text of another page (a crawler"
                     f" trap: {url} repeats {original}); they were not stored, nor their"
                     " links followed")
    yield from traps.notices()
    if planned[1]:
        yield Notice(f"stopped at {budget} pages (--max-pages); raise it to crawl further")
    revisit = deque(plan(ctx, url, stored) or Job(url)
                    for url in ctx.known("html", site) if _visit(normalize(url)) not in seen)
    for job, result in fetch_all(ctx, revisit):
        result = traps.not_found(job, result)
        yield from store_result(ctx, job, result, source="html", site=site, stored=stored,
                                keep_links=True)


def _handle(ctx: Context, job: Job, result: Result, site: str, stored: set[str],
            enqueue, repeats: _Repeats, traps: _Traps) -> Iterator:
    result = traps.not_found(job, result)
    page = result.page
    if traps.a_file(job, result):
        return
    if result.kind == "not_modified":
        repeats.unchanged(job.url)
        was = ctx.store.get(job.url)
        if was is not None and traps.chains.trapped(job.url, was.text):
            yield from store_result(ctx, job, Result("gone"), source="html", site=site,
                                    stored=stored)
            return
        enqueue((ctx.doc_state(job.url) or {}).get("links", []), job.url)
    elif result.kind == "page":
        canonical = normalize(page.canonical) if page.canonical else None
        if canonical and canonical != normalize(job.url) and ctx.fetcher.on_site(canonical):
            enqueue([*page.links, canonical])
            return
        if repeats.repeated(job, result) or traps.chains.trapped(job.url, page.text):
            if job.url in repeats.stored:  # an earlier crawl stored it: a copy of the original
                yield from store_result(ctx, job, Result("gone"), source="html", site=site,
                                        stored=stored)
            return
        enqueue(page.links, job.url)
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


class _Traps:
    """The site's "not found" page, its chains of near copies, and the linked files that
    are no web page (skipped quietly, counted in one notice)."""

    def __init__(self, not_found: NotFound, chains: Chains):
        self.soft404, self.chains = not_found, chains
        self.files: list[tuple[str, str]] = []  # (URL, what it is)

    def not_found(self, job: Job, result: Result) -> Result:
        """The result as a 404 when its page is the site's "not found" page."""
        if result.kind == "page" and self.soft404.matches(result.final_url or job.url,
                                                          result.page):
            return Result("gone", reason="the site's \"not found\" page, answered with HTTP"
                          " 200 (a soft 404)", final_url=result.final_url)
        return result

    def a_file(self, job: Job, result: Result) -> bool:
        """Whether a link led to a file that is no web page (an archive, a video)."""
        if result.kind == "failed" and result.reason.startswith(NOT_HTML):
            self.files.append((job.url, result.reason[len(NOT_HTML):].strip(" ()")))
            return True
        return False

    def notices(self) -> Iterator[Notice]:
        if self.files:
            url, kind = self.files[0]
            pdfs = any("pdf" in kind for _, kind in self.files)
            yield Notice(f"{len(self.files)} links led to files that are not web pages (e.g."
                         f" {url}: {kind}); they were skipped"
                         + ("; crawl with --pdfs to read PDFs" if pdfs else ""))
        for key, url in self.chains.closed.items():
            yield Notice(f"pages under {key} kept leading to near copies of themselves (a"
                         f" calendar or the same listing sorted another way: {url} and the"
                         " rest); they were not stored, nor their links followed")


def _visit(url: str) -> str:
    """What tells two links apart in one crawl: their URLs with the query's parameters in
    one order (`?b=2&a=1` is `?a=1&b=2`; a name's values keep theirs)."""
    parts = urlsplit(url)
    if "&" not in parts.query:
        return url
    query = sorted(parse_qsl(parts.query, keep_blank_values=True), key=lambda p: p[0])
    return parts._replace(query=urlencode(query)).geturl()


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
