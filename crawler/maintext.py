"""Main text of pages from themes busca's extractor does not know: trafilatura (Apache-2.0,
the `trafilatura` extra), used when it is installed and the page has no <article>, <main>
or [role=main] (busca's extractor then falls back on the whole <body>, menus and all).

    --main-text auto          trafilatura for landmark-less pages when installed (default)
    --main-text busca         always busca's extractor (html.py)
    --main-text trafilatura   trafilatura for every page (an error if it is not installed)
"""

from __future__ import annotations

import logging
from dataclasses import replace
from functools import lru_cache

from .defaults import MAIN_TEXT
from .errors import CrawlError
from .html import HtmlPage, plain_text

CHOICES = MAIN_TEXT
EXTRA = "pip install 'busca[trafilatura]'"


def with_main_text(page: HtmlPage, html: str, how: str) -> HtmlPage:
    """`page` with trafilatura's main text when `how` asks for it (or auto finds no landmark)."""
    if how == "busca" or how == "auto" and (page.landmark or _extract() is None):
        return page
    text = main_text(html)
    first, _, rest = text.partition("\n")
    if first == page.title:  # the title is the document's title, not part of its text
        text = rest
    return replace(page, text=text, headings=()) if text else page


def main_text(html: str) -> str:
    """trafilatura's main text of a page, as clean lines ("" when it finds none)."""
    extract = _extract()
    if extract is None:
        raise CrawlError(f"--main-text trafilatura needs trafilatura: {EXTRA}")
    text = extract(html, include_comments=False, include_tables=True, include_images=False,
                   include_links=False, deduplicate=False)
    return plain_text(text or "")


@lru_cache(maxsize=1)
def _extract():
    try:
        from trafilatura import extract
    except ImportError:
        return None
    logging.getLogger("trafilatura").setLevel(logging.ERROR)
    return extract


def check(how: str) -> None:
    """CrawlError for an unknown choice, or trafilatura asked for but missing."""
    if how not in CHOICES:
        raise CrawlError(f"unknown --main-text {how!r}; choose one of {', '.join(CHOICES)}")
    if how == "trafilatura" and _extract() is None:
        raise CrawlError(f"--main-text trafilatura needs trafilatura: {EXTRA}")
