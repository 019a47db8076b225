"""Issue 3 "bad input and faults": each gives a clear message and keeps what was stored."""

from __future__ import annotations

import socket
import threading

import pytest

from busca.crawler.crawl import crawl
from busca.crawler.errors import CrawlError
from busca.crawler.events import Failed
from busca.crawler.options import CrawlOptions
from busca.index.home.documents import Store
from busca.fixtures.server import FixtureSite, Faults, load_articles

FAST = {"rate": 500.0, "backoff": 0.02, "timeout": 5.0}


def run(url: str, store: Store, **options):
    events = list(crawl(url, store, options=CrawlOptions(**{**FAST, **options})))
    return events[-1].report, [e for e in events if isinstance(e, Failed)]


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "home") as s:
        yield s


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_host_that_never_answers(store):
    with socket.socket() as silent:  # accepts connections, never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        with pytest.raises(CrawlError, match=r"cannot fetch .*stopped answering \(no data for 0.3 s; a longer --timeout"):
            run(url, store, timeout=0.3, retries=1)
    assert store.count() == 0


def test_dns_failure(store):
    with pytest.raises(CrawlError, match="DNS lookup failed: the name busca-teste.invalid does not"
                                         " resolve; check the URL"):
        run("http://busca-teste.invalid/", store, retries=3)


def test_connection_refused(store):
    url = f"http://127.0.0.1:{free_port()}/"
    with pytest.raises(CrawlError, match="connection refused by 127.0.0.1:.*is the site up"):
        run(url, store, retries=1)


def test_site_without_api_sitemap_or_feed_is_crawled_by_links(store):
    articles = load_articles()[:12]
    with FixtureSite(articles, wordpress=False, sitemap=False, feed=False) as site:
        report, failed = run(site.url, store)
        urls = set(store.hashes())
        expected = {site.link(a) for a in articles}
    assert report.source == "html" and not failed
    assert any("no WordPress API, sitemap or feed found" in n for n in report.notices)
    assert urls == expected


def test_robots_forbidding_everything(store):
    with FixtureSite(load_articles()[:3], robots="User-agent: *\nDisallow: /\n") as site:
        with pytest.raises(CrawlError, match=r"robots.txt of 127.0.0.1:\d+ does not allow busca"
                                             r" to fetch .*; nothing was crawled"):
            run(site.url, store)
        assert [h.path for h in site.hits()] == ["/robots.txt"]


@pytest.mark.parametrize("status", [401, 403])
def test_api_refused_stops_without_hammering(store, status):
    with FixtureSite(load_articles()[:3], faults=Faults(api_status=status)) as site:
        with pytest.raises(CrawlError, match=rf"the site refuses its API to anonymous clients"
                                             rf" \(HTTP {status} .*try --source sitemap"):
            run(site.url, store, source="wordpress", retries=3)
        api_requests = site.hits("/wp-json/")
    assert len(api_requests) == 1


def test_api_refused_in_auto_falls_back_to_the_sitemap(store):
    with FixtureSite(load_articles()[:4], faults=Faults(api_status=401)) as site:
        report, failed = run(site.url, store)
        assert len(site.hits("/wp-json/")) == 1
    assert report.source == "sitemap" and report.counts["added"] == 4 and not failed
    assert any("refuses its API to anonymous clients (HTTP 401" in n for n in report.notices)


def test_malformed_json_on_one_page_is_reported_and_healed_by_the_sweep(store):
    with FixtureSite(per_page_cap=10, faults=Faults(truncate_pages=frozenset({2}))) as site:
        report, failed = run(site.url, store)
        count = store.count()
    assert len(failed) == 1 and "page=2" in failed[0].url
    assert failed[0].reason.startswith("malformed JSON (")
    # The listing was incomplete, so the id sweep found page 2's posts and fetched them.
    assert report.counts["added"] == 39 == count


def test_malformed_json_everywhere_keeps_the_rest_and_a_rerun_completes(store):
    faults = Faults(truncate_pages=frozenset({1, 2}))
    with FixtureSite(per_page_cap=10, faults=faults) as site:
        report, failed = run(site.url, store)
        assert report.counts["added"] == 19 == store.count()
        assert len(failed) == 4  # pages 1 and 2 of the listing, and of the include= request
        site.faults = Faults()
        again, failed = run(site.url, store)
        assert store.count() == 39
    assert again.counts == {"added": 20, "updated": 0, "metadata_updated": 0,
                            "unchanged": 19, "deleted": 0}
    assert not failed


@pytest.mark.parametrize("source, reason", [
    ("wordpress", "empty body; nothing to store"),
    ("sitemap", "no text found in the page (empty article?); nothing stored"),
    ("feed", "empty body in the feed; nothing to store"),
])
def test_article_with_an_empty_body(store, source, reason):
    articles = load_articles()[:3]
    articles[1]["content"] = "<p> </p>\n"
    with FixtureSite(articles) as site:
        report, failed = run(site.url, store, source=source)
        empty = site.link(articles[1])
    assert [(f.url, f.reason) for f in failed] == [(empty, reason)]
    assert report.counts["added"] == 2


@pytest.mark.parametrize("charset_in", ["header", "meta", "none"])
def test_non_utf8_pages_give_the_same_text(tmp_path, charset_in):
    articles = load_articles()[:3]
    texts = {}
    for charset in ("utf-8", "iso-8859-1"):
        faults = Faults(html_charset=charset, charset_in=charset_in)
        with FixtureSite(articles, faults=faults) as site, Store(tmp_path / charset) as store:
            run(site.url, store, source="sitemap")
            texts[charset] = {d.url.split("/", 3)[3]: (d.title, d.text) for d in store.documents()}
    assert len(texts["utf-8"]) == 3 and texts["utf-8"] == texts["iso-8859-1"]
    assert any("ç" in text or "ã" in text for _, text in texts["iso-8859-1"].values())


@pytest.mark.parametrize("charset_in", ["header", "meta"])
def test_latin1_pages_declared_utf8_keep_their_accents(tmp_path, charset_in):
    """An old site's Latin-1 pages sent as UTF-8: stored with U+FFFD for every accented
    letter ("Matr\ufffdcula"), which no question finds."""
    articles = load_articles()[:3]
    texts = {}
    for charset, declared in (("utf-8", None), ("iso-8859-1", "utf-8")):
        faults = Faults(html_charset=charset, charset_in=charset_in, declared_charset=declared)
        with FixtureSite(articles, faults=faults) as site, Store(tmp_path / charset) as store:
            run(site.url, store, source="sitemap")
            texts[charset] = {d.url.split("/", 3)[3]: (d.title, d.text) for d in store.documents()}
    assert len(texts["utf-8"]) == 3 and texts["utf-8"] == texts["iso-8859-1"]
    assert not any("\ufffd" in title + text for title, text in texts["iso-8859-1"].values())


@pytest.mark.parametrize("announced", [True, False])
def test_a_50_mb_response_is_cut_at_the_cap(store, announced):
    articles = load_articles()[:3]
    path = f"/{articles[0]['slug']}/"
    faults = Faults(huge_paths=frozenset({path}), huge_length_header=announced)
    with FixtureSite(articles, faults=faults) as site:
        report, failed = run(site.url, store, source="sitemap")
    assert len(failed) == 1 and failed[0].url.endswith(path)
    assert "over the 10,485,760-byte cap" in failed[0].reason
    assert report.counts["added"] == 2


def test_off_host_redirect_is_refused_unless_allowed(tmp_path):
    articles = load_articles()[:3]
    path = f"/{articles[2]['slug']}/"
    with FixtureSite(articles, faults=Faults(offsite_paths=frozenset({path}))) as site:
        with Store(tmp_path / "a") as store:
            report, failed = run(site.url, store, source="sitemap")
        assert [f.url for f in failed] == [site.url + path[1:]]
        assert "localhost is another host; add --allow-host localhost" in failed[0].reason
        assert report.counts["added"] == 2
        with Store(tmp_path / "b") as store:
            report, failed = run(site.url, store, source="sitemap", allow_hosts=("localhost",))
            assert store.get(site.url + path[1:]) is not None
        assert report.counts["added"] == 3 and not failed


def test_start_url_redirecting_off_host(store):
    with FixtureSite(load_articles()[:1], faults=Faults(offsite_paths=frozenset({"/"}))) as site:
        with pytest.raises(CrawlError, match=r"redirects to http://localhost:\d+/, another host;"
                                             r" crawl that URL instead or add --allow-host localhost"):
            run(site.url, store)


def test_link_next_loop_is_detected(store):
    with FixtureSite(per_page_cap=10, faults=Faults(next_loop=-1)) as site:
        report, failed = run(site.url, store)
        requests = len(site.hits("/wp-json/wp/v2/posts"))
    assert report.counts["added"] == 39 and not failed
    assert any("loops back to page 1 after all 4 pages were read" in n for n in report.notices)
    assert requests == 5  # the probe and four pages, no lap around the loop


def test_link_next_loop_before_the_last_page_goes_on_by_page_number(store):
    with FixtureSite(load_articles()[:6], per_page_cap=2, faults=Faults(next_loop=2)) as site:
        report, failed = run(site.url, store, source="wordpress")
    assert not failed and report.counts["added"] == 6
    assert any("loops back to page 1; going on with page 3 of 3" in n for n in report.notices)


def test_bad_start_urls(store):
    with pytest.raises(CrawlError, match="has no scheme; did you mean https://example.com/a ?"):
        run("example.com/a", store)
    with pytest.raises(CrawlError, match="only http:// and https:// URLs can be crawled"):
        run("ftp://example.com/", store)


def test_bad_options(store):
    with pytest.raises(CrawlError, match="unknown source 'rss'; choose one of auto, wordpress"):
        run("http://127.0.0.1/", store, source="rss")
    with pytest.raises(CrawlError, match='"media" is not a post type but another WordPress'
                                         " collection; choose posts, pages or a custom type's"):
        run("http://127.0.0.1/", store, types=("media",))


def test_malformed_start_url_is_one_crawl_error(store):
    with pytest.raises(CrawlError, match=r"'http://\[abc/' is not a valid URL"):
        run("http://[abc/", store)
    with pytest.raises(CrawlError, match="is not a valid URL"):
        run("http://127.0.0.1:99999/", store)


def test_start_url_without_path_keeps_its_query(store):
    from busca.crawler.crawl import check_url

    assert check_url("http://h:8000?api_key=SECRET") == "http://h:8000/?api_key=SECRET"
    assert check_url("http://h:8000") == "http://h:8000/"


def test_malformed_links_are_skipped():
    from busca.crawler.html import extract_page

    page = extract_page('<a href="http://[abc/x">v6</a><a href="http://h:99999/y">port</a>'
                        '<a href="/ok">ok</a><link rel="canonical" href="http://[x/">',
                        "http://h/")
    assert page.links == ("http://h/ok",) and page.canonical is None


def test_a_bad_loc_in_a_sitemap_is_reported_and_the_rest_crawled(tmp_path):
    import responses

    sitemap = ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
               "<url><loc>https://s.example/a/</loc></url><url><loc>http://[bad/</loc></url>"
               "</urlset>")
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps, \
            Store(tmp_path) as store:
        rsps.get("https://s.example/robots.txt", body="")
        rsps.get("https://s.example/sitemap.xml", body=sitemap)
        rsps.get("https://s.example/a/", body="<article><h1>A</h1><p>Texto.</p></article>",
                 content_type="text/html")
        report, failed = run("https://s.example/sitemap.xml", store, source="sitemap")
    assert report.counts["added"] == 1
    assert [(f.url, f.reason) for f in failed] == [
        ("http://[bad/", "malformed URL in the sitemap https://s.example/sitemap.xml; skipped")]


def test_links_with_bad_hosts_or_ports_do_not_stop_the_html_crawl(tmp_path):
    import responses

    home = ('<html><body><a href="/a/">a</a><a href="http://[abc/x">v6</a>'
            '<a href="https://s.example:99999/y">port</a></body></html>')
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps, \
            Store(tmp_path) as store:
        rsps.get("https://s.example/robots.txt", body="")
        rsps.get("https://s.example/", body=home, content_type="text/html")
        rsps.get("https://s.example/a/", body="<article><h1>A</h1><p>Texto.</p></article>",
                 content_type="text/html")
        report, failed = run("https://s.example/", store, source="html")
        assert store.get("https://s.example/a/").text == "Texto."
    assert not failed


def test_crawl_delay_notice_goes_to_on_notice_once_before_the_wait(store):
    told: list[str] = []
    with FixtureSite(load_articles()[:2], crawl_delay=86400) as site:
        options = CrawlOptions(**{**FAST, "max_retry_after": 0.05})
        events = list(crawl(site.url, store, options=options, on_notice=told.append))
    report = events[-1].report
    assert report.documents == 2
    assert len(told) == 1 and "asks for 86400 s" in told[0] and "0.05 s cap" in told[0]
    assert report.notices.count(told[0]) == 1
    assert not any(getattr(e, "message", None) == told[0] for e in events)


def test_a_wordpress_listing_cut_by_a_failing_page_stops_the_crawl_part_way(store):
    """API page 2 answering 500 after its retries: the posts of page 1 are stored, nothing is
    deleted, and the crawl says it stopped part way (exit 1), where it reported success."""
    articles = load_articles()[:6]
    with FixtureSite(articles, faults=Faults(failing_pages=frozenset({2}))) as site:
        report, _ = run(site.url, store, per_page=3, retries=0, types=("posts",))
    assert report.counts["added"] == 3 and report.counts["deleted"] == 0
    assert report.stopped and "could not be read" in report.stopped
    assert "HTTP 500" in report.stopped and "nothing was deleted" in report.stopped


def test_a_sitemap_that_keeps_failing_stops_the_crawl_part_way(store):
    """A child sitemap answering 500 after the retries: exit 1 (stopped part way), nothing
    deleted; a page that is gone (404) is no such failure."""
    from busca.crawler.errors import ConnectFailed, FetchError, failed

    assert failed(FetchError("u", "HTTP 503", status=503)) and failed(ConnectFailed("u", "x"))
    assert not failed(FetchError("u", "HTTP 404", status=404)) and not failed(ValueError())
    broken = frozenset({"/wp-sitemap-posts-post-2.xml"})
    with FixtureSite(load_articles()[:4], sitemap_size=2,
                     faults=Faults(failing_paths=broken)) as site:
        report, _ = run(site.url + "wp-sitemap.xml", store, source="sitemap", retries=0)
    assert report.counts["added"] == 2 and report.counts["deleted"] == 0
    assert report.stopped and "could not be read" in report.stopped


class _GoneDown:
    """A site on 127.0.0.1 whose robots.txt and sitemap of 20 pages answer, and whose pages
    then answer 503, reset the connection, close it without a word or never answer (`mode`);
    `pages` counts the requests for pages."""

    def __init__(self, mode: str):
        self.mode, self.pages, self._open = mode, 0, []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            head = b""
            while b"\r\n\r\n" not in head and (part := conn.recv(4096)):
                head += part
            path = head.split(b" ")[1] if head.count(b" ") else b""
            locs = "".join(f"<url><loc>{self.url}/p{n}</loc></url>" for n in range(20))
            body = {b"/robots.txt": b"User-agent: *\nAllow: /\n",
                    b"/sitemap.xml": f'<urlset xmlns="http://www.sitemaps.org/schemas/'
                                     f'sitemap/0.9">{locs}</urlset>'.encode()}.get(path)
            if body is None:
                self.pages += 1
            if body is None and self.mode == "hang":
                self._open.append(conn)  # never a word
                continue
            if body is None and self.mode == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
            elif body is None and self.mode == "close":
                pass  # closed without a word
            else:
                status, body = (200, body) if body is not None else (503, b"maintenance")
                conn.sendall(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                             % (status, len(body)) + body)
            conn.close()

    def close(self):
        self.sock.close()
        for conn in self._open:
            conn.close()


@pytest.mark.parametrize("mode", ["503", "reset", "close", "hang"])
def test_a_site_that_goes_down_mid_crawl_stops_the_crawl(store, mode):
    """Every page answering 503 (maintenance), resetting the connection or never answering:
    each of the 20 pages was tried with its retries to the end (a 500-page site down for
    maintenance was hammered for an hour); now the crawl stops after 5 such pages in a row,
    as it does for 429."""
    from busca.crawler.http import THROTTLED_STOP

    site = _GoneDown(mode)
    try:
        report, failures = run(site.url + "/sitemap.xml", store, retries=1, workers=1,
                               timeout=0.3)
    finally:
        site.close()
    assert report.stopped and f"{THROTTLED_STOP} requests in a row" in report.stopped
    assert "crawl again later" in report.stopped
    assert site.pages == THROTTLED_STOP * 2  # one retry each
    said = {"reset": "reset the connection before answering",
            "close": "closed the connection without answering"}.get(mode, "")
    assert said in failures[0].reason and "Error(" not in failures[0].reason  # no repr
