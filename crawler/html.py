"""HTML to clean text: the main content of a page as normalised lines, plus its links.

The same extraction serves WordPress `content.rendered`, feed `content:encoded`, a fetched
article page and `busca add page.html`, so one article gives one text whatever the source.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
import warnings
from dataclasses import dataclass
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from bs4 import BeautifulSoup, NavigableString, Tag, XMLParsedAsHTMLWarning

from .exported import export_body, export_title
from .pagemeta import page_meta
from .store import one_line

# A start URL that is a sitemap or a feed served without an XML type is read as HTML first
# (to find its links and kind); bs4's multi-line warning about that reached busca's stderr.
warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning, module=__name__)

# Never text: dropped with everything inside.
DROP_TAGS = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object",
             "embed", "video", "audio", "map", "img", "picture", "figure", "form", "button",
             "select", "textarea", "input", "nav", "aside", "dialog")
# Page chrome inside the chosen container: dropped after the title was read.
CHROME_TAGS = ("header", "footer")
CHROME_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search")
HEADING_TAGS = ("h1", "h2", "h3", "h4")
# what a heading's permalink shows (Sphinx and MkDocs "¶", Docusaurus' zero-width "#", "§",
# an icon): a link of these to "#id" inside a heading is its anchor, not its text
PERMALINK_MARKS = ("", "¶", "#", "§", "🔗", "⚓", "link", "permalink")
# Elements that start and end a line.
BLOCK_TAGS = frozenset(
    "address article blockquote caption dd details div dl dt fieldset figcaption h1 h2 h3 h4"
    " h5 h6 hr li main ol p pre section summary table tbody td tfoot th thead tr ul".split())

_TAG_LIKE = re.compile(r"<[a-zA-Z!/]")
# markup left in a text field (Markdown, wikitext): a tag stops at the next "<" or ">", and a
# comment is cut by a scan (`without_spans`) — a page of 50,000 unclosed ones is read once
TAG = re.compile(r"</?[A-Za-z][^<>]*>")
COMMENT = re.compile("<!--")  # to "-->"
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.I)


@dataclass(frozen=True)
class HtmlPage:
    """What a crawler needs from one HTML page."""

    title: str
    text: str
    links: tuple[str, ...] = ()
    is_listing: bool = False
    noindex: bool = False
    canonical: str | None = None
    feeds: tuple[str, ...] = ()
    api_root: str | None = None
    modified: str | None = None
    meta: dict | None = None  # what the page states about itself (pagemeta.py)
    headings: tuple[tuple[int, int, str, str], ...] = ()  # (offset in text, level, text, id)
    landmark: bool = True  # the text came from <article>, <main> or [role=main], not <body>


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML document or fragment; text lines are blocks of the page."""
    page = extract_page(html)
    return page.title, page.text


def extract_page(html: str, url: str = "", *, take_title: bool = True) -> HtmlPage:
    """Parse a page once: main text, title, same-document metadata and outgoing links.

    With take_title, the page's first <h1> (or og:title, or <title>) becomes the title and
    leaves the text; without it (an article body alone) every heading stays in the text.
    """
    soup = BeautifulSoup(html, "html.parser")
    base = _base_url(soup, url)
    robots = _robots_meta(soup)  # "nofollow" (or "none"): the page's links are not followed
    links = tuple(_links(soup, base)) if url and not robots & {"nofollow", "none"} else ()
    heads = _head_info(soup, base)
    info = page_meta(soup) or None
    for tag in soup.find_all(DROP_TAGS):
        tag.decompose()
    _permalinks_to_anchors(soup)
    articles = _main_articles(soup.find_all("article"))
    container = _container(soup, articles)
    listing = len(articles) > 1 or (len(articles) == 1 and _is_excerpt(articles[0], url, base))
    title, title_tag = _title(soup, container) if take_title else ("", None)
    if title_tag is not None:
        title_tag.decompose()
    for tag in container.find_all(CHROME_TAGS):
        tag.decompose()
    for tag in container.find_all(attrs={"role": list(CHROME_ROLES)}):
        tag.decompose()
    lines, spans = _lines(container)
    return HtmlPage(title=title, text="\n".join(lines), links=links, is_listing=listing,
                    headings=_headings(spans, lines),
                    landmark=container is not soup.body and container is not soup, meta=info,
                    **heads)


def without_spans(text: str, opening: re.Pattern, closing: str | re.Pattern) -> str:
    """`text` without each span from an `opening` match to the first `closing` (a str, or a
    pattern) after it; an opening without a closing after it ends the search (the text from
    it stays): each part of the text is read once."""
    kept, at = [], 0
    while (start := opening.search(text, at)) is not None:
        end = _end_of(text, closing, start.end())
        if end is None:
            break
        kept.append(text[at:start.start()])
        at = end
    return "".join(kept) + text[at:]


def _end_of(text: str, closing: str | re.Pattern, at: int) -> int | None:
    """The end of the first `closing` in `text` from `at`, or None."""
    if isinstance(closing, str):
        found = text.find(closing, at)
        return None if found < 0 else found + len(closing)
    match = closing.search(text, at)
    return None if match is None else match.end()


def plain_text(text: str) -> str:
    """Plain text normalised like extracted HTML: one stripped, space-collapsed line per line."""
    return "\n".join(filter(None, (one_line(line) for line in text.splitlines())))


def body_text(value: str) -> str:
    """Clean text of a field that may hold HTML or plain text (feeds, JSON APIs)."""
    return body(value)[0]


def body(value: str) -> tuple[str, tuple[tuple[int, int, str, str], ...]]:
    """(clean text, its h1–h4 headings as (offset, level, text, id)) of an HTML or text field."""
    if not _TAG_LIKE.search(value):
        return plain_text(value), ()
    page = extract_page(value, take_title=False)
    return page.text, page.headings


def headings_meta(headings) -> dict:
    """The metadata entry of a text's headings (none: an empty dict)."""
    return {"headings": [list(h) for h in headings]} if headings else {}


def title_text(value: str) -> str:
    """A title field (HTML entities and tags allowed) as one clean line."""
    return one_line(extract_page(f"<p>{value}</p>", take_title=False).text.replace("\n", " "))


def join_url(base: str, href: str) -> str | None:
    """`href` resolved against `base`, or None when it is not a valid URL (bad host or port)."""
    try:
        url = urljoin(base, href)
        urlsplit(url).port  # raises on a port out of range
    except ValueError:
        return None
    return url


def decode_html(body: bytes, content_type: str | None) -> str:
    """Text of an HTML body: charset from a byte-order mark, else from the header, else from
    <meta>, else UTF-8 (the WHATWG order: a BOM wins over what the header says). A byte that
    is no UTF-8, where UTF-8 is read, is read as cp1252: a page in Latin-1 that is undeclared
    or declared UTF-8 (an old PHP site's), wholly or in part, keeps its accents ("matrícula",
    not "matr\ufffdcula")."""
    for mark, codec in _BOMS:
        if body.startswith(mark):
            return body[len(mark):].decode(codec, errors="replace")
    for charset in (_header_charset(content_type), _meta_charset(body)):
        if charset:
            try:
                codec = _codec(charset)
            except LookupError:
                continue
            return body.decode(codec, errors=_CP1252 if codec == "utf-8" else "replace")
    return body.decode("utf-8", errors=_CP1252)


def _as_cp1252(error: UnicodeDecodeError) -> tuple[str, int]:
    """The bytes UTF-8 could not read, read as cp1252 (its five unassigned bytes: U+FFFD)."""
    return error.object[error.start:error.end].decode("cp1252", errors="replace"), error.end


_CP1252 = "busca.cp1252"
codecs.register_error(_CP1252, _as_cp1252)


_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))


def _header_charset(content_type: str | None) -> str | None:
    match = re.search(r"charset\s*=\s*[\"']?([\w.:-]+)", content_type or "", re.I)
    return match.group(1) if match else None


def _meta_charset(body: bytes) -> str | None:
    match = _META_CHARSET.search(body[:4096])
    return match.group(1).decode("ascii", "replace") if match else None


def _codec(charset: str) -> str:
    name = codecs.lookup(charset).name
    # Browsers read "latin-1" as windows-1252 (WHATWG encoding standard).
    return "cp1252" if name in ("latin-1", "iso8859-1", "ascii") else name


def _main_articles(articles: list[Tag]) -> list[Tag]:
    """The page's article when only one of several holds an <h1> (others: comments, related)."""
    if len(articles) > 1:
        headed = [a for a in articles if a.find("h1") is not None]
        if len(headed) == 1:
            return headed
    return articles


def _container(soup: BeautifulSoup, articles: list[Tag]) -> Tag:
    if len(articles) == 1:
        return articles[0]
    return (soup.find("main") or soup.find(attrs={"role": "main"}) or export_body(soup)
            or soup.body or soup)


def _title(soup: BeautifulSoup, container: Tag) -> tuple[str, Tag | None]:
    if (exported := export_title(soup)) is not None:  # Confluence's, Word's, Google Docs'
        return exported
    h1 = container.find("h1")
    if h1 is not None and one_line(h1.get_text(" ")):
        return one_line(h1.get_text(" ")), h1
    og = soup.find("meta", attrs={"property": "og:title"})
    if og is not None and one_line(og.get("content", "")):
        return one_line(og["content"]), None
    title = soup.find("title")
    return (one_line(title.get_text(" ")) if title is not None else ""), None


def _is_excerpt(article: Tag, url: str, base: str) -> bool:
    """An archive with one post: the article's heading links to another page."""
    heading = article.find(["h1", "h2", "h3"])
    link = heading.find("a", href=True) if heading is not None else None
    if link is None or not url:
        return False
    target = join_url(base, link["href"])
    return target is not None and urldefrag(target).url.rstrip("/") != url.rstrip("/")


def _lines(container: Tag) -> tuple[list[str], list[tuple[Tag, int, int]]]:
    """Text lines in document order (block elements and <br> end lines), and the lines each
    h1–h4 gave: (tag, its first line, the line after its last), noted as they are read."""
    lines: list[str] = []
    buffer: list[str] = []
    spans: list[tuple[Tag, int, int]] = []
    stack: list = [(iter(container.children), True, None)]
    while stack:
        node = next(stack[-1][0], None)
        if node is None:
            _, block, heading = stack.pop()
            if block:
                _flush(buffer, lines)
            if heading is not None and len(lines) > heading[1]:
                spans.append((*heading, len(lines)))
            continue
        if type(node) is NavigableString:
            buffer.append(str(node))
        elif isinstance(node, Tag):
            if node.name == "br":
                _flush(buffer, lines)
            elif node.name == "pre":
                _flush(buffer, lines)
                lines.extend(filter(None, map(one_line, node.get_text().splitlines())))
            elif node.name in BLOCK_TAGS:
                _flush(buffer, lines)
                heading = (node, len(lines)) if node.name in HEADING_TAGS else None
                stack.append((iter(node.children), True, heading))
            else:
                stack.append((iter(node.children), False, None))
    _flush(buffer, lines)
    return [unicodedata.normalize("NFC", line) for line in lines], spans


def _headings(spans: list[tuple[Tag, int, int]],
              lines: list[str]) -> tuple[tuple[int, int, str, str], ...]:
    """Where each h1–h4 left in the text starts, in order, with its level, its text (its
    lines as the text has them: a permalink "¶" or an <em> inside a word reads as there)
    and anchor id; taken where `_lines` read it, not searched for (a page of thousands of
    headings is read once)."""
    offsets, total = [], 0
    for line in lines:
        offsets.append(total)
        total += len(line) + 1
    found = []
    for tag, first, end in sorted(spans, key=lambda span: span[1]):
        anchor = tag.get("id") or next((a.get("id") or a.get("name") for a in
                                        tag.find_all("a") if a.get("id") or a.get("name")), "")
        found.append((offsets[first], int(tag.name[1]), " ".join(lines[first:end]),
                      anchor or ""))
    return tuple(found)


def _permalinks_to_anchors(soup: BeautifulSoup) -> None:
    """A heading's permalink (`<a class="headerlink" href="#id">¶</a>`: Sphinx, MkDocs,
    Docusaurus) left out of its text, its `#id` the heading's anchor when the heading has
    none of its own (Sphinx puts the id on the enclosing <section>): "Instalação¶" was the
    heading and the title, and its citation had no anchor."""
    for heading in soup.find_all(HEADING_TAGS):
        for link in heading.find_all("a", href=True):
            target = link["href"]
            shown = one_line(link.get_text()).lower()
            if not target.startswith("#") or len(target) < 2 or shown not in PERMALINK_MARKS:
                continue
            if not heading.get("id"):
                heading["id"] = unquote(target[1:])
            link.decompose()


def _flush(buffer: list[str], lines: list[str]) -> None:
    line = one_line("".join(buffer))
    buffer.clear()
    if line:
        lines.append(line)


def _base_url(soup: BeautifulSoup, url: str) -> str:
    base = soup.find("base", href=True)
    joined = join_url(url, base["href"]) if base is not None and url else None
    return joined or url


def _links(soup: BeautifulSoup, base: str):
    seen = set()
    for a in soup.find_all("a", href=True):
        if "nofollow" in (a.get("rel") or []):
            continue
        href = join_url(base, a["href"].strip())
        href = urldefrag(href).url if href else None
        if href and href not in seen:
            seen.add(href)
            yield href


def _robots_meta(soup: BeautifulSoup) -> set[str]:
    """The directives of the page's robots meta tags, lower case ("noindex", "nofollow")."""
    return {word.lower() for tag in soup.find_all(
        "meta", attrs={"name": re.compile("^robots$", re.I)})
        for word in re.split(r"[\s,]+", tag.get("content", "")) if word}


def _head_info(soup: BeautifulSoup, base: str) -> dict:
    canonical = soup.find("link", rel="canonical", href=True)
    api = soup.find("link", rel="https://api.w.org/", href=True)
    modified = soup.find("meta", attrs={"property": "article:modified_time"})
    feeds = [join_url(base, link["href"]) for link in soup.find_all("link", href=True)
             if "alternate" in (link.get("rel") or [])
             and link.get("type") in ("application/rss+xml", "application/atom+xml")]
    return {
        "noindex": bool(_robots_meta(soup) & {"noindex", "none"}),
        "canonical": join_url(base, canonical["href"]) if canonical is not None else None,
        "feeds": tuple(dict.fromkeys(filter(None, feeds))),
        "api_root": join_url(base, api["href"]) if api is not None else None,
        "modified": modified.get("content") if modified is not None else None,
    }
