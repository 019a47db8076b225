"""What the twenty-ninth session's sweep of misbehaving platform APIs met, each on a real server
on 127.0.0.1: listings that repeat or never end stop (read in part: nothing deleted), a listing
cut by a failure stops the crawl, malformed answers give one line instead of a traceback, a
declared charset is honoured, and odd items are skipped with a word."""

from __future__ import annotations

import codecs
import json

import pytest

from busca.crawler.events import Notice
from busca.crawler.http import Response
from busca.crawler.options import JsonApiOptions
from busca.crawler.platforms.llms import parse_full
from busca.index.home.documents import Store
from routed import Site, crawled, store_fixture  # noqa: F401  (a fixture)

FAST = {"rate": 1000.0, "backoff": 0.01, "timeout": 5.0, "retries": 0}
JSON = {"Content-Type": "application/json"}
HTML = {"Content-Type": "text/html; charset=utf-8"}
TEXT = "A ação do coração é reação. Parágrafo com acentuação."
ENDLESS = 30  # a misbehaving listing gives up after this many requests (so a bug fails, not hangs)


@pytest.fixture
def site():
    s = Site(robots=(404, {}, b"no"), missing=(404, JSON, b'{"error": "no"}'))
    yield s
    s.close()


def run(url: str, store: Store, **options):
    return crawled(url, store, FAST, **options)


def notices(events) -> list[str]:
    return [e.message for e in events if isinstance(e, Notice)]


def home(head: str) -> tuple[int, dict, bytes]:
    return 200, HTML, f"<html><head>{head}<title>Home</title></head><body><main><p>home" \
                      f"</p></main></body></html>".encode()


# ---- MediaWiki -----------------------------------------------------------------------------

class Wiki:
    """A MediaWiki api.php: `pages` page ids, the sweep's `continue` given by `continued`."""

    def __init__(self, site: Site, pages=(1, 2, 3), continued=None):
        self.site, self.pages, self.continued, self.sweep = site, list(pages), continued, None
        self.fail_continued = False
        self.texts_continued = False
        site.routes["/"] = home('<meta name="generator" content="MediaWiki 1.39">'
                                '<link rel="EditURI" href="/w/api.php?action=rsd">')
        site.routes["/w/api.php"] = self.answer

    def page(self, i: int, text: bool) -> dict:
        page = {"pageid": i, "title": f"P{i}", "fullurl": f"{self.site.url}/wiki/P{i}",
                "lastrevid": 100 + i}
        if text:
            page["revisions"] = [{"revid": 100 + i, "timestamp": "2024-01-01T00:00:00Z",
                                  "user": "u", "slots": {"main": {"content": f"'''P{i}''' {TEXT}"}}}]
        return page

    def answer(self, query: dict):
        if query.get("generator") == "allpages":
            if self.fail_continued and "gapcontinue" in query:
                return 500, JSON, b"{}"
            if self.sweep is not None:
                return 200, JSON, self.sweep
            out = {"query": {"pages": [self.page(i, False) for i in self.pages]}}
            if self.continued and self.site.count("/w/api.php") < ENDLESS:
                out["continue"] = self.continued(query)
            return 200, JSON, out
        ids = [int(i) for i in query["pageids"].split("|")]
        out = {"query": {"pages": [self.page(i, True) for i in ids]}}
        if self.texts_continued:  # a continuation that never repeats and never ends
            out["continue"] = {"rvcontinue": str(int(query.get("rvcontinue", "0")) + 1),
                               "continue": "||"}
        return 200, JSON, out


def test_mediawiki_a_continue_that_repeats_stops_there_and_deletes_nothing(site, store):
    wiki = Wiki(site, pages=(1, 2, 3, 4))
    run(site.url + "/", store)
    wiki.pages = [1, 2, 3]
    wiki.continued = lambda query: {"gapcontinue": "P1", "continue": "gapcontinue||"}
    site.asked.clear()
    report, events = run(site.url + "/", store)
    assert site.count("/w/api.php") <= 3  # the sweep asked twice, then the texts (none new)
    assert any("continuation already asked" in n for n in notices(events))
    assert store.count() == 4 and report.counts["deleted"] == 0


def test_mediawiki_texts_continued_for_ever_give_up_after_a_bound(site, store):
    """The texts of one batch, continued by a wiki that never ends: a failure after
    MOST_CONTINUED requests (it asked for ever), that batch not stored, nothing deleted."""
    from busca.crawler.platforms.mediawiki import MOST_CONTINUED

    wiki = Wiki(site, pages=(1,))
    wiki.texts_continued = True
    report, _ = run(site.url + "/", store)
    assert site.count("/w/api.php") <= MOST_CONTINUED + 2
    assert any("past 100 requests" in reason for _, reason in report.failures)
    assert store.count() == 0 and report.counts["deleted"] == 0


def test_mediawiki_a_continue_that_never_ends_honours_max_pages(site, store):
    Wiki(site, continued=lambda q: {"gapcontinue": str(int(q.get("gapcontinue", "0")) + 1),
                                    "continue": "gapcontinue||"})
    report, events = run(site.url + "/", store, max_pages=3)
    sweeps = [p for p in site.asked if "generator=allpages" in p]
    assert len(sweeps) == 3
    assert any("(--max-pages)" in n for n in notices(events))
    assert store.count() == 3


@pytest.mark.parametrize("answer, words", [
    ({"error": {"code": "readapidenied", "info": "You need read permission."}}, "readapidenied"),
    ({"batchcomplete": False, "warnings": {}}, "no 'query'"),
    ([1, 2], "no 'query'"),
])
def test_mediawiki_an_error_answer_is_one_line_and_deletes_nothing(site, store, answer, words):
    wiki = Wiki(site)
    run(site.url + "/", store)
    wiki.sweep = answer
    report, events = run(site.url + "/", store)
    said = " ".join([report.stopped or ""] + [r for _, r in report.failures])
    assert words in said and "\n" not in said
    assert store.count() == 3 and report.counts["deleted"] == 0


def test_mediawiki_a_cut_sweep_stops_the_crawl(site, store):
    wiki = Wiki(site, continued=lambda q: {"gapcontinue": "P9", "continue": "gapcontinue||"})
    wiki.fail_continued = True
    report, _ = run(site.url + "/", store)
    assert store.count() == 3
    assert report.stopped and "HTTP 500" in report.stopped


# ---- Substack and Discourse ----------------------------------------------------------------

def substack(site: Site, posts: list[dict], *, ignore_offset=False):
    site.routes["/"] = home('<link rel="preconnect" href="https://substackcdn.com">')

    def archive(q):
        offset, limit = int(q.get("offset", 0)), int(q.get("limit", 50))
        if ignore_offset and site.count("/api/v1/archive") < ENDLESS:
            return 200, JSON, posts[:limit]
        return 200, JSON, posts[offset:offset + limit] if not ignore_offset else []
    site.routes["/api/v1/archive"] = archive
    for post in posts:
        site.routes[f"/api/v1/posts/{post['slug']}"] = (200, JSON, {
            "slug": post["slug"], "title": f"Post {post['slug']}",
            "body_html": f"<p>{TEXT} {post['slug']}</p>", "post_date": "2024-01-01"})


def test_substack_an_archive_that_ignores_offset_stops_at_a_page_of_posts_seen(site, store):
    posts = [{"slug": f"post-{i}", "title": f"Post {i}", "post_date": "2024-01-01",
              "canonical_url": f"{site.url}/p/post-{i}"} for i in range(4)]
    substack(site, posts)
    run(site.url + "/", store)
    substack(site, posts[:3], ignore_offset=True)
    site.asked.clear()
    report, events = run(site.url + "/", store)
    assert site.count("/api/v1/archive") <= 3  # the probe, then two archive pages
    assert any("only posts already listed" in n for n in notices(events))
    assert store.count() == 4 and report.counts["deleted"] == 0


def test_substack_a_numeric_slug_is_read(site, store):
    substack(site, [{"slug": 12345, "title": "N", "post_date": "2024-01-01"}])
    site.routes["/api/v1/posts/12345"] = (200, JSON, {"slug": 12345, "title": 42,
                                                       "body_html": f"<p>{TEXT}</p>"})
    report, _ = run(site.url + "/", store)
    assert [d.url for d in store.documents()] == [site.url + "/p/12345"]


def discourse(site: Site, *, topic=None, same_topics=False, topic_list=None):
    site.routes["/"] = home('<meta name="generator" content="Discourse 3.2">')
    site.routes["/site.json"] = (200, JSON, {"categories": [{"id": 1, "name": "Geral"}]})

    def latest(q):
        page = int(q.get("page", 0))
        if topic_list is not None:
            return 200, JSON, {"topic_list": topic_list}
        shown = 0 if same_topics else page
        topics = [{"id": shown * 10 + i, "slug": f"t{shown}-{i}", "title": f"T{i}",
                   "bumped_at": "2024-01-01"} for i in range(2)]
        endless = same_topics and site.count("/latest.json") < ENDLESS
        more = f"/latest?page={page + 1}" if page < 1 or endless else None
        return 200, JSON, {"topic_list": {"topics": topics, "more_topics_url": more}}
    site.routes["/latest.json"] = latest
    for tid in (0, 1, 10, 11):
        data = {"title": f"Topic {tid}", "category_id": 1,
                "post_stream": {"posts": [{"cooked": f"<p>{TEXT} {tid}</p>", "username": "ana"}]}}
        data.update(topic or {})
        site.routes[f"/t/{tid}.json"] = (200, JSON, data)


def test_discourse_pages_that_list_the_same_topics_stop_the_list(site, store):
    discourse(site)
    run(site.url + "/", store)
    assert store.count() == 4
    discourse(site, same_topics=True)
    site.asked.clear()
    report, events = run(site.url + "/", store)
    assert site.count("/latest.json") <= 2
    assert any("only topics already listed" in n for n in notices(events))
    assert store.count() == 4 and report.counts["deleted"] == 0


@pytest.mark.parametrize("topic", [
    {"post_stream": {"posts": [{"cooked": f"<p>{TEXT}</p>", "username": "ana"}, "deleted"]}},
    {"category_id": [1]},
    {"category_id": {"id": 1}, "tags": [{"x": 1}, 5]},
])
def test_discourse_odd_topic_fields_are_read_without_a_traceback(site, store, topic):
    discourse(site, topic=topic)
    report, _ = run(site.url + "/", store)
    assert store.count() == 4 and not report.failures


def test_discourse_a_topic_list_that_is_a_list_is_one_line(site, store):
    discourse(site, topic_list=[1, 2])
    report, _ = run(site.url + "/", store)
    assert report.stopped and "topic_list" in report.stopped and "\n" not in report.stopped


def test_discourse_a_posts_field_that_is_no_list_fails_the_topic(site, store):
    discourse(site, topic={"post_stream": {"posts": "none"}})
    report, _ = run(site.url + "/", store)
    assert store.count() == 0 and report.failures


# ---- JSON listings: Zendesk, Ghost, --source json --------------------------------------------

def zendesk(site: Site, articles):
    site.routes["/hc/pt-br"] = home('<script src="https://static.zdassets.com/hc/x.js"></script>')
    site.routes["/api/v2/help_center/pt-br/articles.json"] = articles


def article(site: Site, i, **fields) -> dict:
    return {"id": i, "html_url": f"{site.url}/hc/pt-br/articles/{i}", "title": f"A{i}",
            "body": f"<p>{TEXT} {i}</p>", "updated_at": "2024-01-01T00:00:00Z", **fields}


def test_zendesk_a_cursor_that_alternates_pages_already_read_stops(site, store):
    path = "/api/v2/help_center/pt-br/articles.json"
    zendesk(site, lambda q: (200, JSON, {"articles": [article(site, i) for i in (1, 2, 3, 4, 9)],
                                         "meta": {"has_more": False}}))
    run(site.url + "/hc/pt-br", store)

    def forever(q):
        c = int(q.get("c", "0"))
        more = site.count(path) < ENDLESS
        return 200, JSON, {"articles": [article(site, i) for i in ((1, 2) if c % 2 == 0 else (3, 4))],
                           "meta": {"has_more": more}, "links": {"next": f"{site.url}{path}?c={c + 1}"}}
    zendesk(site, forever)
    site.asked.clear()
    report, events = run(site.url + "/hc/pt-br", store)
    assert site.count(path) <= 3
    assert any("only items already listed" in n for n in notices(events))
    assert store.count() == 5 and report.counts["deleted"] == 0


def test_zendesk_odd_items_are_skipped_with_a_word(site, store):
    zendesk(site, lambda q: (200, JSON, {"articles": [
        article(site, 1), article(site, 8, body="<p>outro texto oito</p>", html_url=f"{site.url}/hc/pt-br/articles/1"),
        article(site, 9, html_url="javascript:alert(1)"), article(site, 4, body="")],
        "meta": {"has_more": False}}))
    report, events = run(site.url + "/hc/pt-br", store)
    [document] = store.documents()
    assert document.url == f"{site.url}/hc/pt-br/articles/1" and "oito" not in document.text
    said = notices(events)
    assert any("1 item repeated a URL" in n for n in said)
    assert any("javascript:" in n and "not http" in n for n in said)
    [(url, reason)] = report.failures
    assert url.endswith("/articles/4") and "body" in reason and "empty" in reason
    assert "--json-body" not in reason


def test_ghost_a_next_page_pointing_back_does_not_count_a_re_read(site, store):
    site.routes["/"] = home('<meta name="generator" content="Ghost 5.0"><script data-key="'
                            '0123456789abcdef0123456789" data-api="%s/ghost/api/content/">'
                            '</script>' % site.url)

    def posts(q):
        page = int(q.get("page", "1"))
        items = [{"id": f"p{page}{i}", "url": f"{site.url}/p{page}-{i}/", "title": f"P{page}{i}",
                  "html": f"<p>{TEXT}</p>", "updated_at": "2024"} for i in range(2)]
        return 200, JSON, {"posts": items, "meta": {"pagination": {"page": page,
                                                                   "next": {1: 2, 2: 1}[page]}}}
    site.routes["/ghost/api/content/posts/"] = posts
    report, _ = run(site.url + "/", store)
    assert report.counts["added"] == 4 and report.counts["unchanged"] == 0


def strapi(site: Site, n: int, fail_page=None, charset=None):
    def articles(q):
        page = int(q.get("pagination[page]", "1"))
        if page == fail_page:
            return 500, JSON, b'{"error": "boom"}'
        items = [{"id": i, "documentId": f"d{i}", "title": f"Artigo {i}",
                  "content": f"{TEXT} número {i}", "updatedAt": "2024-01-01T00:00:00Z"}
                 for i in range(1, n + 1)][(page - 1) * 2: page * 2]
        body = {"data": items, "meta": {"pagination": {"page": page, "pageSize": 2,
                                                       "pageCount": (n + 1) // 2, "total": n}}}
        headers = {"Content-Type": "application/json", "X-Powered-By": "Strapi <strapi.io>"}
        if charset:
            headers["Content-Type"] += f"; charset={charset}"
            return 200, headers, json.dumps(body, ensure_ascii=False).encode(charset)
        return 200, headers, body
    site.routes["/api/articles"] = articles


def test_a_listing_cut_by_a_failure_stops_the_crawl_and_deletes_nothing(site, store):
    strapi(site, 6)
    run(site.url + "/api/articles", store)
    strapi(site, 5, fail_page=2)
    report, _ = run(site.url + "/api/articles", store)
    assert report.stopped and "HTTP 500" in report.stopped and "\n" not in report.stopped
    assert store.count() == 6 and report.counts["deleted"] == 0


def test_a_json_listing_in_a_declared_latin1_keeps_its_accents(site, store):
    strapi(site, 2, charset="ISO-8859-1")
    run(site.url + "/api/articles", store)
    assert all("ação" in d.text for d in store.documents()) and store.count() == 2


def test_a_next_link_listing_that_alternates_pages_already_read_stops(site, store):
    def items(q):
        n = int(q.get("n", "0"))
        more = f"{site.url}/items?n={n + 1}" if site.count("/items") < ENDLESS else None
        shown = (1, 2) if n % 2 == 0 else (3, 4)
        return 200, JSON, {"items": [{"u": f"/a{i}", "t": TEXT} for i in shown], "next": more}
    site.routes["/items"] = items
    report, events = run(site.url + "/items", store, source="json",
                         json=JsonApiOptions(items="items", url="u", body="t", next_path="next"))
    assert site.count("/items") == 3 and store.count() == 4
    assert any("only items already listed" in n for n in notices(events))


# ---- Drupal, MkDocs, llms-full.txt ---------------------------------------------------------

@pytest.mark.parametrize("root", [{"links": [{"href": "x"}]},
                                  {"links": {"node--article": {"href": {"x": 1}}}}])
def test_drupal_a_root_of_odd_links_is_one_line(site, store, root):
    site.routes["/"] = home('<meta name="Generator" content="Drupal 10">')
    site.routes["/jsonapi"] = (200, JSON, root)
    report, _ = run(site.url + "/", store)
    assert report.stopped and "lists no node types" in report.stopped


@pytest.mark.parametrize("status, headers, body, words", [
    (200, HTML, b"<html><body>Not here</body></html>", "an HTML page"),
    (200, JSON, b'{"docs": [{"location": "a/", "title": "A"', "malformed JSON"),
    (200, JSON, b"[1, 2, 3]", "no 'docs' list"),
    (200, JSON, b'{"docs": {"a": 1}}', "no 'docs' list"),
])
def test_mkdocs_an_unusable_search_index_is_one_line(site, store, status, headers, body, words):
    site.routes["/"] = home('<meta name="generator" content="mkdocs-1.5.3">')
    site.routes["/search/search_index.json"] = (status, headers, body)
    report, _ = run(site.url + "/", store)
    assert report.stopped and words in report.stopped and "\n" not in report.stopped


@pytest.mark.parametrize("index", [
    {"config": ["pt"], "docs": [{"location": "a/", "title": "Ação", "text": TEXT}]},
    {"config": {"lang": "pt"}, "docs": [{"location": "a/", "title": 5, "text": TEXT},
                                        {"location": "a/#x", "title": "Ação", "text": 7}, 3]},
])
def test_mkdocs_odd_fields_are_read_without_a_traceback(site, store, index):
    site.routes["/"] = home('<meta name="generator" content="mkdocs-1.5.3">')
    site.routes["/search/search_index.json"] = (200, JSON, index)
    run(site.url + "/", store)
    [document] = store.documents()
    assert TEXT in document.text


def test_mkdocs_a_latin1_search_index_keeps_its_accents(site, store):
    index = {"docs": [{"location": "a/", "title": "Ação", "text": "coração de leão"}]}
    site.routes["/"] = home('<meta name="generator" content="mkdocs-1.5.3">')
    site.routes["/search/search_index.json"] = (
        200, JSON, json.dumps(index, ensure_ascii=False).encode("latin-1"))
    run(site.url + "/", store)
    [document] = store.documents()
    assert document.title == "Ação" and "coração" in document.text


def test_llms_sections_of_one_title_get_distinct_urls_and_titles_lose_markup():
    body = ("# Instalação\n\nNo Linux: ação um.\n\n# Instalação\n\nNo Windows: coração dois.\n\n"
            "# **Uso** `avançado` <b>x</b>\n\nTexto de uso.\n").encode()
    documents = parse_full(body, "https://d.example/llms-full.txt")
    assert [d.url for d in documents] == [
        "https://d.example/llms-full.txt#instalação", "https://d.example/llms-full.txt#instalação-2",
        "https://d.example/llms-full.txt#uso-avançado-x"]
    assert [d.title for d in documents] == ["Instalação", "Instalação", "Uso avançado x"]
    [code] = parse_full(b"# `__init__.py` and snake_case\n\nText.\n", "https://d.example/f")
    assert code.title == "__init__.py and snake_case"


# ---- Response.json ---------------------------------------------------------------------------

@pytest.mark.parametrize("content_type, body", [
    ("application/json; charset=ISO-8859-1", '{"t": "ação"}'.encode("latin-1")),
    ("application/json; charset=\"windows-1252\"", '{"t": "ação"}'.encode("cp1252")),
    ("application/json", '{"t": "ação"}'.encode()),
    ("application/json; charset=ISO-8859-1", codecs.BOM_UTF8 + '{"t": "ação"}'.encode()),
    ("application/json", codecs.BOM_UTF16_LE + '{"t": "ação"}'.encode("utf-16-le")),
    ("application/json; charset=no-such-thing", '{"t": "ação"}'.encode()),
])
def test_json_honours_a_declared_charset_and_a_byte_order_mark_wins(content_type, body):
    response = Response("https://x.example/a", 200, {"Content-Type": content_type}, body)
    assert response.json() == {"t": "ação"}
