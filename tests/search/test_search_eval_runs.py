import numpy as np
import pytest

from busca.crawler.store import Document
from busca.search.eval.judge import chunk_documents, judge, rank_questions
from busca.search.eval.golden import Golden, Question
from busca.search.eval.runs import RunError, align, fingerprint, load_run, run_pairs, save_run

DOCS = [Document("https://s/a", "A", "Um dois três quatro. Cinco seis sete oito."),
        Document("https://s/b", "B", "Nove dez onze doze.")]
GOLDEN = Golden("g.json", "json", (Question("q1", "três?", trecho="três quatro"),
                                   Question("q2", "dez?", url="https://s/b"),
                                   Question("n1", "nada?")))


def make_run(tmp_path, name, docs=DOCS):
    table, _ = chunk_documents(docs, {"kind": "words", "size": 4, "overlap": 1})
    judgement = judge(GOLDEN, table)
    ranker = lambda q: (np.arange(len(table.urls))[::-1], np.linspace(1, 0.1, len(table.urls)))
    outcomes = rank_questions(judgement, table, {"tfidf": ranker})
    corpus = fingerprint({d.url: d.text for d in docs})
    return save_run(tmp_path / name, GOLDEN, outcomes, {table.label: (judgement, table)},
                    corpus=corpus, info={"date": "hoje"}), outcomes


def test_a_run_round_trips_with_trec_files(tmp_path):
    paths, outcomes = make_run(tmp_path, "a.json")
    assert [p.name for p in paths] == ["a.json", "a.trec", "a.qrels"]
    run = load_run(paths[0])
    assert run.outcomes["tfidf"]["q1"] == outcomes["tfidf"][0]
    assert run.corpus["documents"] == 2 and run.info["date"] == "hoje"
    first = paths[1].read_text().splitlines()[0].split()
    assert first[:2] == ["q1", "Q0"] and first[3] == "1" and first[5] == "tfidf"
    assert "q2 0 https://s/b#0 1" in paths[2].read_text()


def test_align_and_refusals(tmp_path):
    (a, *_), _ = make_run(tmp_path, "a.json")
    (b, *_), _ = make_run(tmp_path, "b.json")
    systems = align(GOLDEN, load_run(a), load_run(b))
    assert list(systems) == ["A:tfidf", "B:tfidf"]
    assert run_pairs(list(systems)) == [("A:tfidf", "B:tfidf")]
    (c, *_), _ = make_run(tmp_path, "c.json", DOCS[:1])
    with pytest.raises(RunError, match="another corpus"):
        align(GOLDEN, load_run(a), load_run(c))
    other = Golden("h.json", "json", GOLDEN.questions + (Question("q9", "novo?"),))
    with pytest.raises(RunError, match="lacks 1 questions of h.json"):
        align(other, load_run(a), load_run(b))


@pytest.mark.parametrize("content, message", [
    ("{", "invalid JSON"), ('{"format": "x"}', "not a busca run file"),
    ('{"format": "busca-run", "version": 9}', "version 9"),
    ('{"format": "busca-run", "version": 1, "systems": {"m": [{"id": "q"}]}}', "damaged"),
])
def test_bad_run_files(tmp_path, content, message):
    path = tmp_path / "r.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(RunError, match=message):
        load_run(path)
    with pytest.raises(RunError, match="no such run file"):
        load_run(tmp_path / "nada.json")
