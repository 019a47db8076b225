"""Sitemaps: parsing (plain, index, gzip, Yoast), archive sitemaps skipped, lastmod, deletions."""

from __future__ import annotations

import gzip

import pytest

from busca.crawler.crawl import crawl
from busca.crawler.options import CrawlOptions
from busca.crawler.sitemap import ARCHIVE_SITEMAPS, looks_like_sitemap, parse_sitemap
from busca.index.home.documents import Store
from busca.fixtures.server import FixtureSite, load_articles

URLSET = """<?xml version="1.0" encoding="UTF-8"?><?xml-stylesheet type="text/xsl" href="/s.xsl"?>
<urlset xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc> https://s.example/a/ </loc><lastmod>2024-09-26T17:20:34+00:00</lastmod>
    <image:image><image:loc>https://s.example/a.jpg</image:loc></image:image></url>
  <url><loc>https://s.example/b/</loc><changefreq>weekly</changefreq></url>
  <url><lastmod>2024-01-01</lastmod></url>
</urlset>"""
INDEX = """<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>http://example.org/wp-sitemap-posts-post-1.xml</loc><lastmod>2005-01-01</lastmod></sitemap>
<sitemap><loc>http://example.org/wp-sitemap-taxonomies-category-1.xml</loc></sitemap></sitemapindex>"""


def test_parse_urlset_yoast_style():
    kind, entries = parse_sitemap(URLSET.encode(), max_bytes=10**6)
    assert kind == "urlset"
    assert entries == [("https://s.example/a/", "2024-09-26T17:20:34+00:00"),
                       ("https://s.example/b/", None)]


def test_parse_index_and_gzip():
    kind, entries = parse_sitemap(gzip.compress(INDEX.encode()), max_bytes=10**6)
    assert kind == "sitemapindex" and len(entries) == 2
    assert entries[0] == ("http://example.org/wp-sitemap-posts-post-1.xml", "2005-01-01")


def test_gzip_bomb_is_refused():
    bomb = gzip.compress(b"<urlset>" + b" " * 2_000_000 + b"</urlset>")
    with pytest.raises(ValueError, match="uncompressed sitemap over 1,000,000 bytes"):
        parse_sitemap(bomb, max_bytes=1_000_000)


@pytest.mark.parametrize("body, message", [
    (b"<html><body>not found</body></html>", "<html> is not a sitemap"),
    (b"<urlset><url>", "malformed XML"),
])
def test_not_a_sitemap(body, message):
    with pytest.raises(ValueError, match=message):
        parse_sitemap(body, max_bytes=10**6)


def test_sniffing_and_archive_sitemaps():
    assert looks_like_sitemap(b'<?xml version="1.0"?><sitemapindex xmlns="x">')
    assert not looks_like_sitemap(b"<!DOCTYPE html><html>")
    skipped = ["https://s/wp-sitemap-taxonomies-category-1.xml", "https://s/wp-sitemap-users-1.xml",
               "https://s/category-sitemap.xml", "https://s/post_tag-sitemap2.xml",
               "https://s/?sitemap=taxonomies&sitemap-subtype=category&paged=1"]
    kept = ["https://s/wp-sitemap-posts-post-1.xml", "https://s/post-sitemap2.xml",
            "https://s/page-sitemap.xml"]
    assert all(ARCHIVE_SITEMAPS.search(u) for u in skipped)
    assert not any(ARCHIVE_SITEMAPS.search(u) for u in kept)


def run(url, store, **options):
    events = list(crawl(url, store, options=CrawlOptions(rate=1000, source="sitemap", **options)))
    return events[-1].report


def test_sitemap_crawl_uses_lastmod_and_pages(tmp_path):
    page = {**load_articles()[0], "id": 2, "slug": "sobre", "title": "Sobre", "content": "<p>nós</p>"}
    with FixtureSite(load_articles()[1:6], pages=[page], sitemap_size=2) as site, \
            Store(tmp_path) as store:
        report = run(site.url, store)
        assert store.count() == 6 and store.get(site.url + "sobre/").text == "nós"
        sitemaps = [h.path for h in site.hits("/wp-sitemap")]
        before = len(site.log)
        again = run(site.url, store)
        article_hits = [h for h in site.log[before:] if h.bodies]
    assert report.counts["added"] == 6
    assert sitemaps == ["/wp-sitemap.xml", "/wp-sitemap-posts-post-1.xml",
                        "/wp-sitemap-posts-post-2.xml", "/wp-sitemap-posts-post-3.xml",
                        "/wp-sitemap-posts-page-1.xml"]  # no category or user sitemaps
    assert again.counts["unchanged"] == 6 and not article_hits


def test_plain_site_sitemap_and_a_page_that_disappears(tmp_path):
    articles = load_articles()[:3]
    with FixtureSite(articles, wordpress=False) as site, Store(tmp_path) as store:
        assert run(site.url, store).counts["added"] == 3
        site.articles[0]["slug"] = "renomeado"  # old URL now 404, new URL listed
        site.articles[0]["modified_gmt"] = "2030-01-01T00:00:00"
        report = run(site.url, store)
        urls = sorted(store.hashes())
    assert report.counts == {"added": 1, "updated": 0, "metadata_updated": 0,
                             "unchanged": 2, "deleted": 1}
    assert site.url + "renomeado/" in urls and len(urls) == 3


def test_full_ignores_lastmod(tmp_path):
    with FixtureSite(load_articles()[:2]) as site, Store(tmp_path) as store:
        run(site.url, store)
        before = len(site.log)
        run(site.url, store, full=True)
        assert len([h for h in site.log[before:] if h.bodies]) == 2


def test_a_page_emptied_since_the_last_crawl_is_deleted(tmp_path):
    articles = load_articles()[:3]
    with FixtureSite(articles) as site, Store(tmp_path) as store:
        run(site.url, store)
        site.edit(articles[0]["id"], content="<p> </p>")
        report = run(site.url, store)
        assert store.get(site.link(articles[0])) is None and store.count() == 2
    assert report.counts["deleted"] == 1 and not report.failures


def test_pages_keep_what_they_state_about_themselves(tmp_path):
    """A page read through the sitemap keeps its theme's category links (rel="category tag")
    and its language as metadata, like the API would give them."""
    with FixtureSite(load_articles()[:4]) as site, Store(tmp_path) as store:
        run(site.url, store)
        for article in site.articles:
            names = {c["id"]: c["name"] for c in site.categories}
            meta = store.get(site.link(article)).meta
            assert meta["categories"] == [names[i] for i in article["categories"] if i in names]
            assert meta["language"] == "pt-BR"


def test_open_graph_and_rel_tag_metadata_of_a_page():
    from busca.crawler.html import extract_page

    html = ('<html lang="pt-BR"><head><meta property="article:section" content="Redes">'
            '<meta property="article:tag" content="DNS"><meta property="article:tag"'
            ' content="Bind"><meta property="article:published_time"'
            ' content="2024-05-01T10:00:00+00:00"><meta name="author" content="Ana  Souza">'
            '</head><body><article><h1>T</h1><p>texto</p><footer><a rel="category tag"'
            ' href="/c/redes">Redes</a> <a rel="tag" href="/t/dns">DNS</a> <a rel="tag"'
            ' href="/t/cache">Cache</a></footer></article><aside><a rel="tag" href="/t/x">'
            'Fora</a></aside></body></html>')
    assert extract_page(html, "https://s.example/a").meta == {
        "section": "Redes", "tags": ["DNS", "Bind", "Cache"],
        "published": "2024-05-01T10:00:00+00:00", "authors": ["Ana Souza"],
        "language": "pt-BR", "categories": ["Redes"]}
    listing = "<html><body><article><a rel='tag'>A</a></article><article></article></body></html>"
    assert extract_page(listing, "https://s.example/").meta is None


@pytest.mark.parametrize("before", [b"\n\n", b"\xef\xbb\xbf\r\n "])
def test_blank_lines_before_the_xml_declaration_are_read_as_feeds_are(tmp_path, before):
    """A plugin or theme file ending in a newline after `?>` puts blank lines before
    WordPress's `<?xml …?>` (feeds were read so already): it was "sitemap unusable: malformed
    XML (XML or text declaration not at start of entity…)", and nothing was stored."""
    from routed import Site, crawled, page

    site = Site()
    try:
        site.routes["/robots.txt"] = (200, {}, f"Sitemap: {site.url}/wp-sitemap.xml\n".encode())
        site.routes["/wp-sitemap.xml"] = (200, {"Content-Type": "application/xml"}, before + (
            INDEX.replace("http://example.org", site.url).encode()))
        site.routes["/wp-sitemap-posts-post-1.xml"] = (200, {}, before + (
            f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/'
            f'schemas/sitemap/0.9"><url><loc>{site.url}/educacao/</loc></url></urlset>').encode())
        site.routes["/educacao/"] = (200, {"Content-Type": "text/html; charset=utf-8"},
                                     page("Educação", "A matrícula abre em março."))
        with Store(tmp_path / "home") as store:
            report, _ = crawled(site.url + "/wp-sitemap.xml", store)
            assert [d.url for d in store.documents()] == [site.url + "/educacao/"]
        assert report.failures == () and report.stopped is None
    finally:
        site.close()


def _big_urlset(site, paths: list[str], size: int) -> bytes:
    """A urlset of `paths` padded with a comment to `size` bytes."""
    locs = "".join(f"<url><loc>{site.url}{p}</loc></url>" for p in paths)
    head = ('<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/'
            f'schemas/sitemap/0.9">{locs}<!--').encode()
    return head + b" " * (size - len(head) - len(b"--></urlset>")) + b"--></urlset>"


@pytest.mark.parametrize("name", ["sitemap.xml", "sitemap.xml.gz"])
def test_a_sitemap_over_10_mib_is_read_as_the_standard_allows(tmp_path, name):
    """A 12 MB sitemap (the standard allows 50 MB, 50,000 URLs) was refused by the 10 MiB
    cap of pages ("response is over the 10,485,760-byte cap"), gzip or not; pages keep it."""
    from routed import Site, crawled, page

    site = Site()
    try:
        body = _big_urlset(site, ["/educacao/", "/enorme/"], 12_000_000)
        site.routes["/" + name] = (200, {"Content-Type": "application/xml"},
                                   gzip.compress(body, 1) if name.endswith(".gz") else body)
        html = {"Content-Type": "text/html; charset=utf-8"}
        site.routes["/educacao/"] = (200, html, page("Educação", "A matrícula abre em março."))
        site.routes["/enorme/"] = (200, html, page("Enorme", "x " * 6_000_000))
        with Store(tmp_path / "home") as store:
            report, _ = crawled(f"{site.url}/{name}", store)
            assert [d.url for d in store.documents()] == [site.url + "/educacao/"]
        [(url, reason)] = report.failures
        assert url == site.url + "/enorme/" and "over the 10,485,760-byte cap" in reason
    finally:
        site.close()


def test_a_sitemap_over_50_mib_is_refused_naming_the_cap(tmp_path):
    from routed import Site, crawled

    site = Site()
    try:
        site.routes["/robots.txt"] = (200, {}, f"Sitemap: {site.url}/sitemap.xml\n".encode())
        site.routes["/"] = (200, {"Content-Type": "text/html"}, b"<html><p>Home</p></html>")
        site.routes["/sitemap.xml"] = (200, {"Content-Length": "60000000"}, b"<urlset>")
        with Store(tmp_path / "home") as store:
            report, _ = crawled(site.url + "/", store)
        [(url, reason)] = report.failures
        assert url == site.url + "/sitemap.xml"
        assert reason == ("sitemap unusable: response of 60,000,000 bytes is over the"
                          " 52,428,800-byte cap")
    finally:
        site.close()
