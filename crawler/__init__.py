"""crawler: read a site (or local files) into a home's document store.

Names load on first use (busca/lazy.py).
"""

from ..lazy import face

EXPORTS = {
    "BadGroup": ".groups",
    "check_groups": ".groups",
    "given_groups": ".groups",
    "crawl": ".crawl",
    "CrawlError": ".errors",
    "CrawlOptions": ".options",
    "DEFAULT_DEADLINE": ".defaults",
    "DEFAULT_HTML_PAGES": ".defaults",
    "DEFAULT_RATE": ".defaults",
    "DEFAULT_RETRIES": ".defaults",
    "DEFAULT_TIMEOUT": ".defaults",
    "DEFAULT_TYPES": ".defaults",
    "DEFAULT_USER_AGENT": ".defaults",
    "DEFAULT_WORKERS": ".defaults",
    "Document": ".store",
    "DocumentStore": ".store",
    "events": ".events:",
    "JsonApiOptions": ".options",
    "legacy_ids": ".files",
    "MAIN_TEXT": ".defaults",
    "one_spelling": ".store",
    "post_type_problem": ".defaults",
    "Problem": ".files",
    "read_files": ".files",
    "SOURCES": ".defaults",
    "stamped": ".groups",
    "StoreError": ".store",
    "why_nothing": ".crawl",
    "WP_TYPES": ".defaults",
}
__all__ = sorted(EXPORTS)
face(__name__)
