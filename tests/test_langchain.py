"""`busca.integrations.langchain.BuscaRetriever` through langchain-core's own interfaces:
invoke/batch/ainvoke of the Runnable protocol and a real LCEL chain (retriever | formatter |
prompt | langchain-core's fake chat model), on the fixture corpus, equal to `busca search`.
langchain-core ships no standard retriever test suite (that is the separate langchain-tests
package), so the chain is the check."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("langchain_core")

from click.testing import CliRunner  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import RunnableLambda, RunnablePassthrough  # noqa: E402

from busca.cli import cli  # noqa: E402
from busca.integrations.langchain import BuscaRetriever, FiltersNotSupported  # noqa: E402

QUESTION = "Qual o limite das atividades extracurriculares no curso?"


def cli_hits(home, *args):
    result = CliRunner().invoke(cli, ["--home", str(home), "search", QUESTION, "--json",
                                      "--no-log", *args], obj={})
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_documents_carry_the_citation_and_scores_of_busca_search(lexical_home):
    retriever = BuscaRetriever(home=lexical_home, method="bm25", k=4)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(QUESTION)
    expected = cli_hits(lexical_home, "--method", "bm25", "-k", "4")
    assert all(isinstance(d, Document) for d in docs)
    assert [d.page_content for d in docs] == [h["text"] for h in expected]
    assert [(d.metadata["source"], d.metadata["score"], d.metadata["rank"])
            for d in docs] == [(h["url"], h["score"], h["rank"]) for h in expected]
    assert docs[0].metadata["title"] and docs[0].metadata["method"] == "bm25"


def test_batch_and_async_through_the_runnable_protocol(lexical_home):
    retriever = BuscaRetriever(home=str(lexical_home), k=2)
    first, second = retriever.batch([QUESTION, "quem foi Ada Lovelace?"])
    assert len(first) == 2 and len(second) == 2
    again = asyncio.run(retriever.ainvoke(QUESTION))
    assert [d.metadata["chunk_id"] for d in again] == [d.metadata["chunk_id"] for d in first]


def test_a_real_lcel_chain(lexical_home):
    retriever = BuscaRetriever(home=lexical_home, method="bm25", k=3)
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


def test_nothing_above_the_floor_is_no_documents_and_filters_are_refused(lexical_home):
    assert BuscaRetriever(home=lexical_home, min_score=1e6).invoke(QUESTION) == []
    with pytest.raises(FiltersNotSupported, match="not supported yet"):
        BuscaRetriever(home=lexical_home, filters={"lang": "pt"})
