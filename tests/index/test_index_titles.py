"""`busca index --titles`: an article's title indexed with every window of it."""

from __future__ import annotations

import numpy as np
import pytest

from busca import search as core
from busca.index.text.counting import count_texts
from busca.index.home.storage import load_index
from busca.index.text.titles import BadTitles, titled_methods, titled_texts, with_titles
from conftest import write_jsonl

# Two long articles (several 12-word windows each) whose titles use words their text lacks.
BODY = ("o servidor responde devagar quando a fila cresce e o disco enche de registros"
        " antigos que ninguém apaga faz meses").split()
DOCS = [{"url": "https://s/a", "title": "Impressoras zebra",
         "text": " ".join(BODY * 3)},
        {"url": "https://s/b", "title": "Backup noturno",
         "text": " ".join(reversed(BODY * 3))}]


@pytest.fixture
def added(run, tmp_path):
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", DOCS))).exit_code == 0
    return run


def _urls(index, query, method):
    ids, _ = core.rank(index, query, method=method, k=100)
    return [row.url for row in index.chunks([int(i) for i in ids])]


def test_lexical_titles_reach_every_window_and_tfidf_stays_without(added, home):
    result = added("index", "--size", "12", "--overlap", "3", "-q", "--titles", "bm25")
    assert result.exit_code == 0, result.output
    index = load_index(home)
    windows_of_a = sum(1 for row in index.chunks() if row.url == "https://s/a")
    assert windows_of_a > 1
    assert _urls(index, "impressoras zebra", "bm25") == ["https://s/a"] * windows_of_a
    with pytest.raises(core.NoSearchableTerms):
        _urls(index, "impressoras zebra", "tfidf")
    assert index.methods["bm25"]["titles"] is True and "titles" not in index.methods["tfidf"]
    # what a hit shows is still the window's text alone
    row = index.chunks([0])[0]
    assert DOCS[0]["text"][row.start:row.end].startswith("o servidor")


def test_without_titles_the_title_words_find_nothing(added, home):
    assert added("index", "--size", "12", "--overlap", "3", "-q").exit_code == 0
    index = load_index(home)
    assert all("titles" not in entry for entry in index.methods.values())
    with pytest.raises(core.NoSearchableTerms):
        _urls(index, "impressoras zebra", "bm25")


def test_dense_encodes_title_then_text(added, home, fake):
    result = added("index", "--size", "12", "--overlap", "3", "-q", "--dense", "fake",
                   "--titles", "dense")
    assert result.exit_code == 0, result.output
    index = load_index(home)
    docs = {d["url"]: d for d in DOCS}
    assert fake.encoded == [f"{docs[r.url]['title']}. {docs[r.url]['text'][r.start:r.end]}"
                            for r in index.chunks()]
    assert index.methods["dense"]["titles"] is True and "titles" not in index.methods["bm25"]


def test_with_titles_counts_as_if_the_title_were_in_the_text():
    texts = ["O disco enche", "a fila cresce, o disco", "nada"]
    titles = ["Backup noturno", "", "Disco"]
    got = with_titles(count_texts(texts), titles)
    expected = count_texts([f"{t} {x}" for t, x in zip(titles, texts)])
    assert got.terms == expected.terms
    assert np.array_equal(got.matrix.toarray(), expected.matrix.toarray())
    assert titled_texts(texts, titles)[0] == "Backup noturno. O disco enche"
    assert titled_texts(texts, titles)[1] == texts[1]


def test_the_workers_map_no_vocabulary_for_a_method_that_indexes_titles(added, monkeypatch):
    """The tokenising workers work out a term map only for the counts a method takes: bm25
    with titles maps the counts with titles added (another vocabulary), so none is asked
    for it; without titles, its pt map is."""
    from busca.index import build
    asked = []

    def chunk_documents(*args, analyzers=(), **kwargs):
        asked.append(set(analyzers))
        return real(*args, analyzers=analyzers, **kwargs)

    real = build.chunk_documents
    monkeypatch.setattr(build, "chunk_documents", chunk_documents)
    assert added("index", "-q", "--titles", "bm25").exit_code == 0
    assert added("index", "-q", "--titles", "none").exit_code == 0
    assert asked == [set(), {"pt"}]


def test_titles_option_names_methods_of_the_build(added):
    assert titled_methods("all", ["tfidf", "bm25", "dense", "hybrid"], ()) == \
        ["tfidf", "bm25", "dense"]
    assert titled_methods("none", ["bm25"], ("bm25",)) == []
    assert titled_methods(None, ["tfidf", "bm25", "dense:e5"], ("bm25", "dense")) == \
        ["bm25", "dense:e5"]
    with pytest.raises(BadTitles, match="'dense'"):
        titled_methods("dense", ["tfidf", "bm25"], ())
    result = added("index", "-q", "--titles", "dense")
    assert result.exit_code == 2
    assert "--titles names 'dense', which this build does not make" in result.output


def test_eval_chunkers_index_titles_as_the_live_index_does(added, tmp_path):
    import json

    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps([
        {"id": "t1", "pergunta": "impressoras zebra registros", "trecho": "o disco enche",
         "url": "https://s/a"},
        {"id": "t2", "pergunta": "backup noturno fila", "trecho": "fila a quando",
         "url": "https://s/b"},
        {"id": "t3", "pergunta": "servidor devagar", "trecho": "responde devagar"}]),
        encoding="utf-8")
    assert added("index", "--size", "12", "--overlap", "3", "-q", "--titles",
                 "bm25").exit_code == 0
    live = json.loads(added("eval", str(golden), "-q", "--json", "--methods",
                            "bm25").stdout)
    result = added("eval", str(golden), "-q", "--json", "--methods", "bm25",
                   "--chunkers", "words:12:3")
    assert result.exit_code == 0, result.output
    temporary = json.loads(result.stdout)
    assert [q["ranks"] for q in temporary["per_question"]["bm25/words:12:3"]] == \
        [q["ranks"] for q in live["per_question"]["bm25"]]


def test_a_rebuild_keeps_the_titles_until_none(added, home):
    assert added("index", "--size", "12", "--overlap", "3", "-q", "--titles",
                 "bm25").exit_code == 0
    assert added("index", "--size", "12", "--overlap", "3", "-q").exit_code == 0
    assert load_index(home).methods["bm25"]["titles"] is True
    assert added("index", "--size", "12", "--overlap", "3", "-q", "--titles",
                 "none").exit_code == 0
    assert "titles" not in load_index(home).methods["bm25"]
