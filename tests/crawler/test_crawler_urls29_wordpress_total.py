"""A WordPress listing whose X-WP-TotalPages is too small (and no Link header): the posts read
are compared with X-WP-Total, a full page asks for the next one, and a listing that ends short
of its count deletes nothing."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from busca.crawler.crawl import crawl
from busca.crawler.events import Notice
from busca.crawler.options import CrawlOptions
from busca.index.home.documents import Store
from routed import wordpress_home

SITE = "https://blog.example"
FAST = {"rate": 1000.0, "backoff": 0.01}
RIGHT = {"X-WP-TotalPages": "2", "X-WP-Total": "150"}


def run(store, **options):
    return list(crawl(SITE, store, options=CrawlOptions(**{**FAST, **options})))


def many(first: int, last: int) -> list[dict]:
    return [{"id": i, "link": f"{SITE}/p{i}/", "modified": "2024-02-01T10:00:00",
             "modified_gmt": "2024-02-01T10:00:00", "title": {"rendered": f"Post {i}"},
             "content": {"rendered": f"<p>Corpo {i}</p>", "protected": False}}
            for i in range(first, last + 1)]


@pytest.fixture
def api(tmp_path):
    """A mocked WordPress site answering /wp/v2/posts from `pages[number]`."""
    pages: dict[int, tuple[int, list | dict, dict]] = {}

    def reply(request):
        query = parse_qs(urlsplit(request.url).query)
        if query.get("per_page") == ["1"]:
            return 200, {}, "[]"  # the discovery probe
        status, body, headers = pages.get(int(query.get("page", ["1"])[0]),
                                          (400, {"code": "rest_post_invalid_page_number"}, {}))
        return status, headers, json.dumps(body)

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        wordpress_home(rsps, SITE, "User-agent: *\nDisallow: /wp-admin/\n")
        rsps.add_callback(responses.GET, f"{SITE}/wp-json/wp/v2/posts", callback=reply)
        with Store(tmp_path) as store:
            yield rsps, store, pages


def asked_pages(rsps) -> list[int]:
    return [int(parse_qs(urlsplit(c.request.url).query).get("page", ["1"])[0])
            for c in rsps.calls if "/wp/v2/posts" in c.request.url and "per_page=100" in
            c.request.url]


def deleted(events) -> list:
    return [e for e in events if getattr(e, "status", "") == "deleted"]


@pytest.mark.parametrize("headers", [
    {"X-WP-TotalPages": "1", "X-WP-Total": "150"},  # a page count too small, no Link
    {"X-WP-TotalPages": "1"},  # a page count too small and no total: a full page asks on
])
def test_a_page_count_too_small_is_read_past_and_deletes_nothing(api, headers):
    rsps, store, pages = api
    pages.update({1: (200, many(1, 100), RIGHT), 2: (200, many(101, 150), RIGHT)})
    run(store)
    assert store.count() == 150
    pages.update({1: (200, many(1, 100), headers), 2: (200, many(101, 150), {})})
    events = run(store)
    assert not deleted(events) and store.count() == 150
    assert not [e for e in events if isinstance(e, Notice) and "X-WP-Total" in e.message]


def test_a_listing_that_ends_short_of_its_total_deletes_nothing_and_says_so(api):
    rsps, store, pages = api
    pages.update({1: (200, many(1, 100), RIGHT), 2: (200, many(101, 150), RIGHT)})
    run(store)
    pages.clear()  # page 2 is now refused as past the end, though X-WP-Total says 150
    pages[1] = (200, many(1, 100), {"X-WP-TotalPages": "1", "X-WP-Total": "150"})
    events = run(store)
    assert not deleted(events) and store.count() == 150
    assert any("ended after 100 of the 150 posts its X-WP-Total counts" in e.message
               for e in events if isinstance(e, Notice))


def test_a_full_last_page_that_completes_the_total_asks_no_further(api):
    rsps, store, pages = api
    exact = {"X-WP-TotalPages": "2", "X-WP-Total": "200"}
    pages.update({1: (200, many(1, 100), exact), 2: (200, many(101, 200), exact)})
    events = run(store)
    assert asked_pages(rsps) == [1, 2] and store.count() == 200
    assert not [e for e in events if isinstance(e, Notice) and "X-WP-Total" in e.message]
