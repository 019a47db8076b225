"""One document for every spelling of its URL: /ação/, /a%C3%A7%C3%A3o/ and /a%c3%a7%c3%a3o/
(and %7E for ~) are one page. A document stored under another spelling (by a busca that kept
each spelling apart) keeps its id and is neither duplicated nor deleted by the next crawl, on
both stores; `busca add` of a crawled page in another spelling updates it."""

from __future__ import annotations

import json

import pytest

from busca.corpus.documents import add_files
from busca.crawler.store import Document
from busca.crawler.urls import doc_key, normalize
from busca.index.home.documents import Store
from routed import Site, crawled, page, site_fixture, store_fixture  # noqa: F401

HTML = {"Content-Type": "text/html; charset=utf-8"}
XML = {"Content-Type": "application/xml"}
RAW, UPPER, LOWER = "/ação/", "/a%C3%A7%C3%A3o/", "/a%c3%a7%c3%a3o/"
TEXT = "A ação do governo foi anunciada ontem."


def urlset(base: str, paths: list[str]) -> bytes:
    locs = "".join(f"<url><loc>{base}{p}</loc></url>" for p in paths)
    return ('<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/'
            f'schemas/sitemap/0.9">{locs}</urlset>').encode()


def serve_accented(site: Site, text: str = TEXT) -> None:
    """/ação/ as a server sees it: requests sends /ação/ as /a%C3%A7%C3%A3o/, and a lower-case
    escape as it is."""
    for path in (UPPER, LOWER):
        site.routes[path] = (200, HTML, page("Ação", text))


def urls(store) -> list[str]:
    return sorted(d.url for d in store.documents())


@pytest.mark.parametrize("url", ["https://s.example" + p for p in (RAW, UPPER, LOWER)])
def test_every_spelling_of_a_url_is_one(url):
    assert normalize(url) == doc_key(url) == "https://s.example/a%C3%A7%C3%A3o/"


def test_escapes_of_unreserved_characters_are_undone_reserved_ones_kept():
    assert normalize("https://s.example/%7euser/a%2fb?q=a%20b") == \
        "https://s.example/~user/a%2Fb?q=a%20b"
    assert doc_key("notas/ação.txt") == "notas/ação.txt"  # a file's id is not a URL


def test_links_in_three_spellings_store_one_document(site, store):
    site.routes["/"] = (200, HTML, (
        '<html><body><nav><a href="/ação/">1</a><a href="/a%C3%A7%C3%A3o/">2</a>'
        '<a href="/a%c3%a7%c3%a3o/">3</a></nav></body></html>').encode())
    serve_accented(site)
    report, _ = crawled(site.url + "/", store, source="html")
    assert urls(store) == [site.url + UPPER]
    assert report.counts["added"] == 1


def _stored_by_an_older_busca(store, site: Site, spellings: list[str]) -> None:
    """The page stored under `spellings` with the crawl state a sitemap crawl keeps (copied
    from a page the same crawl stored: its source and site key)."""
    site.routes["/sitemap.xml"] = (200, XML, urlset(site.url, ["/outra/"]))
    site.routes["/outra/"] = (200, HTML, page("Outra", "Outra página do sítio."))
    crawled(site.url + "/sitemap.xml", store, source="sitemap")
    state = store.get_meta(f"crawl:doc:{site.url}/outra/")
    for path in spellings:
        store.put(Document(site.url + path, "Ação", "Texto antigo.", "sitemap"))
        store.set_meta(f"crawl:doc:{site.url}{path}", state)


def _recrawl_keeps_the_old_id(store, site: Site) -> None:
    _stored_by_an_older_busca(store, site, [LOWER])
    site.routes["/sitemap.xml"] = (200, XML, urlset(site.url, ["/outra/", RAW]))
    serve_accented(site)
    report, _ = crawled(site.url + "/sitemap.xml", store, source="sitemap")
    assert urls(store) == [site.url + LOWER, site.url + "/outra/"]
    assert store.get(site.url + LOWER).text == TEXT
    assert report.counts["deleted"] == 0
    report, _ = crawled(site.url + "/sitemap.xml", store, source="sitemap", full=True)
    assert urls(store) == [site.url + LOWER, site.url + "/outra/"]
    assert report.counts["deleted"] == 0


def test_a_page_stored_under_an_older_spelling_keeps_its_id(site, store):
    _recrawl_keeps_the_old_id(store, site)


@pytest.mark.postgres
def test_a_page_stored_under_an_older_spelling_keeps_its_id_in_postgresql(site, pg_home):
    from busca.index.postgres.home import PostgresHome

    with PostgresHome(pg_home) as home:
        _recrawl_keeps_the_old_id(home, site)


def test_copies_under_several_spellings_become_one(site, store):
    """A store an older busca filled with the page twice keeps one copy after a crawl."""
    _stored_by_an_older_busca(store, site, [RAW, LOWER])
    site.routes["/sitemap.xml"] = (200, XML, urlset(site.url, ["/outra/", UPPER]))
    serve_accented(site)
    crawled(site.url + "/sitemap.xml", store, source="sitemap")
    assert urls(store) == [site.url + LOWER, site.url + "/outra/"]
    assert store.get(site.url + LOWER).text == TEXT


def test_html_crawl_neither_duplicates_nor_deletes_an_older_spelling(site, store):
    site.routes["/"] = (200, HTML, b'<html><body><a href="/a%C3%A7%C3%A3o/">1</a></body></html>')
    serve_accented(site)
    crawled(site.url + "/", store, source="html")
    state = store.get_meta(f"crawl:doc:{site.url}{UPPER}")
    store.delete(site.url + UPPER)
    store.set_meta(f"crawl:doc:{site.url}{UPPER}", None)
    store.put(Document(site.url + RAW, "Ação", "Texto antigo.", "html"))
    store.set_meta(f"crawl:doc:{site.url}{RAW}", state)
    report, _ = crawled(site.url + "/", store, source="html")
    assert urls(store) == [site.url + "/", site.url + RAW]
    assert report.counts["added"] == 0
    assert store.get(site.url + RAW).text == TEXT


def test_add_of_a_crawled_page_in_another_spelling_updates_it(site, store, tmp_path):
    site.routes["/sitemap.xml"] = (200, XML, urlset(site.url, [UPPER]))
    serve_accented(site)
    crawled(site.url + "/sitemap.xml", store, source="sitemap")
    given = tmp_path / "artigos.jsonl"
    given.write_text(json.dumps({"url": site.url + RAW, "title": "Ação", "text": "Novo."},
                                ensure_ascii=False) + "\n", encoding="utf-8")
    added = add_files(store, [given])
    assert urls(store) == [site.url + UPPER]
    assert added.counts["updated"] == 1 and store.get(site.url + UPPER).text == "Novo."


def test_add_keeps_a_new_url_as_given_and_counts_another_spelling_a_repeat(tmp_path):
    given = tmp_path / "artigos.jsonl"
    given.write_text("".join(json.dumps({"url": "https://s.example" + path, "title": "Ação",
                                         "text": f"{TEXT} {n}"}, ensure_ascii=False) + "\n"
                             for n, path in enumerate([RAW, LOWER])), encoding="utf-8")
    told = []
    with Store(tmp_path / "home") as store:
        added = add_files(store, [given], notify=lambda what, value: told.append((what, value)))
        assert urls(store) == ["https://s.example" + RAW]
        assert store.get("https://s.example" + RAW).text == f"{TEXT} 1"  # the last one kept
    assert added.counts["added"] == 1 and added.counts["duplicate"] == 1
    assert told == [("repeated", "https://s.example" + LOWER)]


@pytest.mark.parametrize("stored, given", [(LOWER, RAW), (RAW, UPPER), (UPPER, LOWER)])
def test_adding_one_document_looks_its_spellings_up_without_reading_every_url(
        tmp_path, monkeypatch, stored, given):
    """Corpus.add of one document with an accented URL read every stored URL (0.4-0.5 s a
    call at 42,000 documents): its spellings are looked up, and one stored under an older
    spelling is still updated, never duplicated; copies under two spellings become one."""
    import busca

    base = "https://s.example"
    with busca.open(tmp_path / "home") as corpus:
        for n in range(3):
            corpus.home.put(Document(f"{base}/outro-{n}/", "Outro", f"Texto {n}."))
        corpus.home.put(Document(base + stored, "Ação", TEXT))  # as an older busca stored it
        reads = []
        real = type(corpus.home).hashes
        monkeypatch.setattr(type(corpus.home), "hashes",
                            lambda self, *a, **k: reads.append(1) or real(self, *a, **k))
        added = corpus.add([Document(base + given, "Ação", "Novo texto.")])
        assert reads == [] and added.counts["updated"] == 1
        assert corpus.home.get(base + stored).text == "Novo texto."
        assert corpus.home.count() == 4
        corpus.home.put(Document(base + LOWER if stored != LOWER else base + RAW, "Ação", TEXT))
        corpus.add([Document(base + given, "Ação", "Outra vez.")])  # two copies: one stays
        assert corpus.home.count() == 4 and reads == []


@pytest.mark.parametrize("given", ["HTTPS://Site.Example/p%C3%B3s/edital",
                                   "https://SITE.example/pós/edital"])
def test_the_host_in_any_case_names_the_stored_document(tmp_path, given):
    """A host is case-insensitive and a crawl stores it in lower case: `busca remove
    https://Site.Example/pós/edital` said "no document stored under …", and an add in that
    spelling stored a second document."""
    import busca

    stored = "https://site.example/p%C3%B3s/edital"
    with busca.open(tmp_path / "home") as corpus:
        corpus.home.put(Document(stored, "Edital", TEXT))
        assert corpus.add([Document(given, "Edital", "Novo.")]).counts["updated"] == 1
        assert corpus.home.count() == 1 and corpus.home.get(stored).text == "Novo."
        assert corpus.remove([given.replace("Novo", "")]).removed == (stored,)
        assert corpus.home.count() == 0


def test_corpus_add_counts_one_page_given_twice_as_busca_add_does(tmp_path):
    """Corpus.add (and so POST /api/documents) counted two spellings of one new URL as
    "added" and "updated" where `busca add` of the same lines says "1 duplicate (last
    kept)"."""
    import busca

    base = "https://s.example"
    with busca.open(tmp_path / "home") as corpus:
        added = corpus.add([Document(base + RAW, "Ação", TEXT),
                            Document(base + LOWER, "Ação", "Outra versão."),
                            Document(base + "/outra/", "Outra", TEXT)])
        assert (added.counts["added"], added.counts["duplicate"], added.counts["updated"]) == (
            2, 1, 0)
        assert corpus.home.count() == 2 and corpus.home.get(base + RAW).text == "Outra versão."
