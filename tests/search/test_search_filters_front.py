"""Filters through the front ends (issue #26): `busca search --filter`, GET /api/search
`filter=` on a real `busca serve` (PostgreSQL homes: tests/index/test_pg_filters.py)."""

from __future__ import annotations

import json
from urllib.error import HTTPError
from urllib.parse import urlencode
from urllib.request import Request, urlopen

import pytest
from click.testing import CliRunner
from conftest import lexical_home_of

from busca import corpus as api
from busca.cli import cli

DOCS = [{"url": "https://a.example/ornitorrinco", "title": "Ornitorrinco", "category": "Mamíferos",
         "date": "2015-03-01", "text": "O ornitorrinco bota ovos e amamenta os filhotes."},
        {"url": "https://a.example/equidna", "title": "Equidna", "category": "Mamíferos",
         "date": "2012-05-01", "text": "A equidna também bota ovos, como o ornitorrinco."},
        {"url": "https://b.example/galinha", "title": "Galinha", "category": "Aves",
         "date": "2018-01-01", "text": "A galinha bota ovos todos os dias."},
        {"url": "https://b.example/vaca", "title": "Vaca", "category": "Mamíferos",
         "date": "2016-01-01", "text": "A vaca dá leite e come capim."}]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return lexical_home_of(tmp_path_factory.mktemp("filters") / "home", DOCS)


def _search(home, *args):
    return CliRunner().invoke(cli, ["--home", str(home), "search", "ovos", "--json", "-k", "5",
                                    "--no-log", *args], obj={})


def _urls(stdout: str) -> list[str]:
    return [json.loads(line)["url"] for line in stdout.splitlines()]


def test_cli_filters_and_metadata(home):
    result = _search(home, "--no-serve", "--filter", "category=Mamíferos",
                     "--filter", "date>=2014-01-01")
    assert result.exit_code == 0, result.output
    assert _urls(result.stdout) == ["https://a.example/ornitorrinco"]
    assert json.loads(result.stdout)["meta"] == {"category": "Mamíferos", "date": "2015-03-01"}
    result = _search(home, "--no-serve", "--filter", "url^=https://a.example/",
                     "--method", "bm25")
    assert sorted(_urls(result.stdout)) == ["https://a.example/equidna",
                                            "https://a.example/ornitorrinco"]


@pytest.mark.parametrize("bad", ["category", "=Aves", "date>="])
def test_a_bad_filter_is_bad_usage(home, bad):
    result = _search(home, "--no-serve", "--filter", bad)
    assert result.exit_code == 2 and "bad filter" in result.output
    assert "Traceback" not in result.output


def test_the_interactive_session_takes_filters_and_filter_commands(home):
    """`busca search --filter` without a question: the session starts with these filters;
    `:filter` adds one, `:filter clear` drops them (metadata fields)."""
    lines = ["ovos", ":filter date<=2014-01-01", "ovos", ":filter clear", "ovos"]
    result = CliRunner().invoke(cli, ["--home", str(home), "search", "--json", "-k", "5",
                                      "--no-log", "--filter", "category=Mamíferos"],
                                input="\n".join(lines), obj={})
    assert result.exit_code == 0, result.output
    first, both, cleared = ([h["url"] for h in json.loads(line)["hits"]]
                            for line in result.stdout.splitlines())
    assert sorted(first) == ["https://a.example/equidna", "https://a.example/ornitorrinco"]
    assert both == ["https://a.example/equidna"]
    assert "https://b.example/galinha" in cleared


def test_http_filter_parameters_and_the_cli_through_the_server(home):
    from serving import Server

    with Server(home, "--no-log") as server:
        query = urlencode([("q", "ovos"), ("k", 5), ("filter", "category!=Mamíferos")])
        with urlopen(f"{server.url}api/search?{query}", timeout=60) as response:
            data = json.load(response)
        assert [h["url"] for h in data["hits"]] == ["https://b.example/galinha"]
        assert data["hits"][0]["meta"]["category"] == "Aves"
        with pytest.raises(HTTPError) as refused:
            urlopen(f"{server.url}api/search?q=ovos&filter=nada", timeout=60)
        body = json.load(refused.value)
        assert refused.value.code == 400 and "bad filter" in json.dumps(body)
        result = _search(home, "--filter", "category=Aves")  # answered by the server
        assert _urls(result.stdout) == ["https://b.example/galinha"]
        assert _context_urls(home, "--filter", "category=Aves") == ["https://b.example/galinha"]
        body = json.dumps({"q": "ovos", "min_score": 0, "filter": ["date<=2013-01-01"]})
        request = Request(f"{server.url}api/context", body.encode(), method="POST",
                          headers={"Content-Type": "application/json"})
        with urlopen(request, timeout=60) as response:
            data = json.load(response)
        assert [p["url"] for p in data["passages"]] == ["https://a.example/equidna"]


def test_compare_filters_on_the_cli_and_the_http_api(home):
    """`busca compare --filter` and GET /api/compare `filter=`: every method's column holds
    only the matching documents."""
    from serving import Server

    result = CliRunner().invoke(cli, ["--home", str(home), "compare", "ovos", "--json", "-k",
                                      "5", "--filter", "category=Aves"], obj={})
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    assert {r["url"] for r in rows} == {"https://b.example/galinha"}
    with Server(home, "--no-log") as server:
        query = urlencode([("q", "ovos"), ("methods", "tfidf,bm25"),
                           ("filter", "category=Mamíferos"), ("filter", "date<=2013-01-01")])
        with urlopen(f"{server.url}api/compare?{query}", timeout=60) as response:
            data = json.load(response)
    assert {m: [h["url"] for h in hits] for m, hits in data["columns"].items()} == {
        "tfidf": ["https://a.example/equidna"], "bm25": ["https://a.example/equidna"]}


def test_compare_says_why_a_filtered_column_is_empty(home):
    """README: nothing found by compare is "empty `columns` and `rows`, `notes` per method",
    as `busca search` names the filters (before: an empty table, `"notes": {}`)."""
    def compare(question, *args):
        return CliRunner().invoke(cli, ["--home", str(home), "compare", question, "-k", "3",
                                        "--methods", "tfidf,bm25", *args], obj={})

    result = compare("ovos", "--json", "--filter", "category=Peixes")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["rows"] == [] and data["notes"] == {
        m: "no document matches the filters category=Peixes" for m in ("tfidf", "bm25")}
    result = compare("capim", "--filter", "category=Aves")  # only the cow eats grass
    assert result.exit_code == 0, result.output
    assert ("bm25: no passage of the documents that match the filters category=Aves matches"
            " the question") in result.stdout
    assert json.loads(compare("ovos", "--json", "--filter", "category=Aves").stdout)[
        "notes"] == {}


def _context_urls(home, *args) -> list[str]:
    result = CliRunner().invoke(cli, ["--home", str(home), "context", "ovos", "--json",
                                      "--min-score", "0", "--no-log", *args], obj={})
    assert result.exit_code == 0, result.output
    return [p["url"] for p in json.loads(result.stdout)["passages"]]


def test_context_filters(home):
    assert _context_urls(home, "--no-serve", "--filter", "date<=2013-01-01") == [
        "https://a.example/equidna"]
    assert len(_context_urls(home, "--no-serve")) == 3


def test_equal_facet_counts_come_in_the_values_order(tmp_path):
    """Ties are put in the values' order, whatever the hash seed (the order a set met them
    in, before: `busca stats` changed from run to run, and which of more than ten tied values
    made the top ten)."""
    from busca.crawler.store import Document
    from busca.search.facets import facets

    names = [f"tema {chr(ord('z') - i)}" for i in range(12)]  # z, y, …: not the URLs' order
    with api.open(tmp_path / "h") as corpus:
        corpus.add([Document(f"https://t.example/{i:02}", "t", "texto", meta={"tag": [n, "comum"]})
                    for i, n in enumerate(names)])
        top = facets(corpus.home)["tag"]
    assert top["values"] == 13
    assert list(top["top"].items()) == [("comum", 12)] + [(n, 1) for n in sorted(names)[:9]]


def test_a_value_with_a_line_break_keeps_its_facet_on_one_line(tmp_path):
    """busca stats printed `facet nota: a` and a line `b 1` of its own."""
    from busca.crawler.store import Document

    with api.open(tmp_path / "h") as corpus:
        corpus.add([Document("https://t.example/1", "t", "texto", meta={"nota": "a\nb"})])
    shown = CliRunner().invoke(cli, ["--home", str(tmp_path / "h"), "stats"], obj={}).stdout
    assert "facet nota: a b 1" in shown.splitlines()


def test_the_facet_panel_is_headed_in_the_pages_language():
    """The page is English ("Search", "Ask a question…", "documents per value …"), but its
    facet panel was headed "Filtrar"."""
    from busca.serve.facetview import panel

    html = panel({"category": {"values": 1, "top": {"Help": 3}}}, "reset", "bm25", 3, ())
    assert '<h2>Filters</h2>' in html and "Filtrar" not in html


def test_stats_shows_facet_counts(home):
    runner = CliRunner()
    data = json.loads(runner.invoke(cli, ["--home", str(home), "stats", "--json"],
                                    obj={}).stdout)
    assert data["facets"]["category"] == {"values": 2, "top": {"Mamíferos": 3, "Aves": 1}}
    assert data["facets"]["date"]["values"] == 4
    text = runner.invoke(cli, ["--home", str(home), "stats"], obj={}).stdout
    assert "facet category: Mamíferos 3, Aves 1" in text
    with api.open(home) as corpus:
        assert corpus.stats()["facets"] == data["facets"]


def _page(server, **query) -> tuple[int, str]:
    """(status, HTML) of the search page with these parameters (`filter`: a list)."""
    url = f"{server.url}?{urlencode(query, doseq=True)}"
    try:
        with urlopen(url, timeout=60) as response:
            return response.status, response.read().decode("utf-8")
    except HTTPError as e:
        return e.code, e.read().decode("utf-8")


def _facet_links(html: str) -> dict[str, str]:
    """filter text -> the page it links to, for each facet value of the panel."""
    import html as markup
    import re

    panel = html[html.index('id="facets"'):]
    return {markup.unescape(f): markup.unescape(h) for h, f in
            re.findall(r'<a href="([^"]*)" data-filter="([^"]*)"', panel)}


def test_the_page_shows_facets_that_add_filters_kept_in_the_url_as_chips(home):
    """The page (issue #26): facet counts beside the results, each value a link adding
    filter=KEY=VALUE; the filters stay in the URL and the form, as removable chips."""
    import html as markup

    from serving import Server

    with Server(home, "--no-log") as server:
        status, html = _page(server, q="ovos", method="bm25", k=5)
        assert status == 200 and 'class="chip"' not in html
        links = _facet_links(html)
        assert '<h3>category</h3><ul><li><a href="' in html
        assert ">Mamíferos</a> <span class=\"count\">3</span>" in html
        assert ">Aves</a> <span class=\"count\">1</span>" in html
        follow = links["category=Mamíferos"]
        assert follow.startswith("./?") and "filter=category%3DMam%C3%ADferos" in follow
        status, html = _page(server, q="ovos", method="bm25", k=5,
                             filter=["category=Mamíferos"])
        assert status == 200 and "https://b.example/galinha" not in html
        assert "https://a.example/ornitorrinco" in html
        assert '<span class="chip" data-filter="category=Mamíferos">' in html
        assert '<input type="hidden" name="filter" value="category=Mamíferos">' in html
        removal = markup.unescape(html.split('class="remove" href="')[1].split('"')[0])
        assert "filter=" not in removal and "q=ovos" in removal
        assert ">Aves</a>" not in html  # the counts are those of the filtered documents
        links = _facet_links(html)
        assert "filter=category%3DMam%C3%ADferos" not in links["category=Mamíferos"]  # active
        both = links["date=2015-03-01"]
        assert "filter=category%3DMam%C3%ADferos" in both and "filter=date%3D2015-03-01" in both
        status, html = _page(server, q="ovos", method="compare", k=5, filter=["category=Aves"])
        assert status == 200 and 'id="compare"' in html
        assert "https://a.example/" not in html and "https://b.example/galinha" in html
        status, html = _page(server, q="ovos", filter=["category"])
        assert status == 400 and "bad filter" in html and "Traceback" not in html
