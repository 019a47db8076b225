"""Feeds: RSS 2.0 content:encoded, Atom, summary-only feeds fall back to the page."""

from __future__ import annotations

import pytest

from busca.crawler.crawl import crawl
from busca.crawler.feed import parse_feed
from busca.crawler.options import CrawlOptions
from busca.index.home.documents import Store
from busca.fixtures.server import FixtureSite, load_articles

RSS = """<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"
 xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel><title>Blog</title>
<item><title>Primeiro &#8211; post</title><link>https://s.example/um/</link>
<pubDate>Tue, 14 Feb 2023 13:46:00 +0000</pubDate><description>resumo</description>
<content:encoded><![CDATA[<p>Texto <b>um</b>.</p>]]></content:encoded></item>
<item><title>Só resumo</title><guid>/dois/</guid><description>curto</description></item>
</channel></rss>"""
ATOM = """<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">
<title>Blog</title><entry><title>Entrada</title>
<link rel="alternate" href="https://s.example/e/"/><link rel="edit" href="https://s.example/edit"/>
<updated>2024-05-01T10:00:00Z</updated><content type="html">&lt;p&gt;Corpo&lt;/p&gt;</content></entry>
</feed>"""


def test_parse_rss():
    first, second = parse_feed(RSS.encode(), "https://s.example/feed/")
    assert first.link == "https://s.example/um/" and first.title == "Primeiro – post"
    assert first.html == "<p>Texto <b>um</b>.</p>"
    assert first.modified == "2023-02-14T13:46:00+00:00"
    assert (second.link, second.html) == ("https://s.example/dois/", "")


def test_parse_atom():
    (entry,) = parse_feed(ATOM.encode(), "https://s.example/")
    assert (entry.link, entry.html, entry.modified) == (
        "https://s.example/e/", "<p>Corpo</p>", "2024-05-01T10:00:00Z")


@pytest.mark.parametrize("body, message", [
    (b"<html></html>", "neither RSS nor Atom"), (b"<rss><channel>", "malformed XML")])
def test_not_a_feed(body, message):
    with pytest.raises(ValueError, match=message):
        parse_feed(body, "https://s.example/")


def test_feed_crawl_stores_the_latest_items_only_and_never_deletes(tmp_path):
    with FixtureSite(load_articles()[:14], wordpress=False, sitemap=False, feed_size=5) as site, \
            Store(tmp_path) as store:
        report = list(crawl(site.url, store, options=CrawlOptions(rate=1000)))[-1].report
        assert report.source == "feed" and store.count() == 5
        site.feed_size = 3
        again = list(crawl(site.url, store, options=CrawlOptions(rate=1000)))[-1].report
        assert store.count() == 5
        assert store.get(site.link(site.articles[-1])).source == "feed"
    assert any("the feed lists its 5 latest items only" in n for n in report.notices)
    assert again.counts == {"added": 0, "updated": 0, "metadata_updated": 0,
                            "unchanged": 3, "deleted": 0}


def test_the_feed_url_itself(tmp_path):
    with FixtureSite(load_articles()[:2]) as site, Store(tmp_path) as store:
        report = list(crawl(site.url + "feed/", store, options=CrawlOptions(rate=1000)))[-1].report
    assert report.source == "feed" and report.counts["added"] == 2


def test_summary_only_items_are_fetched_as_pages(tmp_path):
    import responses

    with responses.RequestsMock(assert_all_requests_are_fired=True) as rsps, \
            Store(tmp_path) as store:
        rsps.get("https://s.example/robots.txt", body="")
        rsps.get("https://s.example/feed/", body=RSS, content_type="application/rss+xml")
        rsps.get("https://s.example/dois/", content_type="text/html",
                 body="<title>x</title><nav>menu</nav><article><h1>Só resumo</h1><p>Texto"
                      " completo.</p></article>")
        events = list(crawl("https://s.example/feed/", store, options=CrawlOptions(rate=1000)))
        assert store.get("https://s.example/dois/").text == "Texto completo."
        assert store.get("https://s.example/um/").text == "Texto um."
    assert events[-1].report.counts["added"] == 2


def test_a_feed_crawled_after_the_api_keeps_the_apis_metadata(tmp_path):
    """The feed carries less than the WordPress API: crawled after it, it wiped the documents'
    categories, authors and dates and reported them unchanged."""
    fast = {"rate": 500.0, "backoff": 0.02}
    with FixtureSite(load_articles()[:6]) as site, Store(tmp_path / "home") as store:
        list(crawl(site.url, store, options=CrawlOptions(**fast)))
        before = {d.url: (d.meta, d.modified) for d in store.documents()}
        assert all(meta for meta, _ in before.values())
        report = list(crawl(site.url, store, options=CrawlOptions(source="feed", **fast)))[-1]
        after = {d.url: (d.meta, d.modified, d.source) for d in store.documents()}
    fed = [url for url, (_, _, source) in after.items() if source == "feed"]
    assert fed and report.report.counts["added"] == 0
    for url in fed:
        meta, modified, _ = after[url]
        assert {k: v for k, v in meta.items() if k in before[url][0]} == before[url][0]
        assert modified is not None or before[url][1] is None  # a date kept when it has none
