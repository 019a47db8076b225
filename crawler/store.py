"""What a crawl writes and where: `Document` (one article; its URL is its id from crawl to
evaluation) and the `DocumentStore` protocol the crawler writes it through.

The crawler never opens a store itself: whoever opens a home hands it in (`crawl(url, store)`).
A local home keeps its documents in SQLite (index/home/documents.py), a PostgreSQL home in its
schema (index/postgres/store.py); both raise `StoreError` when the store cannot be used.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol

from ..errors import BuscaError

DOC_STATE = "crawl:doc:"  # the meta key prefix of a document's crawl state (options.py)


# soft hyphen, zero-width space/non-joiner/joiner, word joiner, BOM: what no stored document
# holds (`Document.normalized`, whichever way it came in) and a question drops too
# (index/text/analyzers.py)
INVISIBLE = "\u00ad\u200b\u200c\u200d\u2060\ufeff"
_INVISIBLE = re.compile(f"[{INVISIBLE}]")


def drop_invisible(text: str) -> str:
    """`text` without the INVISIBLE characters (a regular expression: str.translate with a
    table was 15 times slower, half of re-adding an unchanged 20,000-post export)."""
    return _INVISIBLE.sub("", text)


def one_line(text: str) -> str:
    """`text` as one line (a title, a heading): each run of whitespace one space, without the
    INVISIBLE characters, trimmed."""
    return _SPACES.sub(" ", drop_invisible(text)).strip()


_SPACES = re.compile(r"\s+")


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
        """The same document as every home stores it, whichever way it came in (a crawl, a
        file, a JSONL line, POST /api/documents, `Corpus.add`): title and text NFC and
        without the INVISIBLE characters ("infor\u00admação" is "informação"), the offsets
        of its headings and PDF pages moved to match, and its text hash filled in."""
        text, title = plain(self.text), plain(self.title)
        meta = _moved(self.meta, self.text)
        return Document(self.url, title, text, self.source, self.modified, text_hash(text),
                        meta or None)

    def meta_json(self) -> str | None:
        """The metadata as the store keeps it: compact, sorted JSON, or None."""
        return json.dumps(self.meta, ensure_ascii=False, sort_keys=True,
                          allow_nan=False) if self.meta else None  # NaN is not JSON


def plain(text: str) -> str:
    """`text` as a document stores it: without the INVISIBLE characters, in NFC."""
    return unicodedata.normalize("NFC", drop_invisible(text))


def _moved(meta: dict | None, text: str) -> dict | None:
    """`meta` with its offsets into `text` (headings: [offset, level, text, anchor]; pages:
    [number, offset]) moved to where they fall in `plain(text)`, and its headings' text
    plain too: a section still starts at its heading."""
    if not isinstance(meta, dict):
        return meta
    layout = {"headings": 0, "pages": 1}  # the list, and where its rows hold the offset
    rows = {key: [r for r in meta[key] if isinstance(r, list) and len(r) > at]
            for key, at in layout.items() if isinstance(meta.get(key), list)}
    if not rows:
        return meta
    spots = sorted({r[layout[key]] for key in rows for r in rows[key]
                    if _offset(r[layout[key]]) and r[layout[key]] <= len(text)})
    where, done, last = {}, 0, 0
    for spot in spots:  # each piece made plain alone: an offset never splits a character
        done, last = done + len(plain(text[last:spot])), spot
        where[spot] = done
    moved = dict(meta)
    for key, at in layout.items():
        if key in rows:
            moved[key] = [_row(r, at, where) for r in meta[key]]
    return moved


def _row(row: object, at: int, where: dict[int, int]) -> object:
    """A headings or pages row with its offset (at `at`) moved and a heading's text plain."""
    if not isinstance(row, list) or len(row) <= at:
        return row
    row = list(row)
    row[at] = where.get(row[at], row[at]) if _offset(row[at]) else row[at]
    if at == 0 and len(row) > 2 and isinstance(row[2], str):
        row[2] = plain(row[2])
    return row


def _offset(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class BadDocument(BuscaError, ValueError):
    """A document handed to `Corpus.add` that cannot be stored as it is (or ids handed to
    `Corpus.remove` that are not document ids)."""


def checked(doc: object, where: str = "the document") -> Document:
    """`doc` if every backend can store it: a Document whose url is a non-empty string on
    one line, whose title and text are strings of valid Unicode without NUL (no lone
    surrogate, which UTF-8 cannot hold; no U+0000, which PostgreSQL's text cannot), `meta`
    None or a dict that JSON holds, and `modified` None or a date `iso_date` reads (returned
    as it stores it: RFC 2822 made ISO 8601); else BadDocument naming what to fix."""
    if not isinstance(doc, Document):
        raise BadDocument(f"{where} is a {type(doc).__name__}: give busca.Document(url, title,"
                          " text), or a dict as a .jsonl line holds")
    if not isinstance(doc.url, str) or not doc.url.strip() or len(doc.url.splitlines()) > 1:
        raise BadDocument(f"{where}: its url must be a non-empty string on one line, not"
                          f" {doc.url!r}")
    for name in ("url", "title", "text"):
        _check_text(getattr(doc, name), f"{where}: its {name}")
    if doc.modified is not None:
        date = iso_date(doc.modified)
        if date is None:
            raise BadDocument(f"{where}: modified must be {DATE_FORMS}, not"
                              f" {doc.modified!r:.60}")
        doc = replace(doc, modified=date) if date != doc.modified else doc
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


DATE_FORMS = ("a date in ISO 8601 (2024-05-01, 2024-05-01T10:00:00Z) or RFC 2822 (Tue, 05"
              " Dec 2023 10:00:00 +0000)")
_EXTENDED = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?")


def iso_date(value: object) -> str | None:
    """`value` as a document stores its date (`modified`), or None when it is no date in the
    forms DATE_FORMS names (01/05/2024 is 1 May or 5 January; an epoch number says no zone):
    ISO 8601 as given in its extended form (a space before the time made a T), its other
    forms (20240105) written out; RFC 2822 (an RSS pubDate, an e-mail's Date) converted as
    a crawled feed's item is. Text compares then as dates do: `--filter modified>=2024-01-01`."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if len(text) > 10 and text[10] == " " and text[:4].isdigit():
        text = f"{text[:10]}T{text[11:]}"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        from email.utils import parsedate_to_datetime  # (a search never reads a date)

        try:
            return parsedate_to_datetime(text).isoformat()
        except (TypeError, ValueError, IndexError):
            return None
    if _EXTENDED.fullmatch(text):
        return text
    return when.isoformat() if "T" in text.upper() else when.date().isoformat()


def text_hash(text: str) -> str:
    """sha256 hex digest of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()



class DocumentStore(Protocol):
    """What the crawler needs of a home: documents, and settings/crawl state as JSON values.

    Every home implements it (index/backend.py's `Home`): a local home in SQLite
    (index/home/documents.py), a PostgreSQL home (index/postgres/store.py). Whoever opens
    the home hands it to the crawler, which writes only through these methods. `written` is
    `get` as a writer reads before it writes (a crawl, `busca add`, POST /api/documents: the
    version it replaces, whose groups it keeps): a PostgreSQL home with a standby reads it
    on the primary, where the write goes, even while the standby is away."""

    def put(self, doc: Document) -> str: ...
    def get(self, url: str) -> Document | None: ...
    def written(self, url: str) -> Document | None: ...
    def delete(self, url: str) -> bool: ...
    def documents(self, source: str | None = None) -> Iterator[Document]: ...
    def hashes(self, source: str | None = None) -> dict[str, str]: ...
    def count(self) -> int: ...
    def get_meta(self, key: str, default=None): ...
    def set_meta(self, key: str, value) -> None: ...


class OneSpelling:
    """A document store in which every spelling of a URL (`urls.doc_key`: /ação/,
    /a%c3%a7%c3%a3o/ and /a%C3%A7%C3%A3o/) names one document, for the crawler and `add`.
    A document stored under another spelling of its URL (by a busca that did not spell URLs
    one way) keeps that id, and its crawl state with it: no migration. A new one is stored
    under its URL as given. `hashes` gives each document under its key (reading every stored
    URL, as a crawl does anyway); without it, a URL's spellings are looked up one by one.
    Copies of one page stored under several spellings are dropped when it is stored again,
    after it is."""

    def __init__(self, store):
        self.store = store
        self._ids: dict[str, str] | None = None  # key -> the spelling stored, where they differ
        self._copies: dict[str, list[str]] = {}  # key -> the other spellings stored

    def stored_id(self, url: str) -> str:
        """The id under which the document of `url` is stored, or is to be."""
        return self._resolved(url)[0]

    def _resolved(self, url: str) -> tuple[str, tuple[str, ...]]:
        """(the id of `url`'s document, its copies under other spellings). After `hashes`
        has read every stored URL, from that; before (one document added), from look-ups of
        the spellings a store may hold (`urls.spellings`): no read of every URL per call."""
        key = doc_key(url)
        if key == url and ("%" not in url and _lower_host(url) == url
                           or not url.lower().startswith(("http://", "https://"))):
            return url, ()  # a file's id, or a plain URL: one spelling (no store read)
        if self._ids is not None:
            if key in self._ids:
                return self._ids[key], tuple(self._copies.get(key, ()))
            return (url if key != url and self.store.written(key) is None else key), ()
        from .urls import spellings

        found = [s for s in spellings(url) if self.store.written(s) is not None]
        if not found:
            return url, ()  # new: stored as given
        kept = key if key in found else min(found)
        return kept, tuple(s for s in found if s != kept)

    def _spellings(self) -> dict[str, str]:
        """key -> stored spelling, read once from the store's URLs."""
        if self._ids is None:
            stored, odd, self._ids = self.store.hashes(), {}, {}
            for url in stored:
                if doc_key(url) != url:
                    odd.setdefault(doc_key(url), []).append(url)
            for key, urls in odd.items():
                urls.sort()
                kept = key if key in stored else urls.pop(0)
                if kept != key:
                    self._ids[key] = kept
                if urls:
                    self._copies[key] = urls
        return self._ids

    def put(self, doc: Document, *args, **kwargs) -> str:
        stored_id, copies = self._resolved(doc.url)
        status = self.store.put(replace(doc, url=stored_id), *args, **kwargs)
        key = doc_key(doc.url)
        if self._ids is not None:
            if stored_id != key:
                self._ids[key] = stored_id
            self._copies.pop(key, None)
        for copy in copies:  # the same page under other spellings
            self.store.delete(copy)
            self.store.set_meta(DOC_STATE + copy, None)
        return status

    def get(self, url: str) -> Document | None:
        return self.store.get(self.stored_id(url))

    def written(self, url: str) -> Document | None:
        return self.store.written(self.stored_id(url))

    def delete(self, url: str) -> bool:
        key, (stored_id, copies) = doc_key(url), self._resolved(url)
        deleted = self.store.delete(stored_id)
        for copy in copies:
            deleted = self.store.delete(copy) or deleted
            self.store.set_meta(DOC_STATE + copy, None)
        self._copies.pop(key, None)
        (self._ids or {}).pop(key, None)
        return deleted

    def hashes(self, source: str | None = None) -> dict[str, str]:
        """key -> sha256 of every document (of one source)."""
        self._spellings()
        copies = {url for urls in self._copies.values() for url in urls}
        return {doc_key(url): sha for url, sha in self.store.hashes(source).items()
                if url not in copies}

    def get_meta(self, key: str, default=None):
        return self.store.get_meta(self._meta_key(key), default)

    def set_meta(self, key: str, value) -> None:
        self.store.set_meta(self._meta_key(key), value)

    def _meta_key(self, key: str) -> str:
        """A document's crawl state is kept under its stored id."""
        if key.startswith(DOC_STATE):
            return DOC_STATE + self.stored_id(key[len(DOC_STATE):])
        return key

    def __getattr__(self, name: str):
        return getattr(self.store, name)


def doc_key(url: str) -> str:
    """`urls.doc_key`, imported when a store is written (a search reads this module only)."""
    from .urls import doc_key as key

    return key(url)


def _lower_host(url: str) -> str:
    from .urls import lower_host

    return lower_host(url)


def one_spelling(store) -> OneSpelling:
    """`store` where every spelling of a URL names one document (`OneSpelling`)."""
    return store if isinstance(store, OneSpelling) else OneSpelling(store)
