"""The eval harness (search/eval/harness.py): the live index's methods, or temporary indexes
per chunker, judged and summarised; hand-worked first ranks."""

import pytest

from busca.crawler.store import Document
from busca.index import LocalHome
from busca.index.build import build_index
from busca.search.eval import (Golden, NothingRelevant, Question, default_metrics,
                               evaluate_chunkers, evaluate_index)

DOCS = [
    Document("https://s/reembolso", "Reembolso",
             "O prazo do estorno na fatura é de sete dias úteis após o cancelamento."),
    Document("https://s/suporte", "Suporte",
             "O atendimento funciona de segunda a sexta pelo chat do site."),
    Document("https://s/cursos", "Cursos",
             "A universidade oferece cursos noturnos de engenharia de software."),
]
QUESTIONS = (
    Question("q1", "qual o prazo do estorno na fatura?", trecho="sete dias úteis"),
    Question("q2", "quando funciona o atendimento pelo chat?", trecho="segunda a sexta"),
    Question("q3", "qual a nota de corte do vestibular?"),  # unanswerable
)


@pytest.fixture
def home(tmp_path):
    home = LocalHome(tmp_path)
    for doc in DOCS:
        home.put(doc)
    build_index(home)
    yield home
    home.close()


def golden(*questions):
    return Golden("g.json", "json", tuple(questions or QUESTIONS))


def test_live_index_every_method_with_hand_worked_ranks(home):
    """One chunk per document: each question's own document ranks first."""
    harness = evaluate_index(golden(), home.current(), home, methods=None,
                             metrics=default_metrics((1, 3)))
    ev = harness.evaluation
    assert set(ev.outcomes) == {"tfidf", "bm25"}
    for method in ("tfidf", "bm25"):
        first = [o.first_rank for o in ev.outcomes[method]]
        assert first[:2] == [1, 1] and first[2] is None
        assert ev.summary[method]["recall@1"].mean == 1.0
    assert ev.info["index"]["chunks"] == 3 and ev.info["answerable"] == 2
    assert set(harness.judged) == {"words:200:40"}


def test_temporary_indexes_leave_the_live_one_alone(home, tmp_path):
    before = (tmp_path / "CURRENT").read_text()
    chunkers = [{"kind": "words", "size": 4, "overlap": 1}, {"kind": "words", "size": 200,
                                                             "overlap": 40}]
    harness = evaluate_chunkers(golden(), home, chunkers, methods=["bm25"],
                                metrics=default_metrics((1,)))
    assert set(harness.evaluation.outcomes) == {"bm25/words:4:1", "bm25/words:200:40"}
    assert [o.first_rank for o in harness.evaluation.outcomes["bm25/words:200:40"]][:2] == [1, 1]
    assert (tmp_path / "CURRENT").read_text() == before
    assert len(list(tmp_path.glob("index-*"))) == 1


def test_a_golden_set_of_another_corpus_is_refused(home):
    other = golden(Question("x", "o que é fotossíntese?", trecho="clorofila das plantas"))
    with pytest.raises(NothingRelevant, match="is it the golden set of this corpus"):
        evaluate_index(other, home.current(), home, methods=["bm25"],
                       metrics=default_metrics((1,)))
