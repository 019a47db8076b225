"""Metadata an article's HTML page states about itself: Open Graph's `article:section`,
`article:tag`, `article:published_time`, the `author` meta tag, `<html lang>`, and the links
WordPress themes mark `rel="category tag"` / `rel="tag"` inside the one article of the page
(`the_category()`, `the_tags()`)."""

from __future__ import annotations

from bs4 import BeautifulSoup


def page_meta(soup: BeautifulSoup) -> dict:
    """{section, tags, categories, published, authors, language}: what the page says."""
    meta = {"section": _property(soup, "article:section"),
            "tags": _properties(soup, "article:tag"),
            "published": _property(soup, "article:published_time"),
            "authors": [a] if (a := _named(soup, "author")) else [],
            "language": (soup.html.get("lang") or "").strip() if soup.html else ""}
    categories, tags = _rel_links(soup)
    meta["categories"] = categories
    meta["tags"] = list(dict.fromkeys([*meta["tags"], *tags]))
    return {k: v for k, v in meta.items() if v}


def _property(soup: BeautifulSoup, name: str) -> str:
    tag = soup.find("meta", attrs={"property": name, "content": True})
    return " ".join(tag["content"].split()) if tag is not None else ""


def _properties(soup: BeautifulSoup, name: str) -> list[str]:
    found = (" ".join(t["content"].split()) for t in
             soup.find_all("meta", attrs={"property": name, "content": True}))
    return list(dict.fromkeys(v for v in found if v))


def _named(soup: BeautifulSoup, name: str) -> str:
    tag = soup.find("meta", attrs={"name": name, "content": True})
    return " ".join(tag["content"].split()) if tag is not None else ""


def _rel_links(soup: BeautifulSoup) -> tuple[list[str], list[str]]:
    """(categories, tags) linked with rel="category tag" / rel="tag" in the page's only
    <article> (none on a listing page: every excerpt carries its own)."""
    articles = soup.find_all("article")
    if len(articles) != 1:
        return [], []
    categories, tags = [], []
    for link in articles[0].find_all("a", rel=True):
        rel = [r.lower() for r in link.get("rel") or []]
        name = " ".join(link.get_text(" ").split())
        if "tag" in rel and name:
            (categories if "category" in rel else tags).append(name)
    return list(dict.fromkeys(categories)), list(dict.fromkeys(tags))
