"""Fetching article pages for the sitemap, feed and HTML sources.

The main thread plans each request (conditional headers from the stored validators) and
stores results; worker threads only fetch and extract, because the store's SQLite
connection belongs to the main thread.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from urllib3.response import HTTPResponse

from .errors import FetchError
from .events import Failed, Stored
from .html import HtmlPage, decode_html, extract_page, headings_meta
from .http import Fetcher, limit_key
from .maintext import with_main_text
from .options import Context
from .pdf import PdfError, read_pdf
from .store import Document
from .urls import normalize

MAX_KEPT_LINKS = 300
NOT_HTML = "not an HTML page"  # the reason a file that is no web page gives


@dataclass(frozen=True)
class Job:
    """One page to fetch: its URL, conditional headers and the sitemap lastmod, if any."""

    url: str
    headers: dict = field(default_factory=dict)
    lastmod: str | None = None
    pdf: bool = False  # a PDF answer is read (--pdfs), not refused as "not an HTML page"
    main_text: str = "auto"  # who extracts the main text (maintext.py)


@dataclass(frozen=True)
class Result:
    """What fetching a page gave: a parsed page, not-modified, gone, or a failure."""

    kind: str  # "page" | "not_modified" | "gone" | "failed"
    page: HtmlPage | None = None
    validators: dict = field(default_factory=dict)
    reason: str = ""
    final_url: str = ""
    meta: dict | None = None  # a PDF's page offsets


def plan(ctx: Context, url: str, stored: set[str], lastmod: str | None = None) -> Job | None:
    """The request for `url`, or None when the sitemap's lastmod says it is unchanged."""
    state = ctx.doc_state(url) or {}
    if ctx.options.full or url not in stored:
        return Job(url, {}, lastmod, ctx.options.pdfs, ctx.options.main_text)
    if lastmod and state.get("lastmod") == lastmod:
        return None
    headers = {}
    if state.get("etag"):
        headers["If-None-Match"] = state["etag"]
    if state.get("last_modified"):
        headers["If-Modified-Since"] = state["last_modified"]
    return Job(url, headers, lastmod, ctx.options.pdfs, ctx.options.main_text)


def still_gone(ctx: Context, url: str, lastmod: str | None) -> bool:
    """Whether `url` answered 404 or 410 when its listing gave this same `lastmod` (a
    sitemap full of dead URLs was asked for all of them on every run)."""
    return bool(lastmod) and not ctx.options.full and \
        (ctx.doc_state(url) or {}).get("gone") == lastmod


def fetch_page(fetcher: Fetcher, job: Job) -> Result:
    """GET and extract one page (runs in a worker thread)."""
    try:
        r = fetcher.get(job.url, headers=job.headers)
    except FetchError as e:
        return Result("failed", reason=e.reason)
    if r.status == 304 and job.headers:
        return Result("not_modified", final_url=r.url)
    if r.status == 304:  # nothing was asked conditionally: there is no copy it could mean
        return Result("failed", reason="HTTP 304 (not modified) to a request without"
                      " validators; the site's cache answers wrongly", final_url=r.url)
    if r.status in (404, 410):
        return Result("gone", reason=f"HTTP {r.status}", final_url=r.url)
    if r.status != 200:
        return Result("failed", reason=f"HTTP {r.status}", final_url=r.url)
    ctype = r.headers.get("Content-Type", "")
    validators = {"etag": r.headers.get("ETag"), "last_modified": r.headers.get("Last-Modified")}
    if job.pdf and ("pdf" in ctype.lower() or r.body[:5] == b"%PDF-"):
        return _pdf_result(r, validators)
    if ctype and "html" not in ctype.lower():
        return Result("failed", reason=f"{NOT_HTML} ({ctype.split(';')[0]})",
                      final_url=r.url)
    unreadable = not_text(r.body, r.headers.get("Content-Encoding", ""))
    if unreadable:
        return Result("failed", reason=unreadable, final_url=r.url)
    html = decode_html(r.body, ctype)
    page = with_main_text(extract_page(html, r.url), html, job.main_text)
    return Result("page", page, validators, final_url=r.url)


def not_text(body: bytes, encoding: str) -> str | None:
    """Why a body served as HTML is no text to store (None when it is text): compressed in
    a way urllib3 could not undo (brotli not installed, xz), a PDF (without --pdfs), or
    binary bytes (NULs, or over a tenth control characters in its first 8 KB)."""
    undone = [e for e in (c.strip().lower() for c in encoding.split(","))
              if e and e != "identity" and e not in HTTPResponse.CONTENT_DECODERS]
    if undone:
        return (f"compressed as {', '.join(undone)}, which busca cannot decompress (for br:"
                " pip install brotli)")
    if body[:5] == b"%PDF-":
        return "a PDF served as a web page; crawl with --pdfs to read PDFs"
    head = body[:8192]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16, whose bytes hold NULs
        return None
    if b"\x00" in head or sum(head.count(bytes([c])) for c in _CONTROLS) > len(head) / 10:
        return "binary content, not text (an image, an archive, or a body compressed twice)"
    return None


_CONTROLS = [c for c in range(32) if c not in (9, 10, 12, 13)]


def _pdf_result(r, validators: dict) -> Result:
    """A linked PDF as a page: its text, title and page offsets; a scan is a failure."""
    try:
        pdf = read_pdf(r.body)
    except PdfError as e:
        return Result("failed", reason=f"PDF: {e}", final_url=r.url)
    title = pdf.title or unquote(urlsplit(r.url).path.rsplit("/", 1)[-1])
    return Result("page", HtmlPage(title, pdf.text), validators, final_url=r.url,
                  meta=pdf.meta())


def fetch_all(ctx: Context, queue: deque[Job]) -> Iterator[tuple[Job, Result]]:
    """(job, result) as pages arrive; the caller may append to `queue` meanwhile."""
    workers = max(1, ctx.options.workers)
    if workers == 1:
        while queue:
            job = queue.popleft()
            yield job, fetch_page(ctx.fetcher, job)
        return
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="busca-fetch")
    running: dict = {}
    try:
        while queue or running:
            while queue and len(running) < workers:
                job = queue.popleft()
                running[pool.submit(fetch_page, ctx.fetcher, job)] = job
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                yield running.pop(future), future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def store_result(ctx: Context, job: Job, result: Result, *, source: str, site: str,
                 stored: set[str], keep_links: bool = False) -> Iterator:
    """Store or delete the document a result stands for; the events that say so. A page
    that redirected within the site is stored under the URL it ended at (stored under the
    one asked for, it duplicated its target), and a copy kept under that one is dropped."""
    url = _stored_url(ctx, job, result)
    if url != job.url and job.url in stored:
        ctx.store.delete(job.url)
        ctx.set_doc_state(job.url, None)
        stored.discard(job.url)
        yield Stored(job.url, "deleted", fetched=False)
    emptied = result.kind == "page" and not result.page.text
    if result.kind == "not_modified":
        state = ctx.doc_state(url) or {}
        ctx.set_doc_state(url, {**state, "lastmod": job.lastmod or state.get("lastmod")})
        yield Stored(url, "unchanged", fetched=False)
    elif (result.kind == "gone" or emptied) and url in stored:  # old text must not stay
        ctx.store.delete(url)
        ctx.set_doc_state(url, None)
        stored.discard(url)
        yield Stored(url, "deleted", fetched=result.kind == "page")
    elif result.kind in ("gone", "failed"):
        if result.kind == "gone" and job.lastmod:  # not asked again while its lastmod stays
            ctx.set_doc_state(url, {"gone": job.lastmod})
        yield Failed(url, result.reason)
    elif emptied:
        yield Failed(url, "no text found in the page (empty article?); nothing stored")
    else:
        page = result.page
        document = Document(url, page.title, page.text, source, job.lastmod or page.modified,
                            meta=result.meta or {**(page.meta or {}),
                                                 **headings_meta(page.headings)} or None)
        status = ctx.put(document)
        stored.add(url)
        state = {"source": source, "site": site, "lastmod": job.lastmod, **result.validators}
        if keep_links:
            state["links"] = list(page.links[:MAX_KEPT_LINKS])
        ctx.set_doc_state(url, state)
        yield Stored(url, status)


def _stored_url(ctx: Context, job: Job, result: Result) -> str:
    """Where a fetched page is stored: the URL its redirects ended at on the same host
    (www. aside; as a document's URL, `urls.normalize`), else the one asked for (another host
    the user allowed keeps the URL the listing gave)."""
    try:
        final = normalize(result.final_url) if result.final_url else ""
    except ValueError:  # a redirect to a malformed URL: kept where it was asked
        final = ""
    if result.kind != "page" or not final or limit_key(final) != limit_key(job.url):
        return job.url
    return final


def noting_stored(events: Iterator, into: set[str]) -> Iterator:
    """`events`, each URL a Stored event names (not deleted) added to `into`: the listing's
    URLs as stored, for `delete_missing` after redirects moved some of them."""
    for event in events:
        if isinstance(event, Stored) and event.status != "deleted":
            into.add(event.url)
        yield event
