"""What the link-following crawl (spider.py) recognises as no page of the site: a "not
found" page answered with HTTP 200 (a soft 404), and pages of one URL pattern that keep
leading to near copies of themselves (a calendar's empty months, a listing's sort orders)."""

from __future__ import annotations

import re
import secrets
from collections import OrderedDict
from urllib.parse import unquote, urlsplit

from .errors import FetchError
from .html import HtmlPage, decode_html, extract_page
from .http import Fetcher

SAME_WORDS = 0.9  # a page sharing this share of its words with the probe's page is "not found"
THIN_SHARE = 0.1  # a page with at most this share of words its linking page lacks is a near copy
THIN_RUN = 5  # near copies in a row, each linked from a page of its own pattern: a trap
KEPT_WORDS = 2000  # pages whose words are kept to judge the pages they link
_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")


def words(text: str) -> frozenset[str]:
    """The distinct words of a text, in lower case."""
    return frozenset(_WORD.findall(text.lower()))


def _page_words(url: str, page: HtmlPage) -> frozenset[str]:
    """A page's words, title included, without the words of its own path (a "not found"
    page that names the path it was asked for is still the same page)."""
    return words(f"{page.title}\n{page.text}") - words(unquote(urlsplit(url).path))


class NotFound:
    """The site's "not found" page, learnt by asking for a path that cannot exist: a site
    answering HTTP 200 with it for every unknown path (a soft 404) had it stored under every
    broken link. A page whose words are (nearly) the probe's is taken as that page."""

    def __init__(self, fetcher: Fetcher, start_url: str, start: HtmlPage | None):
        self.words: frozenset[str] = frozenset()
        parts = urlsplit(start_url)
        probe = f"{parts.scheme}://{parts.netloc}/{secrets.token_hex(12)}/"  # no words in it
        try:
            r = fetcher.get(probe)
        except FetchError:
            return
        if r.status != 200 or not r.is_html() or r.url.rstrip("/") != probe.rstrip("/"):
            return  # a real 404, or a redirect: those are told apart already
        page = extract_page(decode_html(r.body, r.headers.get("Content-Type")), r.url)
        found = _page_words(probe, page)
        if start is not None and self._alike(found, _page_words(start_url, start)):
            return  # every path gives the start page (an app's shell): that is no 404
        self.words = found

    def matches(self, url: str, page: HtmlPage) -> bool:
        """Whether `page` is the site's "not found" page."""
        return bool(self.words) and self._alike(self.words, _page_words(url, page))

    @staticmethod
    def _alike(a: frozenset[str], b: frozenset[str]) -> bool:
        return bool(a and b) and len(a & b) >= SAME_WORDS * len(a | b)


def pattern(url: str) -> str:
    """A URL's pattern: its path with its numbers as 0 (`/calendar?month=2026-12` and
    `/calendar?month=2027-01` are `/calendar`; `/page/2/` and `/page/3/` are `/page/0/`)."""
    return _DIGITS.sub("0", urlsplit(url).path)


class Chains:
    """Pages that lead to near copies of themselves: a page linked first from a page of its
    own pattern, whose words (numbers aside) are all but THIN_SHARE those of that page, is a
    near copy (the next empty month of a calendar, the same listing sorted another way).
    THIN_RUN of them in a row close the pattern: its further near copies are neither stored
    nor followed. A blog's /page/2/, /page/3/… each list other posts: followed to the end."""

    def __init__(self):
        self.via: dict[str, str] = {}  # URL -> the page that linked it first
        self.kept: OrderedDict[str, frozenset[str]] = OrderedDict()  # URL -> its words
        self.run: dict[str, int] = {}  # pattern -> near copies in a row
        self.closed: dict[str, str] = {}  # pattern -> the first URL left out

    def linked(self, url: str, by: str) -> None:
        self.via.setdefault(url, by)

    def trapped(self, url: str, text: str) -> bool:
        """Whether the page at `url`, with this text, is a near copy in a closed pattern."""
        found = frozenset(w for w in words(text) if not w.isdigit())  # dates, counts aside
        self.kept[url] = found
        if len(self.kept) > KEPT_WORDS:
            self.kept.popitem(last=False)
        by = self.via.get(url)
        key = pattern(url)
        if by is None or pattern(by) != key or by not in self.kept:
            return False
        if len(found - self.kept[by]) > THIN_SHARE * len(found):
            self.run[key] = 0
            return False
        self.run[key] = self.run.get(key, 0) + 1
        if self.run[key] <= THIN_RUN:
            return False
        self.closed.setdefault(key, url)
        return True
