"""Types of the lazy face busca.crawler (busca/lazy.py loads the names on first use)."""

from .groups import BadGroup as BadGroup
from .groups import check_groups as check_groups
from .crawl import crawl as crawl
from .errors import CrawlError as CrawlError
from .options import CrawlOptions as CrawlOptions
from .defaults import DEFAULT_DEADLINE as DEFAULT_DEADLINE
from .defaults import DEFAULT_HTML_PAGES as DEFAULT_HTML_PAGES
from .defaults import DEFAULT_RATE as DEFAULT_RATE
from .defaults import DEFAULT_RETRIES as DEFAULT_RETRIES
from .defaults import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from .defaults import DEFAULT_TYPES as DEFAULT_TYPES
from .defaults import DEFAULT_USER_AGENT as DEFAULT_USER_AGENT
from .defaults import DEFAULT_WORKERS as DEFAULT_WORKERS
from .store import Document as Document
from .store import DocumentStore as DocumentStore
from . import events as events
from .groups import given_groups as given_groups
from .options import JsonApiOptions as JsonApiOptions
from .files import legacy_ids as legacy_ids
from .defaults import MAIN_TEXT as MAIN_TEXT
from .store import one_spelling as one_spelling
from .defaults import post_type_problem as post_type_problem
from .files import Problem as Problem
from .files import read_files as read_files
from .defaults import SOURCES as SOURCES
from .groups import stamped as stamped
from .store import StoreError as StoreError
from .crawl import why_nothing as why_nothing
from .defaults import WP_TYPES as WP_TYPES

EXPORTS: dict[str, str]
__all__ = [
    "BadGroup",
    "CrawlError",
    "CrawlOptions",
    "DEFAULT_DEADLINE",
    "DEFAULT_HTML_PAGES",
    "DEFAULT_RATE",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TYPES",
    "DEFAULT_USER_AGENT",
    "DEFAULT_WORKERS",
    "Document",
    "DocumentStore",
    "JsonApiOptions",
    "MAIN_TEXT",
    "Problem",
    "SOURCES",
    "StoreError",
    "WP_TYPES",
    "check_groups",
    "crawl",
    "events",
    "given_groups",
    "legacy_ids",
    "one_spelling",
    "post_type_problem",
    "read_files",
    "stamped",
    "why_nothing",
]
