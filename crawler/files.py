"""Read local files into documents for `busca add` (.jsonl, .txt, .md, .html, .pdf).

A .txt, .md or .html file is one document whose id is its resolved absolute path as a
`file://` URL, so `notes/a.md`, `./notes/a.md` and `/home/me/notes/a.md` are one document.
Older versions used the path as typed; `legacy_ids` finds those ids so `busca add` can
replace them. A .jsonl file holds many documents, each with its own "url" (or BEIR "_id").
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlsplit

from .fields import jsonl_meta, read_document
from .groups import GROUPS, BadGroup, check_names
from .html import HtmlPage, decode_html, extract_page, headings_meta
from .markdown import front_matter, markdown_text
from .pdf import PdfError, read_pdf
from .store import BadDocument, Document, drop_invisible, iso_date

logger = logging.getLogger(__name__)
SUFFIXES = (".jsonl", ".txt", ".md", ".mdx", ".html", ".htm", ".pdf")
MARKDOWN = (".md", ".mdx")  # .mdx: Docusaurus pages (their imports and JSX tags go)


@dataclass(frozen=True)
class Problem:
    """Something in an input that was skipped, with where it is."""

    where: str
    message: str
    left_out: bool = False  # a file of a folder that is not a document (read_files)


NO_TEXT = "no text found in it"


def read_files(paths: list[str], on_file: Callable[[str, int], None] | None = None
               ) -> Iterator[Document | Problem]:
    """Documents from each file (a folder: the files below it, `in_folder`), and a Problem
    for each file or line that cannot be used. A file of a folder that is no document is
    left out with a warning, as a Problem whose `left_out` is set (its stored version, if
    any, is stale): one without text (a Hugo section's `_index.md` of front matter alone,
    an emptied note), or a site build's page that a crawl does not store either (`_no_page`);
    only one named on its own is a skipped input. `on_file(name, bytes)` hears each file
    before it is read."""
    for name, listed in _with_folders(paths):
        if isinstance(name, Problem):
            yield name
            continue
        if on_file is not None:
            on_file(name, _size(name))
        for found in _read_file(name, listed=listed):
            if listed and isinstance(found, Problem) and found.message == NO_TEXT:
                found = replace(found, left_out=True)
            if isinstance(found, Problem) and found.left_out:
                logger.warning("%s: %s; left out", name, found.message)
            yield found


def _size(name: str) -> int:
    try:
        return Path(name).stat().st_size
    except OSError:  # _read_file says why
        return 0


def _read_file(name: str, *, listed: bool = False) -> Iterator[Document | Problem]:
    """The documents of one file, or the Problem that kept it out (`listed`: a folder's)."""
    path = Path(name)
    if path.suffix.lower() == ".jsonl":  # a line at a time: an export of gigabytes
        yield from _jsonl_file(name, path)
        return
    try:
        data = path.read_bytes()
    except OSError as e:
        yield Problem(name, f"cannot read it ({e.strerror or e})")
        return
    if path.suffix.lower() == ".pdf":
        yield from (_on_disk(d, path) for d in _pdf(name, data))
        return
    if utf16 := _utf16(data):
        yield Problem(name, f"is {utf16} text; busca reads UTF-8: convert it, e.g."
                            f" {_converted(name, utf16)}")
        return
    if b"\x00" in data:
        yield Problem(name, f"looks like a binary file; busca adds {', '.join(SUFFIXES)}")
        return
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):  # its <meta charset> tells the encoding
        page = extract_page(decode_html(data, None))
        if listed and (why := _no_page(path, page)):
            yield Problem(name, why, left_out=True)
            return
        yield _on_disk(_document(name, page.title or path.stem, page.text, page.headings),
                       path)
        return
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        yield _not_utf8(name, path, data.count(b"\n", 0, e.start) + 1, e.start)
        return
    if suffix in (".txt", *MARKDOWN):
        yield _text_file(name, path, text)
    else:
        yield Problem(name, f"unsupported file type; busca adds {', '.join(SUFFIXES)}")


def _no_page(path: Path, page: HtmlPage) -> str | None:
    """Why an HTML file of a site build (MkDocs' `site/`, Docusaurus' `build/`) is not a
    document, as a crawl of the site does not store it (crawler/spider.py), or None: its
    404.html, a page marked noindex (a search page), a listing of posts (a tag or archive
    page: their excerpts again)."""
    if path.name.lower() in ("404.html", "404.htm"):
        return 'a "page not found" page'
    if page.noindex:
        return 'marked noindex (<meta name="robots">)'
    if page.is_listing:
        return "a listing of several articles (a tag or archive page)"
    return None


def _text_file(name: str, path: Path, text: str) -> Document | Problem:
    """A .txt file's document as it is, a Markdown file's as a reader sees it (its front
    matter the title and metadata)."""
    text = unicodedata.normalize("NFC", text)  # as stored: heading offsets hold
    fields, text, headings, first = _plain_or_markdown(text, path.suffix.lower())
    title = fields.get("title") if isinstance(fields.get("title"), str) else ""
    meta = jsonl_meta(fields)  # its other keys, as a JSONL line's
    try:
        check_names(tuple((meta or {}).get(GROUPS) or ()))
    except BadGroup as e:
        return Problem(name, f'front matter "groups": {e}')
    return _on_disk(_document(name, title or first or path.stem, text, headings, meta), path,
                    modified=_front_date(fields))


# a front matter's dates, the most specific first: its own, Hugo's, Jekyll's, Obsidian's,
# the post's (Hugo, Jekyll, MkDocs' blog)
DATE_KEYS = ("modified", "lastmod", "last_modified_at", "updated", "date")


def _front_date(fields: dict) -> str | None:
    """The first date of DATE_KEYS that reads as one (`store.iso_date`), else None: a
    cloned repository's files all have the clone's time, not the page's."""
    dates = (iso_date(fields[key]) for key in DATE_KEYS if isinstance(fields.get(key), str))
    return next((date for date in dates if date is not None), None)


def _with_folders(paths: list[str]) -> Iterator[tuple[str | Problem, bool]]:
    """(name, whether a folder listed it) of the names given, each folder replaced by the
    files `in_folder` finds below it."""
    for name in paths:
        if not Path(name).is_dir():
            yield name, False
            continue
        found = in_folder(name)
        yield from ((f, True) for f in found) if found else [
            (Problem(name, f"no {', '.join(SUFFIXES)} file in it"), False)]


def in_folder(folder: str) -> list[str]:
    """The files of the types busca adds below a folder, sorted: hidden files and folders
    (.git, .obsidian) left out, symlinks followed, each folder and file read once (a
    symlink loop ends); the files of other types are counted in one warning."""
    found, seen, other = [], set(), {}
    for top, folders, files in os.walk(folder, followlinks=True):
        real = os.path.realpath(top)
        if real in seen:  # reached again through a symlink
            folders[:] = []
            continue
        seen.add(real)
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for file in files:
            path = os.path.join(top, file)
            suffix = Path(file).suffix.lower()
            if file.startswith(".") or not os.path.isfile(path):
                continue  # hidden, a dangling symlink, a FIFO or socket
            if suffix not in SUFFIXES:
                other[suffix or "(none)"] = other.get(suffix or "(none)", 0) + 1
            elif (real_file := os.path.realpath(path)) not in seen:
                seen.add(real_file)
                found.append(path)
    if other:
        shown = ", ".join(f"{suffix} {n}" for suffix, n in sorted(other.items()))
        logger.warning("%s: %d file(s) of other types left out (%s); busca adds %s", folder,
                       sum(other.values()), shown, ", ".join(SUFFIXES))
    return sorted(found, key=lambda path: Path(path).parts)


def _not_utf8(name: str, path: Path, line: int, byte: int) -> Problem:
    return Problem(name, f"is not UTF-8 text (line {line}, byte {byte}): Windows-1252 or"
                         f" Latin-1? convert it, e.g. {_converted(name, 'WINDOWS-1252')}")


def _converted(name: str, encoding: str) -> str:
    """The shell command that converts a file to UTF-8 where it is (a folder added again
    finds it), its names quoted (spaces, accents)."""
    path = Path(name)
    source = shlex.quote(name)
    copy = shlex.quote(str(path.with_name(f"{path.stem}.utf8{path.suffix}")))
    return f"iconv -f {encoding} -t UTF-8 {source} > {copy} && mv {copy} {source}"


def _jsonl_file(name: str, path: Path) -> Iterator[Document | Problem]:
    """A .jsonl file's documents, read a line at a time (memory does not grow with the
    file), after one pass that refuses it as read_files refuses any file: UTF-16, a NUL
    (binary), a byte that is not UTF-8 (with its line and byte)."""
    try:
        problem = _unreadable_lines(name, path)
        if problem is None:
            with path.open("rb") as lines:
                yield from _jsonl(name, (raw.decode("utf-8-sig" if n == 0 else "utf-8")
                                         for n, raw in enumerate(lines)))
    except OSError as e:
        problem = Problem(name, f"cannot read it ({e.strerror or e})")
    if problem is not None:
        yield problem


def _unreadable_lines(name: str, path: Path) -> Problem | None:
    with path.open("rb") as lines:
        if utf16 := _utf16(lines.read(4096)):
            return Problem(name, f"is {utf16} text; busca reads UTF-8: convert it, e.g."
                                 f" {_converted(name, utf16)}")
        lines.seek(0)
        at = 0
        for number, raw in enumerate(lines, start=1):
            if b"\x00" in raw:
                return Problem(name, "looks like a binary file; busca adds .jsonl, .txt, .md,"
                                     " .html")
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as e:
                return _not_utf8(name, path, number, at + e.start)
            at += len(raw)
    return None


def _utf16(data: bytes) -> str | None:
    """The iconv name of UTF-16 text: with a byte-order mark, or Latin text whose every other
    byte is NUL (UTF-16LE when the NULs come second, else UTF-16BE); None for other bytes."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "UTF-16"
    head = data[:4096]
    pairs = len(head) // 2
    if pairs < 2:
        return None
    first, second = head[0:2 * pairs:2].count(0), head[1:2 * pairs:2].count(0)
    if second >= 0.9 * pairs and first <= 0.1 * pairs:
        return "UTF-16LE"
    if first >= 0.9 * pairs and second <= 0.1 * pairs:
        return "UTF-16BE"
    return None


def file_id(path: str | Path) -> str:
    """A file's document id: its resolved absolute path as a file:// URL."""
    return Path(path).resolve().as_uri()


def legacy_ids(ids: Iterable[str]) -> dict[str, list[str]]:
    """file_id -> the stored ids that name the same existing file the old way (a path as it
    was typed, relative to the current directory or absolute)."""
    found: dict[str, list[str]] = {}
    for old in ids:
        if not isinstance(old, str) or "://" in old or not old.lower().endswith(SUFFIXES[1:]):
            continue
        try:
            if Path(old).is_file():
                found.setdefault(file_id(old), []).append(old)
        except OSError:  # a name too long, or not a path at all
            continue
    return found


def gone_files(ids: Iterable[str], folders: Iterable[str], read: set[str]) -> list[str]:
    """The ids among `ids` of files below the folders given that are gone (deleted or
    renamed), below a folder a file was read from now (an empty folder, an unmounted share
    say, removes nothing); a file that cannot be looked at (permissions) is not gone."""
    tops = [file_id(f).rstrip("/") + "/" for f in folders if Path(f).is_dir()]
    tops = [top for top in tops if any(url.startswith(top) for url in read)]
    return [ident for ident in ids if isinstance(ident, str)
            and any(ident.startswith(top) for top in tops) and _gone(ident)]


def _gone(ident: str) -> bool:
    try:
        os.stat(os.fsdecode(unquote_to_bytes(urlsplit(ident).path)))
    except (FileNotFoundError, NotADirectoryError):
        return True
    except (OSError, ValueError):
        return False
    return False


def _on_disk(item: Document | Problem, path: Path, *,
             modified: str | None = None) -> Document | Problem:
    """A file's document with what the disk says of it: its modification time (UTC, as
    `modified`, unless the file gives its date: `modified`) and its absolute path (metadata
    `path`, for `--filter path^=/docs/`)."""
    if isinstance(item, Problem):
        return item
    try:
        stamp = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    except OSError:
        return item
    return replace(item, modified=modified or stamp.strftime("%Y-%m-%dT%H:%M:%S"),
                   meta={**(item.meta or {}), "path": str(path.resolve())})


def _document(name: str, title: str, text: str, headings=(),
              meta: dict | None = None) -> Document | Problem:
    if not text.strip():
        return Problem(name, NO_TEXT)
    return Document(file_id(name), title, text, source="file",
                    meta={**(meta or {}), **headings_meta(headings)} or None)


def _pdf(name: str, data: bytes) -> Iterator[Document | Problem]:
    """One document with its pages' offsets; pages without text reported (a scan?)."""
    try:
        pdf = read_pdf(data)
    except PdfError as e:
        yield Problem(name, str(e))
        return
    if pdf.empty:  # the document is stored: a warning on stderr, not a skipped input
        shown = ", ".join(map(str, pdf.empty[:10])) + (" …" if len(pdf.empty) > 10 else "")
        logger.warning("%s: %d of its %d pages have no text (scanned?); page(s) %s not"
                       " stored — run OCR on it to add them", name, len(pdf.empty), pdf.pages,
                       shown)
    yield Document(file_id(name), pdf.title or Path(name).stem, pdf.text, source="file",
                   meta=pdf.meta())


def _jsonl(name: str, lines: Iterable[str]) -> Iterator[Document | Problem]:
    """The documents of a JSONL file's lines (split at "\n" only: U+2028 is text)."""
    empty = True
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        empty = False
        where = f"{name}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as e:
            yield Problem(where, f"invalid JSON ({e.msg} at column {e.colno})")
            continue
        except ValueError as e:  # a number of over 4,300 digits (Python's int limit)
            yield Problem(where, f"a value busca cannot read ({e}); write it as a string")
            continue
        if not isinstance(item, dict):
            yield Problem(where, 'expected an object like {"url": …, "title": …, "text": …}')
            continue
        yield _jsonl_document(where, item)
    if empty:
        yield Problem(name, 'no documents in it (an empty file); busca adds one {"url": …,'
                            ' "title": …, "text": …} per line')


def _jsonl_document(where: str, item: dict) -> Document | Problem:
    """A JSONL line's document (crawler/fields.py, as POST /api/documents and `Corpus.add`
    read one), or the Problem that skips the line: a date in no form busca reads, groups
    that --groups and a tokens file refuse (a space, say)."""
    try:
        return read_document(item, where, source="file")
    except BadDocument as e:
        return Problem(where, str(e).removeprefix(f"{where}: "))


def _plain_or_markdown(text: str, suffix: str) -> tuple[dict, str, tuple, str]:
    """(front matter, text, headings, first heading) of a .txt file (as it is, without the
    invisible characters a crawled page loses too: a soft hyphen or zero-width space inside
    "infor\u00admação" made two words that no question finds) or .md file (its plain text: a
    snippet or prompt shows no `**`, `#` or link target, whose words are not indexed either;
    its first level-1 heading, as MkDocs takes: an Obsidian note without one is titled by
    its file's name, not by a `###` further down)."""
    if suffix not in MARKDOWN:
        text = drop_invisible(text)
        return {}, text, (), _first_heading(text)
    fields, source = front_matter(text)
    text, headings = markdown_text(source)
    return fields, text, headings, next((h[2] for h in headings if h[1] == 1), "")


def _first_heading(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""
