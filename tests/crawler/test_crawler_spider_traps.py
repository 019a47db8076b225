"""The link-following crawl on a messy site served from 127.0.0.1: traps that repeat one
page under ever new URLs, session ids in URLs, and a page's robots meta `nofollow`."""

from __future__ import annotations

from routed import Site, crawled, site_fixture, store_fixture  # noqa: F401
from busca.crawler.urls import normalize

HTML = {"Content-Type": "text/html; charset=utf-8"}


def _page(title: str, text: str, links: str = "", head: str = "") -> tuple:
    return 200, HTML, (f"<html><head><title>{title}</title>{head}</head><body><article>"
                       f"<h1>{title}</h1><p>{text}</p>{links}</article></body></html>").encode()


def test_a_page_repeated_under_growing_urls_is_stored_once_and_noted_once(site, store):
    # /secao/ links "secao/" relatively: /secao/secao/, /secao/secao/secao/… all one page
    site.routes["/"] = _page("Início", "Bem-vindo à empresa.", '<a href="/secao/">s</a>'
                             '<a href="/blog/?page=1">b</a>')
    for depth in range(1, 40):
        site.routes["/secao" * depth + "/"] = _page(
            "Seção", "Página da seção de serviços.", '<a href="secao/">mais</a>')
    for n in range(1, 40):  # a listing whose pages past the last repeat the last one
        site.routes[f"/blog/?page={n}"] = _page(
            "Blog", f"Artigos da página {min(n, 3)}.", f'<a href="/blog/?page={n + 1}">próx</a>')
    report, _ = crawled(site.url, store, source="html", max_pages=60)
    urls = set(store.hashes())
    assert [u for u in urls if "/secao/" in u] == [f"{site.url}/secao/"]
    assert len([u for u in urls if "/blog/" in u]) == 3
    assert site.count("/secao/secao/secao/") == 0  # a repeat's links are not followed
    assert site.count("/blog/") <= 5
    repeats = [n for n in report.notices if "repeated" in n]
    assert len(repeats) == 1 and "2 pages" in repeats[0], report.notices


def test_a_repeat_of_a_page_unchanged_since_the_last_crawl_is_still_a_repeat(site, store):
    site.routes["/"] = _page("Início", "Bem-vindo.", '<a href="/secao/">s</a>')
    site.routes["/secao/"] = (200, {**HTML, "ETag": '"v1"'},
                              _page("Seção", "Serviços.", '<a href="secao/">m</a>')[2])
    crawled(site.url, store, source="html")
    site.routes["/secao/"] = (304, {}, b"")  # asked with If-None-Match "v1"
    site.routes["/secao/secao/"] = _page("Seção", "Serviços.", '<a href="secao/">m</a>')
    crawled(site.url, store, source="html")
    assert f"{site.url}/secao/secao/" not in set(store.hashes())
    assert f"{site.url}/secao/" in set(store.hashes())


def test_a_page_stored_before_that_now_repeats_another_is_deleted(site, store):
    site.routes["/"] = _page("Início", "Bem-vindo.", '<a href="/secao/">s</a>')
    site.routes["/secao/"] = _page("Seção", "Serviços.", '<a href="secao/">m</a>')
    site.routes["/secao/secao/"] = _page("Subseção", "Outros serviços.")
    crawled(site.url, store, source="html")
    assert f"{site.url}/secao/secao/" in set(store.hashes())
    site.routes["/secao/secao/"] = site.routes["/secao/"]
    report, _ = crawled(site.url, store, source="html")
    assert sorted(store.hashes()) == [f"{site.url}/", f"{site.url}/secao/"]
    assert report.counts["deleted"] == 1


def test_a_page_reached_through_a_redirect_and_directly_is_no_repeat(site, store):
    site.routes["/"] = _page("Início", "Bem-vindo.", '<a href="/antigo/">a</a><a href="/novo/">n</a>')
    site.routes["/antigo/"] = (301, {"Location": "/novo/"}, b"")
    site.routes["/novo/"] = _page("Novo", "O artigo que mudou de endereço.")
    report, _ = crawled(site.url, store, source="html")
    assert sorted(store.hashes()) == [f"{site.url}/", f"{site.url}/novo/"]
    assert not [n for n in report.notices if "repeated" in n]


def test_session_ids_are_not_part_of_a_page_url():
    assert normalize("http://s.example/post/;jsessionid=A1B2C3D4E5") == "http://s.example/post/"
    assert normalize("http://s.example/post;jsessionid=A1B2?x=1") == "http://s.example/post?x=1"
    assert normalize("http://s.example/p?PHPSESSID=5f1c9a&id=7") == "http://s.example/p?id=7"
    assert normalize("http://s.example/p?id=7&sid=0123456789abcdef0123456789abcdef") == \
        "http://s.example/p?id=7"
    assert normalize("http://s.example/p?sid=42") == "http://s.example/p?sid=42"  # a site id


def test_session_ids_in_links_store_one_document(site, store):
    site.routes["/"] = _page("Início", "Bem-vindo.",
                             '<a href="/post/;jsessionid=AB12CD34EF56">a</a>'
                             '<a href="/post/?PHPSESSID=9f8e7d6c5b4a">b</a><a href="/post/">c</a>')
    site.routes["/post/"] = _page("Post", "O artigo.")
    site.routes["/post/;jsessionid=AB12CD34EF56"] = _page("Post", "O artigo.")
    crawled(site.url, store, source="html")
    assert sorted(store.hashes()) == [f"{site.url}/", f"{site.url}/post/"]
    assert site.count("/post/;jsessionid=AB12CD34EF56") == 0


def test_robots_meta_nofollow_links_are_not_followed(site, store):
    site.routes["/"] = _page("Início", "Bem-vindo.", '<a href="/interno/">i</a>'
                             '<a href="/aberto/">a</a>')
    site.routes["/interno/"] = _page("Interno", "Área interna.", '<a href="/escondido/">e</a>',
                                     '<meta name="robots" content="noindex, nofollow">')
    site.routes["/aberto/"] = _page("Aberto", "Área aberta.", '<a href="/outro/">o</a>',
                                    '<meta name="ROBOTS" content="NOFOLLOW">')
    site.routes["/escondido/"] = _page("Escondido", "Só achado pelo link da página interna.")
    site.routes["/outro/"] = _page("Outro", "Só achado pelo link da página aberta.")
    crawled(site.url, store, source="html")
    assert sorted(store.hashes()) == [f"{site.url}/", f"{site.url}/aberto/"]
    assert site.count("/escondido/") == site.count("/outro/") == 0
