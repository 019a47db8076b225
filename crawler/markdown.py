"""Markdown as plain text (llms-full.txt, `busca add notes.md` sections): the words a reader
sees, one line per paragraph, heading, list item or code line."""

from __future__ import annotations

import re
from html import unescape

from .html import plain_text

FENCE = re.compile(r"^\s*(```|~~~)")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_HEADING = re.compile(r"^#{1,6}\s+")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_ATX = re.compile(r"^(#{1,4})\s+(.+?)\s*$")


def markdown_to_text(source: str) -> str:
    """Plain text of Markdown; code blocks keep their lines, fences go."""
    lines, code = [], False
    for line in source.splitlines():
        if FENCE.match(line):
            code = not code
            continue
        if not code:
            line = _IMAGE.sub(r"\1", line)
            line = _LINK.sub(r"\1", line)
            line = unescape(_TAG.sub("", _EMPHASIS.sub("", _LIST.sub("", _HEADING.sub("", line)))))
        lines.append(line)
    return plain_text("\n".join(lines))


def top_sections(source: str) -> list[tuple[str, str]]:
    """(heading, body) for each `# ` heading outside code blocks; text before the first
    heading is dropped."""
    sections: list[tuple[str, list[str]]] = []
    code = False
    for line in source.splitlines():
        if FENCE.match(line):
            code = not code
        if not code and line.startswith("# "):
            sections.append((line[2:].strip(), []))
        elif sections:
            sections[-1][1].append(line)
    return [(title, "\n".join(body)) for title, body in sections]


def markdown_headings(source: str) -> tuple[tuple[int, int, str, str], ...]:
    """(offset, level, text, anchor) of each `#`–`####` heading outside code blocks; the
    anchor is the slug MkDocs and GitHub give it."""
    found, offset, code = [], 0, False
    for line in source.splitlines(keepends=True):
        if FENCE.match(line):
            code = not code
        match = None if code else _ATX.match(line)
        if match:
            text = match.group(2).strip().rstrip("#").strip()
            found.append((offset, len(match.group(1)), text, slug(text)))
        offset += len(line)
    return tuple(found)


def slug(text: str) -> str:
    """The anchor of a heading: lowercased words joined by hyphens, punctuation dropped."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", text.lower()).strip())
