"""The fixture site behaves like WordPress: REST headers and shapes, pages, sitemaps, feed, faults."""

from __future__ import annotations

import json
import time
from xml.etree import ElementTree

import pytest
import requests

from busca.fixtures.server import FixtureSite, Faults, load_articles


def article(i: int, **extra) -> dict:
    day = f"2023-01-{i:02d}"
    return {"id": 100 + i, "slug": f"artigo-{i}", "title": f"Artigo {i} - teste",
            "date": f"{day}T09:00:00", "date_gmt": f"{day}T12:00:00",
            "modified": f"{day}T10:00:00", "modified_gmt": f"{day}T13:00:00",
            "excerpt": f"Resumo {i}", "content": f"<p>Texto do artigo {i}.</p>\n",
            "categories": [1], "author": 1, **extra}


@pytest.fixture(scope="module")
def site():
    with FixtureSite([article(i) for i in range(1, 13)]) as s:
        yield s


def get(site, path: str, **kw) -> requests.Response:
    return requests.get(site.url + path.lstrip("/"), timeout=5, **kw)


def test_bundled_articles_load():
    articles = load_articles()
    assert len(articles) == 39
    assert {"id", "slug", "title", "modified_gmt", "content"} <= set(articles[0])


def test_home_advertises_the_api(site):
    r = get(site, "/")
    assert r.headers["Link"] == f'<{site.url}wp-json/>; rel="https://api.w.org/"'
    assert f'<link rel="https://api.w.org/" href="{site.url}wp-json/">' in r.text
    assert r.headers["Content-Type"] == "text/html; charset=UTF-8"


def test_posts_collection_headers_and_paging(site):
    r = get(site, "/wp-json/wp/v2/posts", params={"per_page": 5, "orderby": "id",
                                                  "order": "asc", "_fields": "id"})
    assert r.headers["Content-Type"] == "application/json; charset=UTF-8"
    assert (r.headers["X-WP-Total"], r.headers["X-WP-TotalPages"]) == ("12", "3")
    assert r.json() == [{"id": i} for i in range(101, 106)]
    assert r.links["next"]["url"] == (f"{site.url}wp-json/wp/v2/posts?per_page=5&orderby=id"
                                      "&order=asc&_fields=id&page=2")
    r2 = requests.get(r.links["next"]["url"], timeout=5)
    assert set(r2.links) == {"prev", "next"}
    r3 = requests.get(r2.links["next"]["url"], timeout=5)
    assert "next" not in r3.links and [p["id"] for p in r3.json()] == [111, 112]


def test_default_per_page_is_10_and_newest_first(site):
    r = get(site, "/wp-json/wp/v2/posts")
    posts = r.json()
    assert len(posts) == 10 and posts[0]["id"] == 112
    assert r.headers["X-WP-TotalPages"] == "2"


def test_past_the_last_page_is_rest_post_invalid_page_number(site):
    r = get(site, "/wp-json/wp/v2/posts", params={"page": 3})
    assert r.status_code == 400
    assert r.json()["code"] == "rest_post_invalid_page_number"


def test_per_page_over_100_is_invalid(site):
    r = get(site, "/wp-json/wp/v2/posts", params={"per_page": 101})
    assert r.status_code == 400 and r.json()["code"] == "rest_invalid_param"


# Top-level fields of a post in WordPress core's REST fixture (PostsCollection, view context).
WP_POST_FIELDS = {"id", "date", "date_gmt", "guid", "modified", "modified_gmt", "slug", "status",
                  "type", "link", "title", "content", "excerpt", "author", "featured_media",
                  "comment_status", "ping_status", "sticky", "template", "format", "meta",
                  "categories", "tags", "_links"}


def test_post_shape_matches_wordpress(site):
    post = get(site, "/wp-json/wp/v2/posts/103").json()
    assert WP_POST_FIELDS <= set(post)
    assert post["title"] == {"rendered": "Artigo 3 &#8211; teste"}
    assert post["content"] == {"rendered": "<p>Texto do artigo 3.</p>\n", "protected": False}
    assert post["link"] == f"{site.url}artigo-3/"
    assert post["guid"] == {"rendered": f"{site.url}?p=103"}
    assert post["status"] == "publish" and post["type"] == "post"


def test_json_is_escaped_like_wp_json_encode(site):
    body = get(site, "/wp-json/wp/v2/posts/101", params={"_fields": "link"}).text
    assert body == json.dumps({"link": f"{site.url}artigo-1/"}).replace("/", "\\/").replace(" ", "")


def test_fields_filter_and_nested_fields(site):
    post = get(site, "/wp-json/wp/v2/posts/101", params={"_fields": "id,title.rendered"}).json()
    assert post == {"id": 101, "title": {"rendered": "Artigo 1 &#8211; teste"}}


def test_modified_after_include_and_rest_route_form(site):
    r = get(site, "/", params={"rest_route": "/wp/v2/posts", "modified_after": "2023-01-10T10:00:00",
                               "_fields": "id"})
    assert sorted(p["id"] for p in r.json()) == [111, 112]  # strictly after, local time
    r = get(site, "/wp-json/wp/v2/posts", params={"modified_after": "2023-01-10T13:00:00Z",
                                                  "_fields": "id"})
    assert sorted(p["id"] for p in r.json()) == [111, 112]
    r = get(site, "/wp-json/wp/v2/posts", params={"include": "101,105,999", "_fields": "id"})
    assert sorted(p["id"] for p in r.json()) == [101, 105]


def test_unknown_route_and_api_index(site):
    assert get(site, "/wp-json/wp/v2/nada").json()["code"] == "rest_no_route"
    index = get(site, "/wp-json/").json()
    assert "wp/v2" in index["namespaces"]


def test_article_page_has_theme_noise_and_validators(site):
    r = get(site, "/artigo-2/")
    assert "<article" in r.text and "<nav" in r.text and "<aside" in r.text and "<footer" in r.text
    assert r.headers["ETag"] and r.headers["Last-Modified"] == "Mon, 02 Jan 2023 13:00:00 GMT"
    assert get(site, "/artigo-2/", headers={"If-None-Match": r.headers["ETag"]}).status_code == 304
    since = {"If-Modified-Since": r.headers["Last-Modified"]}
    assert get(site, "/artigo-2/", headers=since).status_code == 304
    assert get(site, "/nao-existe/").status_code == 404


def test_robots_and_sitemaps(site):
    robots = get(site, "/robots.txt").text
    assert "Disallow: /wp-admin/" in robots and f"Sitemap: {site.url}wp-sitemap.xml" in robots
    index = ElementTree.fromstring(get(site, "/wp-sitemap.xml").content)
    locs = [e.text for e in index.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")]
    assert locs[0] == f"{site.url}wp-sitemap-posts-post-1.xml"
    urlset = ElementTree.fromstring(get(site, "/wp-sitemap-posts-post-1.xml").content)
    ns = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
    entries = [(u.findtext(f"{ns}loc"), u.findtext(f"{ns}lastmod")) for u in urlset]
    assert entries[0] == (f"{site.url}artigo-1/", "2023-01-01T13:00:00+00:00")
    assert len(entries) == 12


def test_feed_is_rss_with_full_content(site):
    r = get(site, "/feed/")
    root = ElementTree.fromstring(r.content)
    items = root.findall("channel/item")
    assert len(items) == 10
    assert items[0].findtext("link") == f"{site.url}artigo-12/"
    content = items[0].findtext("{http://purl.org/rss/1.0/modules/content/}encoded")
    assert content == "<p>Texto do artigo 12.</p>\n"


def test_request_log_records_bodies(site):
    before = len(site.log)
    get(site, "/artigo-5/")
    get(site, "/wp-json/wp/v2/posts", params={"include": "106", "_fields": "id,content"})
    get(site, "/wp-json/wp/v2/posts", params={"include": "107", "_fields": "id"})
    hits = site.log[before:]
    assert [h.bodies for h in hits] == [(105,), (106,), ()]
    assert hits[0].path == "/artigo-5/"


def test_plain_permalinks_site():
    with FixtureSite([article(1)], pretty_permalinks=False) as s:
        assert get(s, "/wp-json/").status_code == 404
        r = get(s, "/")
        assert r.headers["Link"].startswith(f"<{s.url}index.php?rest_route=/>")
        posts = get(s, "/", params={"rest_route": "/wp/v2/posts"}).json()
        assert posts[0]["link"] == f"{s.url}?p=101"
        assert "Texto do artigo 1" in get(s, "/", params={"p": 101}).text
        assert "?sitemap=index" in get(s, "/robots.txt").text


def test_switches_turn_sources_off():
    with FixtureSite([article(1)], wordpress=False, feed=False) as s:
        assert "Link" not in get(s, "/").headers
        assert "api.w.org" not in get(s, "/").text and "rss+xml" not in get(s, "/").text
        assert get(s, "/wp-json/").status_code == 404
        assert get(s, "/feed/").status_code == 404
        assert get(s, "/sitemap.xml").status_code == 200
        assert "Sitemap: " + s.url + "sitemap.xml" in get(s, "/robots.txt").text
    with FixtureSite([article(1)], wordpress=False, sitemap=False, feed=False) as s:
        assert get(s, "/sitemap.xml").status_code == 404
        assert "Sitemap" not in get(s, "/robots.txt").text


def test_faults_throttle_errors_latency():
    faults = Faults(throttle_every=3, error_every=4, latency=0.05, retry_after="7")
    with FixtureSite([article(1)], faults=faults) as s:
        started = time.monotonic()
        statuses = [get(s, "/artigo-1/") for _ in range(6)]
        assert time.monotonic() - started >= 0.3
    assert [r.status_code for r in statuses] == [200, 200, 429, 500, 200, 429]
    assert statuses[2].headers["Retry-After"] == "7"


def test_faults_truncate_loop_api_status_offsite_huge():
    faults = Faults(truncate_pages=frozenset({2}), next_loop=-1,
                    offsite_paths=frozenset({"/artigo-1/"}), huge_paths=frozenset({"/grande/"}))
    with FixtureSite([article(i) for i in range(1, 4)], faults=faults) as s:
        r = get(s, "/wp-json/wp/v2/posts", params={"per_page": 1, "page": 2})
        with pytest.raises(ValueError):
            r.json()
        last = get(s, "/wp-json/wp/v2/posts", params={"per_page": 1, "page": 3})
        assert last.links["next"]["url"].endswith("page=1")
        r = get(s, "/artigo-1/", allow_redirects=False)
        assert r.status_code == 302 and r.headers["Location"].startswith("http://localhost:")
        with get(s, "/grande/", stream=True) as big:
            size = sum(len(c) for c in big.iter_content(1 << 20))
        assert size >= 50 * 1024 * 1024
    with FixtureSite([article(1)], faults=Faults(api_status=401)) as s:
        r = get(s, "/wp-json/wp/v2/posts")
        assert r.status_code == 401 and r.json()["code"] == "rest_not_logged_in"


def test_non_utf8_pages():
    with FixtureSite([article(1, title="Ação")], faults=Faults(html_charset="iso-8859-1")) as s:
        r = get(s, "/artigo-1/")
        assert r.headers["Content-Type"] == "text/html; charset=ISO-8859-1"
        assert "Ação".encode("latin-1") in r.content


def test_edit_and_remove_change_what_is_served():
    with FixtureSite([article(1), article(2)]) as s:
        s.edit(101, content="<p>novo</p>")
        s.remove(102)
        posts = get(s, "/wp-json/wp/v2/posts").json()
        assert [p["id"] for p in posts] == [101]
        assert posts[0]["content"]["rendered"] == "<p>novo</p>"
        assert posts[0]["modified_gmt"] > "2024"
