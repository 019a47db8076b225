"""Generic JSON API source: dotted paths, URL templates, page parameter or next link."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from busca.crawler.crawl import crawl
from busca.crawler.events import Failed
from busca.crawler.jsonapi import _MISSING, lookup
from busca.crawler.options import CrawlOptions, JsonApiOptions
from busca.index.home.documents import Store
from busca.fixtures.server import FixtureSite, load_articles

API = "https://api.s.example/v1/artigos"
ARTIGOS = [
    {"slug": "prazo-de-matricula", "titulo": "Prazo de matrícula",
     "corpo": {"html": "<p>São <b>sete</b> dias.</p>"}, "atualizado": "2024-03-01"},
    {"slug": "monitoria", "titulo": "Monitoria", "corpo": {"html": "Texto simples.\n\nOutro."},
     "atualizado": "2024-03-02"},
]


def test_lookup():
    data = {"data": {"items": [{"a": 1}, {"a": 2}]}, "n": None}
    assert lookup(data, "data.items.1.a") == 2
    assert lookup(data, "") is data
    assert lookup(data, "data.items.-1.a") == 2
    assert lookup(data, "data.nada") is _MISSING
    assert lookup(data, "data.items.7") is _MISSING
    assert lookup(data, "n") is None


def options(**json_options) -> CrawlOptions:
    return CrawlOptions(source="json", rate=1000, json=JsonApiOptions(**json_options))


SEED_LIKE = dict(items="dados", url="https://s.example/artigos/{slug}", title="titulo",
                 body="corpo.html", modified="atualizado", page_param="pagina")


@pytest.fixture
def api(tmp_path):
    pages = {1: ARTIGOS[:1], 2: ARTIGOS[1:], 3: []}

    def reply(request):
        page = int(parse_qs(urlsplit(request.url).query).get("pagina", ["1"])[0])
        return 200, {}, json.dumps({"dados": pages[page], "total": 2})

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps, Store(tmp_path) as s:
        rsps.get("https://api.s.example/robots.txt", status=404)
        rsps.add_callback(responses.GET, API, callback=reply)
        yield rsps, s, pages


def test_page_parameter_until_an_empty_page(api):
    rsps, store, _ = api
    report = list(crawl(API + "?pagina=1", store, options=options(**SEED_LIKE)))[-1].report
    assert report.source == "json" and report.counts["added"] == 2
    document = store.get("https://s.example/artigos/prazo-de-matricula")
    assert (document.title, document.text, document.modified) == (
        "Prazo de matrícula", "São sete dias.", "2024-03-01")
    assert store.get("https://s.example/artigos/monitoria").text == "Texto simples.\nOutro."
    assert len([c for c in rsps.calls if c.request.url.startswith(API)]) == 3


def test_a_date_is_stored_as_iso_8601_or_left_out_with_one_notice(api):
    """--json-modified stored any value as text: "2024-03-02 10:00:00" and an epoch number
    compared as text by --filter modified>= (1714567890 passed "modified>=2024-01-01",
    an RSS-style date of 2023 too). Now RFC 2822 and ISO 8601's other forms are ISO 8601, and
    a date no form reads is left out, said once."""
    rsps, store, pages = api
    pages[1] = [{**ARTIGOS[0], "atualizado": "Tue, 05 Dec 2023 10:00:00 +0000"}]
    pages[2] = [{**ARTIGOS[1], "atualizado": 1714567890},
                {**ARTIGOS[1], "slug": "outro", "atualizado": "01/05/2024"}]
    events = list(crawl(API, store, options=options(**SEED_LIKE)))
    stored = {d.url.rsplit("/", 1)[1]: d.modified for d in store.documents()}
    assert stored == {"prazo-de-matricula": "2023-12-05T10:00:00+00:00", "monitoria": None,
                      "outro": None}
    said = [n for n in events[-1].report.notices if "stored without a date" in n]
    assert len(said) == 1 and "'1714567890'" in said[0] and "ISO 8601" in said[0], said


def test_items_removed_from_the_api_are_deleted(api):
    rsps, store, pages = api
    list(crawl(API, store, options=options(**SEED_LIKE)))
    pages[2] = []
    report = list(crawl(API, store, options=options(**SEED_LIKE)))[-1].report
    assert report.counts == {"added": 0, "updated": 0, "metadata_updated": 0,
                             "unchanged": 1, "deleted": 1}


def test_missing_fields_name_the_fix(api):
    rsps, store, _ = api
    events = list(crawl(API, store, options=options(**{**SEED_LIKE, "body": "texto"})))
    failed = [e for e in events if isinstance(e, Failed)]
    assert "no text at 'texto' (the item has: slug, titulo, corpo, atualizado); set --json-body" \
        in failed[0].reason
    report = events[-1].report
    assert report.documents == 0


def test_wrong_items_path_stops_with_the_keys(api):
    rsps, store, _ = api
    report = list(crawl(API, store, options=options(**{**SEED_LIKE, "items": "data"})))[-1].report
    assert report.stopped == (f"no list of items at 'data' of {API} (its keys: dados, total);"
                              " set --json-items to the dotted path of the list")


def test_api_that_needs_a_key(tmp_path):
    with FixtureSite(load_articles()[:2], ghost=True) as site, Store(tmp_path) as store:
        url = site.url + "ghost/api/content/posts/"
        report = list(crawl(url, store, options=options(items="posts")))[-1].report
    assert report.stopped.startswith("the API refuses anonymous clients (HTTP 401")


def test_ghost_content_api_with_next_page_number(tmp_path):
    ghost = dict(items="posts", url="url", title="title", body="html", modified="updated_at",
                 page_param="page", next_path="meta.pagination.next")
    articles = load_articles()[:7]
    with FixtureSite(articles, ghost=True) as site, Store(tmp_path) as store:
        url = site.url + "ghost/api/content/posts/?key=abc&limit=3"
        report = list(crawl(url, store, options=options(**ghost)))[-1].report
        calls = [h.path for h in site.hits("/ghost/")]
        texts = {d.url: d.text for d in store.documents()}
    with FixtureSite(articles) as site, Store(tmp_path / "wp") as store:
        list(crawl(site.url, store, options=CrawlOptions(rate=1000)))
        wp_texts = {d.url.split("/", 3)[3]: d.text for d in store.documents()}
    assert report.counts["added"] == 7 and len(calls) == 3
    assert {u.split("/", 3)[3]: t for u, t in texts.items()} == wp_texts


def test_next_link_loop_is_stopped(tmp_path):
    body = {"items": [{"url": "/a", "title": "A", "content": "texto"}], "next": API}
    with responses.RequestsMock() as rsps, Store(tmp_path) as store:
        rsps.get("https://api.s.example/robots.txt", body="")
        rsps.get(API, json=body)
        events = list(crawl(API, store, options=options(items="items", next_path="next")))
    failed = [e for e in events if isinstance(e, Failed)]
    assert "a paging loop" in failed[0].reason
    assert events[-1].report.counts["added"] == 1


def test_a_listing_with_failed_items_deletes_nothing(api):
    rsps, store, _ = api
    list(crawl(API, store, options=options(**SEED_LIKE)))
    events = list(crawl(API, store, options=options(**{**SEED_LIKE, "body": "texto"})))
    report = events[-1].report
    assert report.counts["deleted"] == 0 and store.count() == 2
    assert any("nothing deleted" in n for n in report.notices)


def test_one_page_read_without_paging_options_deletes_nothing(api):
    rsps, store, _ = api
    list(crawl(API, store, options=options(**SEED_LIKE)))
    unpaged = {k: v for k, v in SEED_LIKE.items() if k != "page_param"}
    report = list(crawl(API, store, options=options(**unpaged)))[-1].report
    assert report.counts == {"added": 0, "updated": 0, "metadata_updated": 0,
                             "unchanged": 1, "deleted": 0}
    assert store.count() == 2
    assert any("without --json-page-param or --json-next" in n for n in report.notices)


def test_deleting_more_than_the_listing_returned_is_refused(tmp_path):
    items = [{"url": f"/a{i}", "content": f"texto {i}"} for i in range(3)]
    with responses.RequestsMock() as rsps, Store(tmp_path) as store:
        rsps.get("https://api.s.example/robots.txt", body="")
        rsps.get(API, json={"items": items, "next": None})
        list(crawl(API, store, options=options(items="items", next_path="next")))
        rsps.replace(responses.GET, API, json={"items": items[:1], "next": None})
        report = list(crawl(API, store, options=options(items="items", next_path="next")))[-1].report
        assert store.count() == 3
    assert report.counts["deleted"] == 0
    assert any("listed 1 items but 2 stored documents are missing" in n for n in report.notices)


@pytest.mark.parametrize("template", ["{slug.x}", "{slug!z}", "{slug", "x{0}", "{slug[0].y}"])
def test_bad_url_templates_fail_the_items_without_a_traceback(api, template):
    rsps, store, _ = api
    events = list(crawl(API, store, options=options(**{**SEED_LIKE, "url": template})))
    failed = [e for e in events if isinstance(e, Failed)]
    assert len(failed) == 2 and all("set --json-url" in f.reason for f in failed)
    assert events[-1].report.documents == 0


def test_an_api_that_ignores_the_page_parameter_stops_at_the_repeated_page(tmp_path):
    """It fetched the same page again and again (13,825 "documents" for 2 in two minutes)."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps, \
            Store(tmp_path) as store:
        rsps.get("https://api.s.example/robots.txt", status=404)
        rsps.get(API, json={"dados": ARTIGOS})  # every page, whatever ?pagina= says
        events = list(crawl(API, store, options=options(**SEED_LIKE)))
        fetched = [c for c in rsps.calls if c.request.url.startswith(API)]
        stored = store.count()
    report = events[-1].report
    assert report.counts == {"added": 2, "updated": 0, "metadata_updated": 0,
                             "unchanged": 0, "deleted": 0}
    failed = [e for e in events if isinstance(e, Failed)]
    assert len(failed) == 1 and "ignores its paging parameter" in failed[0].reason
    assert len(fetched) == 2 and stored == 2


def test_a_title_path_in_no_item_fails_and_keeps_the_stored_titles(api):
    """A typo in --json-title stored every title empty ("0 added, 2 updated")."""
    rsps, store, _ = api
    list(crawl(API, store, options=options(**SEED_LIKE)))
    events = list(crawl(API, store, options=options(**{**SEED_LIKE, "title": "titulo.nope"})))
    failed = [e for e in events if isinstance(e, Failed)]
    assert len(failed) == 2 and failed[0].reason == (
        "no title at 'titulo.nope' (the item has: slug, titulo, corpo, atualizado);"
        " set --json-title")
    assert events[-1].report.counts["updated"] == 0
    assert store.get("https://s.example/artigos/monitoria").title == "Monitoria"


def test_a_title_that_is_an_object_names_its_keys(api):
    rsps, store, pages = api
    pages[1] = [{**ARTIGOS[0], "titulo": {"rendered": "Prazo"}}]
    events = list(crawl(API, store, options=options(**SEED_LIKE)))
    failed = [e for e in events if isinstance(e, Failed)]
    assert [f.reason for f in failed] == ["no title at 'titulo' (it holds an object with:"
                                          " rendered); set --json-title"]


def test_an_empty_title_or_no_default_title_is_named_by_the_url(tmp_path):
    """A named path an item has, but empty, keeps "" (named by the URL); so does the
    default `title` missing (an API without titles); a named path missing fails."""
    items = [{"url": "/a", "title": "", "nome": "", "content": "texto a"},
             {"url": "/b", "content": "b"},
             {"url": "/c", "title": None, "nome": None, "content": "texto c"}]
    with responses.RequestsMock() as rsps, Store(tmp_path) as store:
        rsps.get("https://api.s.example/robots.txt", body="")
        rsps.get(API, json={"items": items})
        report = list(crawl(API, store, options=options(items="items")))[-1].report
        titles = [d.title for d in store.documents()]
        named = list(crawl(API, store, options=options(items="items", title="nome")))
    assert report.counts["added"] == 3 and titles == ["", "", ""]
    assert [(e.url, e.reason) for e in named if isinstance(e, Failed)] == [
        ("https://api.s.example/b", "no title at 'nome' (the item has: url, content);"
                                    " set --json-title")]


def test_an_api_refusing_its_key_is_quoted_not_asked_for_a_key(tmp_path):
    """Ghost's 401 for a key that is no longer valid (a cached page after the key was
    regenerated) said "does it need a key in the URL?" of a URL holding one; the API's own
    words ("Unknown Content API Key") were dropped."""
    from busca.fixtures.platforms import PlatformSite

    with PlatformSite(load_articles()[:2], platform="ghost") as site, Store(tmp_path) as store:
        url = site.url + "ghost/api/content/posts/?key=0123456789abcdef0123456789"
        report = list(crawl(url, store, options=options(items="posts")))[-1].report
    assert report.stopped.startswith("the API refuses anonymous clients (HTTP 401")
    assert '"Unknown Content API Key"' in report.stopped and "is the key" in report.stopped
    assert "does it need a key" not in report.stopped
