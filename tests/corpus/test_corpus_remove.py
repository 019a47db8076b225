"""`Corpus.remove`: documents out of a home by id (a URL in any spelling, a file's path as
`add_files` names it), in a local home and a PostgreSQL one alike."""

from __future__ import annotations

from pathlib import Path

import pytest

import busca
from busca.corpus import search_build
from busca.crawler.store import DOC_STATE

DOCS = [busca.Document("https://site.example/notícias/ação", "Ação",
                       "O ornitorrinco bota ovos e amamenta os filhotes."),
        busca.Document("https://site.example/blog/prazo", "Prazo",
                       "O prazo de reembolso do curso é de sete dias."),
        busca.Document("https://site.example/blog/bolsas", "Bolsas",
                       "As bolsas de pesquisa pagam os alunos de engenharia.")]


@pytest.fixture(params=["local", pytest.param("postgres", marks=pytest.mark.postgres)])
def location(request, tmp_path) -> str:
    if request.param == "local":
        return str(tmp_path / "home")
    return request.getfixturevalue("pg_home")


def test_remove_by_url_in_another_spelling_and_by_file_path(location, tmp_path):
    note = tmp_path / "nota ação.md"
    note.write_text("# Nota\n\nTelefone pessoal do ornitorrinco.", encoding="utf-8")
    with busca.open(location) as corpus:
        corpus.add(DOCS)
        corpus.add_files([note])
        corpus.index(methods=["bm25"])
        stored = corpus.home.get(DOCS[0].url).url  # as the store spells it
        corpus.home.set_meta(DOC_STATE + stored, {"source": "sitemap", "lastmod": "2024"})
        removed = corpus.remove(["https://site.example/not%C3%ADcias/a%c3%a7%c3%a3o",
                                 Path(note), "https://site.example/nunca"])
        assert removed.to_json() == {"deleted": 2, "removed": [stored, note.resolve().as_uri()],
                                     "missing": ["https://site.example/nunca"],
                                     "documents": 2}
        assert corpus.home.get_meta(DOC_STATE + stored) is None
        assert corpus.stats()["pending"] == {"changed": 0, "removed": 2}
        corpus.index(methods=["bm25"])
        assert corpus.stats()["pending"] == {"changed": 0, "removed": 0}
        hits = corpus.search("ornitorrinco ovos telefone", method="bm25", log=False).hits
        assert {h.url for h in hits}.isdisjoint({stored, note.resolve().as_uri()})
        assert corpus.build.manifest.documents == 2


def test_remove_by_prefix_and_what_nothing_matched(location):
    with busca.open(location) as corpus:
        corpus.add(DOCS)
        assert corpus.remove("HTTPS://Site.Example/blog/", prefix=True).deleted == 2  # any case
        nothing = corpus.remove(["https://site.example/blog/prazo"])
        assert (nothing.deleted, nothing.missing, nothing.documents) == (
            0, ("https://site.example/blog/prazo",), 1)


@pytest.mark.parametrize("ids,said", [(None, "list of document ids"), ([], "at least one"),
                                      ([""], "non-empty strings"), ([3], "non-empty strings"),
                                      (["https://site.example/blog/", "https://"],
                                       "names every document"),
                                      (["https://site.example/blog/", "/"], "root folder")])
def test_bad_ids_are_refused_before_anything_is_removed(tmp_path, ids, said):
    with busca.open(tmp_path / "home") as corpus:
        corpus.add(DOCS)
        with pytest.raises(busca.errors.BadDocument, match=said):
            corpus.remove(ids, prefix=isinstance(ids, list) and len(ids) == 2)
        assert corpus.home.count() == 3


def test_search_context_and_compare_leave_out_what_changed_since_the_build(location):
    """Until the next build, a removed document and a changed one are left out of every
    question (the build's offsets are the old text's), on both backends; the rest ranks as
    built, and `notify` hears how many documents were left out."""
    with busca.open(location) as corpus:
        corpus.add(DOCS)
        corpus.index(methods=["bm25"])
        question = "ornitorrinco prazo bolsas"
        before = corpus.search(question, method="bm25", log=False).hits
        assert {h.url for h in before} == {d.url for d in DOCS}
        corpus.remove([DOCS[0].url])
        corpus.add([busca.Document(DOCS[1].url, "Prazo", "Outro texto: o prazo mudou.")])
        told = []
        found = search_build(corpus.build, corpus.home, question,
                             busca.SearchSpec(method="bm25", log=False),
                             notify=lambda what, value: told.append((what, value)))
        assert [(h.url, h.score) for h in found.hits] == [
            (h.url, h.score) for h in before if h.url == DOCS[2].url]
        assert ("left out", 2) in told and not found.note
        context = corpus.context(question, method="bm25", log=False, min_score=0)
        assert [p.url for p in context.passages] == [DOCS[2].url]
        compared = corpus.compare(question, methods=["bm25"])
        assert [h.url for h in compared.columns["bm25"]] == [DOCS[2].url]
        nothing = corpus.search("ornitorrinco", method="bm25", log=False)
        assert nothing.hits == () and "removed or changed since the index" in nothing.note
        corpus.index(methods=["bm25"])
        hits = corpus.search(question, method="bm25", log=False).hits
        assert [(h.url, h.text) for h in hits] == [(DOCS[1].url, "Outro texto: o prazo mudou."),
                                                   (DOCS[2].url, DOCS[2].text)]


def test_a_filter_whose_documents_changed_since_the_build_says_so(location):
    """A filter whose only matching document changed since the build said
    "no passage of the documents that match the filters … matches the question", sending
    the user to rephrase what busca index would find: it says they changed, on search and
    context, on both backends."""
    with busca.open(location) as corpus:
        corpus.add(DOCS)
        corpus.index(methods=["bm25"])
        corpus.add([busca.Document(DOCS[1].url, "Prazo", "Outro texto: o prazo mudou.")])
        corpus.remove([DOCS[0].url])
        filters = [f"url={DOCS[1].url}"]
        found = corpus.search("reembolso", method="bm25", log=False, filters=filters)
        context = corpus.context("reembolso", method="bm25", log=False, min_score=0,
                                 filters=filters)
        for why in (found.note, context.reason):
            assert "removed or changed since the index" in why, why
            assert "no passage of the documents" not in why
        gone = corpus.search("ornitorrinco", method="bm25", log=False,
                             filters=[f"url={DOCS[0].url}"])  # the store has it no more
        assert gone.note == f"no document matches the filters url={DOCS[0].url}"
        other = corpus.search("reembolso", method="bm25", log=False,
                              filters=[f"url={DOCS[2].url}"])  # its document as built
        assert other.note.startswith("no passage of the documents that match the filters")


def test_the_documents_left_out_are_counted_among_those_a_filter_or_token_allows(location):
    """`left_out` counted every document changed since the build, those the filters (or a
    busca serve --tokens rule) hide too: a request without a token heard how many staff
    documents had changed (HTTP left_out 3 for the one public document it could see)."""
    from busca.search import Visible
    docs = [busca.Document("https://acl.example/salario", "Salários", "Bônus de 1000 reais.",
                           meta={"groups": ["staff"]}),
            busca.Document("https://acl.example/bonus", "Bônus", "O bônus é 1000 reais.",
                           meta={"groups": ["staff"]}),
            busca.Document("https://acl.example/taxa", "Taxa", "A taxa é 1000 reais."),
            busca.Document("https://acl.example/outro", "Outro", "A matrícula custa 1000.")]
    with busca.open(location) as corpus:
        corpus.add(docs)
        corpus.index(methods=["bm25"])
        corpus.add([busca.Document(d.url, d.title, "Texto novo.", meta=d.meta)
                    for d in docs[:3]])
        public = [Visible(frozenset())]
        for filters, gone in ((None, 3), (public, 1), ([f"url={docs[2].url}"], 1),
                              ([f"url={docs[3].url}"], 0), ([Visible(frozenset({"staff"}))], 3)):
            found = corpus.search("1000", method="bm25", log=False, filters=filters)
            assert found.left_out == gone, filters
            assert corpus.context("1000", method="bm25", log=False, min_score=0,
                                  filters=filters).left_out == gone
        assert [h.url for h in found.hits] == [docs[3].url]


class ChangedAfterTheMask:
    """A home whose store a crawl writes to right after a search read which documents are
    as built (`hashes`): `change()` runs once then, on the real store."""

    def __init__(self, home, change):
        self._home, self._change = home, change

    def __getattr__(self, name):
        return getattr(self._home, name)

    def hashes(self, *args, **kwargs):
        hashes = self._home.hashes(*args, **kwargs)
        change, self._change = self._change, None
        if change:
            change()
        return hashes


@pytest.mark.parametrize("use", ["search", "context", "compare"])
def test_a_document_changed_while_the_as_built_mask_is_read_is_left_out_too(location, use):
    """A crawl that stores a document between the as-built mask and the search's read of the
    store (busca serve under a crawl) left a hit of a document changed since the mask: the
    search failed with StaleIndex (HTTP 409 naming its URL) instead of leaving it out."""
    from busca.corpus import ContextSpec, compare_build, context_build
    with busca.open(location) as corpus:
        corpus.add(DOCS)
        corpus.index(methods=["bm25"])
        question = "ornitorrinco prazo bolsas"
        corpus.remove([DOCS[0].url])  # the first search meets it, so the mask is read
        home = ChangedAfterTheMask(corpus.home, lambda: corpus.add(
            [busca.Document(DOCS[2].url, "Bolsas", "Outro texto sobre as bolsas.")]))
        if use == "search":
            found = search_build(corpus.build, home, question,
                                 busca.SearchSpec(method="bm25", log=False))
            urls = [h.url for h in found.hits]
        elif use == "context":
            found = context_build(corpus.build, home, question,
                                  ContextSpec(method="bm25", log=False, min_score=0))
            urls = [p.url for p in found.passages]
        else:
            found = compare_build(corpus.build, home, question, methods=["bm25"])
            urls = [h.url for h in found.columns["bm25"]]
        assert urls == [DOCS[1].url]
