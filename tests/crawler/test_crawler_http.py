"""The polite fetcher, through `responses` (no network): robots, rate, retries, limits."""

from __future__ import annotations

import random

import pytest
import requests
import responses

from busca.crawler.errors import ConnectFailed, Disallowed, FetchError, OffSite, TooLarge
from busca.crawler.http import DEFAULT_USER_AGENT, Fetcher, Politeness, RateLimiter

SITE = "https://site.example"


class FakeTime:
    """A clock that only moves when something sleeps."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def mocked():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps


def fetcher(sleeps: list | None = None, notices: list | None = None, **polite) -> Fetcher:
    polite = {"rate": 1000.0, "backoff": 0.01, **polite}
    f = Fetcher(requests.Session(), Politeness(**polite), hosts={"site.example"},
                on_notice=(notices if notices is not None else []).append,
                sleep=(sleeps if sleeps is not None else []).append, rng=random.Random(7))
    return f


def robots(mocked, text: str = "", status: int = 200) -> None:
    mocked.get(f"{SITE}/robots.txt", body=text, status=status)


def test_sends_the_user_agent_and_reads_robots_once(mocked):
    robots(mocked)
    mocked.get(f"{SITE}/a", body="a")
    mocked.get(f"{SITE}/b", body="b")
    f = fetcher()
    assert f.get(f"{SITE}/a").body == b"a"
    assert f.get(f"{SITE}/b").body == b"b"
    urls = [c.request.url for c in mocked.calls]
    assert urls == [f"{SITE}/robots.txt", f"{SITE}/a", f"{SITE}/b"]
    assert {c.request.headers["User-Agent"] for c in mocked.calls} == {DEFAULT_USER_AGENT}
    assert DEFAULT_USER_AGENT.startswith("busca/")
    assert f.requests == 3


def test_robots_disallow_is_refused_without_a_request(mocked):
    robots(mocked, "User-agent: *\nDisallow: /privado/\n")
    with pytest.raises(Disallowed, match="robots.txt disallows"):
        fetcher().get(f"{SITE}/privado/x")
    assert [c.request.url for c in mocked.calls] == [f"{SITE}/robots.txt"]


def test_missing_robots_allows_everything(mocked):
    robots(mocked, "not found", status=404)
    mocked.get(f"{SITE}/x", body="ok")
    assert fetcher().get(f"{SITE}/x").status == 200


def test_robots_server_error_stops_the_site(mocked):
    robots(mocked, "oops", status=503)
    with pytest.raises(FetchError, match="robots.txt answers HTTP 503 after 2 attempts"):
        fetcher(retries=1).get(f"{SITE}/x")


def test_crawl_delay_slows_the_host_down(mocked):
    robots(mocked, "User-agent: *\nCrawl-delay: 3\n")
    mocked.get(f"{SITE}/x", body="ok")
    notices: list[str] = []
    f = fetcher(notices=notices)
    f.get(f"{SITE}/x")
    assert f.limiter._intervals["site.example"] == 3.0
    assert "asks for 3 s between requests" in notices[0]


def test_429_waits_retry_after_then_succeeds(mocked):
    robots(mocked)
    mocked.get(f"{SITE}/x", status=429, headers={"Retry-After": "2"})
    mocked.get(f"{SITE}/x", body="ok")
    sleeps: list[float] = []
    assert fetcher(sleeps).get(f"{SITE}/x").body == b"ok"
    assert sleeps and max(sleeps) == pytest.approx(2.0, abs=0.05)


def test_retry_after_http_date_is_understood(mocked):
    from email.utils import formatdate
    import time

    robots(mocked)
    mocked.get(f"{SITE}/x", status=503, headers={"Retry-After": formatdate(time.time() + 5,
                                                                            usegmt=True)})
    mocked.get(f"{SITE}/x", body="ok")
    sleeps: list[float] = []
    fetcher(sleeps).get(f"{SITE}/x")
    assert 3.5 < max(sleeps) <= 5.0


def test_too_long_retry_after_is_capped_and_reported(mocked):
    robots(mocked)
    mocked.get(f"{SITE}/x", status=429, headers={"Retry-After": "3600"})
    mocked.get(f"{SITE}/x", body="ok")
    sleeps, notices = [], []
    fetcher(sleeps, notices, max_retry_after=10).get(f"{SITE}/x")
    assert max(sleeps) == pytest.approx(10, abs=0.05)
    assert "asked to wait 3600 s" in notices[0] and "10 s cap" in notices[0]


def test_server_errors_are_retried_with_growing_backoff_then_reported(mocked):
    robots(mocked)
    for _ in range(4):
        mocked.get(f"{SITE}/x", status=500)
    sleeps: list[float] = []
    with pytest.raises(FetchError, match="HTTP 500 after 4 attempts"):
        fetcher(sleeps, backoff=1.0, retries=3).get(f"{SITE}/x")
    pauses = [s for s in sleeps if s > 0.1]  # the rest is the 1000/s rate limit
    assert len(pauses) == 3
    for attempt, pause in enumerate(pauses):  # base * 2^n plus up to as much jitter
        assert 2**attempt <= pause <= 2 ** (attempt + 1) + 0.05


def test_connection_refused_is_retried_and_explained(mocked):
    robots(mocked)
    refused = requests.exceptions.ConnectionError(
        "HTTPConnectionPool: Failed to establish a new connection: [Errno 111] Connection refused")
    mocked.get(f"{SITE}/x", body=refused)
    mocked.get(f"{SITE}/x", body="ok")
    assert fetcher().get(f"{SITE}/x").body == b"ok"
    mocked.replace(responses.GET, f"{SITE}/x", body=refused)
    with pytest.raises(ConnectFailed, match="connection refused by site.example"):
        fetcher(retries=2).get(f"{SITE}/x")


def test_dns_failure_is_not_retried(mocked):
    mocked.get(f"{SITE}/robots.txt", body=requests.exceptions.ConnectionError(
        "NameResolutionError: Failed to resolve 'site.example' ([Errno -2] Name or service not known)"))
    with pytest.raises(ConnectFailed, match="DNS lookup failed: the name site.example"):
        fetcher().get(f"{SITE}/x")
    assert len(mocked.calls) == 1


def test_timeouts_are_explained(mocked):
    mocked.get(f"{SITE}/robots.txt", body=requests.exceptions.ConnectTimeout("timed out"))
    with pytest.raises(ConnectFailed, match="no connection to site.example within 3 s"):
        fetcher(retries=0, timeout=3).get(f"{SITE}/x")


def test_content_length_over_the_cap_is_refused_unread(mocked):
    robots(mocked)
    mocked.get(f"{SITE}/big", body=b"x" * 5000, headers={"Content-Length": "5000"},
               content_type="application/pdf")
    with pytest.raises(TooLarge, match="5,000 bytes is over the 1,000-byte cap; to index it,"
                                       " download it and run busca add FILE"):
        fetcher(max_bytes=1000).get(f"{SITE}/big")


def test_streamed_body_over_the_cap_is_cut(mocked):
    robots(mocked)
    mocked.get(f"{SITE}/big", body=b"x" * 300_000, auto_calculate_content_length=False)
    with pytest.raises(TooLarge, match="over the 100,000-byte cap; to index it, download"):
        fetcher(max_bytes=100_000).get(f"{SITE}/big")
    mocked.get(f"{SITE}/sitemap.xml", body=b"x" * 300_000, content_type="application/xml")
    with pytest.raises(TooLarge, match="over the 100,000-byte cap$"):  # no file to add
        fetcher(max_bytes=100_000).get(f"{SITE}/sitemap.xml")


def test_redirects_are_followed_on_the_same_site(mocked):
    robots(mocked)
    mocked.get(f"{SITE}/old", status=301, headers={"Location": "/new"})
    mocked.get(f"{SITE}/new", status=302, headers={"Location": "https://www.site.example/x"})
    mocked.get("https://www.site.example/robots.txt", body="")
    mocked.get("https://www.site.example/x", body="here")
    response = fetcher().get(f"{SITE}/old")
    assert (response.url, response.body) == ("https://www.site.example/x", b"here")


def test_off_host_redirect_is_refused_with_the_fix(mocked):
    robots(mocked)
    mocked.get(f"{SITE}/x", status=302, headers={"Location": "https://elsewhere.example/x"})
    with pytest.raises(OffSite, match="add --allow-host elsewhere.example"):
        fetcher().get(f"{SITE}/x")


def test_allowed_host_is_followed(mocked):
    robots(mocked)
    mocked.get(f"{SITE}/x", status=302, headers={"Location": "https://cdn.example/x"})
    mocked.get("https://cdn.example/robots.txt", status=404)
    mocked.get("https://cdn.example/x", body="ok")
    assert fetcher(allow_hosts=("cdn.example",)).get(f"{SITE}/x").body == b"ok"


def test_redirect_loop_ends(mocked):
    robots(mocked)
    mocked.get(f"{SITE}/a", status=302, headers={"Location": "/b"})
    mocked.get(f"{SITE}/b", status=302, headers={"Location": "/a"})
    with pytest.raises(FetchError, match="more than 5 redirects"):
        fetcher().get(f"{SITE}/a")


@pytest.mark.parametrize("url", ["ftp://site.example/x", "file:///etc/passwd", "mailto:a@b"])
def test_only_http_and_https(url):
    with pytest.raises(FetchError, match="only http:// and https://"):
        fetcher().get(url)


def test_malformed_json_names_the_url(mocked):
    robots(mocked)
    mocked.get(f"{SITE}/api", body='[{"id": 1, "title": ')
    with pytest.raises(FetchError, match=r"api: malformed JSON .*20 bytes received"):
        fetcher().get(f"{SITE}/api").json()


def test_rate_limiter_spaces_request_starts():
    t = FakeTime()
    limiter = RateLimiter(2.0, clock=t.clock, sleep=t.sleep)
    starts = []
    for _ in range(5):
        limiter.wait("h")
        starts.append(t.now)
    assert [b - a for a, b in zip(starts, starts[1:])] == [0.5] * 4
    limiter.wait("other")  # another host is not held back
    assert t.now == starts[-1]


def test_an_oversleeping_wait_moves_the_next_slot():
    t = FakeTime()
    late = iter([0.06, 0.0, 0.0])  # a busy machine wakes the second request 60 ms late
    limiter = RateLimiter(10.0, clock=t.clock, sleep=lambda s: t.sleep(s + next(late)))
    starts = []
    for _ in range(4):
        limiter.wait("h")
        starts.append(t.now)
    assert min(b - a for a, b in zip(starts, starts[1:])) == pytest.approx(0.1)


def test_rate_limiter_hold_and_slow_down():
    t = FakeTime()
    limiter = RateLimiter(10.0, clock=t.clock, sleep=t.sleep)
    limiter.wait("h")
    limiter.hold("h", 3.0)
    limiter.wait("h")
    assert t.now == pytest.approx(1003.0)
    limiter.slow_down("h", 1.0)
    limiter.wait("h")
    before = t.now
    limiter.wait("h")
    assert t.now - before == pytest.approx(1.0)


def test_an_unreadable_robots_txt_is_asked_for_once(mocked):
    mocked.get(f"{SITE}/robots.txt", status=500)
    f = fetcher(retries=1)
    for path in ("/a", "/b"):
        with pytest.raises(FetchError, match="robots.txt answers HTTP 500"):
            f.get(f"{SITE}{path}")
    assert len(mocked.calls) == 2  # one request and its retry, not one per URL


def test_a_hold_made_while_a_request_waits_is_waited_out():
    t = FakeTime()
    limiter = RateLimiter(10.0, clock=t.clock, sleep=lambda s: (t.sleep(s), held or hold()))
    held: list = []

    def hold():  # another worker gets a 429 while this one sleeps before its turn
        held.append(True)
        limiter.hold("h", 5.0)

    limiter.wait("h")
    limiter.wait("h")
    assert held and t.now >= 1000.1 + 5.0


def test_no_request_before_retry_after_with_several_workers(tmp_path, monkeypatch):
    import time
    from busca.crawler.crawl import crawl
    from busca.crawler.options import CrawlOptions
    from busca.index.home.documents import Store
    from busca.fixtures.server import Faults, FixtureSite, load_articles

    holds, starts = [], []
    hold, wait = RateLimiter.hold, RateLimiter.wait

    def holding(self, host, seconds):
        holds.append((time.monotonic(), time.monotonic() + seconds))
        hold(self, host, seconds)

    def waiting(self, host):
        wait(self, host)
        starts.append(time.monotonic())

    monkeypatch.setattr(RateLimiter, "hold", holding)
    monkeypatch.setattr(RateLimiter, "wait", waiting)
    faults = Faults(throttle_every=4, retry_after="1")
    workers = 3
    with FixtureSite(load_articles()[:8], faults=faults) as site, Store(tmp_path) as store:
        options = CrawlOptions(source="sitemap", rate=20.0, workers=workers, backoff=0.01)
        list(crawl(site.url, store, options=options))
        hits = site.hits()
    throttled = [h.time for h in hits if h.status == 429]
    assert throttled and len(holds) >= len(throttled)
    for made, until in holds:  # no request starts once a 429 is read, until its hold ends
        assert not [s for s in starts if made < s < until - 0.01], (made, until, starts)
    for t in throttled:  # only requests already on their way arrive after the 429
        arrived = [h for h in hits if t < h.time < t + 0.95]
        assert len(arrived) <= workers - 1, (t, arrived)


def test_a_huge_crawl_delay_is_capped_and_announced_before_the_wait(mocked):
    robots(mocked, "User-agent: *\nCrawl-delay: 86400\n")
    mocked.get(f"{SITE}/x", body="ok")
    order: list = []
    f = Fetcher(requests.Session(), Politeness(rate=1000.0, max_retry_after=30),
                hosts={"site.example"}, on_notice=lambda m: order.append(("notice", m)),
                sleep=lambda s: order.append(("sleep", s)))
    f.get(f"{SITE}/x")
    f.get(f"{SITE}/x")
    assert order[0][0] == "notice" and "asks for 86400 s" in order[0][1]
    assert "30 s cap" in order[0][1]
    assert max(s for kind, s in order if kind == "sleep") == pytest.approx(30, abs=0.05)


def test_bad_redirect_location_is_a_fetch_error(mocked):
    robots(mocked)
    mocked.get(f"{SITE}/x", status=302, headers={"Location": "http://[bad/"})
    with pytest.raises(FetchError, match="bad redirect Location"):
        fetcher().get(f"{SITE}/x")


@pytest.mark.parametrize("url", ["http://[abc/x", "http://site.example:99999/y"])
def test_malformed_urls_are_fetch_errors(url):
    with pytest.raises(FetchError, match="malformed URL"):
        fetcher().check(url)


@pytest.mark.parametrize("raw, sent", [
    ("/ação".encode().decode("latin-1"), "/a%C3%A7%C3%A3o"),  # raw UTF-8 bytes
    ("/a\xe7\xe3o", "/a%E7%E3o"),  # raw Latin-1 bytes (an old site's)
])
def test_a_redirect_with_raw_non_ascii_bytes_is_followed_percent_encoded(raw, sent):
    """A real server sends Location's bytes unescaped (http.client reads them as Latin-1):
    they were read as mojibake (/aÃ§Ã£o, asked as /a%C3%83%C2%A7…) or failed with "bad
    redirect Location ('utf-8' codec can't decode byte 0xe7 …)"; browsers send each byte
    percent-encoded."""
    from routed import Site
    site = Site()
    try:
        site.routes["/old"] = (301, {"Location": raw}, b"")
        site.routes[sent] = (200, {"Content-Type": "text/plain"}, b"ok")
        f = Fetcher(requests.Session(), Politeness(rate=1000.0), hosts={"127.0.0.1"})
        response = f.get(site.url + "/old")
        assert (response.status, response.body) == (200, b"ok")
        assert response.url == site.url + sent and site.asked[-1] == sent
    finally:
        site.close()


def test_a_robots_txt_redirect_to_another_host_is_not_followed():
    """A crawled site controls its robots.txt: its redirect was followed to any host (one
    of 127.0.0.1, 169.254.169.254, an intranet's), which busca then fetched for the site
    owner (every other redirect stays on the crawl's hosts). Now the crawl of that site
    stops naming the redirect and --allow-host, and nothing else is asked."""
    from routed import Site
    inner = Site()
    inner.routes["/latest/meta-data/"] = (200, {}, b"secret")
    elsewhere = inner.url.replace("127.0.0.1", "localhost")  # another host name
    site = Site(robots=(302, {"Location": elsewhere + "/latest/meta-data/"}, b""))
    try:
        site.routes["/x"] = (200, {"Content-Type": "text/plain"}, b"ok")
        f = Fetcher(requests.Session(), Politeness(rate=1000.0), hosts={"127.0.0.1"})
        with pytest.raises(FetchError, match="robots.txt answers a redirect to .*localhost.* add"
                                             " --allow-host localhost"):
            f.get(site.url + "/x")
        assert inner.asked == [] and site.asked == ["/robots.txt"]
    finally:
        site.close()
        inner.close()


def test_a_robots_txt_redirect_on_the_site_is_followed_from_where_it_points():
    """Within the site a robots.txt redirect is followed, each Location read against the
    URL that sent it (it was read against /robots.txt's)."""
    from routed import Site
    site = Site(robots=(301, {"Location": "/rules/robots"}, b""))
    try:
        site.routes["/rules/robots"] = (302, {"Location": "current.txt"}, b"")
        site.routes["/rules/current.txt"] = (200, {}, b"User-agent: *\nDisallow: /x\n")
        f = Fetcher(requests.Session(), Politeness(rate=1000.0), hosts={"127.0.0.1"})
        with pytest.raises(Disallowed):
            f.get(site.url + "/x")
    finally:
        site.close()
