"""What discovery hands a source: the `Discovery` record, and the `Start` every detector reads."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .html import HtmlPage
from .http import Fetcher, Response


@dataclass(frozen=True)
class Discovery:
    """The source to crawl and what discovery learnt on the way."""

    source: str
    start: str  # the start URL after redirects
    detail: str
    api_root: str | None = None  # the API root or endpoint the source reads
    sitemaps: tuple[str, ...] = ()
    feeds: tuple[str, ...] = ()
    page: HtmlPage | None = None  # the start page, parsed (HTML crawls start from it)
    notes: tuple[str, ...] = ()


@dataclass
class Start:
    """The start URL's answer, as every detector sees it; detectors may add notes."""

    response: Response
    page: HtmlPage | None
    html: str  # the start page's markup ("" when it is not HTML)
    fetcher: Fetcher
    types: tuple[str, ...]
    strict: bool  # the user forced this source: say why it is missing instead of None
    notes: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.response.url

    @property
    def origin(self) -> str:
        return origin_of(self.response.url)

    def generator(self) -> str:
        """The page's `<meta name="generator">` content (lowercased), or ""."""
        match = _GENERATOR.search(self.html) or _GENERATOR_AFTER.search(self.html)
        header = self.response.headers.get("X-Generator", "")
        return ((match.group(1) if match else "") + " " + header).strip().lower()


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL."""
    return "{0.scheme}://{0.netloc}".format(urlsplit(url))


# Each stops at the next tag and keeps the first name or content it finds (an atomic group): a
# page of 50,000 unclosed "<meta name=generator " made `[^>]*` try every pair of them, hours.
_GENERATOR = re.compile(
    r"""<meta\s(?>[^<>]*?name=["']generator["'])[^<>]*content=["']([^"']*)""", re.I)
_GENERATOR_AFTER = re.compile(
    r"""<meta\s(?>[^<>]*?content=["'])([^"']*)["'](?>[^<>]*?name=["']generator["'])""", re.I)
