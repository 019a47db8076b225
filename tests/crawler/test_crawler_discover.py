"""Discovery: which source a site offers, in the issue's order, and why."""

from __future__ import annotations

import random

import pytest
import requests
import responses

from busca.crawler.discover import discover
from busca.crawler.errors import CrawlError
from busca.crawler.http import Fetcher, Politeness
from busca.fixtures.server import FixtureSite, load_articles

SITE = "https://s.example"
HTML = "text/html; charset=UTF-8"


def fetcher(host="s.example") -> Fetcher:
    return Fetcher(requests.Session(), Politeness(rate=1000), hosts={host},
                   sleep=lambda s: None, rng=random.Random(1))


@pytest.fixture
def mocked():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.get(f"{SITE}/robots.txt", body="")
        yield rsps


def wp_ok(rsps, root: str):
    rsps.get(f"{root}wp/v2/posts", json=[{"id": 1}])


def test_link_header(mocked):
    mocked.get(f"{SITE}/artigo/", body="<p>x</p>", content_type=HTML,
               headers={"Link": f'<{SITE}/wp-json/wp/v2/posts/9>; rel="alternate"; type="application/json",'
                                f' <{SITE}/wp-json/>; rel="https://api.w.org/"'})
    wp_ok(mocked, f"{SITE}/wp-json/")
    found = discover(f"{SITE}/artigo/", fetcher())
    assert (found.source, found.api_root) == ("wordpress", f"{SITE}/wp-json/")
    assert "Link header" in found.detail


def test_html_link_element(mocked):
    mocked.get(f"{SITE}/", content_type=HTML,
               body='<link rel="https://api.w.org/" href="https://s.example/blog/wp-json/">')
    wp_ok(mocked, f"{SITE}/blog/wp-json/")
    found = discover(f"{SITE}/", fetcher())
    assert found.api_root == f"{SITE}/blog/wp-json/"


def test_wp_json_probe_then_rest_route(mocked):
    mocked.get(f"{SITE}/", body="<p>plain</p>", content_type=HTML,
               match=[responses.matchers.query_param_matcher({})])
    mocked.get(f"{SITE}/wp-json/", status=404)
    mocked.get(f"{SITE}/", json={"namespaces": ["oembed/1.0", "wp/v2"]},
               match=[responses.matchers.query_param_matcher({"rest_route": "/"})])
    mocked.get(f"{SITE}/", json=[],
               match=[responses.matchers.query_param_matcher(
                   {"rest_route": "/wp/v2/posts", "per_page": "1", "_fields": "id"})])
    found = discover(f"{SITE}/", fetcher())
    assert (found.source, found.api_root) == ("wordpress", f"{SITE}/?rest_route=/")


def test_a_wordpress_in_a_folder_whose_page_hides_its_api_is_probed_there(mocked):
    """WordPress installed in /blog/ (the company site at the root is something else), its
    page stripped of the api.w.org link by a hardening plugin: its API is under /blog/."""
    mocked.get(f"{SITE}/blog/", body="<p>blog</p>", content_type=HTML)
    mocked.get(f"{SITE}/blog/wp-json/", json={"namespaces": ["oembed/1.0", "wp/v2"]})
    wp_ok(mocked, f"{SITE}/blog/wp-json/")
    for path in ("/wp-json/", "/"):  # the root site: not WordPress
        mocked.get(f"{SITE}{path}", status=404, body="not here")
    found = discover(f"{SITE}/blog/", fetcher())
    assert (found.source, found.api_root) == ("wordpress", f"{SITE}/blog/wp-json/")


def test_a_page_of_a_wordpress_at_the_root_still_finds_the_root_api(mocked):
    mocked.get(f"{SITE}/sobre/", body="<p>sobre</p>", content_type=HTML)
    mocked.get(f"{SITE}/sobre/wp-json/", status=404, body="<p>Página não encontrada</p>",
               content_type=HTML)
    mocked.get(f"{SITE}/wp-json/", json={"namespaces": ["wp/v2"]})
    wp_ok(mocked, f"{SITE}/wp-json/")
    found = discover(f"{SITE}/sobre/", fetcher())
    assert (found.source, found.api_root) == ("wordpress", f"{SITE}/wp-json/")


def test_sitemaps_from_robots_then_probes(mocked):
    mocked.replace(responses.GET, f"{SITE}/robots.txt",
                   body="User-agent: *\nSitemap: https://s.example/mapa.xml\n"
                        "Sitemap: https://outro.example/mapa.xml\n")
    mocked.get(f"{SITE}/", body="<p>x</p>", content_type=HTML)
    mocked.get(f"{SITE}/wp-json/", status=404)
    mocked.get(f"{SITE}/", status=404, match=[responses.matchers.query_param_matcher(
        {"rest_route": "/"})])
    found = discover(f"{SITE}/", fetcher())
    assert (found.source, found.sitemaps) == ("sitemap", (f"{SITE}/mapa.xml",))


def test_sitemap_probe(mocked):
    mocked.get(f"{SITE}/", body="<p>x</p>", content_type=HTML)
    mocked.get(f"{SITE}/sitemap.xml", body='<?xml version="1.0"?><urlset xmlns="x"></urlset>')
    found = discover(f"{SITE}/", fetcher(), source="sitemap")
    assert found.sitemaps == (f"{SITE}/sitemap.xml",) and "/sitemap.xml found" in found.detail


def test_url_that_is_a_sitemap_or_a_feed(mocked):
    mocked.get(f"{SITE}/posts.xml", body='<?xml version="1.0"?>\n<sitemapindex xmlns="x"/>',
               content_type="application/xml")
    mocked.get(f"{SITE}/rss", body='<?xml version="1.0"?><rss version="2.0"><channel/></rss>',
               content_type="application/rss+xml")
    assert discover(f"{SITE}/posts.xml", fetcher()).source == "sitemap"
    assert discover(f"{SITE}/rss", fetcher()).source == "feed"


def test_feed_and_html_fallbacks(mocked):
    page = '<link rel="alternate" type="application/rss+xml" href="/feed/"><p>x</p>'
    mocked.get(f"{SITE}/", body=page, content_type=HTML)
    found = discover(f"{SITE}/", fetcher(), source="feed")
    assert (found.source, found.feeds) == ("feed", (f"{SITE}/feed/",))
    found = discover(f"{SITE}/", fetcher(), source="html")
    assert found.source == "html" and found.page.text == "x"


@pytest.mark.parametrize("source, message", [
    ("wordpress", "no WordPress REST API at https://s.example/: no api.w.org link"),
    ("sitemap", "no sitemap at https://s.example/: robots.txt names none"),
    ("feed", "no RSS/Atom feed linked from https://s.example/"),
])
def test_explicit_source_that_is_missing(mocked, source, message):
    mocked.get(f"{SITE}/", body="<p>x</p>", content_type=HTML)
    with pytest.raises(CrawlError, match=message):
        discover(f"{SITE}/", fetcher(), source=source)


def test_auto_order_on_the_fixture_site():
    articles = load_articles()[:2]
    cases = [({}, "wordpress"), ({"wordpress": False}, "sitemap"),
             ({"wordpress": False, "sitemap": False}, "feed"),
             ({"wordpress": False, "sitemap": False, "feed": False}, "html"),
             ({"advertise_api": False}, "wordpress"),
             ({"advertise_api": False, "pretty_permalinks": False}, "wordpress")]
    for switches, source in cases:
        with FixtureSite(articles, **switches) as site:
            found = discover(site.url, fetcher("127.0.0.1"))
        assert found.source == source, switches


def test_missing_start_page(mocked):
    mocked.get(f"{SITE}/nada/", status=404, body="no", content_type=HTML)
    mocked.get(f"{SITE}/wp-json/", status=404)
    with pytest.raises(CrawlError, match="answers HTTP 404 and no API, sitemap or feed was found"):
        discover(f"{SITE}/nada/", fetcher())


def test_missing_start_page_with_the_html_source_forced(mocked):
    """--source html looked for no API, sitemap or feed: the message said it found none."""
    mocked.get(f"{SITE}/nada/", status=404, body="no", content_type=HTML)
    with pytest.raises(CrawlError) as error:
        discover(f"{SITE}/nada/", fetcher(), source="html")
    assert str(error.value) == (f"the start page {SITE}/nada/ answers HTTP 404, so it has no"
                                " links to follow (--source html starts from it); check the URL")


@pytest.mark.parametrize("advertised", [
    "http://169.254.169.254/wp-json/",  # a cloud's metadata service
    "http://localhost:8080/wp-json/",  # a WordPress whose siteurl is its developer's
    "http://10.0.0.7/wp-json/",
    "http://[::1]:8080/wp-json/",
])
def test_an_api_advertised_on_this_machine_or_a_private_network_is_not_followed(
        mocked, advertised):
    """A public site names the host of its API: one on loopback, a private or link-local
    address was added to the crawl's hosts and read (the site made busca fetch 169.254.169.254
    or the user's own localhost:8080 for it). Now the site's own API is probed instead, and
    a note says why."""
    mocked.get(f"{SITE}/", body="<p>x</p>", content_type=HTML,
               headers={"Link": f'<{advertised}>; rel="https://api.w.org/"'})
    mocked.get(f"{SITE}/wp-json/", json={"namespaces": ["wp/v2"]})
    wp_ok(mocked, f"{SITE}/wp-json/")
    found = discover(f"{SITE}/", fetcher())
    assert (found.source, found.api_root) == ("wordpress", f"{SITE}/wp-json/")
    assert all(call.request.url.startswith(SITE) for call in mocked.calls), \
        [call.request.url for call in mocked.calls]
    host = advertised.split("/")[2].rsplit(":", 1)[0] if "[" not in advertised else "::1"
    assert any(advertised in note and f"--allow-host {host}" in note for note in found.notes), \
        found.notes


def test_an_api_advertised_on_another_public_host_is_still_read(mocked):
    """A headless WordPress: the site names its API on another host of the internet."""
    api = "https://api.s-cms.example/wp-json/"
    mocked.get(f"{SITE}/", body="<p>x</p>", content_type=HTML,
               headers={"Link": f'<{api}>; rel="https://api.w.org/"'})
    mocked.get("https://api.s-cms.example/robots.txt", body="")
    wp_ok(mocked, api)
    found = discover(f"{SITE}/", fetcher())
    assert (found.source, found.api_root) == ("wordpress", api)
