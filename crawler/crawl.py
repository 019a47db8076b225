"""`crawl()`: discover a site's source, read it into the store, yield progress as it goes.

    for event in crawl("https://example.com", store, options=CrawlOptions(rate=1)):
        ...   # SourceFound, Expected, Stored, Failed, Notice, and last Finished(report)

Each document is committed as it arrives, so an interrupted crawl keeps what it stored
and the next run continues from there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from urllib.parse import urlsplit, urlunsplit

import requests

from . import maintext, registry
from .defaults import post_type_problem
from .discover import discover
from .errors import ApiUnusable, CrawlError, CrawlStopped
from .events import CrawlReport, Finished, Notice, SourceFound, Stored, Tally
from .found import Discovery
from .groups import Stamped, crawl_groups, stamped
from .http import Fetcher
from .options import DEFAULT_HTML_PAGES, SOURCES, Context, CrawlOptions
from .store import DocumentStore as Store, one_spelling


def crawl(url: str, store: Store, *, options: CrawlOptions | None = None,
          session: requests.Session | None = None,
          on_notice: Callable[[str], None] | None = None) -> Iterator:
    """Events of one crawl; the last one is Finished(report). CrawlError if it cannot start.

    The fetcher's notices (Crawl-delay, Retry-After) come as Notice events, or, with
    `on_notice`, go to it at once, before the wait they announce (from any thread).
    """
    options = options or CrawlOptions()
    url = check_url(url)
    check_options(options)
    started = time.monotonic()
    notices: list[str] = []

    def notify(message: str) -> None:
        notices.append(message)
        if on_notice is not None:
            on_notice(message)

    fetcher = Fetcher(session or requests.Session(), options,
                      hosts={urlsplit(url).hostname}, on_notice=notify)
    groups, note = crawl_groups(store, url, options.groups)
    if note:
        notify(note)
    ctx = Context(fetcher, stamped(one_spelling(store), groups), options)
    tally, stopped = Tally(), None
    try:
        for event in _events(ctx, url):
            yield from _notices(notices, tally, told=on_notice is not None)
            event = _restamped(ctx, event)
            tally.add(event)
            yield event
    except CrawlStopped as e:
        stopped = str(e)
    if stopped is None and ctx.broken:  # a listing cut by a failure: stored what it read
        stopped = (f"{ctx.broken[0]}; what was read is stored and nothing was deleted"
                   + (f" ({len(ctx.broken) - 1} more listings broke off)"
                      if len(ctx.broken) > 1 else ""))
    yield from _notices(notices, tally, told=on_notice is not None)
    yield Finished(CrawlReport(url, tally.source, tally.counts, tuple(tally.failures),
                               tuple(tally.notices), time.monotonic() - started,
                               fetcher.requests, stopped))


def _restamped(ctx: Context, event):
    """A document found unchanged and not fetched again, given the groups this crawl stamps
    when it lacks them (crawled public, now with --groups staff): "metadata_updated"."""
    if (isinstance(event, Stored) and event.status == "unchanged" and not event.fetched
            and isinstance(ctx.store, Stamped)):
        old = ctx.store.written(event.url)
        if old is not None:
            return replace(event, status=ctx.store.put(old))
    return event


def check_url(url: str) -> str:
    """The start URL, or CrawlError naming what is wrong with it."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        parts.port  # raises on a port out of range
    except ValueError as e:
        raise CrawlError(f"{url!r} is not a valid URL ({e})") from None
    if not parts.scheme and not parts.netloc and "." in url.split("/")[0]:
        raise CrawlError(f"{url!r} has no scheme; did you mean https://{url} ?")
    if parts.scheme not in ("http", "https"):
        raise CrawlError(f"only http:// and https:// URLs can be crawled, not {url!r}")
    if not parts.hostname:
        raise CrawlError(f"{url!r} has no host name")
    return url if parts.path else urlunsplit(parts._replace(path="/"))


def _notices(notices: list[str], tally: Tally, *, told: bool) -> Iterator[Notice]:
    """The fetcher's pending notices, counted; yielded unless on_notice already had them."""
    while notices:
        notice = Notice(notices.pop(0))
        tally.add(notice)
        if not told:
            yield notice


def check_options(options: CrawlOptions) -> None:
    """CrawlError for option values that cannot work, listing the valid ones."""
    if options.source not in SOURCES:
        raise CrawlError(f"unknown source {options.source!r}; choose one of {', '.join(SOURCES)}")
    problem = post_type_problem(options.types)
    if problem:
        raise CrawlError(problem)
    if options.rate <= 0 or options.workers < 1:
        raise CrawlError("the rate must be above 0 requests/s and workers at least 1")
    if not options.deadline > 0:
        raise CrawlError("--deadline must be above 0 seconds")
    if options.max_pages is not None and options.max_pages < 1:
        raise CrawlError("--max-pages must be at least 1")
    maintext.check(options.main_text)  # (the groups: CrawlOptions checks them when made)


def _events(ctx: Context, url: str) -> Iterator:
    forced = ctx.options.source
    if forced != "auto" and registry.source(forced).endpoint_given:
        found = Discovery(forced, url, "the JSON API named on the command line", api_root=url)
    else:
        found = discover(url, ctx.fetcher, source=ctx.options.source, types=ctx.options.types)
        ctx.fetcher.hosts.add(urlsplit(found.start).hostname)
    for note in found.notes:
        yield Notice(note)
    yield SourceFound(found.source, found.api_root or found.start, found.detail)
    yield from _read(ctx, found)


def _without_api(ctx: Context, failed: Discovery, error: ApiUnusable) -> Iterator:
    """Discover again without the API that failed, saying why, and read what is found."""
    yield Notice(f"{error}; looking for a sitemap or feed instead"
                 + (f" ({error.hint})" if error.hint else ""))
    found = discover(failed.start, ctx.fetcher, source="auto", types=ctx.options.types,
                     skip=(failed.source,))
    for note in found.notes:
        yield Notice(note)
    yield SourceFound(found.source, found.start, found.detail)
    yield from _read(ctx, found)


def _read(ctx: Context, found: Discovery) -> Iterator:
    try:
        yield from registry.reader(found.source)(ctx, found)
    except ApiUnusable as e:  # WordPress, Ghost: only in auto mode, before anything was stored
        yield from _without_api(ctx, found, e)


def why_nothing(url: str, report: CrawlReport, options: CrawlOptions) -> str:
    """The one-line diagnosis of a crawl of `url` that stored no document."""
    why = report.stopped or (report.failures[0][1] if report.failures else None)
    if not why and any("(--max-pages)" in notice for notice in report.notices):
        budget = options.max_pages or DEFAULT_HTML_PAGES
        why = (f"the --max-pages budget ({budget}) was used up before any document was"
               " found; raise --max-pages")
    return f"nothing could be fetched from {url}: {why or 'the site listed no documents'}"
