"""Markdown and wikitext from a crawled site or an added file are untrusted: a page made of
one construct that never closes (50,000 "[[", "<ref>", "<!--", a line of "=") made the
converters' regular expressions search to the end from every start — seconds to minutes for
one page (a heading's back reference: hours), with the crawl or `busca add` stalled."""

import subprocess
import sys

import pytest

from busca.crawler.markdown import markdown_text
from busca.crawler.wikitext import wikitext_to_text

N = 50_000
PAGES = {
    "brackets": "[" * N, "wikilinks": "[[" * N, "footnotes": "[^" * N, "images": "![" * N,
    "comments": "<!--" * N, "tags": "<a " * N, "underscores": "_a " * N,
    "shortcodes": "{{<" * N, "heading spaces": "# a" + " " * N + "b",
    "references": "<ref>" * N, "reference tags": "<ref" * N, "templates": "{{" * N,
    "nested templates": "{{" * N + "}}" * N, "heading signs": "=" * N + "a",
    "external links": "[http://a " * N, "files": "[[File:" * N, "stars": "*a " * N,
}
CHECK = """
import sys
from busca.crawler.markdown import markdown_text
from busca.crawler.platforms.llms import parse_full
from busca.crawler.wikitext import wikitext_to_text
sys.path.insert(0, sys.argv[1])
from test_crawler_untrusted_markup import PAGES
for page in PAGES.values():
    markdown_text(page)
    wikitext_to_text(page)
    parse_full(("# " + page + "\\ntexto").encode(), "https://d.example/llms-full.txt")
parse_full(("# T" + "\\n" * 100_000 + "x").encode(), "https://d.example/llms-full.txt")
print("done")
"""


def test_a_page_of_unclosed_constructs_is_read_in_one_pass(tmp_path):
    """Each page of PAGES through both converters in a fresh interpreter: well within a
    minute now (about a second in all); before, "heading signs" alone ran for hours."""
    from pathlib import Path

    done = subprocess.run([sys.executable, "-c", CHECK, str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr


@pytest.mark.parametrize("page, text", [
    ("[" * 5 + "[a](u) [[b]]", "[[[[[a b"),  # the closed ones still read
    ("<!-- a <!-- b --> c <!--", "c <!--"),
    ("_a _b_ c_", "_a b c_"),
])
def test_unclosed_markdown_keeps_its_text_and_the_closed_parts_convert(page, text):
    assert markdown_text(page)[0] == text


@pytest.mark.parametrize("page, text", [
    ("a<ref>x</ref>b<ref>y", "aby"),  # a <ref> never closed: only its tag goes, as before
    ("a<ref name=n/>b<ref>never closed<ref name=m/>c", "abnever closedc"),
    ("{{a {{b}} c", "{{a c"), ("x}} {{y}} z", "x}} z"),  # unbalanced braces stay
    ("=== A ==\n== B ==\n=\nC =", "= A\nB\n=\nC ="),  # the shorter run closes a heading,
    # on its own line (a heading matched across lines dropped "=\nC =")
    ("[[a|b]] [[c [[d]] e", "b [[c d e"),  # the link that closes is [[d]]
])
def test_unclosed_wikitext_keeps_its_text_and_the_closed_parts_convert(page, text):
    assert wikitext_to_text(page) == text


def test_an_llms_full_section_s_title_and_source_still_read():
    """llms-full.txt's titles lose their emphasis and links, and a Mintlify `Source:` line
    names the page, as before the patterns stopped at the next bracket or blank line."""
    from busca.crawler.platforms.llms import parse_full

    body = ("# Intro\n\nSource: https://d.example/intro\n\ntexto **forte**\n\n"
            "# Guia *rápido*\n\n\n  Source: https://d.example/guia  \n\nmais\n\n"
            "# [Link](x) e `code`\nfim\n").encode()
    found = [(d.url, d.title, d.text) for d in parse_full(body, "https://d.example/llms-full.txt")]
    assert found == [("https://d.example/intro", "Intro", "texto forte"),
                     ("https://d.example/guia", "Guia rápido", "mais"),
                     ("https://d.example/llms-full.txt#link-e-code", "Link e code", "fim")]
