"""Crawl defaults, with no imports of the crawling code: the command line shows them in its
options without loading requests or bs4."""

from __future__ import annotations

from .. import __version__

SOURCES = ("auto", "wordpress", "json", "sitemap", "feed", "html")
WP_TYPES = ("posts", "pages")
DEFAULT_TYPES = ("posts",)
DEFAULT_WORKERS = 2
DEFAULT_HTML_PAGES = 500  # page budget of the link-following crawl when --max-pages is unset
DEFAULT_RATE = 2.0  # requests per second per host
DEFAULT_TIMEOUT = 20.0  # seconds to connect / between bytes read
DEFAULT_DEADLINE = 60.0  # seconds one attempt at a request may take in all
DEFAULT_RETRIES = 3
DEFAULT_USER_AGENT = f"busca/{__version__} (local search-index crawler; python-requests)"
