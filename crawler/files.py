"""Read local files into documents for `busca add` (.jsonl, .txt, .md, .html)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .html import decode_html, html_to_text
from .store import Document

SUFFIXES = (".jsonl", ".txt", ".md", ".html", ".htm")


@dataclass(frozen=True)
class Problem:
    """Something in an input that was skipped, with where it is."""

    where: str
    message: str


def read_files(paths: list[str]) -> Iterator[Document | Problem]:
    """Documents from each file, and a Problem for each file or line that cannot be used."""
    for name in paths:
        path = Path(name)
        try:
            data = path.read_bytes()
        except OSError as e:
            yield Problem(name, f"cannot read it ({e.strerror or e})")
            continue
        if b"\x00" in data:
            yield Problem(name, "looks like a binary file; busca adds .jsonl, .txt, .md, .html")
            continue
        suffix = path.suffix.lower()
        if suffix in (".html", ".htm"):  # its <meta charset> tells the encoding
            title, body = html_to_text(decode_html(data, None))
            yield _document(name, title or path.stem, body)
            continue
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            yield Problem(name, f"is not UTF-8 text (byte {e.start}); convert it to UTF-8")
            continue
        if suffix == ".jsonl":
            yield from _jsonl(name, text)
        elif suffix in (".txt", ".md"):
            yield _document(name, _first_heading(text) or path.stem, text)
        else:
            yield Problem(name, f"unsupported file type; busca adds {', '.join(SUFFIXES)}")


def _document(name: str, title: str, text: str) -> Document | Problem:
    if not text.strip():
        return Problem(name, "no text found in it")
    return Document(name, title, text, source="file")


def _jsonl(name: str, text: str) -> Iterator[Document | Problem]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            item = json.loads(line)
        except ValueError as e:
            yield Problem(where, f"invalid JSON ({e.msg} at column {e.colno})")
            continue
        if not isinstance(item, dict):
            yield Problem(where, 'expected an object like {"url": …, "title": …, "text": …}')
            continue
        missing = [k for k in ("url", "text") if not isinstance(item.get(k), str)]
        if missing or not item["url"].strip():
            yield Problem(where, f'needs string fields "url" and "text" (bad: {", ".join(missing) or "url"})')
            continue
        title = item.get("title") if isinstance(item.get("title"), str) else ""
        yield Document(item["url"], title or item["url"], item["text"], source="file",
                       modified=item.get("modified") if isinstance(item.get("modified"), str) else None)


def _first_heading(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""
