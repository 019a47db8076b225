"""One document URL for every source: a feed item's link, a sitemap's <loc>, a WordPress
post's `link` and the HTML crawl's start page lose their fragment and their campaign-tracking
parameters (utm_*, fbclid…) as the HTML crawl's links do, so a page is stored once."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from busca.crawler.events import Failed
from busca.crawler.feed import parse_feed
from busca.crawler.urls import normalize
from busca.index.home.documents import Store
from routed import (Site, crawled, page, site_fixture, store_fixture,  # noqa: F401
                    wordpress_home)

FAST = {"rate": 1000.0, "backoff": 0.01, "timeout": 5.0}
HTML = {"Content-Type": "text/html; charset=utf-8"}
XML = {"Content-Type": "application/xml"}


def run(url: str, store: Store, **options):
    return crawled(url, store, FAST, **options)


def rss(items: str) -> bytes:
    return ('<?xml version="1.0"?><rss version="2.0" xmlns:content='
            '"http://purl.org/rss/1.0/modules/content/"><channel><title>S</title>'
            f"{items}</channel></rss>").encode()


def urlset(base: str, paths: list[str]) -> bytes:
    locs = "".join(f"<url><loc>{base}{p}</loc></url>" for p in paths)
    return ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{locs}</urlset>").encode()


def urls(store: Store) -> list[str]:
    return sorted(d.url for d in store.documents())


def test_feed_items_with_tracking_or_a_fragment_are_the_sitemaps_pages(site, store):
    """/a?utm_source=feedburner&fbclid=x1 and /b#comments from the feed were stored beside
    /a and /b from the sitemap: the same page twice."""
    site.routes["/feed"] = (200, {"Content-Type": "application/rss+xml"}, rss(
        f"<item><title>B</title><link>{site.url}/b#comments</link><content:encoded>"
        "<![CDATA[<p>Artigo B pelo feed.</p>]]></content:encoded></item>"
        f"<item><title>A</title><link>{site.url}/a?utm_source=feedburner&amp;fbclid=x1</link>"
        "<content:encoded><![CDATA[<p>Artigo A pelo feed.</p>]]></content:encoded></item>"))
    site.routes["/sitemap.xml"] = (200, XML, urlset(site.url, ["/a", "/b"]))
    site.routes["/a"] = (200, HTML, page("A", "Artigo A pela página."))
    site.routes["/b"] = (200, HTML, page("B", "Artigo B pela página."))
    run(site.url + "/feed", store, source="feed")
    assert urls(store) == [site.url + "/a", site.url + "/b"]
    run(site.url + "/sitemap.xml", store, source="sitemap")
    assert urls(store) == [site.url + "/a", site.url + "/b"]


def test_a_feed_item_without_its_text_is_fetched_and_stored_without_tracking(site, store):
    site.routes["/feed"] = (200, {"Content-Type": "application/rss+xml"}, rss(
        f"<item><title>A</title><link>{site.url}/a?utm_source=rss&amp;utm_medium=rss</link>"
        "</item>"))
    site.routes["/a"] = (200, HTML, page("A", "Artigo A pela página."))
    run(site.url + "/feed", store, source="feed")
    assert urls(store) == [site.url + "/a"]
    assert not [p for p in site.asked if "utm" in p]


def test_a_sitemap_listing_a_page_with_tracking_parameters_stores_it_once(site, store):
    site.routes["/sitemap.xml"] = (200, XML, urlset(site.url, [
        "/a?utm_source=news&amp;utm_medium=mail", "/a", "/a?gclid=1#top"]))
    for path in ("/a", "/a?utm_source=news&utm_medium=mail", "/a?gclid=1"):  # one page
        site.routes[path] = (200, HTML, page("A", "Artigo A pela página."))
    run(site.url + "/sitemap.xml", store)
    assert urls(store) == [site.url + "/a"] and site.asked.count("/a") == 1
    assert not [p for p in site.asked if "?" in p]


def test_the_html_crawls_start_page_is_stored_without_tracking(site, store):
    site.routes["/good?utm_source=news"] = (200, HTML, page("Bom", "O artigo bom mora aqui."))
    run(site.url + "/good?utm_source=news", store, source="html", max_pages=1)
    assert urls(store) == [site.url + "/good"]


def test_a_feed_item_without_a_link_is_reported_not_stored_as_the_feed():
    """A blank <link> resolved to the feed's own URL."""
    (item,) = parse_feed(rss("<item><title>Sem link</title><link> </link></item>"),
                         "https://s.example/feed/")
    assert item.link == ""


def test_an_ipv6_host_keeps_its_brackets():
    assert normalize("http://[::1]:8080/a?utm_source=x#f") == "http://[::1]:8080/a"


# -- the WordPress source: a post's `link` --------------------------------------------------
WP = "https://blog.example"


def post(i: int, link: str) -> dict:
    return {"id": i, "link": link, "modified": "2024-01-01T10:00:00",
            "modified_gmt": "2024-01-01T13:00:00", "title": {"rendered": f"Post {i}"},
            "content": {"rendered": f"<p>Corpo {i}</p>", "protected": False}}


@pytest.fixture
def wordpress(tmp_path):
    """A mocked WordPress site serving `posts` on one API page."""
    posts: list[dict] = []

    def reply(request):
        query = parse_qs(urlsplit(request.url).query)
        if query.get("per_page") == ["1"]:
            return 200, {}, "[]"  # the discovery probe
        fields = query["_fields"][0].split(",")
        return 200, {"X-WP-Total": str(len(posts)), "X-WP-TotalPages": "1"}, json.dumps(
            [{k: v for k, v in p.items() if k in fields} for p in posts])

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        wordpress_home(rsps, WP)
        rsps.add_callback(responses.GET, f"{WP}/wp-json/wp/v2/posts", callback=reply)
        with Store(tmp_path) as store:
            yield store, posts


def test_a_wordpress_link_with_a_fragment_or_tracking_is_stored_as_its_page(wordpress):
    """A plugin's `post_link` filter may add #more or ?utm_…: the sitemap lists the page
    without them, and the store must not hold it under both."""
    store, posts = wordpress
    posts += [post(1, f"{WP}/p1/#more"), post(2, f"{WP}/p2/?utm_source=wp&lang=pt")]
    report, _ = run(WP, store)
    assert urls(store) == [f"{WP}/p1/", f"{WP}/p2/?lang=pt"]
    again, events = run(WP, store)  # the sweep finds them unchanged, under the same URLs
    assert urls(store) == [f"{WP}/p1/", f"{WP}/p2/?lang=pt"]
    assert again.counts.get("unchanged") == 2 and not again.counts.get("deleted")


def test_a_wordpress_link_with_a_bad_port_is_a_malformed_post(wordpress):
    store, posts = wordpress
    posts += [post(1, f"{WP}/p1/"), post(2, "https://blog.example:99999/p2/")]
    _, events = run(WP, store)
    assert urls(store) == [f"{WP}/p1/"]
    assert [e.reason for e in events if isinstance(e, Failed)] == [
        "malformed post skipped: link is str 'https://blog.example:99999/p2/', not a URL"]


def test_a_redirect_ending_on_tracking_parameters_stores_the_page_as_the_listing_names_it():
    """A redirect within the host to /b?utm_source=x#c stored the page under that URL, beside
    the sitemap's /b."""
    from busca.crawler.pages import Job, Result, _stored_url

    def stored(final: str) -> str:
        return _stored_url(None, Job("http://h.example/a"), Result("page", final_url=final))

    assert stored("http://H.example:80/b?utm_source=x&id=2#c") == "http://h.example/b?id=2"
    assert stored("http://h.example:99999/b") == "http://h.example/a"  # malformed: as asked
    assert stored("http://other.example/b") == "http://h.example/a"  # another host
