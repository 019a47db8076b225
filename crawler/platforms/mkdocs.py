"""MkDocs (Material too): the whole site in `search/search_index.json`, one entry per page and
per heading; `location` is relative to the site root (not to /search/)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from urllib.parse import urljoin

from ..errors import CrawlStopped
from ..found import Discovery, Start
from ..html import body_text, title_text
from ..options import Context
from ..store import Document
from .common import missing, probe_json, read_whole

INDEX = "search/search_index.json"
# the tag to the next one, its first id kept (see found._GENERATOR); its end found once after
# it (a lazy `.*?</script>` read a page of unclosed tags to its end from each one)
_CONFIG = re.compile(r"""<script(?>[^<>]+?id=["']__config["'])[^<>]*>""", re.I)
_SCRIPT_END = re.compile("</script>", re.I)
_BASE_URL = re.compile(r"""\bbase_url\s*=\s*["']([^"']*)["']""")


def detect(start: Start) -> Discovery | None:
    """A generator naming mkdocs; the site root from Material's __config or `base_url`."""
    if not ("mkdocs" in start.generator() or start.strict):
        return None
    root = _root(start)
    if "mkdocs" in start.generator():
        return Discovery("mkdocs", start.url, f"generator MkDocs, site root {root}",
                         api_root=root + INDEX)
    for candidate in dict.fromkeys((root, start.origin + "/")):
        if probe_json(start, candidate + INDEX, "docs"):
            return Discovery("mkdocs", start.url, f"{candidate}{INDEX} answers",
                             api_root=candidate + INDEX)
    return missing(start, f"no MkDocs search index ({root}{INDEX} does not answer)")


def _root(start: Start) -> str:
    """The site root the page names (its base is relative to the page itself)."""
    base = None
    config = _CONFIG.search(start.html)
    end = config and _SCRIPT_END.search(start.html, config.end())
    if end:
        try:
            base = json.loads(start.html[config.end():end.start()]).get("base")
        except (ValueError, AttributeError):
            base = None
    if base is None and (match := _BASE_URL.search(start.html)):
        base = match.group(1)
    root = urljoin(start.url, (base or ".").rstrip("/") + "/")
    return root


def read(ctx: Context, found: Discovery) -> Iterator:
    return read_whole(ctx, found.api_root, "mkdocs", parse_index)


def parse_index(body: bytes, url: str) -> list[Document]:
    """One document per page of a search index: its own text, then each section's heading
    and text (older MkDocs repeats the sections inside the page entry: then it alone)."""
    data = _load(body, url)
    root = url[: -len(INDEX)] if url.endswith(INDEX) else urljoin(url, "../")
    config = data.get("config")
    language = (config.get("lang") if isinstance(config, dict) else None) or []
    pages: dict[str, dict] = {}
    for entry in data["docs"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("location"), str):
            continue
        path, _, anchor = entry["location"].partition("#")
        page = pages.setdefault(path, {"title": "", "text": "", "sections": []})
        text = body_text(_field(entry, "text"))
        if anchor:
            page["sections"].append((anchor, title_text(_field(entry, "title")), text))
        else:
            page["title"], page["text"] = title_text(_field(entry, "title")), text
    return [doc for path, page in pages.items()
            if (doc := _document(urljoin(root, path), page, language))]


def _load(body: bytes, url: str) -> dict:
    """The index as JSON (UTF-8, else Latin-1); CrawlStopped naming what is wrong with it."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = body.decode("latin-1")
    try:
        data = json.loads(text)
    except ValueError as e:
        what = "an HTML page" if text.lstrip()[:1] == "<" else f"malformed JSON ({e})"
        raise CrawlStopped(f"the MkDocs search index {url} is {what}, not the index;"
                           " try --source sitemap") from None
    if not isinstance(data, dict) or not isinstance(data.get("docs"), list):
        raise CrawlStopped(f"the MkDocs search index {url} has no 'docs' list;"
                           " try --source sitemap")
    return data


def _field(entry: dict, key: str) -> str:
    """A text field of an index entry (a number as its digits; anything else as "")."""
    value = entry.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) else ""


def _document(url: str, page: dict, language: list) -> Document | None:
    text, headings = page["text"], []
    whole = page["text"]
    for anchor, heading, body in page["sections"]:
        if body and body in whole:  # older MkDocs: the page entry has every section already
            continue
        headings.append([len(text) + 1 if text else 0, 2, heading, anchor])
        text = "\n".join(filter(None, (text, heading, body)))
    if not text:
        return None
    meta = {"sections": [[a, h] for a, h, _ in page["sections"]]} if page["sections"] else {}
    if headings:
        meta["headings"] = headings
    if language:
        meta["language"] = str(language[0] if isinstance(language, list) else language)
    return Document(url, page["title"], text, "mkdocs", meta=meta or None)
