"""Patterns busca applies to what a site sends (robots.txt rules, the start page's tags, a Link
header, a PDF's lines, WordPress shortcodes and error words): one crafted answer of 50,000 to
100,000 characters made a regular expression read it again from each start (seconds to
minutes), or try every split of a URL (a robots.txt rule of many `*`: hours)."""

import subprocess
import sys
from pathlib import Path

import pytest

from busca.crawler.discover import _API_REL
from busca.crawler.found import Start
from busca.crawler.http import Response
from busca.crawler.pdf import _joined_words
from busca.crawler.platforms import mkdocs, zendesk
from busca.crawler.platforms.mediawiki import _EDIT_URI
from busca.crawler.robots import Robots
from busca.crawler.wordpress import without_shortcodes
from busca.crawler.wordpress_pages import _BETWEEN

N = 100_000
PAGES = {  # each with its end missing: the pattern fails from every start
    "meta tags": "<meta " * (N // 6), "generator names": '<meta name="generator" ' * (N // 23),
    "one tag of names": "<meta " + 'name="generator" ' * (N // 17),
    "contents": '<meta content="x" ' * (N // 18),
    "one tag of contents": "<meta " + 'content="x" ' * (N // 12),
    "links": '<link rel="EditURI" ' * (N // 20), "html tags": "<html " * (N // 6),
    "scripts": "<script " * (N // 8), "configs": '<script id="__config">' * (N // 22),
}
CHECK = """
import sys
sys.path.insert(0, sys.argv[1])
from test_crawler_untrusted_patterns import PAGES, N, start
from busca.crawler.discover import _API_REL
from busca.crawler.pdf import _joined_words
from busca.crawler.platforms import mkdocs, zendesk
from busca.crawler.platforms.mediawiki import _EDIT_URI
from busca.crawler.robots import Robots
from busca.crawler.wordpress import without_shortcodes
from busca.crawler.wordpress_pages import _BETWEEN
for page in PAGES.values():
    s = start(page)
    s.generator(), _EDIT_URI.search(page), zendesk._locale(s), mkdocs._root(s)
assert Robots("User-agent: *\\nDisallow: /" + "*a" * 30 + "*b").allowed("/" + "a" * 60, "b")
Robots("User-agent: *\\nDisallow: /*a*a*a*b").allowed("/" + "a" * N, "b")
_API_REL.search("<" * 65_000), _API_REL.search("<a>;" * 16_000)
_joined_words([["a" * N, "b"], ["a" * N + "1"]])
without_shortcodes("[/a]" + "[a " * (N // 3))
without_shortcodes("".join(f"[/a{i}]" for i in range(N // 8)))
_BETWEEN.search("between 1 " + " " * N)
print("done")
"""


def start(html: str, url: str = "https://example.org/") -> Start:
    return Start(Response(url, 200, {}, html.encode()), None, html, None, ("posts",), False)


def test_a_crafted_answer_is_read_in_one_pass():
    """Everything above in a fresh interpreter: about a second now; before, the robots rules
    alone ran for hours and each page took 3 to 30 s or more."""
    done = subprocess.run([sys.executable, "-c", CHECK, str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr


@pytest.mark.parametrize("rule, path, allowed", [
    ("/*a*b", "/xaxb", False), ("/*a*b$", "/xaxbx", True), ("/*a*b$", "/xaxbxb", False),
    ("/*.pdf$", "/a.pdf.pdf", False), ("/a*", "/b", True), ("/a*b*", "/ab", False),
])
def test_robots_wildcards_still_match(rule, path, allowed):
    assert Robots(f"User-agent: *\nDisallow: {rule}\n").allowed(path, "busca") is allowed


def test_the_start_page_tags_still_read():
    head = ('<html class="x" lang="pt-BR"><head><meta content="Ghost 5.0" name="generator">'
            '<link rel="EditURI" type="application/rsd+xml" href="https://w.org/w/api.php?a=rsd">'
            '<script id="__config" type="application/json">{"base": "../.."}</script>')
    page = start(head, "https://example.org/a/b/c")
    assert page.generator() == "ghost 5.0"
    assert start('<meta name="generator" content="MkDocs 1.5">').generator() == "mkdocs 1.5"
    assert _EDIT_URI.search(head).group(1) == "https://w.org/w/api.php"
    assert zendesk._locale(page) == "pt-br"
    assert mkdocs._root(page) == "https://example.org/"
    assert mkdocs._root(start('<script id="__config">{"base": ".."}')) == "https://example.org/"


def test_link_header_pdf_lines_and_wordpress_words_still_read():
    link = '<https://x.org/?p=1>; rel=shortlink, <https://x.org/wp-json/>; rel="https://api.w.org/"'
    assert _API_REL.search(link).group(1) == "https://x.org/wp-json/"
    assert _joined_words([["a informa-"], ["ção, que"]]) == [["a informação,"], ["que"]]
    words = "per_page must be between 1 (inclusive) and 100 (inclusive)"
    assert _BETWEEN.search(words).group(1) == "100"
    page = '[caption id="a"]Legenda[/caption] [b x] [gallery ids="1"] [sic] [/b] [a'
    assert without_shortcodes(page) == "Legenda [sic] [a"
