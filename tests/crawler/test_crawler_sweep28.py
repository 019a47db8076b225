"""What the twenty-eighth session's sweep of misbehaving sites met, each on a real server on
127.0.0.1 whose answers the test sets path by path: listings read in part delete nothing,
redirects and fragments store a page once, a throttling site stops the crawl, bodies that are
no text are refused, byte-order marks win, feeds as readers read them."""

from __future__ import annotations

import codecs
import gzip

import pytest

from busca.crawler import sitemap
from busca.crawler.crawl import crawl
from busca.crawler.events import Failed, Notice
from busca.crawler.feed import parse_feed_page
from busca.crawler.http import THROTTLED_STOP, limit_key
from busca.crawler.options import CrawlOptions
from busca.crawler.wordpress import without_shortcodes
from busca.index.home.documents import Store
from routed import Site, crawled, page, site_fixture, store_fixture  # noqa: F401  (fixtures)

FAST = {"rate": 1000.0, "backoff": 0.01, "timeout": 5.0}
HTML = {"Content-Type": "text/html; charset=utf-8"}


def run(url: str, store: Store, **options):
    return crawled(url, store, FAST, **options)


def urlset(base: str, paths: list[str]) -> bytes:
    locs = "".join(f"<url><loc>{base}{p}</loc></url>" for p in paths)
    return (f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{locs}</urlset>").encode()


def index(base: str, paths: list[str]) -> bytes:
    locs = "".join(f"<sitemap><loc>{base}{p}</loc></sitemap>" for p in paths)
    return (f'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/'
            f'sitemap/0.9">{locs}</sitemapindex>').encode()


def test_a_sitemap_index_read_in_part_deletes_nothing(site, store, monkeypatch):
    """An index of over MAX_SITEMAPS sitemaps was cut silently, and the pages of the unread
    ones were deleted (5 of 5 stored pages, all still on the site)."""
    monkeypatch.setattr(sitemap, "MAX_SITEMAPS", 3)
    site.routes["/old.xml"] = (200, {}, urlset(site.url, ["/a", "/b"]))
    for name in ("a", "b"):
        site.routes[f"/{name}"] = (200, HTML, page(name.upper(), f"Artigo {name} do site."))
    site.routes["/sitemap.xml"] = (200, {}, index(site.url, ["/old.xml"]))
    report, _ = run(site.url + "/sitemap.xml", store)
    assert store.count() == 2
    newer = [f"/new{n}.xml" for n in range(4)]
    for path in newer:
        site.routes[path] = (200, {}, urlset(site.url, []))
    site.routes["/sitemap.xml"] = (200, {}, index(site.url, [*newer, "/old.xml"]))
    report, events = run(site.url + "/sitemap.xml", store)
    assert store.count() == 2 and report.counts.get("deleted", 0) == 0
    assert any("left 3 unread" in e.message and "nothing stored is deleted" in e.message
               for e in events if isinstance(e, Notice))


def test_a_redirect_and_a_fragment_store_a_page_once(site, store):
    """/moved (308 to /good) and /good were both stored, as were /p and /p#comments."""
    site.routes["/sitemap.xml"] = (200, {}, urlset(site.url, ["/moved", "/good", "/p",
                                                              "/p#comments"]))
    site.routes["/moved"] = (308, {"Location": "/good"}, b"")
    site.routes["/good"] = (200, HTML, page("Bom", "O artigo bom mora aqui."))
    site.routes["/p"] = (200, HTML, page("P", "Um artigo com comentários."))
    report, events = run(site.url + "/sitemap.xml", store)
    assert sorted(d.url for d in store.documents()) == [site.url + "/good", site.url + "/p"]
    assert site.asked.count("/p") == 1
    again, _ = run(site.url + "/sitemap.xml", store)  # the target is not deleted as unlisted
    assert store.count() == 2 and again.counts.get("deleted", 0) == 0


def test_a_site_that_throttles_every_request_stops_the_crawl(site, store):
    """Every answer 429: each of 40 pages was tried 4 times (244 s), none given up on."""
    paths = [f"/p{n}" for n in range(40)]
    site.routes["/sitemap.xml"] = (200, {}, urlset(site.url, paths))
    for path in paths:
        site.routes[path] = (429, {}, b"slow down")
    report, _ = run(site.url + "/sitemap.xml", store, retries=1, workers=1)
    assert "429 (too many requests) to 5 requests in a row" in report.stopped
    assert sum(p.startswith("/p") for p in site.asked) == THROTTLED_STOP * 2  # 1 retry each


def test_www_and_the_bare_host_share_one_pace():
    """on_site takes www.host for host; the rate limiter keyed them apart (twice the rate)."""
    assert limit_key("http://www.Blog.example:8080/a") == limit_key("http://blog.example:8080/b")
    assert limit_key("http://blog.example:8080/") != limit_key("http://blog.example:8081/")


@pytest.mark.parametrize("path, headers, body, reason", [
    ("/binary", HTML, bytes(range(256)) * 8, "binary content, not text"),
    ("/pdf", HTML, b"%PDF-1.4\n%\xe2\xe3\n1 0 obj", "a PDF served as a web page; crawl with"
                                                    " --pdfs"),
    ("/br", {**HTML, "Content-Encoding": "xz"}, b"\xfd7zXZ\x00\x00", "compressed as xz"),
    ("/cut", {**HTML, "Content-Encoding": "gzip"},
     gzip.compress(page("T", "texto " * 400), mtime=0)[:60], "a gzip body that stops before its end"),
    ("/notgz", {**HTML, "Content-Encoding": "gzip"}, page("T", "plain"),
     "Content-Encoding does not describe"),
    ("/unasked304", HTML, b"", "HTTP 304 (not modified) to a request without validators"),
])
def test_a_body_that_is_no_text_is_refused_with_its_reason(site, store, path, headers, body,
                                                          reason):
    site.routes["/sitemap.xml"] = (200, {}, urlset(site.url, [path, "/ok"]))
    site.routes[path] = (304 if "304" in path else 200, headers, body)
    site.routes["/ok"] = (200, HTML, page("Ok", "Um artigo de verdade."))
    report, events = run(site.url + "/sitemap.xml", store, retries=0)
    failed = [e for e in events if isinstance(e, Failed)]
    assert len(failed) == 1 and reason in failed[0].reason, failed
    assert [d.url for d in store.documents()] == [site.url + "/ok"]


@pytest.mark.parametrize("charset, body", [
    ("iso-8859-1", codecs.BOM_UTF8 + page("Título", "Educação pública").replace(b"", b"")),
    ("utf-8", codecs.BOM_UTF16_LE + page("Título", "Educação “pública” – 5 €").decode()
     .encode("utf-16-le")),
])
def test_a_byte_order_mark_wins_over_the_header(site, store, charset, body):
    site.routes["/sitemap.xml"] = (200, {}, urlset(site.url, ["/bom"]))
    site.routes["/bom"] = (200, {"Content-Type": f"text/html; charset={charset}"}, body)
    run(site.url + "/sitemap.xml", store)
    [document] = store.documents()
    assert document.title == "Título" and "Educação" in document.text


def test_redirect_messages_name_the_loop_and_the_broken_https(site, store):
    site.routes["/loop-a"] = (302, {"Location": "/loop-b"}, b"")
    site.routes["/loop-b"] = (302, {"Location": "/loop-a"}, b"")
    site.routes["/https"] = (301, {"Location": site.url.replace("http:", "https:") + "/x"}, b"")
    site.routes["/sitemap.xml"] = (200, {}, urlset(site.url, ["/loop-a", "/https", "/ok"]))
    site.routes["/ok"] = (200, HTML, page("Ok", "Um artigo de verdade."))
    _, events = run(site.url + "/sitemap.xml", store, retries=0)
    reasons = {e.url.rsplit("/", 1)[-1]: e.reason for e in events if isinstance(e, Failed)}
    assert "a redirect loop (" in reasons["loop-a"] and "/loop-b" in reasons["loop-a"]
    assert "redirects to https://" in reasons["https"]
    assert "but no HTTPS is served there" in reasons["https"]


def test_feeds_are_read_as_feed_readers_read_them():
    """Blank lines before <?xml, HTML entities, xml:base, XHTML content, a date that is none."""
    atom = b"""

<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://s.example/blog/">
<entry><title>A&nbsp;b &amp; c & d</title><link href="post-a"/><updated>ontem</updated>
<content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><p>Ol\xc3\xa1 <b>mundo</b></p>
</div></content></entry>
<entry xml:base="/outro/"><title>B</title><link href="post-b"/>
<updated>2024-01-02T10:00:00Z</updated><content type="html">&lt;p&gt;x&lt;/p&gt;</content></entry>
</feed>"""
    items, _ = parse_feed_page(atom, "http://s.example/atom.xml")
    first, second = items
    assert first.link == "http://s.example/blog/post-a" and first.title == "A\xa0b & c & d"
    assert first.modified is None and "<p>Olá <b>mundo</b></p>" in first.html
    assert second.link == "http://s.example/outro/post-b"
    assert second.modified == "2024-01-02T10:00:00Z"


def test_feed_items_that_link_no_web_page_are_skipped(site, store):
    items = "".join(f"<item><title>{t}</title><link>{link}</link>"
                    f"<content:encoded><![CDATA[<p>Texto de {t}.</p>]]></content:encoded></item>"
                    for t, link in (("js", "javascript:alert(1)"), ("mail", "mailto:a@b.c"),
                                    ("ok", site.url + "/ok")))
    site.routes["/feed"] = (200, {"Content-Type": "application/rss+xml"}, (
        '<?xml version="1.0"?><rss version="2.0" xmlns:content="http://purl.org/rss/1.0/'
        f'modules/content/"><channel><title>F</title>{items}</channel></rss>').encode())
    _, events = run(site.url + "/feed", store)
    assert [d.url for d in store.documents()] == [site.url + "/ok"]
    assert sum("no web page" in e.reason for e in events if isinstance(e, Failed)) == 2


def test_unrendered_shortcodes_leave_their_text_and_plain_brackets():
    text = ('[caption id="attachment_5" align="alignnone" width="300"] Legenda da foto'
            '[/caption] Texto [sic] e [1]. [gallery ids="1,2,3"] [contact-form-7 id="12"'
            ' title="Contato"] fim')
    assert without_shortcodes(text) == "Legenda da foto Texto [sic] e [1]. fim"


def test_tracking_parameters_do_not_make_another_page(site, store):
    """An HTML crawl stored /good, /good?utm_source=x and /good#top with the same text."""
    links = "".join(f'<a href="{href}">{n}</a> ' for n, href in enumerate(
        ["/good", "/good?utm_source=news&utm_medium=mail", "/good?fbclid=abc#top"]))
    site.routes["/"] = (200, HTML, f"<html><body><p>Início {links}</p></body></html>".encode())
    site.routes["/good"] = (200, HTML, page("Bom", "O artigo bom mora aqui."))
    run(site.url + "/", store, source="html")
    assert [d.url for d in store.documents() if d.title == "Bom"] == [site.url + "/good"]
    assert site.asked.count("/good") == 1 and not [p for p in site.asked if "utm" in p]


def test_dead_sitemap_urls_are_not_asked_again_while_their_lastmod_stays(site, store):
    """Two thirds of a sitemap 404: every run asked for all of them again."""
    entries = "".join(f"<url><loc>{site.url}/p{n}</loc><lastmod>2024-01-0{n + 1}</lastmod></url>"
                      for n in range(3))
    site.routes["/sitemap.xml"] = (200, {}, (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{entries}</urlset>").encode())
    site.routes["/p0"] = (200, HTML, page("Zero", "O único artigo vivo."))
    run(site.url + "/sitemap.xml", store)
    first = list(site.asked)
    _, events = run(site.url + "/sitemap.xml", store)
    again = site.asked[len(first):]
    assert not [p for p in again if p in ("/p1", "/p2")] and store.count() == 1
    assert any("2 sitemap URLs answered 404 or 410 last time" in e.message
               for e in events if isinstance(e, Notice))
    site.routes["/p1"] = (200, HTML, page("Um", "Voltou."))
    run(site.url + "/sitemap.xml", store, full=True)  # --full asks every URL
    assert store.count() == 2


def test_an_html_crawl_cut_short_visits_what_it_had_left_first(site, store, monkeypatch):
    """Killed every few seconds, an HTML crawl started again from its start page and walked
    its stored pages first: 94 documents, then 94, 94, 110 (the sweep)."""
    from busca.crawler import spider

    monkeypatch.setattr(spider, "FRONTIER_EVERY", 5)
    links = "".join(f'<a href="/p{n}">{n}</a> ' for n in range(30))
    site.routes["/"] = (200, HTML, f"<html><body><p>Início {links}</p></body></html>".encode())
    for n in range(30):
        site.routes[f"/p{n}"] = (200, HTML, page(f"P{n}", f"Artigo número {n} do site."))
    events = crawl(site.url + "/", store, options=CrawlOptions(**FAST, source="html",
                                                               workers=1))
    stored = 0
    for event in events:  # cut short after 12 pages, as a kill would
        stored += getattr(event, "status", "") == "added"
        if stored == 12:
            events.close()
            break
    before = len(site.asked)
    run(site.url + "/", store, source="html", workers=1)
    fetched = [p for p in site.asked[before:] if p.startswith("/p")]
    assert store.count() == 31  # the 30 pages and the start page
    new = [fetched.index(f"/p{n}") for n in range(12, 30)]  # never fetched before the cut
    old = [fetched.index(f"/p{n}") for n in range(5) if f"/p{n}" in fetched]
    assert max(new) < min(old, default=len(fetched))  # what was left comes first
