"""`busca.integrations.langchain.BuscaRetriever` through langchain-core's own interfaces:
invoke/batch/ainvoke of the Runnable protocol and a real LCEL chain (retriever | formatter |
prompt | langchain-core's fake chat model), on the fixture corpus, equal to `busca search`.
langchain-core ships no standard retriever test suite (that is the separate langchain-tests
package), so the chain is the check."""

from __future__ import annotations

import asyncio
import json
import math
import shutil

import pytest

pytest.importorskip("langchain_core")

from click.testing import CliRunner  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import RunnableLambda, RunnablePassthrough  # noqa: E402

import busca  # noqa: E402
import busca.corpus.live as live_module  # noqa: E402
from busca.cli import cli  # noqa: E402
from busca.corpus import Corpus, SearchSpec  # noqa: E402
from busca.errors import BadFilter, BadSpec, BuscaError  # noqa: E402
from busca.integrations.langchain import BuscaRetriever, FiltersNotSupported  # noqa: E402

QUESTION = "Qual o limite das atividades extracurriculares no curso?"


def cli_hits(home, *args):
    result = CliRunner().invoke(cli, ["--home", str(home), "search", QUESTION, "--json",
                                      "--no-log", *args], obj={})
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_documents_carry_the_citation_and_scores_of_busca_search(lexical_home):
    retriever = BuscaRetriever(home=lexical_home, method="bm25", k=4, log=False)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(QUESTION)
    expected = cli_hits(lexical_home, "--method", "bm25", "-k", "4")
    assert all(isinstance(d, Document) for d in docs)
    assert [d.page_content for d in docs] == [h["text"] for h in expected]
    assert [(d.metadata["source"], d.metadata["score"], d.metadata["rank"])
            for d in docs] == [(h["url"], h["score"], h["rank"]) for h in expected]
    assert docs[0].metadata["title"] and docs[0].metadata["method"] == "bm25"


def test_batch_and_async_through_the_runnable_protocol(lexical_home):
    retriever = BuscaRetriever(home=str(lexical_home), k=2, log=False)
    first, second = retriever.batch([QUESTION, "quem foi Ada Lovelace?"])
    assert len(first) == 2 and len(second) == 2
    again = asyncio.run(retriever.ainvoke(QUESTION))
    assert [d.metadata["chunk_id"] for d in again] == [d.metadata["chunk_id"] for d in first]


def test_a_real_lcel_chain(lexical_home):
    retriever = BuscaRetriever(home=lexical_home, method="bm25", k=3, log=False)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from these passages only:\n{context}"), ("human", "{question}")])
    seen = []

    def cite(docs):
        return "\n\n".join(f"[fonte: {d.metadata['source']}]\n{d.page_content}" for d in docs)

    def spy(value):
        seen.append(value)
        return value

    chain = ({"context": retriever | RunnableLambda(cite), "question": RunnablePassthrough()}
             | prompt | RunnableLambda(spy) | FakeListChatModel(responses=["20%"])
             | StrOutputParser())
    assert chain.invoke(QUESTION) == "20%"
    system = seen[0].to_messages()[0].content
    for hit in cli_hits(lexical_home, "--method", "bm25", "-k", "3"):
        assert f"[fonte: {hit['url']}]" in system


def test_nothing_above_the_floor_is_no_documents(lexical_home):
    assert BuscaRetriever(home=lexical_home, min_score=1e6, log=False).invoke(QUESTION) == []


# --- the document metadata and filters (a home whose documents carry metadata) ------------

def cli_json(home, *args):
    result = CliRunner().invoke(cli, ["--home", str(home), "search", QUESTION, "--json",
                                      "--no-log", *args], obj={})
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture(scope="module")
def meta_home(tmp_path_factory, lexical_home):
    """The fixture articles with a category, tags and a date each (tfidf and bm25)."""
    home = tmp_path_factory.mktemp("lcmeta") / "home"
    with busca.open(lexical_home) as source, busca.open(home) as corpus:
        docs = sorted(source.home.documents(), key=lambda d: d.url)
        corpus.add(busca.Document(d.url, d.title, d.text, meta={
            "category": ("Cursos", "Normas", "Pesquisa")[n % 3], "tags": [f"t{n % 2}", "todos"],
            "date": f"201{n % 10}-01-01"}) for n, d in enumerate(docs))
        corpus.index(methods=("tfidf", "bm25"))
    return home


def test_documents_carry_the_document_metadata_as_the_http_json_does(meta_home):
    docs = BuscaRetriever(home=meta_home, method="bm25", k=5, log=False).invoke(QUESTION)
    expected = busca.open(meta_home).search(QUESTION, method="bm25", k=5, log=False)
    http = expected.to_json()["hits"]  # the form of GET /api/search
    assert [d.metadata["meta"] for d in docs] == [h["meta"] for h in http] == \
        [h["meta"] for h in cli_json(meta_home, "--method", "bm25", "-k", "5")]
    assert docs[0].metadata["meta"]["category"] in ("Cursos", "Normas", "Pesquisa")
    assert docs[0].metadata["url"] == http[0]["url"]  # busca's own keys beside it, untouched


@pytest.mark.parametrize("given, texts", [
    ("category=Cursos", ["category=Cursos"]),
    (["category=Cursos,Normas", "date>=2014-01-01"], ["category=Cursos,Normas",
                                                       "date>=2014-01-01"]),
    ({"category": "Cursos"}, ["category=Cursos"]),
    ({"category": ["Cursos", "Normas"], "tags": "t1"}, ["category=Cursos,Normas", "tags=t1"]),
])
def test_filters_restrict_the_search_as_busca_search_filter(meta_home, given, texts):
    flags = [arg for text in texts for arg in ("--filter", text)]
    expected = cli_json(meta_home, "--method", "bm25", "-k", "6", *flags)
    assert expected  # the filters leave something to find
    for retriever in (BuscaRetriever(home=meta_home, method="bm25", k=6, filters=given, log=False),
                      BuscaRetriever(home=meta_home, method="bm25", log=False,
                                     search_kwargs={"k": 6, "filter": given})):
        docs = retriever.invoke(QUESTION)
        assert [(d.metadata["chunk_id"], d.metadata["score"]) for d in docs] == \
            [(h["chunk_id"], h["score"]) for h in expected]


@pytest.mark.parametrize("given, error, words", [
    ({"date": {"$gte": "2014"}}, FiltersNotSupported, "date>=2015-01-01"),
    ({"$and": [{"category": "Cursos"}]}, FiltersNotSupported, "busca's texts"),
    ({"category": "Cursos,Normas"}, BadFilter, "give a list"),
    ({"category": []}, FiltersNotSupported, "value or a list"),
    ("category", BadFilter, "FIELD=VALUE"),
])
def test_a_filter_busca_cannot_read_is_one_line_when_the_retriever_is_made(meta_home, given,
                                                                           error, words):
    with pytest.raises(error, match=words) as caught:
        BuscaRetriever(home=meta_home, filters=given)
    assert "\n" not in str(caught.value)


# --- options: search_kwargs, invoke's, and the checks of SearchSpec -------------------------

def test_search_kwargs_and_invoke_options_reach_the_search(lexical_home):
    assert len(BuscaRetriever(home=lexical_home, method="bm25", log=False,
                              search_kwargs={"k": 6}).invoke(QUESTION)) == 6
    retriever = BuscaRetriever(home=lexical_home, method="bm25", k=3, log=False,
                               search_kwargs={"per_doc": 0})
    assert len(retriever.invoke(QUESTION, k=5)) == 5  # invoke's over the field
    assert len(asyncio.run(retriever.ainvoke(QUESTION, k=4))) == 4
    assert [len(docs) for docs in retriever.batch([QUESTION, QUESTION], k=2)] == [2, 2]
    assert len(retriever.invoke(QUESTION)) == 3  # a call's options last for that call only
    retriever.search_kwargs["k"] = 7  # as a LangChain vector store retriever's
    assert len(retriever.invoke(QUESTION)) == 7


@pytest.mark.parametrize("made, words", [
    (dict(top_k=10), "no option top_k (busca calls it k)"),
    (dict(fusion="rrf"), "search_kwargs="),
    (dict(search_kwargs={"top_k": 10}), "search_kwargs has 'top_k' (busca calls it k)"),
    (dict(search_kwargs={"score_threshold": 0.5}), "busca calls it min_score"),
    (dict(search_kwargs=[("k", 3)]), "search_kwargs must map"),
])
def test_an_unknown_option_is_refused_not_ignored(lexical_home, made, words):
    with pytest.raises(BadSpec, match=words.replace("(", r"\(").replace(")", r"\)")) as caught:
        BuscaRetriever(home=lexical_home, **made)
    assert "\n" not in str(caught.value)
    retriever = BuscaRetriever(home=lexical_home, log=False)
    with pytest.raises(BadSpec, match="invoke has 'top_k'"):
        retriever.invoke(QUESTION, top_k=10)


@pytest.mark.parametrize("option, value", [
    ("k", "3"), ("k", 0), ("k", True), ("method", None), ("method", ""), ("per_doc", -1),
    ("min_score", math.nan), ("log", "yes"), ("k", 10**12),
])
def test_a_bad_option_is_the_busca_error_of_corpus_search_when_made(lexical_home, option,
                                                                    value):
    with pytest.raises(BadSpec) as expected:
        SearchSpec(**{option: value})
    for made in ({option: value}, {"search_kwargs": {option: value}}):
        with pytest.raises(BadSpec) as caught:
            BuscaRetriever(home=lexical_home, **made)
        assert str(caught.value) == str(expected.value) and "\n" not in str(caught.value)


def test_a_missing_or_bad_home_is_one_line(tmp_path):
    with pytest.raises(BadSpec, match="needs home="):
        BuscaRetriever(method="bm25")
    with pytest.raises(BadSpec, match="open takes a folder"):
        BuscaRetriever(home=None)
    with pytest.raises(BuscaError, match="does not exist"):
        BuscaRetriever(home=tmp_path / "nowhere")
    assert not (tmp_path / "nowhere").exists()


# --- one build for every thread, every Corpus closed ---------------------------------------

def test_threads_share_one_corpus_and_its_loaded_build(lexical_home, monkeypatch):
    counts = {"loads": 0, "opened": 0}
    live, init = live_module.Live, Corpus.__init__

    def loaded(*args, **kwargs):
        counts["loads"] += 1
        return live(*args, **kwargs)

    def opened(self, *args, **kwargs):
        counts["opened"] += 1
        init(self, *args, **kwargs)

    monkeypatch.setattr(live_module, "Live", loaded)
    monkeypatch.setattr(Corpus, "__init__", opened)
    with BuscaRetriever(home=lexical_home, method="bm25", k=2, log=False) as retriever:
        first = retriever.invoke(QUESTION)
        assert all(docs == first for docs in retriever.batch([QUESTION] * 8))
        assert all(docs == first for docs in asyncio.run(retriever.abatch([QUESTION] * 8)))
        assert counts == {"loads": 1, "opened": 1}  # the pool's threads share both
    with pytest.raises(BuscaError, match="was closed"):
        retriever.invoke(QUESTION)
    # the pool's threads held handles of their own: closed too (they answered before)
    for call in (lambda: asyncio.run(retriever.ainvoke(QUESTION)),
                 lambda: retriever.batch([QUESTION] * 2),
                 lambda: asyncio.run(retriever.abatch([QUESTION] * 2))):
        with pytest.raises(BuscaError, match="was closed"):
            call()


# --- the query log, as busca search and Corpus.search -------------------------------------

def test_questions_are_logged_by_default_as_busca_search(lexical_home, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(lexical_home, home)
    with busca.open(home) as corpus:
        before = len(corpus.home.logged_queries())
    with BuscaRetriever(home=home, method="bm25") as retriever:
        retriever.invoke(QUESTION)
    with BuscaRetriever(home=home, method="bm25", log=False) as retriever:
        retriever.invoke("quem foi Ada Lovelace?")
    with busca.open(home) as corpus:
        logged = corpus.home.logged_queries()[before:]
    assert [row["query"] for row in logged] == [QUESTION]


# --- access: a reader's rule (search.visible_to) ---------------------------------------------

@pytest.fixture(scope="module")
def groups_home(tmp_path_factory):
    """Public, staff's and hr's documents, all with a category and the word "março"."""
    home = tmp_path_factory.mktemp("lcgroups") / "home"
    with busca.open(home) as corpus:
        corpus.add([{"url": f"https://i.example/{name}", "title": name, "category": "RH",
                     "text": f"O plano de {name} sai em março.",
                     **({"groups": groups} if groups else {})}
                    for name, groups in (("publico", None), ("equipe", "staff"),
                                         ("demissoes", "hr"))])
        corpus.index(methods=("bm25",))
    return home


@pytest.mark.parametrize("later", [
    dict(search_kwargs={"filter": {"category": "RH"}}),
    dict(search_kwargs={"filters": "category=RH"}),
    dict(search_kwargs={"filters": None}),
    dict(call={"filter": ["category=RH"]}),
    dict(call={"filters": []}),
    dict(call={"filters": None}),
])
def test_a_later_filter_never_drops_the_readers_rule(groups_home, later):
    """The retriever's options are overridden by search_kwargs, then by a call's; a filter
    given there (a user's category, LangChain's filter dict) replaced the access rule too,
    and the reader got the text of documents of groups it may not see."""
    from busca.search import visible_to

    retriever = BuscaRetriever(home=groups_home, method="bm25", k=5, min_score=0, log=False,
                               filters=[visible_to(["staff"])],
                               search_kwargs=later.get("search_kwargs"))
    docs = retriever.invoke("plano março", **later.get("call", {}))
    assert {d.metadata["source"] for d in docs} == {"https://i.example/publico",
                                                    "https://i.example/equipe"}
    hr = retriever.invoke("plano março", filters=[visible_to(["hr"])])  # a rule given later
    assert {d.metadata["source"] for d in hr} == {"https://i.example/publico"}  # both hold
