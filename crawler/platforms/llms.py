"""llms-full.txt (Docusaurus plugins, GitBook, Mintlify): the whole documentation as one
Markdown file, a `# Title` line (and Mintlify's `Source: URL`) opening each page."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..found import Discovery, Start
from ..markdown import markdown_to_text, top_sections
from ..options import Context
from ..errors import FetchError
from ..store import Document
from .common import missing, read_whole

GENERATORS = ("docusaurus", "gitbook", "mintlify")
_SOURCE = re.compile(r"^\s*Source:\s*(https?://\S+)\s*$", re.M)


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
    """One document per `# ` section (headings inside code blocks do not count)."""
    documents, seen = [], set()
    for title, section in top_sections(body.decode("utf-8-sig", errors="replace")):
        source = _SOURCE.search(section)
        page = source.group(1) if source else f"{url}#{_slug(title)}"
        if source:
            section = section[:source.start()] + section[source.end():]
        text = markdown_to_text(section)
        if text and page not in seen:
            seen.add(page)
            documents.append(Document(page, title, text, "llms"))
    return documents


def _slug(title: str) -> str:
    return re.sub(r"[^\w]+", "-", title.lower()).strip("-")
