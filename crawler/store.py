"""What a crawl writes and where: `Document` (one article; its URL is its id from crawl to
evaluation) and the `DocumentStore` protocol the crawler writes it through.

The crawler never opens a store itself: whoever opens a home hands it in (`crawl(url, store)`).
A local home keeps its documents in SQLite (index/home/documents.py), a PostgreSQL home in its
schema (index/postgres/store.py); both raise `StoreError` when the store cannot be used.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ..errors import BuscaError


class StoreError(BuscaError):
    """The store cannot be opened or written."""


@dataclass(frozen=True)
class Document:
    """One article: the URL is its id from crawl to evaluation."""

    url: str
    title: str
    text: str
    source: str = ""
    modified: str | None = None
    sha256: str = field(default="", compare=False)
    meta: dict | None = field(default=None, compare=False)  # JSON-ready: tags, section, page…

    def normalized(self) -> Document:
        """The same document with NFC title and text and its text hash filled in."""
        text = unicodedata.normalize("NFC", self.text)
        title = unicodedata.normalize("NFC", self.title)
        return Document(self.url, title, text, self.source, self.modified, text_hash(text),
                        self.meta or None)

    def meta_json(self) -> str | None:
        """The metadata as the store keeps it: compact, sorted JSON, or None."""
        return json.dumps(self.meta, ensure_ascii=False, sort_keys=True,
                          allow_nan=False) if self.meta else None  # NaN is not JSON


class BadDocument(BuscaError, ValueError):
    """A document handed to `Corpus.add` that cannot be stored as it is."""


def checked(doc: object, where: str = "the document", *, dates: bool = True) -> Document:
    """`doc` if every backend can store it: a Document whose url is a non-empty string on
    one line, whose title and text are strings of valid Unicode without NUL (no lone
    surrogate, which UTF-8 cannot hold; no U+0000, which PostgreSQL's text cannot), `meta`
    None or a dict that JSON holds, and (`dates`) `modified` None or an ISO 8601 date; else
    BadDocument naming what to fix."""
    if not isinstance(doc, Document):
        raise BadDocument(f"{where} is a {type(doc).__name__}: give busca.Document(url, title,"
                          " text)")
    if not isinstance(doc.url, str) or not doc.url.strip() or len(doc.url.splitlines()) > 1:
        raise BadDocument(f"{where}: its url must be a non-empty string on one line, not"
                          f" {doc.url!r}")
    for name in ("url", "title", "text"):
        _check_text(getattr(doc, name), f"{where}: its {name}")
    if dates and doc.modified is not None and not _iso_date(doc.modified):
        raise BadDocument(f"{where}: modified must be an ISO 8601 date such as 2024-05-01 or"
                          f" 2024-05-01T10:00:00Z, not {doc.modified!r}")
    if doc.meta is not None and not isinstance(doc.meta, dict):
        raise BadDocument(f"{where}: meta must be a dict or None")
    try:
        meta = doc.meta_json() or ""
    except (TypeError, ValueError) as e:
        raise BadDocument(f"{where}: its meta is not JSON ({e}): give texts, numbers, lists"
                          " and dicts") from None
    _check_text(meta, f"{where}: its meta")
    _check_groups((doc.meta or {}).get("groups"), where)
    return doc


def _check_groups(value: object, where: str) -> None:
    """BadDocument unless the document's groups are names a tokens file can give (a
    Python caller's meta={"groups": "a b"} was stored as such)."""
    from .groups import BadGroup, given_groups

    try:
        given_groups(value)
    except BadGroup as e:
        raise BadDocument(f"{where}: its meta's groups: {e}") from None


def _check_text(value: object, what: str) -> None:
    if not isinstance(value, str):
        raise BadDocument(f"{what} must be a string, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise BadDocument(f"{what} holds {value[e.start]!r} at {e.start}, a lone surrogate"
                          " that no text encoding keeps: fix the source text") from None
    if "\x00" in value:
        raise BadDocument(f"{what} holds a NUL character (U+0000) at {value.index(chr(0))},"
                          " which PostgreSQL cannot store: remove it")


def _iso_date(text: object) -> bool:
    try:
        datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return False
    return True


def text_hash(text: str) -> str:
    """sha256 hex digest of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()



class DocumentStore(Protocol):
    """What the crawler needs of a home: documents, and settings/crawl state as JSON values.

    Every home implements it (index/backend.py's `Home`): a local home in SQLite
    (index/home/documents.py), a PostgreSQL home (index/postgres/store.py). Whoever opens
    the home hands it to the crawler, which writes only through these methods."""

    def put(self, doc: Document) -> str: ...
    def get(self, url: str) -> Document | None: ...
    def delete(self, url: str) -> bool: ...
    def documents(self, source: str | None = None) -> Iterator[Document]: ...
    def hashes(self, source: str | None = None) -> dict[str, str]: ...
    def count(self) -> int: ...
    def get_meta(self, key: str, default=None): ...
    def set_meta(self, key: str, value) -> None: ...
