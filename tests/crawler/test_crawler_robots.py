"""robots.txt (RFC 9309): groups, longest match, wildcards, Crawl-delay, sitemaps."""

from __future__ import annotations

from busca.crawler.robots import Robots

UA = "busca/0.1.0 (test)"
WORDPRESS = """User-agent: *
Disallow: /wp-admin/
Allow: /wp-admin/admin-ajax.php

Sitemap: https://site.example/wp-sitemap.xml
"""


def allowed(text: str, path: str, agent: str = UA) -> bool:
    return Robots(text).allowed("https://site.example" + path, agent)


def test_wordpress_default_rules():
    assert allowed(WORDPRESS, "/")
    assert allowed(WORDPRESS, "/artigo/")
    assert not allowed(WORDPRESS, "/wp-admin/")
    assert not allowed(WORDPRESS, "/wp-admin/options.php")
    assert allowed(WORDPRESS, "/wp-admin/admin-ajax.php")  # longer Allow wins
    assert Robots(WORDPRESS).sitemaps() == ["https://site.example/wp-sitemap.xml"]


def test_empty_or_missing_file_allows_everything():
    assert allowed("", "/anything")
    assert Robots("").delay(UA) is None


def test_disallow_everything():
    text = "User-agent: *\nDisallow: /\n"
    assert not allowed(text, "/")
    assert not allowed(text, "/a/b")
    assert allowed(text, "/robots.txt")


def test_specific_group_overrides_star():
    text = "User-agent: *\nDisallow: /\n\nUser-agent: Busca\nDisallow: /privado/\n"
    assert allowed(text, "/publico/")
    assert not allowed(text, "/privado/x")
    assert not allowed(text, "/publico/", agent="OtherBot/1.0")


def test_grouped_user_agents_share_rules():
    text = "User-agent: a\nUser-agent: busca\nDisallow: /x\n"
    assert not allowed(text, "/x")


def test_wildcards_and_end_anchor():
    text = "User-agent: *\nDisallow: /*?s=\nDisallow: /*.pdf$\nAllow: /*.pdf$keep\n"
    assert not allowed(text, "/?s=termo")
    assert not allowed(text, "/docs/a.pdf")
    assert allowed(text, "/docs/a.pdf?download=1")
    assert allowed(text, "/docs/a.html")


def test_equal_length_tie_goes_to_allow():
    assert allowed("User-agent: *\nDisallow: /page\nAllow: /page\n", "/page")


def test_percent_encoding_is_compared_decoded():
    text = "User-agent: *\nDisallow: /ação/\n"
    assert not allowed(text, "/a%C3%A7%C3%A3o/x")


def test_crawl_delay_fractional_and_per_group():
    text = "User-agent: *\nCrawl-delay: 0.5\n\nUser-agent: busca\nCrawl-delay: 2\nDisallow:\n"
    assert Robots(text).delay(UA) == 2.0
    assert Robots(text).delay("other") == 0.5
    assert Robots("User-agent: *\nCrawl-delay: soon\n").delay(UA) is None


def test_comments_and_junk_lines_are_ignored():
    text = "# comentário\nUser-agent: * # todos\nDisallow: /x # não\n<html>\n"
    assert not allowed(text, "/x")
    assert allowed(text, "/y")
