"""llms-full.txt (Docusaurus plugins, GitBook, Mintlify): the whole documentation as one
Markdown file, a `# Title` line (and Mintlify's `Source: URL`) opening each page."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..found import Discovery, Start
from ..html import title_text
from ..markdown import markdown_to_text, top_sections
from ..options import Context
from ..errors import FetchError
from ..store import Document
from .common import missing, read_whole

GENERATORS = ("docusaurus", "gitbook", "mintlify")
# Each stops at the next bracket, blank line or marker of its kind: a crafted llms-full.txt
# (100,000 blank lines, a heading of "[" or "*a ") made them read to the end from each start.
_SOURCE = re.compile(r"^[ \t]*Source:[ \t]*(https?://\S+)[ \t]*$", re.M)
_LINK = re.compile(r"!?\[([^][]*)\]\([^()]*\)")
_CODE = re.compile(r"`+([^`]*)`+")
_EMPHASIS = re.compile(r"(?<!\w)(\*\*|\*|__|_)(?=\S)(.{1,200}?)(?<=\S)\1(?!\w)")  # 200: a title's span


def detect(start: Start) -> Discovery | None:
    """A documentation generator that publishes llms.txt, and an /llms.txt that answers."""
    named = any(g in start.generator() for g in GENERATORS) or "/llms.txt" in start.html
    if not (named or start.strict):
        return None
    try:
        response = start.fetcher.get(start.origin + "/llms.txt")
    except FetchError:
        response = None
    if response is not None and response.status == 200 and response.body.lstrip()[:1] == b"#":
        return Discovery("llms", start.url, "/llms.txt answers; reading /llms-full.txt",
                         api_root=start.origin + "/llms-full.txt")
    return missing(start, "no /llms.txt")


def read(ctx: Context, found: Discovery) -> Iterator:
    return read_whole(ctx, found.api_root, "llms", parse_full)


def parse_full(body: bytes, url: str) -> list[Document]:
    """One document per `# ` section (headings inside code blocks do not count); sections
    of one title get distinct URLs (`#title`, `#title-2`)."""
    documents, seen = [], set()
    for heading, section in top_sections(body.decode("utf-8-sig", errors="replace")):
        title = _title(heading)
        source = _SOURCE.search(section)
        if source:
            page = source.group(1)
            section = section[:source.start()] + section[source.end():]
        else:
            page = _unique(f"{url}#{_slug(title) or 'section'}", seen)
        text = markdown_to_text(section)
        if text and page not in seen:
            seen.add(page)
            documents.append(Document(page, title, text, "llms"))
    return documents


def _title(heading: str) -> str:
    """A heading's words without Markdown or HTML markup."""
    parts = _CODE.split(heading)  # odd parts: code spans, kept as they are
    for i in range(0, len(parts), 2):
        parts[i] = _EMPHASIS.sub(r"\2", _LINK.sub(r"\1", parts[i]))
    return title_text("".join(parts))


def _unique(page: str, seen: set[str]) -> str:
    """`page`, or `page-2`, `page-3`… when an earlier section took it."""
    number, candidate = 1, page
    while candidate in seen:
        number += 1
        candidate = f"{page}-{number}"
    return candidate


def _slug(title: str) -> str:
    return re.sub(r"[^\w]+", "-", title.lower()).strip("-")
