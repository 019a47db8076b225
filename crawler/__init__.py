"""crawler: read a site (or local files) into a home's document store."""

from . import events
from .crawl import crawl, why_nothing
from .errors import CrawlError
from .files import Problem, legacy_ids, read_files
from .http import DEFAULT_RATE, DEFAULT_RETRIES, DEFAULT_TIMEOUT, DEFAULT_USER_AGENT
from .options import (DEFAULT_HTML_PAGES, DEFAULT_TYPES, DEFAULT_WORKERS, SOURCES, WP_TYPES,
                      CrawlOptions, JsonApiOptions)
from .store import Document, DocumentStore, Store, StoreError

__all__ = [
    "CrawlError", "CrawlOptions", "DEFAULT_HTML_PAGES", "DEFAULT_RATE", "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT", "DEFAULT_TYPES", "DEFAULT_USER_AGENT", "DEFAULT_WORKERS", "Document",
    "DocumentStore", "JsonApiOptions", "Problem", "SOURCES", "Store", "StoreError", "WP_TYPES",
    "crawl", "events", "legacy_ids", "read_files", "why_nothing",
]
