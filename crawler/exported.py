"""Pages that an editor exported as HTML, whose body and title html.py finds by their marks:
a Confluence space's export (Space → Export → HTML), a Word document saved as "Web page" and
a Google Doc downloaded as HTML. None of them has an <article> or <main>."""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Tag

from .store import one_line

# Word's Title style ("MsoTitleCxSpFirst" when it spans paragraphs); Google Docs' "title"
_WORD_TITLE = re.compile(r"^MsoTitle")


def export_body(soup: BeautifulSoup) -> Tag | None:
    """A Confluence export page's body, `div#main-content.wiki-content` (not its breadcrumbs,
    "Created by … last modified on …" line, attachments list and footer), or None."""
    body = soup.find("div", id="main-content", class_="wiki-content")
    return body if body is not None and soup.find(id="title-text") is not None else None


def export_title(soup: BeautifulSoup) -> tuple[str, Tag] | None:
    """(title, its element) of an exported page, or None: a Confluence page's `#title-text`
    without its space's name ("Engineering : API" is "API", the space being the first
    breadcrumb), or the paragraph in the Title style of a page Word made or a Google Doc."""
    heading = soup.find(id="title-text")
    if heading is not None and export_body(soup) is not None:
        title = one_line(heading.get_text(" "))
        crumb = soup.select_one("#breadcrumbs li")
        space = one_line(crumb.get_text(" ")) if crumb is not None else ""
        if space and title.startswith(f"{space} : "):
            title = title[len(space) + 3:].strip()
        return (title, soup.find(id="title-heading") or heading) if title else None
    styled = None
    generator = soup.find("meta", attrs={"name": re.compile("^generator$", re.I)})
    if generator is not None and "Microsoft Word" in generator.get("content", ""):
        styled = soup.find("p", class_=_WORD_TITLE)  # (not Word's marks pasted in a post)
    elif "doc-content" in ((soup.body and soup.body.get("class")) or ()):
        styled = soup.body.find("p", class_="title")
    if styled is not None and one_line(styled.get_text(" ")):
        return one_line(styled.get_text(" ")), styled
    return None
