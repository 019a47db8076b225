"""WordPress REST API source: URLs, paging, fields, incremental state, post types."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from busca.crawler.crawl import crawl
from busca.crawler.errors import CrawlError
from busca.crawler.events import Expected, Failed, Notice, Stored
from busca.crawler.store import Document
from busca.crawler.options import CrawlOptions
from busca.index.home.documents import Store
from routed import wordpress_home
from busca.crawler.wordpress import EMBED, FIELDS, SWEEP_FIELDS, api_url
from busca.fixtures.server import FixtureSite, load_articles

SITE = "https://blog.example"
FAST = {"rate": 1000.0, "backoff": 0.01}


def run(url, store, **options):
    return list(crawl(url, store, options=CrawlOptions(**{**FAST, **options})))


def post(i: int, **extra) -> dict:
    return {"id": i, "link": f"{SITE}/p{i}/", "modified": f"2024-01-0{i}T10:00:00",
            "modified_gmt": f"2024-01-0{i}T13:00:00", "title": {"rendered": f"Post {i}"},
            "content": {"rendered": f"<p>Corpo {i}</p>", "protected": False}, **extra}


@pytest.mark.parametrize("root, expected", [
    ("https://s.example/wp-json/", "https://s.example/wp-json/wp/v2/posts?per_page=100&_fields=id,link"),
    ("https://s.example/blog/wp-json", "https://s.example/blog/wp-json/wp/v2/posts?per_page=100&_fields=id,link"),
    ("https://s.example/?rest_route=/",
     "https://s.example/?rest_route=/wp/v2/posts&per_page=100&_fields=id,link"),
    ("https://s.example/index.php?rest_route=%2F",
     "https://s.example/index.php?rest_route=/wp/v2/posts&per_page=100&_fields=id,link"),
])
def test_api_url(root, expected):
    assert api_url(root, "wp/v2/posts", {"per_page": 100, "_fields": "id,link"}) == expected


@pytest.fixture
def api(tmp_path):
    """A mocked WordPress site whose REST answers each test registers."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        wordpress_home(rsps, SITE, "User-agent: *\nDisallow: /wp-admin/\n")
        with Store(tmp_path) as store:
            yield rsps, store


def posts_route(rsps, pages: dict[int, tuple[int, list | str, dict]]):
    """Answer /wp/v2/posts by page number: (status, body, headers)."""
    def reply(request):
        query = parse_qs(urlsplit(request.url).query)
        if query.get("per_page") == ["1"]:
            return 200, {}, "[]"
        status, body, headers = pages[int(query.get("page", ["1"])[0])]
        return status, headers, body if isinstance(body, str) else json.dumps(body)
    rsps.add_callback(responses.GET, f"{SITE}/wp-json/wp/v2/posts", callback=reply)


def test_first_crawl_asks_for_stored_fields_in_a_stable_order(api):
    rsps, store = api
    posts_route(rsps, {1: (200, [post(1), post(2)], {"X-WP-Total": "2", "X-WP-TotalPages": "1"})})
    events = run(SITE, store)
    listing = [c.request.url for c in rsps.calls if "per_page=100" in c.request.url][0]
    query = parse_qs(urlsplit(listing).query)
    assert query == {"per_page": ["100"], "_fields": [FIELDS], "_embed": [EMBED],
                     "orderby": ["id"], "order": ["asc"]}  # issue 26: the terms' names
    assert Expected(2) in events
    assert [e.url for e in events if isinstance(e, Stored)] == [f"{SITE}/p1/", f"{SITE}/p2/"]
    document = store.get(f"{SITE}/p1/")
    assert (document.title, document.text, document.source) == ("Post 1", "Corpo 1", "wordpress")
    assert document.modified == "2024-01-01T13:00:00+00:00"


def test_paging_by_total_pages_when_link_is_missing_and_400_ends(api):
    rsps, store = api
    posts_route(rsps, {
        1: (200, [post(1)], {"X-WP-Total": "3", "X-WP-TotalPages": "3"}),
        2: (200, [post(2)], {"X-WP-Total": "3", "X-WP-TotalPages": "3"}),
        3: (400, {"code": "rest_post_invalid_page_number"}, {}),  # a post was deleted meanwhile
    })
    events = run(SITE, store)
    assert not [e for e in events if isinstance(e, Failed)]
    assert store.count() == 2


def test_api_that_starts_refusing_mid_crawl_stops_and_keeps_what_it_has(api):
    rsps, store = api
    posts_route(rsps, {
        1: (200, [post(1)], {"X-WP-TotalPages": "2", "Link": f'<{SITE}/wp-json/wp/v2/posts?page=2>; rel="next"'}),
        2: (401, {"code": "rest_not_logged_in"}, {}),
    })
    report = run(SITE, store)[-1].report
    assert report.stopped.startswith("the site refuses its API to anonymous clients (HTTP 401")
    assert store.count() == 1
    assert sum("page=2" in c.request.url for c in rsps.calls) == 1  # no retries on 401


def test_protected_and_malformed_posts_are_reported(api):
    rsps, store = api
    locked = post(2, content={"rendered": "", "protected": True})
    posts_route(rsps, {1: (200, [post(1), locked, {"title": "sem id"}], {"X-WP-TotalPages": "1"})})
    failed = [e for e in run(SITE, store) if isinstance(e, Failed)]
    assert failed[1] == Failed(f"{SITE}/p2/", "password-protected post; its text is not public")
    assert failed[0].reason == "malformed post skipped: no numeric id"
    assert "(item 3)" in failed[0].url
    assert store.count() == 1


def test_incremental_requests(tmp_path):
    articles = load_articles()[:4]
    with FixtureSite(articles) as site, Store(tmp_path) as store:
        run(site.url, store)
        newest = max(a["modified"] for a in articles)
        before = len(site.log)
        site.edit(articles[0]["id"], content="<p>novo</p>")
        events = run(site.url, store)
        paths = [h.path for h in site.log[before:] if "/wp/v2/posts" in h.path]
    fields = [parse_qs(urlsplit(p).query) for p in paths]
    assert fields[0]["_fields"] == ["id"]  # the discovery probe
    assert fields[1]["modified_after"] == [newest] and fields[1]["_fields"] == [FIELDS]
    assert fields[2]["_fields"] == [SWEEP_FIELDS]
    assert len(fields) == 3
    statuses = sorted(e.status for e in events if isinstance(e, Stored))
    assert statuses == ["unchanged"] * 3 + ["updated"]


def test_a_post_whose_modified_date_alone_moved_counts_as_metadata_updated(tmp_path):
    """Its body is fetched again (the date differs) and its text is the same: the new date
    is stored (`--filter modified>=` reads it) and counted apart, no longer "unchanged"."""
    with FixtureSite(load_articles()[:3]) as site, Store(tmp_path) as store:
        run(site.url, store)
        moved = site.edit(site.articles[1]["id"])  # a plugin re-saved it: nothing else
        report = run(site.url, store)[-1].report
        stored = store.get(site.link(moved))
    assert report.counts == {"added": 0, "updated": 0, "metadata_updated": 1, "unchanged": 2,
                             "deleted": 0}
    assert report.documents == 3
    assert stored.modified == f"{moved['modified_gmt']}+00:00"


def test_posts_and_pages(tmp_path):
    page = {**load_articles()[0], "id": 2, "slug": "sobre", "title": "Sobre o site",
            "content": "<p>Quem somos.</p>"}
    with FixtureSite(load_articles()[1:3], pages=[page]) as site, Store(tmp_path) as store:
        run(site.url, store, types=("posts", "pages"))
        titles = sorted(d.title for d in store.documents())
        assert store.get(site.link(page, "pages")).text == "Quem somos."
    assert titles == sorted(["Sobre o site"] + [a["title"] for a in load_articles()[1:3]])


def test_deleting_a_page_does_not_touch_posts(tmp_path):
    page = {**load_articles()[0], "id": 2, "slug": "sobre", "title": "Sobre", "content": "<p>x</p>"}
    with FixtureSite(load_articles()[1:3], pages=[page]) as site, Store(tmp_path) as store:
        run(site.url, store, types=("posts", "pages"))
        site.pages.clear()
        report = run(site.url, store, types=("posts", "pages"))[-1].report
        assert store.count() == 2
    assert report.counts == {"added": 0, "updated": 0, "metadata_updated": 0,
                             "unchanged": 2, "deleted": 1}


def test_plain_permalinks_site_is_crawled_through_rest_route(tmp_path):
    with FixtureSite(load_articles()[:3], pretty_permalinks=False) as site, Store(tmp_path) as s:
        events = run(site.url, s)
        urls = sorted(d.url for d in s.documents())
        rest = [h.path for h in site.hits() if "rest_route" in h.path]
    assert urls == sorted(f"{site.url}?p={a['id']}" for a in load_articles()[:3])
    assert events[0].url == f"{site.url}index.php?rest_route=/"
    assert all(p.startswith("/index.php?rest_route=/wp/v2/posts") for p in rest)


def test_max_pages_limits_api_pages_and_the_next_run_goes_on(tmp_path):
    with FixtureSite(load_articles()[:6], per_page_cap=2) as site, Store(tmp_path) as store:
        report = run(site.url, store, max_pages=2)[-1].report
        assert store.count() == 4 and len(site.hits("/wp-json/wp/v2/posts")) == 3
        again = run(site.url, store, max_pages=2)[-1].report
        assert store.count() == 6
    assert any("stopped after 2 API pages (--max-pages)" in n for n in report.notices)
    assert any("resuming the interrupted crawl of posts at API page 3" in n for n in again.notices)
    assert again.counts == {"added": 2, "updated": 0, "metadata_updated": 0,
                            "unchanged": 4, "deleted": 0}


def test_a_post_made_private_or_emptied_leaves_the_store(tmp_path):
    articles = load_articles()[:4]
    with FixtureSite(articles) as site, Store(tmp_path) as store:
        run(site.url, store)
        site.edit(articles[0]["id"], password="segredo")
        site.edit(articles[1]["id"], content="")
        events = run(site.url, store)
        deleted = {e.url for e in events if isinstance(e, Stored) and e.status == "deleted"}
        assert deleted == {site.link(articles[0]), site.link(articles[1])}
        assert store.get(site.link(articles[0])) is None and store.count() == 2
        again = run(site.url, store)[-1].report
    assert again.counts == {"added": 0, "updated": 0, "metadata_updated": 0,
                            "unchanged": 2, "deleted": 0}


# -- issue 10 --------------------------------------------------------------------------------
def refusing(rsps, refuse, posts: list[dict]):
    """/wp/v2/posts answering `refuse(query)` (a 400 body, or None to serve `posts`)."""
    def reply(request):
        query = {k: v[-1] for k, v in parse_qs(urlsplit(request.url).query).items()}
        if query.get("per_page") == "1" and query.get("_fields") == "id":
            return 200, {}, "[]"  # the discovery probe
        body = refuse(query)
        if body is not None:
            return 400, {}, json.dumps(body)
        size, page = int(query["per_page"]), int(query.get("page", 1))
        chunk = posts[(page - 1) * size: page * size]
        pages = -(-len(posts) // size)
        return 200, {"X-WP-Total": str(len(posts)), "X-WP-TotalPages": str(pages)}, json.dumps(
            [{k: v for k, v in p.items() if k in query["_fields"].split(",")} for p in chunk])
    rsps.add_callback(responses.GET, f"{SITE}/wp-json/wp/v2/posts", callback=reply)


def test_a_per_page_refusal_without_a_number_halves_the_page_size(api):
    rsps, store = api
    message = {"code": "rest_invalid_param", "message": "Invalid parameter(s): per_page",
               "data": {"status": 400}}
    refusing(rsps, lambda q: message if int(q["per_page"]) > 30 else None,
             [post(i) for i in range(1, 8)])
    events = run(SITE, store)
    sizes = [parse_qs(urlsplit(c.request.url).query)["per_page"][0] for c in rsps.calls
             if "_fields=id,link,modified" in c.request.url]
    assert sizes[:3] == ["100", "50", "25"] and store.count() == 7
    assert not [e for e in events if isinstance(e, Failed)]
    assert store.get_meta(f"crawl:site:{SITE}/wp-json/#posts")["per_page"] == 25


def test_an_unusable_api_in_auto_mode_falls_back_to_the_sitemap_and_says_why(api):
    rsps, store = api
    refused = {"code": "rest_invalid_param", "message": "Invalid parameter(s): orderby",
               "data": {"status": 400, "params": {"orderby": "orderby is not one of date."}}}
    refusing(rsps, lambda q: refused, [post(1)])
    rsps.get(f"{SITE}/wp-sitemap.xml", content_type="application/xml", body=(
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{SITE}/p1/</loc></url></urlset>"))
    rsps.get(f"{SITE}/p1/", content_type="text/html",
             body="<html><head><title>Post 1</title></head><body><article><h1>Post 1</h1>"
                  "<p>Corpo 1 pelo sitemap</p></article></body></html>")
    report = run(SITE, store)[-1].report
    assert report.source == "sitemap" and report.counts["added"] == 1
    assert any(n.startswith("the WordPress API answers HTTP 400 (rest_invalid_param: Invalid"
                            " parameter(s): orderby)") and "looking for a sitemap" in n
               for n in report.notices)
    assert store.get(f"{SITE}/p1/").source == "sitemap"


def test_an_unusable_api_with_source_wordpress_is_a_failure_not_a_fallback(api):
    rsps, store = api
    refusing(rsps, lambda q: {"code": "rest_invalid_param", "message": "Invalid parameter(s):"
                              " orderby"}, [post(1)])
    report = run(SITE, store, source="wordpress")[-1].report
    assert report.source == "wordpress" and report.documents == 0
    assert report.failures[0][1] == ("HTTP 400 (rest_invalid_param: Invalid parameter(s):"
                                     " orderby)")


def test_posts_whose_link_is_not_a_url_are_skipped_counted_and_reported(api):
    rsps, store = api
    posts_route(rsps, {1: (200, [post(1), post(2, link=12345), post(3, link=None),
                                 post(4, title="plain")], {"X-WP-TotalPages": "1"})})
    events = run(SITE, store)
    failed = [e for e in events if isinstance(e, Failed)]
    assert [f.reason for f in failed] == [
        "malformed post skipped: link is int '12345', not a URL",
        "malformed post skipped: link is missing, not a URL",
        "malformed post skipped: title is str 'plain', not an object"]
    assert "id 2" in failed[0].url
    assert [e.url for e in events if isinstance(e, Stored)] == [f"{SITE}/p1/"]
    assert all(isinstance(u, str) for u in store.hashes())


def many(first: int, last: int) -> list[dict]:
    return [post(i, modified_gmt="2024-02-01T10:00:00", modified="2024-02-01T10:00:00")
            for i in range(first, last + 1)]


@pytest.mark.parametrize("headers", [
    {},  # no paging headers at all: a full page asks for the next one
    {"X-WP-TotalPages": "1", "Link": f'<{SITE}/wp-json/wp/v2/posts?per_page=100&page=2>;'
                                     ' rel="next"'}])  # Link comes before a count too small
def test_a_listing_without_or_with_wrong_paging_headers_is_read_whole(api, headers):
    """Both stopped after page 1 and counted the listing complete: 100 of 150 posts stored,
    and a re-crawl of a complete home deleted the other 50 (the 28th session's sweep)."""
    rsps, store = api
    posts_route(rsps, {1: (200, many(1, 100), headers), 2: (200, many(101, 150), {}),
                       3: (200, [], {})})
    events = run(SITE, store)
    assert store.count() == 150 and not [e for e in events if isinstance(e, Failed)]
    again = run(SITE, store)
    assert store.count() == 150 and not [e for e in again if getattr(e, "status", "") ==
                                         "deleted"]


def test_a_page_count_that_lies_stops_at_the_first_empty_page_and_deletes_nothing(api):
    """X-WP-TotalPages 100000 with every page after 2 empty: paged toward page 100000 (about
    14 hours at the default rate); now one empty page ends it, with a notice."""
    rsps, store = api
    lying = {"X-WP-TotalPages": "100000"}
    posts_route(rsps, {1: (200, many(1, 100), lying), 2: (200, many(101, 120), lying),
                       **{n: (200, [], lying) for n in range(3, 50)}})
    store.put(Document(f"{SITE}/old/", "Old", "texto antigo", "wordpress"))
    events = run(SITE, store)
    asked = [c.request.url for c in rsps.calls if "per_page=100" in c.request.url]
    pages = [int(parse_qs(urlsplit(u).query).get("page", ["1"])[0]) for u in asked]
    assert max(pages) == 3 and store.count() == 121  # 120 posts, the old one kept
    assert any("API page 3 is empty although X-WP-TotalPages says 100000" in e.message
               for e in events if isinstance(e, Notice))


def test_a_post_without_title_is_named_by_its_url_and_loses_unrendered_shortcodes(api):
    rsps, store = api
    bare = post(1, title={"rendered": ""}, content={
        "rendered": '<p>[gallery ids="1,2,3"] Corpo do post [caption id="a"]Legenda[/caption]'
                    "</p>", "protected": False})
    posts_route(rsps, {1: (200, [bare], {"X-WP-TotalPages": "1"})})
    run(SITE, store)
    document = store.get(f"{SITE}/p1/")
    assert document.title == f"{SITE}/p1/" and document.text == "Corpo do post Legenda"


def collection_route(rsps, kind: str, items: list[dict]) -> None:
    """/wp/v2/KIND answering every page request with `items` (one page)."""
    def reply(request):
        query = parse_qs(urlsplit(request.url).query)
        body = items[:1] if query.get("per_page") == ["1"] else items
        return 200, {"X-WP-Total": str(len(items)), "X-WP-TotalPages": "1"}, json.dumps(body)
    rsps.add_callback(responses.GET, f"{SITE}/wp-json/wp/v2/{kind}", callback=reply)


TYPES = {"post": {"slug": "post", "rest_base": "posts"}, "page": {"slug": "page", "rest_base": "pages"},
         "attachment": {"slug": "attachment", "rest_base": "media"},
         "wp_block": {"slug": "wp_block", "rest_base": "blocks"},
         "produto": {"slug": "produto", "rest_base": "produto"}}


def test_a_custom_post_type_is_crawled_by_its_rest_name(api):
    """A site's own post type (a plugin's `produto`, a docs theme's `docs`) is read like
    posts: --types takes the name it has under /wp/v2/."""
    rsps, store = api
    collection_route(rsps, "posts", [post(1)])
    collection_route(rsps, "produto", [post(2, type="produto", title={"rendered": "Café&#8211;moído"},
                                            link=f"{SITE}/produto/cafe/")])
    events = run(SITE, store, types=("posts", "produto"))
    assert not [e for e in events if isinstance(e, Failed)]
    stored = store.get(f"{SITE}/produto/cafe/")
    assert (stored.title, stored.text, stored.meta["type"]) == ("Café–moído", "Corpo 2", "produto")
    assert store.count() == 2


def test_a_post_type_the_site_lacks_is_one_line_naming_its_types(api):
    """A type the API has no route for (a typo, the plural of `produto`) stops the crawl
    before anything is read, naming the types the site has: no sitemap crawl instead."""
    rsps, store = api
    collection_route(rsps, "posts", [post(1)])
    rsps.get(f"{SITE}/wp-json/wp/v2/produtos", status=404, json={
        "code": "rest_no_route", "message": "No route was found matching the URL and request method.",
        "data": {"status": 404}})
    rsps.get(f"{SITE}/wp-json/wp/v2/types", json=TYPES)
    with pytest.raises(CrawlError) as error:
        run(SITE, store, types=("posts", "produtos"))
    assert str(error.value) == (f'the WordPress API at {SITE}/wp-json/ has no post type "produtos";'
                                " its post types are posts, pages, produto (--types takes these names)")
    assert store.count() == 0


@pytest.mark.parametrize("types, words", [
    (("posts", "media"), '"media" is not a post type but another WordPress collection'),
    (("posts", "a b"), '"a b" is not a post type name'),
    ((), "no post type given"),
])
def test_names_that_cannot_be_post_types_are_refused_before_any_request(api, types, words):
    rsps, store = api
    with pytest.raises(CrawlError, match=words):
        run(SITE, store, types=types)
    assert not rsps.calls


def test_a_polylang_sites_posts_keep_their_language(api):
    """Polylang Pro lists every language's posts in one collection, each with its `lang`:
    kept as `language` (as the sitemap and HTML sources keep `<html lang>`), so a search can
    keep to one language with --filter language=pt."""
    rsps, store = api
    posts_route(rsps, {1: (200, [post(1, lang="pt"), post(2, lang="en"), post(3)],
                           {"X-WP-Total": "3", "X-WP-TotalPages": "1"})})
    run(SITE, store)
    listing = [c.request.url for c in rsps.calls if "per_page=100" in c.request.url][0]
    assert "lang" in parse_qs(urlsplit(listing).query)["_fields"][0].split(",")
    languages = [(store.get(f"{SITE}/p{i}/").meta or {}).get("language") for i in (1, 2, 3)]
    assert languages == ["pt", "en", None]
