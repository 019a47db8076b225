"""Exceptions of the crawler: each message names the problem and, when there is one, the fix."""

from __future__ import annotations

from ..errors import BuscaError


class CrawlError(BuscaError):
    """The crawl cannot start or cannot go on (bad start URL, nothing found, robots.txt...)."""


class FetchError(BuscaError):
    """One URL could not be fetched; the crawl records it and goes on."""

    def __init__(self, url: str, reason: str, *, status: int | None = None):
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason
        self.status = status


class Disallowed(FetchError):
    """robots.txt forbids the URL to our user agent."""


class OffSite(FetchError):
    """The URL (or a redirect) leads to a host the crawl may not visit."""


class TooLarge(FetchError):
    """The response is bigger than the size cap."""


class ConnectFailed(FetchError):
    """No HTTP answer at all: DNS failure, refused or timed-out connection."""


class TooSlow(ConnectFailed):
    """The answer did not arrive in full within the request's deadline (a slow-drip server)."""


class CrawlStopped(CrawlError):
    """The crawl had to stop part way (the API refused us); what was stored stays."""


class ApiRefused(CrawlStopped):
    """A JSON API answers 401 or 403 (`first`: to the first page of its listing)."""

    def __init__(self, message: str, url: str, reason: str, *, first: bool):
        super().__init__(message)
        self.url, self.reason, self.first = url, reason, first


class ApiUnusable(CrawlError):
    """A site's API (WordPress's listing with an error even at the smallest page size,
    Ghost's refusing the key in the page) cannot be read, and nothing was stored from it;
    in auto mode the crawl goes on with the next source (sitemap, feed, HTML), and the
    notice ends with `hint`: how to read the API after all."""

    def __init__(self, url: str, reason: str, *, api: str = "WordPress", hint: str = ""):
        super().__init__(f"the {api} API answers {reason} ({url})")
        self.url = url
        self.reason = reason
        self.hint = hint


def failed(error: Exception) -> bool:
    """Whether a fetch failed where a later run may succeed — no answer at all, or a server
    error or throttling that outlasted the retries — rather than meeting a page that is gone,
    refused or malformed: a listing cut so stopped the crawl part way."""
    return isinstance(error, ConnectFailed) or (
        isinstance(error, FetchError) and error.status in (429, 500, 502, 503, 504))
