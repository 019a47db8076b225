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
_TAG = re.compile(r"</?[A-Za-z][^>]*>|<!--.*?-->")
_ATX = re.compile(r"^(#{1,4})\s+(.+?)\s*$")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_RULE = re.compile(r"^\s*(?:(?:[-*_]\s*){3,}|\|?(?:\s*:?-+:?\s*\|)+\s*:?-*:?\s*)$")  # ---, |--|--|
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*\S+")  # [1]: https://…


def markdown_to_text(source: str) -> str:
    """Plain text of Markdown; code blocks keep their lines, fences go."""
    return markdown_text(source)[0]


def markdown_text(source: str) -> tuple[str, tuple[tuple[int, int, str, str], ...]]:
    """(plain text, its headings) of Markdown: the words a reader sees, one clean line per
    paragraph line, heading, list item or code line (code blocks keep their lines; fences,
    rules, link targets and reference definitions go); each `#`–`####` heading outside code
    blocks as (offset in the text, level, text, the anchor MkDocs and GitHub give it)."""
    lines: list[str] = []
    headings, offset, code = [], 0, False
    for line in source.splitlines():
        if FENCE.match(line):
            code = not code
            continue
        heading = None if code else _ATX.match(line)
        if not code:
            if _RULE.match(line) or _REFERENCE.match(line):
                continue
            line = _inline(heading.group(2).rstrip("#") if heading else line)
        line = plain_text(line)
        if not line:
            continue
        if heading:
            headings.append((offset, len(heading.group(1)), line, slug(line)))
        lines.append(line)
        offset += len(line) + 1
    return "\n".join(lines), tuple(headings)


def _inline(line: str) -> str:
    """A line without its block marks (heading, quote, list) and inline marks (images and
    links as their text, emphasis, code ticks, tags), entities decoded."""
    line = _LINK.sub(r"\1", _IMAGE.sub(r"\1", line))
    line = _LIST.sub("", _QUOTE.sub("", _HEADING.sub("", line)))
    return unescape(_TAG.sub("", _EMPHASIS.sub("", line)))


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


def slug(text: str) -> str:
    """The anchor of a heading: lowercased words joined by hyphens, punctuation dropped."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", text.lower()).strip())


_FRONT_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?:\s+(.*?))?\s*$")
_FRONT_ITEM = re.compile(r"^\s*-\s+(.*?)\s*$")


def front_matter(source: str) -> tuple[dict, str]:
    """A Markdown file's YAML front matter (Jekyll, Hugo, Obsidian, MkDocs) and the text
    after it: ({key: a string or a list of strings}, rest). Nested values are left out; a
    block that is not `key: value` lines (a rule, text, rule) is text: ({}, source)."""
    lines = source.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        return {}, source
    end = next((n for n in range(1, len(lines)) if lines[n].rstrip() in ("---", "...")), 0)
    if not end:
        return {}, source
    fields: dict = {}
    key = None
    for line in (line.rstrip("\r\n") for line in lines[1:end]):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item, match = _FRONT_ITEM.match(line), _FRONT_KEY.match(line)
        if match and not line[0].isspace():
            key, value = match.group(1), match.group(2) or ""
            fields[key] = _front_value(value) if value else []
        elif key is None:
            return {}, source
        elif item and isinstance(fields[key], list):
            fields[key].append(_unquoted(item.group(1)))
        elif line[0].isspace():
            fields[key] = None  # a nested mapping: left out
        else:
            return {}, source
    kept = {k: v for k, v in fields.items() if v not in (None, "", [])}
    return kept, "".join(lines[end + 1:]).lstrip("\r\n")


def _front_value(value: str) -> str | list[str]:
    if value.startswith("[") and value.endswith("]"):
        return [_unquoted(v) for v in value[1:-1].split(",") if v.strip()]
    return _unquoted(value)


def _unquoted(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
