"""search/compare.py: each method's top k and every hit's rank under every method."""

import pytest
from dense_fakes import DOCS

from busca.crawler.store import Document
from busca.index import LocalHome
from busca.index.build import build_index
from busca.index.home.storage import load_index
from busca import search as core
from busca.search import compare as cmp

METHODS = ["tfidf", "bm25", "dense", "hybrid"]
# Synonyms make the fake encoder find the paraphrase that shares no word with its answer.
EXTRA = [("https://blog.example/cachorros", "Cachorros",
          "Os cães latem quando o carteiro chega de manhã.")]


@pytest.fixture
def store(tmp_path, fake):
    fake.synonyms.update({"cachorro": "cães", "cachorros": "cães"})
    s = LocalHome(tmp_path / "home")
    for url, title, text in DOCS + EXTRA:
        s.put(Document(url, title, text))
    build_index(s, methods=("tfidf", "bm25", "dense", "hybrid"), options={"dense": "fake"})
    yield s
    s.close()


@pytest.fixture
def index(store):
    return load_index(store.home)


def _full_rank(index, query, method):
    """The oracle: rank everything with the method, 1-based."""
    ids, _ = core.rank(index, query, method=method, k=10_000)
    return {int(c): r for r, c in enumerate(ids, start=1)}


def test_columns_are_each_methods_top_k(index, store):
    query = "biblioteca que não existe"
    result = cmp.compare(index, store, query, methods=METHODS, k=2)
    for method in METHODS:
        expected = [h.chunk_id for h in core.search(index, store, query, method=method, k=2)]
        assert [h.chunk_id for h in result.columns[method]] == expected


def test_rows_hold_each_chunk_once_with_every_rank(index, store):
    query = "biblioteca do banco de dados"
    result = cmp.compare(index, store, query, methods=METHODS, k=2)
    in_columns = {h.chunk_id for hits in result.columns.values() for h in hits}
    assert sorted(r.chunk_id for r in result.rows) == sorted(in_columns)
    for row in result.rows:
        for method in METHODS:
            assert row.ranks[method] == _full_rank(index, query, method).get(row.chunk_id)
            assert (row.scores[method] is None) == (row.ranks[method] is None)
    bests = [r.best for r in result.rows]
    assert bests == sorted(bests)


def test_dense_finds_what_the_lexical_methods_miss(index, store):
    result = cmp.compare(index, store, "cachorro", methods=METHODS, k=1)
    (row,) = [r for r in result.rows if r.url == EXTRA[0][0]]
    assert row.ranks["dense"] == 1
    assert row.ranks["tfidf"] is None and row.ranks["bm25"] is None
    assert "tfidf" in result.notes  # no known word: a note instead of an error


def test_depth_limits_the_ranks(index, store):
    result = cmp.compare(index, store, "biblioteca", methods=["dense", "tfidf"], k=1, depth=1)
    for row in result.rows:
        assert all(r in (1, None) for r in row.ranks.values())


def test_unknown_method_names_the_available_ones(index, store):
    with pytest.raises(core.UnknownMethod, match="tfidf"):
        cmp.compare(index, store, "biblioteca", methods=["tfidf", "splade"], k=1)


def test_default_methods_and_json(index, store):
    assert cmp.default_methods(index) == METHODS
    data = cmp.comparison_dict(cmp.compare(index, store, "senha", methods=["tfidf", "dense"], k=1))
    assert data["methods"] == ["tfidf", "dense"]
    assert set(data["rows"][0]["ranks"]) == {"tfidf", "dense"}


def test_rows_carry_their_documents_metadata(tmp_path, fake):
    """`busca compare --json`'s rows carried no `meta`: a PDF hit's page, an HTML hit's
    section or the document's tags were in `busca search --json` only."""
    home = LocalHome(tmp_path / "home")
    home.put(Document("https://blog.example/a", "A", "Prazos de reembolso do pedido.",
                      meta={"tags": ["financeiro"]}))
    home.put(Document("https://blog.example/b", "B", "Outro texto sem relação."))
    build_index(home, methods=("tfidf", "bm25"))
    index = load_index(home.home)
    result = cmp.compare(index, home, "reembolso", methods=["tfidf", "bm25"], k=2)
    searched = {h.url: h.meta for h in core.search(index, home, "reembolso", method="bm25")}
    rows = {r["url"]: r for r in result.to_json()["rows"]}
    assert rows["https://blog.example/a"]["meta"] == searched["https://blog.example/a"]
    assert rows["https://blog.example/a"]["meta"]["tags"] == ["financeiro"]
    home.close()


def test_a_method_named_twice_is_one_column(index, store):
    result = cmp.compare(index, store, "senha", methods=["tfidf", "dense", "tfidf"], k=1)
    assert result.methods == ("tfidf", "dense")
    assert list(result.columns) == ["tfidf", "dense"]
