"""Markdown as plain text (llms-full.txt, `busca add notes.md` sections): the words a reader
sees, one line per paragraph, heading, list item or code line."""

from __future__ import annotations

import re
from html import unescape

from .html import COMMENT, TAG, plain_text, without_spans

FENCE = re.compile(r"^\s*(```|~~~)")
_URL = r"\((?:[^()]|\([^()]*\))*\)"  # (target), (target "title"), (a_(b))
_IMAGE = re.compile(r"!\[([^][]*)\]" + _URL)
_LINK = re.compile(r"\[([^][]+)\]" + _URL)
_REF_LINK = re.compile(r"(?<!!)\[([^][^][^][]*)\]\[[^][]*\]")  # [text][ref], [text][]
_REF_IMAGE = re.compile(r"!\[([^][]*)\]\[[^][]*\]")  # ![alt][ref]
_SHORTCUT = re.compile(r"(!?)\[([^\]\[]+)\](?![\[(])")  # [text] or ![alt] of a `[text]: URL`
_FOOTNOTE = re.compile(r"\[\^[^][\s]+\]")  # [^1]: its mark in the text
_WIKI = re.compile(r"(!?)\[\[([^][|]*)(?:\|([^][]*))?\]\]")  # [[page#part|alias]], ![[embed]]
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_AUTOLINK = re.compile(r"<((?:https?|ftp)://[^\s<>]+|[^\s<>@]+@[^\s<>@]+\.[^\s<>@]+)>")
_SHORTCODE = re.compile(r"\{\{[<%][^{}]*?[%>]\}\}|:(?:material|fontawesome|octicons|simple)-[\w-]+:")
_HEADING = re.compile(r"^#{1,6}\s+")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`|~~)")
_UNDERSCORE = re.compile(r"(?<![\w\\])_(?=\S)([^_]+?)(?<=\S)_(?!\w)")  # _ênfase_, not snake_case
_ATX = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-{2,})\s*$")  # the line under a heading: Título\n======
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_CALLOUT = re.compile(r"^\[!([\w-]+)\][+-]?\s*")  # Obsidian: > [!note]- Título
_RULE = re.compile(r"^\s*(?:(?:[-*_]\s*){3,}|\|?(?:\s*:?-+:?\s*\|)+\s*:?-*:?\s*)$")  # ---, |--|--|
_REFERENCE = re.compile(r"^\s{0,3}\[([^\]^][^\]]*)\]:\s*\S+")  # [1]: https://…
_NOTE_TEXT = re.compile(r"^\s{0,3}\[\^[^\]]+\]:\s*")  # [^1]: the note's text
_MDX = re.compile(r"^(?:import\s+(?:.+\s+from\s+)?['\"][^'\"]+['\"]"  # MDX: import X from 'y';
                  r"|export\s+(?:const|let|default|function)\b.*);?\s*$")
_BLOCK = re.compile(  # the line that opens or closes a box or tab; group 1 its type, 2 its title
    r"^\s*(?:(?:!!!|\?\?\?\+?)\s+([a-z][\w-]*)(?:\s+inline(?:\s+end)?)?(?:\s+\"([^\"]*)\")?"
    r"|===\+?\s+\"()([^\"]*)\""  # MkDocs !!! note "T", ??? note, tab === "Tab"
    r"|:{3,}\s*([\w-]*)(?:\s*\[?(.+?)\]?)?"  # Docusaurus :::tip T, :::tip[T], :::
    r"|/{3,}\s*([\w-]*)(?:\s*\|\s*(.*))?)\s*$")  # pymdownx blocks /// note | T, ////
_ATTR = r"(?:[#.][\w-]+|[\w-]+(?:=(?:\"[^\"]*\"|'[^']*'|[^\s}]+))?)"
_ATTRS = re.compile(rf"\{{(:?)(\s*)({_ATTR}(?:\s+{_ATTR})*)\s*\}}$")  # ## T { #id .c k=v }
_ID = re.compile(r"(?:^|\s)(?:#|id=[\"']?)([\w-]+)")


def markdown_to_text(source: str) -> str:
    """Plain text of Markdown; code blocks keep their lines, fences go."""
    return markdown_text(source)[0]


def markdown_text(source: str) -> tuple[str, tuple[tuple[int, int, str, str], ...]]:
    """(plain text, its headings) of Markdown: the words a reader sees, one clean line per
    paragraph line, heading, list item or code line (code blocks and code spans keep their
    characters; fences, rules, link targets, reference definitions, MDX imports, Hugo
    shortcodes and the marks of boxes and tabs go, their titles stay); each `#`–`####` or
    underlined (`===`, `---`) heading outside code blocks as (offset in the text, level,
    text, anchor): its attribute list's `{#id}`, else the anchor GitHub gives it."""
    page = _Plain(source)
    for line in source.splitlines():
        page.read(line)
    return "\n".join(page.lines), tuple(page.headings)


class _Plain:
    """The plain text of a Markdown page as its lines are read, with its headings."""

    def __init__(self, source: str):
        self.lines: list[str] = []
        self.headings: list[tuple[int, int, str, str]] = []
        self.offset, self.code, self.paragraph = 0, False, False
        self.seen: dict[str, int] = {}  # anchors given, for GitHub's -1, -2
        self.defined = {m.group(1).lower() for m in map(_REFERENCE.match, source.splitlines())
                        if m}  # [text]: URL

    def read(self, line: str) -> None:
        if FENCE.match(line):
            self.code, self.paragraph = not self.code, False
        elif self.code:
            self._keep(plain_text(line))
        elif (underline := _SETEXT.match(line)) and self.paragraph:
            self._underlined(1 if underline.group(1)[0] == "=" else 2)
        elif _RULE.match(line) or _REFERENCE.match(line) or _MDX.match(line):
            self.paragraph = False
        else:
            self._markdown(line)

    def _markdown(self, line: str) -> None:
        """A line outside code: a heading, a box or tab's title, or a line of text."""
        heading, block = _ATX.match(line), _BLOCK.match(line)
        raw, anchor = _attributes(heading.group(2).rstrip("#")) if heading else (line, "")
        text = plain_text(_block(block) if block else _inline(raw, self.defined))
        self.paragraph = bool(text) and not (heading or block or _LIST.match(raw)
                                             or _QUOTE.match(raw) or raw.lstrip().startswith("|"))
        if text and heading and len(heading.group(1)) <= 4:
            self._heading(self.offset, len(heading.group(1)), text, anchor)
        self._keep(text)

    def _underlined(self, level: int) -> None:
        """The paragraph line above an `===` or `---` line is a heading."""
        at = self.offset - len(self.lines[-1]) - 1
        text, anchor = _attributes(self.lines[-1])
        self.lines[-1], self.offset = text, at + len(text) + 1
        self._heading(at, level, text, anchor)
        self.paragraph = False

    def _heading(self, at: int, level: int, text: str, anchor: str) -> None:
        self.headings.append((at, level, text, _unique(anchor or slug(text), self.seen)))

    def _keep(self, text: str) -> None:
        if not text:
            self.paragraph = False
            return
        self.lines.append(text)
        self.offset += len(text) + 1


def _inline(line: str, defined: set[str] = frozenset()) -> str:
    """A line without its block marks (heading, quote, callout, list) and inline marks
    (images, links and wikilinks as their text, embeds, footnote marks, emphasis, tags,
    shortcodes), entities decoded; a code span keeps its characters, without its ticks."""
    spans: list[str] = []

    def keep(match: re.Match) -> str:
        spans.append(match.group(2).strip() or match.group(2))
        return f"\x00{len(spans) - 1}\x00"

    line = _LIST.sub("", _QUOTE.sub("", _HEADING.sub("", line.replace("\x00", ""))))
    line = _CODE_SPAN.sub(keep, line)  # each span a \x00N\x00 until the end
    line = _CALLOUT.sub(lambda m: "" if line[m.end():].strip() else m.group(1).capitalize(),
                        line)
    line = _WIKI.sub(_wikilink, _SHORTCODE.sub("", _NOTE_TEXT.sub("", line)))
    line = _REF_IMAGE.sub(r"\1", _IMAGE.sub(r"\1", _FOOTNOTE.sub("", line)))
    line = _shortcuts(line, defined, "!")  # images first: a link may hold one
    line = _shortcuts(_REF_LINK.sub(r"\1", _LINK.sub(r"\1", line)), defined, "")
    line = _UNDERSCORE.sub(r"\1", _EMPHASIS.sub("", line))
    line = unescape(TAG.sub("", without_spans(_AUTOLINK.sub(r"\1", line), COMMENT, "-->")))
    return re.sub("\x00([0-9]+)\x00", lambda m: spans[int(m.group(1))], line)


def _shortcuts(line: str, defined: set[str], mark: str) -> str:
    """`line` with each `[text]` (`![alt]`: mark "!") that a `[text]: URL` defines as its
    text; other brackets stay."""
    if not defined:
        return line
    return _SHORTCUT.sub(lambda m: m.group(2) if m.group(1) == mark and m.group(2).lower()
                         in defined else m.group(0), line)


def _wikilink(match: re.Match) -> str:
    """What Obsidian shows for [[page#heading|alias]]: the alias, else `page > heading`; an
    embed ![[file]] shows the file, not its name."""
    if match.group(1):
        return ""
    if match.group(3) is not None:
        return match.group(3)
    return " > ".join(part for part in match.group(2).split("#") if part)


def _block(match: re.Match) -> str:
    """The title a reader sees on a box or tab (its type when it has none), or nothing."""
    kind = next((g for g in match.groups()[::2] if g is not None), "")
    title = next((g for g in match.groups()[1::2] if g is not None), None)
    if title is not None:
        return _inline(title)
    return kind.capitalize() if kind and kind != "tab" else ""


def _attributes(text: str) -> tuple[str, str]:
    """(heading text, the id of its attribute list) of `Título { #id .class key=v }`
    (MkDocs attr_list, Docusaurus `{#id}`); a heading such as `GET /users/{id}` is kept."""
    match = _ATTRS.search(text)
    if not match:
        return text, ""
    attrs = match.group(3)
    if not (match.group(1) or match.group(2) or any(c in attrs for c in "#.=")):
        return text, ""
    found = _ID.search(attrs)
    return text[:match.start()].rstrip(), found.group(1) if found else ""


def _unique(anchor: str, seen: dict[str, int]) -> str:
    """GitHub's anchor of a heading seen before in the page: `usage-1`, `usage-2`…"""
    if anchor not in seen:
        seen[anchor] = 0
        return anchor
    seen[anchor] += 1
    return _unique(f"{anchor}-{seen[anchor]}", seen)


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
    """The anchor GitHub gives a heading: lowercased, punctuation dropped, each space a hyphen
    (`C++ & Go` is `c--go`); accents stay (`configuração-inicial`)."""
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text.lower()).strip())


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
