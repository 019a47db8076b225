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
