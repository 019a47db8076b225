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


class ApiUnusable(CrawlError):
    """The WordPress API answers its listing with an error, even at the smallest page size;
    in auto mode the crawl goes on with the next source (sitemap, feed)."""

    def __init__(self, url: str, reason: str):
        super().__init__(f"the WordPress API answers {reason} ({url})")
        self.url = url
        self.reason = reason


def failed(error: Exception) -> bool:
    """Whether a fetch failed where a later run may succeed — no answer at all, or a server
    error or throttling that outlasted the retries — rather than meeting a page that is gone,
    refused or malformed: a listing cut so stopped the crawl part way."""
    return isinstance(error, ConnectFailed) or (
        isinstance(error, FetchError) and error.status in (429, 500, 502, 503, 504))
