"""Link-following HTML crawl: what is followed, what is stored, budget, validators, deletions."""

from __future__ import annotations

import re

import pytest
import responses

from busca.crawler.crawl import crawl
from busca.crawler.options import CrawlOptions
from busca.crawler.spider import SKIP_PATHS, normalize
from busca.index.home.documents import Store
from busca.fixtures.server import FixtureSite, load_articles

SITE = "https://s.example"
HTML = "text/html; charset=utf-8"


def run(url, store, **options):
    events = list(crawl(url, store, options=CrawlOptions(rate=1000, source="html", **options)))
    return events[-1].report


@pytest.mark.parametrize("url, expected", [
    ("HTTPS://S.Example:443/a#frag", "https://s.example/a"),
    ("http://s.example:80", "http://s.example/"),
    ("http://s.example:8080/x?b=1", "http://s.example:8080/x?b=1"),
])
def test_normalize(url, expected):
    assert normalize(url) == expected


def test_wordpress_chrome_is_not_followed():
    for url in ("https://s/wp-admin/", "https://s/wp-login.php?action=x", "https://s/feed/",
                "https://s/post/?replytocom=5", "https://s/?s=busca", "https://s/wp-json/"):
        assert SKIP_PATHS.search(url), url
    assert not SKIP_PATHS.search("https://s/feedback-dos-alunos/")


def test_follows_site_links_and_stores_articles_only(tmp_path):
    home = ('<html><body><nav><a href="/">Início</a><a href="https://fora.example/x">fora</a>'
            '<a href="mailto:a@b">mail</a><a href="/foto.jpg">foto</a>'
            '<a href="/privado/">privado</a><a href="/b/" rel="nofollow">b</a></nav>'
            '<main><article><h2><a href="/a/">A</a></h2></article>'
            '<article><h2><a href="/c/">C</a></h2></article></main></body></html>')
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps, \
            Store(tmp_path) as store:
        rsps.get(f"{SITE}/robots.txt", body="User-agent: *\nDisallow: /privado/\n")
        rsps.get(f"{SITE}/", body=home, content_type=HTML)
        rsps.get(f"{SITE}/a/", body='<article><h1>A</h1><p>Texto A</p><a href="/c/#x">c</a></article>',
                 content_type=HTML)
        rsps.get(f"{SITE}/c/", content_type=HTML,
                 body='<link rel="canonical" href="/a/"><article><h1>A de novo</h1><p>x</p></article>')
        report = run(f"{SITE}/", store)
        fetched = [c.request.url for c in rsps.calls  # not the site's "not found" probe
                   if not re.fullmatch(rf"{SITE}/[0-9a-f]{{24}}/", c.request.url)]
        urls = list(store.hashes())
    assert urls == [f"{SITE}/a/"]  # the home is a listing, /c/ is a copy of /a/
    assert sorted(fetched) == sorted([f"{SITE}/robots.txt", f"{SITE}/", f"{SITE}/a/", f"{SITE}/c/"])
    assert report.counts["added"] == 1


def test_budget_and_a_later_run_with_validators(tmp_path):
    with FixtureSite(load_articles()[:15], wordpress=False, sitemap=False, feed=False) as site, \
            Store(tmp_path) as store:
        capped = run(site.url, store, max_pages=6)
        assert len(site.log) <= 8  # robots.txt, the "not found" probe and six pages
        assert any("stopped at 6 pages (--max-pages)" in n for n in capped.notices)
        full = run(site.url, store)
        before = len(site.log)
        again = run(site.url, store)
        statuses = [h.status for h in site.log[before:] if h.path.count("/") == 2
                    and not h.path.startswith(("/page/", "/category/", "/author/"))
                    and not re.fullmatch(r"/[0-9a-f]{24}/", h.path)]  # the "not found" probe
    assert full.counts["added"] + capped.counts["added"] == 15
    assert again.counts["unchanged"] == 15 and set(statuses) == {304}


def test_pages_no_longer_linked_are_checked_and_deleted(tmp_path):
    articles = load_articles()[:4]
    with FixtureSite(articles, wordpress=False, sitemap=False, feed=False) as site, \
            Store(tmp_path) as store:
        run(site.url, store)
        gone = site.remove(articles[0]["id"])
        report = run(site.url, store)
        assert store.get(site.link(gone)) is None
    assert report.counts == {"added": 0, "updated": 0, "metadata_updated": 0,
                             "unchanged": 3, "deleted": 1}
