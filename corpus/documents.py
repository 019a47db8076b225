"""The document use cases: `busca add`'s files and `busca crawl`'s site into the home."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import crawler as crawling

Notify = Callable[[str, Any], None]
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Added:
    """What `busca add` did: documents added, updated (title or text), metadata_updated
    (their metadata, groups or date alone), unchanged or repeated in the input (the last one
    kept), deleted (when a folder was given: its files that are gone), inputs skipped, and
    the documents in the home after it."""

    counts: dict[str, int]
    skipped: int
    documents: int

    def to_json(self) -> dict:
        return {**self.counts, "skipped": self.skipped, "documents": self.documents}


def add_files(home, paths: Sequence[str | Path], *, groups: Sequence[str] = (),
              notify: Notify | None = None) -> Added:
    """Store the documents of .jsonl, .txt, .md, .html (.pdf) files (each stamped with
    `groups`: who may read it, crawler/groups.py); a folder gives the files below it, and the
    documents of its files that are gone are deleted; `notify(what, value)` hears ("skipped", a
    crawler Problem) and ("repeated", a URL given again) as they happen; without it, a
    skipped input is a CrawlError."""
    from ..crawler.files import gone_files

    names = [str(p) for p in paths]
    counts = {**dict.fromkeys(crawling.events.STORED, 0), "duplicate": 0}
    skipped, seen, read = 0, set(), set()
    folders = [name for name in names if Path(name).is_dir()]
    stored = list(home.hashes("file")) if folders else []
    legacy = _legacy_ids(home, names)
    home = crawling.stamped(crawling.one_spelling(home), crawling.given_groups(groups))
    for item in map(_storable, crawling.read_files(names)):
        if isinstance(item, crawling.Problem):
            if notify is None:
                raise crawling.CrawlError(f"cannot add {item.where}: {item.message}")
            skipped += 1
            notify("skipped", item)
            continue
        doc_id = home.stored_id(item.url)  # (/ação/ and /a%C3%A7%C3%A3o/ are one document)
        if doc_id in seen and notify:
            notify("repeated", item.url)
        status = home.put(item)
        for old in legacy.get(item.url, ()):  # the same file under its pre-file:// id
            home.delete(old)
            status = "updated" if status == "added" else status
        counts["duplicate" if doc_id in seen else status] += 1
        seen.add(doc_id)
        read.add(item.url)
    if folders:  # a file below a folder given that is gone: its document goes too
        counts["deleted"] = sum(map(home.delete, gone_files(stored, folders, read)))
    return Added(counts, skipped, home.count())


def _storable(item):
    """A file's Document, or a Problem: the file's own, or why no backend could store the
    document (crawler/store.py `checked`; dates are kept as the file gives them)."""
    from ..crawler.store import BadDocument, checked  # (with the files it reads)

    if isinstance(item, crawling.Problem):
        return item
    try:
        return checked(item, item.url, dates=False)
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
