"""Generic JSON paging: page numbers, offsets (with a total), cursors, a has-more flag and
MediaWiki's continue object; the shapes of Strapi, Contentful, Substack and Zendesk."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from busca.crawler.crawl import crawl
from busca.crawler.options import CrawlOptions, JsonApiOptions
from busca.crawler.paging import MISSING, lookup, next_page, with_param
from busca.index.home.documents import Store

API = "https://api.s.example/items"
ITEMS = [{"url": f"https://s.example/{n}", "title": f"T{n}", "content": f"texto {n}",
          "tags": [{"name": "a"}, {"name": f"b{n}"}]} for n in range(7)]


def crawl_with(store, url=API, **opts):
    options = CrawlOptions(source="json", rate=1000, json=JsonApiOptions(**opts))
    return list(crawl(url, store, options=options))[-1].report


def serve(rsps, answer):
    """Serve API with answer(query) -> JSON object, recording each query."""
    queries = []

    def reply(request):
        query = {k: v[-1] for k, v in parse_qs(urlsplit(request.url).query).items()}
        queries.append(query)
        return 200, {}, json.dumps(answer(query))

    rsps.get("https://api.s.example/robots.txt", status=404)
    rsps.add_callback(responses.GET, API, callback=reply)
    return queries


@pytest.fixture
def store(tmp_path):
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps, \
            Store(tmp_path) as s:
        yield rsps, s


def test_lookup_maps_a_star_over_lists():
    assert lookup({"a": [{"n": 1}, {"n": 2}, {}]}, "a.*.n") == [1, 2]
    assert lookup({"a": 3}, "b.*.n") is MISSING


def test_offset_and_limit_stop_at_the_total(store):  # Contentful: skip, limit, total
    rsps, s = store
    queries = serve(rsps, lambda q: {
        "items": ITEMS[int(q.get("skip", 0)):int(q.get("skip", 0)) + 3], "total": len(ITEMS)})
    report = crawl_with(s, API + "?limit=3", items="items", offset_param="skip",
                        total_path="total", meta=(("tags", "tags.*.name"),))
    assert report.counts["added"] == 7
    assert [q.get("skip") for q in queries] == [None, "3", "6"]  # no empty page asked for
    assert s.get("https://s.example/4").meta == {"tags": ["a", "b4"]}


def test_offset_without_a_total_stops_at_an_empty_page(store):  # Substack: offset, limit
    rsps, s = store
    queries = serve(rsps, lambda q: ITEMS[int(q.get("offset", 0)):int(q.get("offset", 0)) + 4])
    assert crawl_with(s, API + "?limit=4", offset_param="offset").counts["added"] == 7
    assert [q.get("offset") for q in queries] == [None, "4", "7"]


def test_page_parameter_with_brackets(store):  # Strapi: pagination[page], meta.pagination
    rsps, s = store

    def strapi(q):
        page = int(q.get("pagination[page]", 1))
        return {"data": ITEMS[(page - 1) * 3: page * 3],
                "meta": {"pagination": {"page": page, "pageCount": 3}}}

    queries = serve(rsps, strapi)
    report = crawl_with(s, API, items="data", page_param="pagination[page]")
    assert report.counts["added"] == 7 and len(queries) == 4  # the 4th page is empty


def test_cursor_until_has_more_is_false(store):  # Zendesk-like cursor pages
    rsps, s = store

    def cursor(q):
        start = int(q.get("page[after]", "c0")[1:])
        chunk = ITEMS[start:start + 2]
        return {"articles": chunk, "meta": {"has_more": start + 2 < len(ITEMS),
                                            "after_cursor": f"c{start + 2}"}}

    queries = serve(rsps, cursor)
    report = crawl_with(s, items="articles", cursor_param="page[after]",
                        cursor_path="meta.after_cursor", more_path="meta.has_more")
    assert report.counts["added"] == 7
    assert [q.get("page[after]") for q in queries] == [None, "c2", "c4", "c6"]


def test_continue_object_is_merged_into_the_first_request(store):  # MediaWiki
    rsps, s = store

    def wiki(q):
        start = int(q.get("gapcontinue", 0))
        data = {"query": {"pages": ITEMS[start:start + 3]}}
        if start + 3 < len(ITEMS):
            data["continue"] = {"gapcontinue": str(start + 3), "continue": "gapcontinue||"}
        return data

    queries = serve(rsps, wiki)
    report = crawl_with(s, API + "?action=query&generator=allpages", items="query.pages",
                        continue_path="continue")
    assert report.counts["added"] == 7
    assert queries[1] == {"action": "query", "generator": "allpages", "gapcontinue": "3",
                          "continue": "gapcontinue||"}
    assert queries[2]["gapcontinue"] == "6"


def test_next_page_without_paging_options_is_none():
    assert next_page({"items": [1]}, JsonApiOptions(), API, first=API, count=1) is None
    assert with_param(API + "?a=1&p=2", "p", 3) == API + "?a=1&p=3"
