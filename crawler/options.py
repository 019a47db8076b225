"""Crawl options, the context every source works in, and crawl state kept in the store's meta.

State lives in two kinds of meta keys (JSON values):
- `crawl:doc:<url>`: per document: the source, the site key it came from, and what tells
  a change without fetching the body (WordPress id and modified_gmt, sitemap lastmod,
  ETag / Last-Modified validators). Written right after the document is stored.
- `crawl:site:<key>`: per site and source: WordPress high-water marks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from .defaults import (DEFAULT_HTML_PAGES, DEFAULT_TYPES, DEFAULT_WORKERS, NAMES, SOURCES,
                       WP_TYPES)
from .events import Notice, Stored
from .groups import NONE, given_groups, kept_groups
from .http import Fetcher, Politeness
from .store import DATE_FORMS, DOC_STATE, Document, DocumentStore as Store, iso_date
from .urls import doc_key

PER_PAGE = 100  # WordPress's maximum per_page


@dataclass(frozen=True)
class JsonApiOptions:
    """Where a generic JSON API keeps its items and their fields (dotted paths)."""

    items: str = ""  # path to the list in each response; "" when the response is the list
    url: str = "url"  # field path, or a template such as "https://site/artigos/{slug}"
    title: str = "title"
    body: str = "content"
    modified: str | None = None
    page_param: str | None = None  # e.g. "page": 1, 2, 3... until a page has no items
    next_path: str | None = None  # path to the next page's URL (or page number)
    offset_param: str | None = None  # e.g. "offset", "skip": advanced by the items read
    total_path: str | None = None  # path to the item total (ends offset paging early)
    cursor_param: str | None = None  # e.g. "page[after]": set to the value at cursor_path
    cursor_path: str | None = None  # path to the next cursor (a URL when no cursor_param)
    continue_path: str | None = None  # MediaWiki: an object merged into the first URL's query
    more_path: str | None = None  # path to a has-more flag; false ends the paging
    meta: tuple[tuple[str, str], ...] = ()  # (name, path) pairs kept as document metadata
    names: tuple[tuple[str, str, str, str], ...] = ()  # (meta name, list path in the page,
    #   key field, name field): ids in that metadata replaced by the names the page sideloads
    body_format: str = "html"  # "html" (or text), "wikitext", or "auto": HTML, Markdown or
    #                            structured rich text (Contentful, Strapi blocks)


@dataclass(frozen=True)
class CrawlOptions(Politeness):
    """Everything `crawl()` can be told: the fetcher's politeness knobs plus what to read;
    the defaults are the CLI's."""

    source: str = "auto"
    types: tuple[str, ...] = DEFAULT_TYPES
    max_pages: int | None = None
    workers: int = DEFAULT_WORKERS
    full: bool = False
    per_page: int = PER_PAGE
    pdfs: bool = False  # read PDFs the site links (within the response size cap)
    main_text: str = "auto"  # "busca", "trafilatura", or auto: trafilatura (if installed)
    #                          for pages without <article>/<main>
    json: JsonApiOptions = field(default_factory=JsonApiOptions)
    groups: tuple[str, ...] = ()  # stamped on every document stored (crawler/groups.py)

    def __post_init__(self):  # a comma text is names, never its letters ("staff": s, t, a, f)
        object.__setattr__(self, "groups", given_groups(self.groups))


@dataclass
class Context:
    """What a source needs: the polite fetcher, the store and the options."""

    fetcher: Fetcher
    store: Store
    options: CrawlOptions
    damaged: set[str] = field(default_factory=set)  # state kinds already warned about
    broken: list[str] = field(default_factory=list)  # listings a failure cut: the crawl
    #                                                  stopped part way (exit 1)
    undated: bool = False  # a date no form reads was left out (said once)

    def put(self, document: Document) -> str:
        """Store `document` (added/updated/unchanged). A document another source stored
        keeps what this one does not give: the metadata keys it lacks, its date when it
        has none (a site's feed carries less than its WordPress API; crawled after it, it
        wiped the categories and reported the documents unchanged). A document stored with
        groups keeps them when this crawl stamps none (a crawl of the site under another
        start URL never makes a changed private article public), unless `--groups none`."""
        document = self._dated(document)
        old = self.store.written(document.url)
        if old is not None and old.source != document.source:
            document = replace(document, meta={**(old.meta or {}), **(document.meta or {})}
                               or None, modified=document.modified or old.modified)
        if self.options.groups != (NONE,):
            document = kept_groups(document, old)
        return self.store.put(document)

    def _dated(self, document: Document) -> Document:
        """`document` with its date as every home stores it (`store.iso_date`: RFC 2822 and
        ISO 8601's other forms made ISO 8601), or without one that no form reads (a JSON
        API's epoch number, "01/05/2024"), said once a crawl: stored as it came, such a date
        was compared as text by `--filter modified>=`."""
        if document.modified is None:
            return document
        date = iso_date(document.modified)
        if date is None and not self.undated:
            self.undated = True
            self.fetcher.on_notice(f"{document.url}: its date {document.modified!r:.40} is not"
                                   f" {DATE_FORMS}: stored without a date, as every such date"
                                   " of this crawl (--filter modified leaves them out)")
        return document if date == document.modified else replace(document, modified=date)

    def doc_state(self, url: str) -> dict | None:
        return self._state(DOC_STATE + url, "doc")

    def set_doc_state(self, url: str, state: dict | None) -> None:
        self.store.set_meta(DOC_STATE + url, state)

    def site_state(self, key: str) -> dict:
        return self._state(f"crawl:site:{key}", key) or {}

    def set_site_state(self, key: str, state: dict) -> None:
        self.store.set_meta(f"crawl:site:{key}", state)

    def _state(self, key: str, kind: str) -> dict | None:
        """The stored state under `key`; None, with one warning per kind, when it is damaged."""
        try:
            state = self.store.get_meta(key)
        except ValueError:  # invalid JSON
            state = "damaged"
        if state is None or isinstance(state, dict):
            return state
        if kind not in self.damaged:
            self.damaged.add(kind)
            what = ("the stored crawl state of some documents is damaged; they are fetched"
                    " again" if kind == "doc" else f"the stored crawl state of {kind} is"
                    " damaged; ignoring it and crawling that site in full")
            self.fetcher.on_notice(what)
        return None

    def known(self, source: str, site: str) -> list[str]:
        """URLs of stored documents that this source brought from this site."""
        return [url for url in self.store.hashes(source)
                if (self.doc_state(url) or {}).get("site") == site]

    def delete_missing(self, source: str, site: str, seen: set[str]) -> Iterator[Stored]:
        """Delete this site's documents that a complete listing no longer has (in any
        spelling of their URLs: `urls.doc_key`)."""
        seen = {doc_key(url) for url in seen}
        for url in self.known(source, site):
            if doc_key(url) not in seen:
                self.store.delete(url)
                self.set_doc_state(url, None)
                yield Stored(url, "deleted", fetched=False)
        yield from self._unlisted_of_others(source, seen)

    def _unlisted_of_others(self, source: str, seen: set[str]) -> Iterator[Notice]:
        """A notice of the documents of the listing's hosts that an earlier crawl by another
        source stored and this complete listing lacks: kept, since a source deletes only
        what it brought in (a post deleted after the site closed its API to the weekly crawl,
        which then read the sitemap, would otherwise answer questions for ever, unsaid)."""
        hosts = {urlsplit(key).hostname for key in seen} - {None, ""}
        for other in NAMES:
            missing = [url for url in self.store.hashes(other) if other != source
                       and urlsplit(url).hostname in hosts and doc_key(url) not in seen]
            if missing:
                yield Notice(
                    f"{len(missing)} document(s) of this site that an earlier --source {other}"
                    f" crawl stored are not in this {source} listing and were kept (e.g."
                    f" {missing[0]}): if the site removed them, run busca remove with their"
                    f" URLs; a crawl with --source {other} deletes those it no longer finds")
