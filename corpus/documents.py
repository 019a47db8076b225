"""The document use cases: `busca add`'s files and `busca crawl`'s site into the home."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import crawler as crawling

Notify = Callable[[str, Any], None]
Progress = Callable[[str, int, int], None]
PROGRESS_EVERY = 1_000  # documents stored or removed between two `on_progress` calls
BIG_FILE = 4_000_000  # bytes: a file read so long (an HTML or Markdown manual: seconds) is named
PROGRESS_SECONDS = 2.0  # and at least this often while documents are stored (a folder of PDFs)


@dataclass(frozen=True)
class Added:
    """What `busca add` did: documents added, updated (title or text), metadata_updated
    (their metadata, groups or date alone), unchanged or repeated in the input (the last one
    kept), deleted (when a folder was given: its files that are gone or left out), inputs
    skipped, and the documents in the home after it; `problems`: each input skipped, and
    each file of a folder left out (a 404 page, a listing, one without text), with why."""

    counts: dict[str, int]
    skipped: int
    documents: int
    problems: tuple[crawling.Problem, ...] = ()

    def to_json(self) -> dict:
        def named(left_out: bool) -> list[dict]:
            return [{"input": p.where, "reason": p.message} for p in self.problems
                    if p.left_out == left_out]

        return {**self.counts, "skipped": self.skipped, "skipped_inputs": named(False),
                "left_out": named(True), "documents": self.documents}


@dataclass(frozen=True)
class Removed:
    """What `busca remove` did: the ids of the documents deleted (as stored), the ids or
    prefixes given that named no stored document, and the documents in the home after it.
    The index keeps their chunks until the next `busca index` (stats counts them pending)."""

    removed: tuple[str, ...]
    missing: tuple[str, ...]
    documents: int

    @property
    def deleted(self) -> int:
        return len(self.removed)

    def to_json(self) -> dict:
        return {"deleted": self.deleted, "removed": list(self.removed),
                "missing": list(self.missing), "documents": self.documents}


def remove_documents(home, ids, *, prefix: bool = False,
                     on_progress: Progress | None = None) -> Removed:
    """Delete the documents of `ids` and their crawl state (a crawl fetches such a page
    again, never skips it as unchanged): each a document id in any spelling of its URL
    (`OneSpelling`), else, without "://", a file path named as `busca add` names it
    (`file_id`); with `prefix`, every document whose id starts with each (a URL with a
    host, or a folder: the files below it). BadDocument for an id that is not a non-empty
    string, or a prefix that would name every document. `on_progress("removing documents",
    done, total)` hears every PROGRESS_EVERY documents a prefix removes."""
    from ..crawler.store import DOC_STATE
    from ..crawler.urls import doc_key

    names = _given_ids(ids, prefix)
    spelled = crawling.one_spelling(home)
    removed: dict[str, None] = {}
    missing = []
    for name in names:
        found = _prefixed(home, name) if prefix else _deleted(spelled, name)
        if not found:
            missing.append(name)
        for done, doc_id in enumerate(found, start=1):
            if prefix:
                home.delete(doc_id)
            for key in {doc_id, doc_key(doc_id)}:
                if home.get_meta(DOC_STATE + key) is not None:
                    home.set_meta(DOC_STATE + key, None)
            removed[doc_id] = None
            if on_progress and done % PROGRESS_EVERY == 0:
                on_progress("removing documents", done, len(found))
    return Removed(tuple(removed), tuple(missing), home.count())


def _given_ids(ids, prefix: bool) -> list[str]:
    """The ids given as a list of non-empty strings (one string or path: one id)."""
    from ..crawler.store import BadDocument

    if isinstance(ids, (str, os.PathLike)):
        ids = [ids]
    if not isinstance(ids, Iterable):
        raise BadDocument(f"remove takes a list of document ids, not a {type(ids).__name__}")
    names = [os.fspath(i) if isinstance(i, os.PathLike) else i for i in ids]
    for n, name in enumerate(names, start=1):
        if not isinstance(name, str) or not name.strip():
            raise BadDocument(f"id {n} is {name!r}: give document ids as non-empty strings (a"
                              " URL, a file path as added, a .jsonl line's url)")
        if prefix and "://" in name and not name.partition("://")[2].strip("/"):
            raise BadDocument(f"the prefix {name!r} names every document of its kind: give a"
                              " site, a section or a folder, e.g. https://site.example/blog/")
        if prefix and "://" not in name and _folder_id(name) == "file:/":
            raise BadDocument(f"the prefix {name!r} is the root folder, which names every"
                              " file: give the folder the files were added from")
    if not names:
        raise BadDocument("give at least one document id to remove")
    return names


def _deleted(spelled, name: str) -> list[str]:
    """The stored id of `name` deleted (with its copies in other spellings), or none."""
    from ..crawler.files import file_id

    candidates = [name]
    if "://" not in name:  # a file as `busca add` names it
        try:
            candidates.append(file_id(name))
        except (OSError, ValueError):  # not a path at all
            pass
    for candidate in candidates:
        doc_id = spelled.stored_id(candidate)
        if spelled.delete(candidate):
            return [doc_id]
    return []


def _prefixed(home, prefix: str) -> list[str]:
    """The stored ids under `prefix`: a URL's in any spelling, or a folder's files."""
    from ..crawler.urls import doc_key, normalize

    if "://" in prefix:
        try:  # the host as stored: lower case (https://SITE.example/blog/)
            key = doc_key(normalize(prefix))
        except ValueError:
            key = doc_key(prefix)
        return [i for i in home.hashes() if i.startswith(prefix) or doc_key(i).startswith(key)]
    top = _folder_id(prefix)
    return [i for i in home.hashes() if i.startswith(top)] if top else []


def _folder_id(path: str) -> str:
    """The id prefix of the files below the folder `path` ("" when it is no path at all)."""
    from ..crawler.files import file_id

    try:
        return file_id(path).rstrip("/") + "/"
    except (OSError, ValueError):
        return ""


def new_counts() -> dict[str, int]:
    """The counts of an add: each status a stored document can have, and `duplicate`."""
    return {**dict.fromkeys(crawling.events.STORED, 0), "duplicate": 0}


def stored_once(home, doc, seen: set, counts: dict, *, legacy=()) -> bool:
    """Store `doc` in `home` (one spelling of each URL: /ação/ and /a%C3%A7%C3%A3o/ are one
    document) and count it: `duplicate` when the same input gave its document before (the
    last kept), else its status; `legacy`, its file's ids from before file:// ids, deleted.
    Whether it was a repeat."""
    doc_id = home.stored_id(doc.url)
    status = home.put(doc)
    for old in legacy:  # the same file under its pre-file:// id
        home.delete(old)
        status = "updated" if status == "added" else status
    repeated = doc_id in seen
    counts["duplicate" if repeated else status] += 1
    seen.add(doc_id)
    return repeated


def add_documents(home, documents) -> Added:
    """`Corpus.add`: store Documents, and dicts read as a JSONL line's are (crawler/fields.py,
    source "api": POST /api/documents hands its items here), each with the groups of its
    stored version when it gives none (`"groups": []` in a dict or a Document's meta: none);
    every one checked before the first is stored (BadDocument: none stored)."""
    from ..crawler.fields import read_document
    from ..crawler.store import BadDocument, Document, checked, one_spelling

    if isinstance(documents, (str, bytes, dict, Document)) \
            or not isinstance(documents, Iterable):
        raise BadDocument(f"add takes a list of busca.Document or of dicts such as a .jsonl"
                          f" line holds, not a {type(documents).__name__}")
    given = list(documents)
    docs = [read_document(d, f"document {n}", source="api") if isinstance(d, dict)
            else checked(d, f"document {n}") for n, d in enumerate(given, start=1)]
    counts, seen, store = new_counts(), set(), one_spelling(home)
    for doc in docs:
        stored_once(store, _grouped(store, doc, keep=True), seen, counts)
    return Added(counts, 0, home.count())


def add_files(home, paths: Sequence[str | Path], *, groups: Sequence[str] = (),
              notify: Notify | None = None, on_progress: Progress | None = None) -> Added:
    """Store the documents of .jsonl, .txt, .md, .html (.pdf) files (each stamped with
    `groups`: who may read it, crawler/groups.py); a folder gives the files below it, and the
    documents of its files that are gone, or left out (crawler/files.py `read_files`), are
    deleted; `notify(what, value)` hears ("skipped", a
    crawler Problem) and ("repeated", a URL given again) as they happen; without it, a
    skipped input is a CrawlError. `on_progress("storing documents", done, 0)` hears every
    PROGRESS_EVERY documents read (their number is not known before the files are read) or
    PROGRESS_SECONDS (a folder of PDFs: hundreds of slow documents), and
    `on_progress("reading NAME (N MB)", done, 0)` a file of BIG_FILE bytes or more before
    it is read (a 36 MB page is 20 s of parsing)."""
    from ..crawler.files import file_id, gone_files
    from ..crawler.groups import NONE

    names = [str(p) for p in paths]
    counts, seen = new_counts(), set()
    skipped, read, problems = 0, set(), []
    folders = [name for name in names if Path(name).is_dir()]
    stored = list(home.hashes("file")) if folders else []
    legacy = _legacy_ids(home, names)
    given = crawling.given_groups(groups)
    public = given == (NONE,)  # --groups none: no groups stamped, none kept
    home = crawling.stamped(crawling.one_spelling(home), () if public else given)
    said = time.monotonic()

    def reading(name: str, size: int) -> None:
        if on_progress and size >= BIG_FILE:
            on_progress(f"reading {Path(name).name} ({size / 1e6:.1f} MB)",
                        sum(counts.values()), 0)

    for item in map(_storable, crawling.read_files(names, reading)):
        if isinstance(item, crawling.Problem) and item.left_out:  # its old text is stale
            counts["deleted"] = counts.get("deleted", 0) + home.delete(file_id(item.where))
            problems.append(item)
            continue
        if isinstance(item, crawling.Problem):
            if notify is None:
                raise crawling.CrawlError(f"cannot add {item.where}: {item.message}")
            skipped += 1
            problems.append(item)
            notify("skipped", item)
            continue
        item = _grouped(home, item, keep=not public)
        if stored_once(home, item, seen, counts, legacy=legacy.get(item.url, ())) and notify:
            notify("repeated", item.url)
        read.add(item.url)
        done = sum(counts.values())
        if on_progress and (done % PROGRESS_EVERY == 0
                            or time.monotonic() - said >= PROGRESS_SECONDS):
            on_progress("storing documents", done, 0)
            said = time.monotonic()
    if folders:  # a file below a folder given that is gone: its document goes too
        counts["deleted"] = counts.get("deleted", 0) + sum(
            map(home.delete, gone_files(stored, folders, read)))
    return Added(counts, skipped, home.count(), tuple(problems))


def _grouped(home, doc, *, keep: bool):
    """`doc` with the groups of its stored version when it comes without its own (`keep`):
    an update that leaves them out never makes a private document public, as a crawl and
    POST /api/documents keep them; a JSONL line's `"groups": []` (public, said so) is stored
    without the key."""
    from ..crawler.groups import GROUPS, kept_groups

    meta = doc.meta or {}
    if GROUPS in meta and not meta[GROUPS]:
        return replace(doc, meta={k: v for k, v in meta.items() if k != GROUPS} or None)
    return kept_groups(doc, home.written(doc.url)) if keep else doc


def _storable(item):
    """A file's Document, or a Problem: the file's own, or why no backend could store the
    document (crawler/store.py `checked`)."""
    from ..crawler.store import BadDocument, checked  # (with the files it reads)

    if isinstance(item, crawling.Problem):
        return item
    try:
        return checked(item, item.url)
    except BadDocument as e:  # a url on two lines is named as repr shows it, on one line
        where = item.url if str(item.url).isprintable() else repr(item.url)[:100]
        return crawling.Problem(where, str(e).removeprefix(f"{item.url}: "))


def _legacy_ids(home, names: list[str]) -> dict[str, list[str]]:
    """Ids that older versions gave the files being added (paths as typed), by file_id."""
    if all(name.lower().endswith(".jsonl") for name in names):
        return {}
    return crawling.legacy_ids(home.hashes("file"))


def crawl_site(home, url: str, options: crawling.CrawlOptions, *,
               notify: Callable[[Any], None] | None = None,
               on_progress: Progress | None = None) -> crawling.events.CrawlReport:
    """`busca crawl`: the site's documents into the home, and the crawl's report;
    `notify(event)` hears its notices, sources and failures as they happen (a notice may
    come from another thread, before the wait it announces), `on_progress("documents",
    done, total)` its progress."""
    events = crawling.events
    done, total = 0, 0
    tell = notify or (lambda event: None)
    for event in crawling.crawl(url, home, options=options,
                                on_notice=lambda message: tell(events.Notice(message))):
        if isinstance(event, events.Finished):
            return event.report
        if isinstance(event, events.Expected):
            total += event.total
        elif isinstance(event, events.Stored) and event.status != "deleted":
            done += 1
        elif isinstance(event, (events.Notice, events.SourceFound, events.Failed)):
            tell(event)
        if on_progress:
            on_progress("documents", done, total if total >= done else 0)
    raise AssertionError("crawl() ended without a report")  # pragma: no cover
