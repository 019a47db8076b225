"""The link-following crawl on a messy site served from 127.0.0.1: traps that repeat one
page under ever new URLs, session ids in URLs, and a page's robots meta `nofollow`."""

from __future__ import annotations

import json

from routed import Site, crawled, site_fixture, store_fixture  # noqa: F401
from busca.crawler.events import Failed
from busca.crawler.urls import normalize
from busca.fixtures.server import SITE_DIR

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


def _soft404(path: str) -> tuple:  # the theme's "not found" page, naming the path asked for
    return _page("Página não encontrada", f"Desculpe, a página {path} não existe ou foi"
                 " removida. Use a busca ou volte à página inicial.")


def test_a_not_found_page_answered_with_200_is_not_stored(store):
    soft = Site(missing=_soft404(""))  # every unknown path: 200 and the theme's 404 page
    soft.routes["/"] = _page("Início", "Bem-vindo.", '<a href="/velho/">v</a><a href="/sumiu">s'
                             '</a><a href="/produto/">p</a>')
    soft.routes["/velho/"], soft.routes["/sumiu"] = _soft404("/velho/"), _soft404("/sumiu")
    soft.routes["/produto/"] = _page("Produto", "Este produto, não encontrado em lojas, é"
                                     " vendido aqui. Página não encontrada? Fale conosco.")
    try:
        report, _ = crawled(soft.url, store, source="html")
    finally:
        soft.close()
    assert sorted(store.hashes()) == [f"{soft.url}/", f"{soft.url}/produto/"]
    assert {url for url, reason in report.failures if "soft 404" in reason} == \
        {f"{soft.url}/velho/", f"{soft.url}/sumiu"}, report.failures


def test_a_site_that_answers_every_path_with_its_home_page_keeps_it(store):
    home = _page("Início", "Bem-vindo à loja.", '<a href="/sobre/">s</a>')
    spa = Site(missing=home)
    spa.routes["/"] = home
    spa.routes["/sobre/"] = _page("Sobre", "Quem somos.")
    try:
        crawled(spa.url, store, source="html")
    finally:
        spa.close()
    assert sorted(store.hashes()) == [f"{spa.url}/", f"{spa.url}/sobre/"]


def test_links_differing_in_their_parameters_order_are_one_page(site, store):
    site.routes["/"] = _page("Início", "Bem-vindo.", '<a href="/busca?a=1&amp;b=2">1</a>'
                             '<a href="/busca?b=2&amp;a=1">2</a><a href="/busca?a=1">3</a>')
    site.routes["/busca"] = lambda q: _page("Busca", f"Resultados de {sorted(q.items())}.")
    crawled(site.url, store, source="html")
    asked = [p for p in site.asked if p.startswith("/busca?")]
    assert sorted(asked) == ["/busca?a=1", "/busca?a=1&b=2"]


def _month(q: dict) -> tuple:  # an events calendar: every month links the next one, for ever
    year, month = map(int, q.get("month", "2026-12").split("-"))
    following = f"{year + month // 12}-{month % 12 + 1:02d}"
    return _page("Agenda", f"Eventos de {year}-{month:02d}. Nenhum evento neste mês.",
                 f'<a href="/agenda?month={following}">próximo</a>')


def _words(n: int, size: int = 40) -> str:  # the words of a real article, a window each
    text = " ".join(json.loads(line)["text"] for line in
                    (SITE_DIR / "articles.jsonl").read_text("utf-8").splitlines()).split()
    return " ".join(text[n * size:(n + 1) * size])


def _blog(pages: int):  # /page/N/ lists post N (its heading links it) and links page N + 1
    routes = {}
    for n in range(1, pages + 1):
        more = f'<a href="/page/{n + 1}/">mais antigos</a>' if n < pages else ""
        routes[f"/page/{n}/"] = (200, HTML, (
            f'<html><body><article><h2><a href="/post-{n}/">Post</a></h2><p>{_words(n)}</p>'
            f"</article>{more}</body></html>").encode())
        routes[f"/post-{n}/"] = _page(f"Post {n}", _words(n, 60))
    return routes


def test_a_calendar_does_not_eat_the_page_budget(site, store):
    site.routes["/"] = _page("Início", "Bem-vindo.", '<a href="/agenda?month=2026-12">a</a>'
                             '<a href="/page/1/">blog</a>')
    site.routes["/agenda"] = _month
    site.routes.update(_blog(30))
    report, _ = crawled(site.url, store, source="html", max_pages=100)
    urls = set(store.hashes())
    assert {f"{site.url}/post-{n}/" for n in range(1, 31)} <= urls
    assert len([u for u in urls if "/agenda" in u]) <= 10
    assert [n for n in report.notices if "near copies" in n and "/agenda" in n]


def test_a_blog_of_200_pages_is_crawled_to_its_last(site, store):
    site.routes["/"] = _page("Início", "Bem-vindo.", '<a href="/page/1/">blog</a>')
    site.routes.update(_blog(200))
    report, _ = crawled(site.url, store, source="html", max_pages=450)
    assert {f"{site.url}/post-{n}/" for n in range(1, 201)} <= set(store.hashes())
    assert not [n for n in report.notices if "near copies" in n]


def test_links_to_files_are_skipped_quietly_and_counted(site, store):
    site.routes["/"] = _page("Início", "Bem-vindo.", '<a href="/download?file=a.zip">z</a>'
                             '<a href="/baixar/manual">m</a><a href="/setup.exe">e</a>'
                             '<a href="/sobre/">s</a>')
    site.routes["/download"] = (200, {"Content-Type": "application/zip"}, b"PK\x03\x04")
    site.routes["/baixar/manual"] = (200, {"Content-Type": "application/octet-stream"}, b"PK")
    site.routes["/sobre/"] = _page("Sobre", "Quem somos.")
    report, events = crawled(site.url, store, source="html")
    assert not report.failures
    assert not [e for e in events if isinstance(e, Failed)]
    files = [n for n in report.notices if "not web pages" in n]
    assert len(files) == 1 and files[0].startswith("2 links"), report.notices
    assert site.count("/setup.exe") == 0
    assert sorted(store.hashes()) == [f"{site.url}/", f"{site.url}/sobre/"]
