import random

import numpy as np
import pytest

from busca.crawler.store import Document
from busca.index.build import build_index
from busca.index.home.storage import load_index
from busca import search as core
from busca.search.eval.judge import (Judged, StaleIndex, chunk_documents, chunk_table, collapse,
                                   index_rankers, judge, outcome_of, rank_questions)
from busca.search.eval.golden import Golden, Question
from busca.index.lexical.lexical import NoSearchableTerms
from busca.index import LocalHome

REEMBOLSO = ("Reembolso. Quando o cliente cancela a assinatura dentro do período de garantia,"
             " o valor pago é devolvido integralmente. O prazo para o estorno aparecer na\n"
             "fatura é de até 7 dias   úteis após a confirmação do cancelamento.")
SUPORTE = "Suporte. O atendimento funciona de segunda a sexta, das 9h às 18h, pelo chat."
DOCS = [Document("https://s/reembolso", "Reembolso", REEMBOLSO),
        Document("https://s/suporte", "Suporte", SUPORTE)]
WORDS_8_2 = {"kind": "words", "size": 8, "overlap": 2}


def golden(*questions: Question) -> Golden:
    return Golden("g.json", "json", tuple(questions))


def table(chunker=WORDS_8_2, docs=DOCS):
    return chunk_documents(docs, chunker)[0]


def test_collapse():
    assert collapse("  7 dias\n\t úteis \u00a0") == "7 dias úteis"


def test_trecho_matches_with_whitespace_collapsed_on_both_sides():
    t = table({"kind": "words", "size": 200, "overlap": 40})
    j = judge(golden(Question("a", "prazo?", trecho="7 dias úteis"),
                     Question("b", "prazo?", trecho="na fatura\n é de  até")), t)
    assert [dict(x.gains) for x in j.items] == [{0: 1.0}, {0: 1.0}]
    assert j.problems == () and dict(j.found_in) == {"a": 1, "b": 1}


def test_url_limits_and_url_alone_labels_a_whole_document():
    t = table()
    in_both = "de"  # occurs in both documents
    j = judge(golden(Question("a", "?", trecho=in_both, url="https://s/suporte"),
                     Question("b", "?", url="https://s/suporte"),
                     Question("c", "?")), t)
    suporte = [i for i, u in enumerate(t.urls) if u == "https://s/suporte"]
    assert set(j.items[0].gains) <= set(suporte) and j.items[0].gains
    assert set(j.items[1].gains) == set(suporte)
    assert j.items[2].gains == {} and not j.items[2].question.answerable
    assert j.problems == ()


def test_overlap_puts_a_trecho_in_two_chunks():
    t = table()  # windows 0-7, 6-13, ...: words 6 and 7 are in two chunks
    words = REEMBOLSO.split()
    j = judge(golden(Question("a", "?", trecho=" ".join(words[6:8]))), t)
    assert sorted(j.items[0].gains) == [0, 1] and j.found_in["a"] == 2


def test_a_trecho_in_no_document_says_it_must_be_a_quote():
    """A label written as an answer in the user's own words ("answer": "You get an HTTP 429
    error.") was told to "check the spelling" only: a trecho is the document's words."""
    j = judge(golden(Question("own", "prazo?", trecho="Uma semana, mais ou menos.")), table())
    reason = j.problems[0].reason
    assert reason.startswith("its trecho occurs in no indexed document: check the spelling")
    assert "copied from the document" in reason


def test_unlabelled_trechos_are_reported_with_the_reason():
    t = table()
    words = REEMBOLSO.split()
    j = judge(golden(Question("split", "?", trecho=" ".join(words[4:12])),
                     Question("typo", "?", trecho="7 dias corridos"),
                     Question("caps", "?", trecho="o ATENDIMENTO funciona"),
                     Question("url", "?", trecho="7 dias", url="https://s/outro")), t)
    reasons = {p.question.id: p for p in j.problems}
    assert reasons["split"].reason == "split across 2 chunks of https://s/reembolso"
    assert reasons["split"].split_across == 2
    assert "occurs in no indexed document" in reasons["typo"].reason
    assert "only with other capital letters" in reasons["caps"].reason
    assert reasons["url"].reason == "its url https://s/outro is not in the index"
    assert all(not item.gains for item in j.items)


def test_a_trecho_typed_without_accents_is_named_with_the_documents_words():
    """Typed on a keyboard without accents ("nao", "uteis"), a trecho read "occurs in no
    indexed document: check the spelling"; it names the document and its own words."""
    j = judge(golden(Question("acc", "?", trecho="fatura e de ate 7 dias uteis"),
                     Question("caps", "?", trecho="O ATENDIMENTO funciona"),
                     Question("both", "?", trecho="SEGUNDA A SEXTA, DAS 9H AS 18H")), table())
    reasons = {p.question.id: p.reason for p in j.problems}
    assert reasons["acc"] == ("occurs in https://s/reembolso only with other accents, as"
                              " 'fatura é de até 7 dias úteis'")
    assert reasons["caps"] == ("occurs in https://s/suporte only with other capital letters,"
                               " as 'O atendimento funciona'")
    assert reasons["both"] == ("occurs in https://s/suporte only with other accents, as"
                               " 'segunda a sexta, das 9h às 18h'")


def test_containment_agrees_with_a_naive_oracle():
    rng = random.Random(3)
    vocab = ["a", "casa", "ação", "é", "7", "dias.", "úteis", "Prazo", "de"]
    docs = [Document(f"u{d}", "", " ".join(rng.choice(vocab) + rng.choice(["", " ", "\n  "])
                                         for _ in range(60))) for d in range(5)]
    chunker = {"kind": "words", "size": 7, "overlap": 3}
    t = table(chunker, docs)
    questions = [Question(f"q{n}", "?", trecho=" ".join(rng.choices(vocab, k=rng.randint(1, 3))))
                 for n in range(60)]
    j = judge(golden(*questions), t)
    for item in j.items:
        needle = collapse(item.question.trecho)
        expected = {i for i in range(len(t.urls)) if needle in collapse(t.text(i))}
        assert set(item.gains) == expected


def test_outcome_of_chunks_and_of_documents():
    t = table()
    q = Question("a", "?", trecho="x")
    chunk_level = outcome_of(Judged(q, {2: 1.0, 5: 1.0}, "chunk"), t, [7, 2, 0, 5],
                             [0.9, 0.8, 0.7, 0.6])
    assert chunk_level.ranks == (2, 4) and chunk_level.first_rank == 2
    assert (chunk_level.top_score, chunk_level.first_score) == (0.9, 0.8)
    assert chunk_level.units[1] == t.name(2)
    doc_q = Question("b", "?", qrels={"https://s/suporte": 1})
    j = judge(golden(doc_q), t).items[0]
    suporte = [i for i, u in enumerate(t.urls) if u == "https://s/suporte"]
    ids = [0, 1, suporte[0], 2, suporte[-1]]
    doc_level = outcome_of(j, t, ids, [0.9, 0.8, 0.7, 0.6, 0.5])
    assert doc_level.units == ("https://s/reembolso", "https://s/suporte")
    assert doc_level.ranks == (2,) and doc_level.first_score == 0.7


def test_rank_questions_scores_a_question_without_hits_as_zero():
    t = table()
    j = judge(golden(Question("a", "prazo", trecho="7 dias"), Question("b", "xyz")), t)

    def ranker(query):
        if query == "xyz":
            raise NoSearchableTerms("none")
        return np.array([3, 1]), np.array([0.5, 0.4])

    seen = []
    runs = rank_questions(j, t, {"fake": ranker}, on_progress=lambda *a: seen.append(a))
    a, b = runs["fake"]
    relevant = next(iter(j.items[0].gains))
    assert a.first_rank == ([3, 1].index(relevant) + 1 if relevant in (3, 1) else None)
    assert b.ranks == () and b.top_score is None
    assert seen[-1] == ("ranking with fake", 2, 2)


@pytest.fixture
def indexed(tmp_path):
    store = LocalHome(tmp_path)
    for doc in DOCS:
        store.put(doc)
    build_index(store, size=8, overlap=2)
    yield store, load_index(tmp_path)
    store.close()


def test_chunk_table_of_the_live_index(indexed):
    store, index = indexed
    t = chunk_table(index, store)
    assert t.label == "words:8:2" and len(t.urls) == index.manifest["chunks"]
    assert t.text(0).startswith("Reembolso. Quando")
    rankers = index_rankers(index, ["tfidf"], depth=5)
    ids, scores = rankers["tfidf"]("prazo do estorno")
    assert len(ids) <= 5 and scores[0] >= scores[-1]


def test_stale_index_and_unknown_method(indexed):
    store, index = indexed
    with pytest.raises(core.UnknownMethod, match="it has: tfidf"):
        index_rankers(index, ["nada"])
    store.put(Document("https://s/suporte", "Suporte", SUPORTE + " Novo."))
    with pytest.raises(StaleIndex, match='^1 document changed or vanished since the index was'
                                         ' built — run "busca index"'):  # not "1 documents"
        chunk_table(index, store)


def test_a_document_added_since_the_build_is_named_not_judged_absent(indexed):
    """A label whose trecho is in a document added after `busca index` read "occurs in no
    indexed document: check the spelling", and the metrics were the old index's, exit 0.
    A stored document with no word is never indexed: not counted."""
    store, index = indexed
    store.put(Document("https://s/vazio", "Vazio", " \n "))
    assert chunk_table(index, store).urls  # nothing to index: not stale
    store.put(Document("https://s/novo", "Novo", "O estacionamento custa dez reais."))
    with pytest.raises(StaleIndex, match=r'1 document\(s\) added since the index was built'
                                         r' \(https://s/novo\) .*run "busca index"'):
        chunk_table(index, store)


def test_a_relevant_document_the_index_lacks_counts_in_the_ideal_order():
    """qrels: suporte (gain 1, indexed) and ausente (gain 2, not indexed), suporte ranked
    first. By hand: DCG@10 = 1/log2(2) = 1; IDCG@10 = 2/log2(2) + 1/log2(3) = 2.6309;
    nDCG@10 = 0.3801 — as trec_eval counts it (ranx below), where dropping ausente
    made it 1.0 (the 28th session's sweep). The question is named, not scored 0."""
    from busca.search.eval.metrics import ndcg
    from busca.search.eval.runs import _qrels_lines

    t = table()
    q = Question("b", "?", qrels={"https://s/suporte": 1, "https://s/ausente": 2})
    judgement = judge(golden(q), t)
    suporte = [i for i, u in enumerate(t.urls) if u == "https://s/suporte"]
    outcome = outcome_of(judgement.items[0], t, [suporte[0], 0], [0.9, 0.5])
    assert outcome.ranks == (1,) and outcome.ideal == (2.0, 1.0)
    assert ndcg(outcome, 10) == pytest.approx(1 / (2 + 1 / np.log2(3)))
    assert ndcg(outcome, 10) == pytest.approx(0.38009, abs=1e-5)
    [problem] = judgement.problems
    assert problem.partial and "1 of its 2 relevant documents are not in the index" in \
        problem.reason and "https://s/ausente" in problem.reason
    assert "b 0 https://s/ausente 2\n" in list(_qrels_lines(judgement, t))
    ranx = pytest.importorskip("ranx")  # an independent implementation (the dev extra)
    qrels = ranx.Qrels({"b": {"https://s/suporte": 1, "https://s/ausente": 2}})
    run = ranx.Run({"b": {"https://s/suporte": 0.9, "https://s/reembolso": 0.5}})
    assert ndcg(outcome, 10) == pytest.approx(ranx.evaluate(qrels, run, "ndcg@10"))


ACAO = Document("https://s/a%c3%a7%c3%a3o/", "Ação", "A ação direta é julgada pelo Supremo.")
CAFE = Document("https://s/café", "Café", "O café é a bebida mais consumida no Brasil.")


@pytest.mark.parametrize("spelled", ["https://s/ação/", "https://s/a%C3%A7%C3%A3o/"])
def test_a_golden_url_in_another_spelling_names_the_stored_document(spelled):
    """The store's one spelling of a URL (crawler/urls.py doc_key): /ação/, /a%c3%a7%c3%a3o/
    and /a%C3%A7%C3%A3o/ are one document, so a golden set may name it in any of them (it
    was "its url … is not in the index", scored 0)."""
    t = table({"kind": "words", "size": 200, "overlap": 40}, [ACAO, CAFE])
    j = judge(golden(Question("a", "?", url=spelled),
                     Question("b", "?", trecho="ação direta", url=spelled),
                     Question("c", "?", trecho="a bebida", url="https://s/caf%C3%A9"),
                     Question("d", "?", qrels={spelled: 1, "https://s/caf%c3%a9": 2})), t)
    assert j.problems == ()
    assert [dict(x.gains) for x in j.items[:3]] == [{0: 1.0}, {0: 1.0}, {1: 1.0}]
    assert dict(j.items[3].gains) == {"https://s/a%c3%a7%c3%a3o/": 1.0, "https://s/café": 2.0}


def test_a_golden_url_that_differs_by_a_trailing_slash_is_named_with_the_indexed_one():
    """Another resource (the store keeps /x and /x/ apart), so not relevant, but the reason
    names the indexed spelling instead of leaving the user to hunt for it."""
    t = table()
    j = judge(golden(Question("a", "?", url="https://s/suporte/"),
                     Question("b", "?", trecho="7 dias", url="https://S/reembolso")), t)
    reasons = [p.reason for p in j.problems]
    assert reasons == ["its url https://s/suporte/ is not in the index; it has"
                       " https://s/suporte", "its url https://S/reembolso is not in the"
                       " index; it has https://s/reembolso"]
    assert all(not item.gains for item in j.items)
    # what a copy from a browser's address bar adds: a fragment, campaign parameters, or no
    # scheme at all (it said "is not in the index" and named nothing)
    copied = ["https://s/suporte#horarios", "https://s/reembolso?utm_source=news", "s/suporte"]
    j = judge(golden(*(Question(str(n), "?", url=u) for n, u in enumerate(copied))), t)
    assert [p.reason.rpartition("; it has ")[2] for p in j.problems] == [
        "https://s/suporte", "https://s/reembolso", "https://s/suporte"]


def test_a_trecho_under_the_wrong_url_names_the_document_that_holds_it():
    """The trecho is quoted word for word, but its url names another page: the reason said
    "occurs in no document URL: check the spelling", sending the user to a correct quote."""
    j = judge(golden(Question("a", "?", trecho="7 dias úteis", url="https://s/suporte"),
                     Question("b", "?", trecho="7 dias corridos", url="https://s/suporte")),
              table())
    reasons = {p.question.id: p.reason for p in j.problems}
    assert reasons["a"] == ("its trecho occurs in https://s/reembolso, not in its url"
                            " https://s/suporte: correct the url, or leave it out")
    assert reasons["b"].startswith("its trecho occurs in no document https://s/suporte: check")
    assert all(not item.gains for item in j.items)


def test_a_trecho_typed_with_straight_quotes_names_the_documents_curly_ones():
    """A keyboard types ' and " where the page has ’ and “ ” (and - for –): the reason said
    "check the spelling" of a trecho spelt right; it names the document's own characters."""
    docs = [Document("https://s/dados", "Dados", "Peça em “Minha conta › Privacidade” – a"
                     " cópia d’água chega em 15 dias.")]
    j = judge(golden(Question("q", "?", trecho='"Minha conta › Privacidade" - a'),
                     Question("a", "?", trecho="copia d'agua")), table(docs=docs))
    reasons = {p.question.id: p.reason for p in j.problems}
    assert reasons["q"] == ("occurs in https://s/dados only with other quotation marks or"
                            " dashes, as '“Minha conta › Privacidade” – a'")
    assert reasons["a"] == ("occurs in https://s/dados only with other quotation marks or"
                            " dashes, as 'cópia d’água'")
