"""The search core (search/hits.py, search/scorers.py): rank, floor, hits with their sources,
snippets, and fusion settings passed as values."""

import numpy as np
import pytest
from dense_fakes import DOCS

from busca.crawler.store import Document
from busca.index import LocalHome
from busca.index.build import build_index
from busca.search import (FusionSettings, Hit, StaleIndex, UnknownMethod, available_methods,
                          rank, scorer, search, snippet, top_k)

TEXTS = {
    "https://ex.com/gatos": ("Gatos", "O gato comeu o rato. Gatos dormem muito durante o dia."),
    "https://ex.com/ratos": ("Ratos", "O rato fugiu do gato e do cachorro."),
    "https://ex.com/cursos": ("Cursos", "A universidade oferece cursos noturnos de engenharia."),
}


@pytest.fixture
def home(tmp_path):
    home = LocalHome(tmp_path)
    for url, (title, text) in TEXTS.items():
        home.put(Document(url, title, text))
    build_index(home, size=5, overlap=1)
    yield home
    home.close()


def test_hits_carry_their_source_and_span(home):
    index = home.current()
    hits = search(index, home, "gato rato", method="tfidf", k=10)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(isinstance(h, Hit) and h.method == "tfidf" for h in hits)
    for h in hits:
        title, text = TEXTS[h.url]
        assert h.title == title and h.text == text[h.start:h.end]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_rank_is_the_top_of_every_score(home):
    """`rank` against a brute-force oracle: sort every (score, id) pair."""
    index = home.current()
    for method in ("tfidf", "bm25"):
        ids, scores = scorer(index, method).score("gato rato cachorro")
        oracle = sorted(zip(-scores, ids))[:3]
        got_ids, got_scores = rank(index, "gato rato cachorro", method=method, k=3)
        assert got_ids.tolist() == [int(i) for _, i in oracle]
        assert got_scores.tolist() == pytest.approx([-s for s, _ in oracle])


def test_min_score_drops_weaker_hits(home):
    index = home.current()
    every = search(index, home, "gato", k=10)
    cut = every[0].score
    assert [h.chunk_id for h in search(index, home, "gato", k=10, min_score=cut)] == [
        h.chunk_id for h in every if h.score >= cut]


def test_a_changed_document_makes_the_hits_stale(home):
    index = home.current()
    home.put(Document("https://ex.com/gatos", "Gatos", "Texto novo sem felinos."))
    with pytest.raises(StaleIndex, match="busca index"):
        search(index, home, "gato", k=10)


def test_unknown_method_lists_what_the_index_has(home):
    index = home.current()
    assert available_methods(index) == ["tfidf", "bm25"]
    with pytest.raises(UnknownMethod, match="it has: tfidf, bm25"):
        rank(index, "gato", method="dense")


def test_top_k_orders_ties_by_chunk_id():
    ids, scores = top_k(np.array([5, 2, 9, 1]), np.array([0.5, 0.9, 0.5, 0.1]), 3)
    assert ids.tolist() == [2, 5, 9] and scores.tolist() == [0.9, 0.5, 0.5]
    with pytest.raises(ValueError):
        top_k(ids, scores, 0)


def test_snippet_starts_at_the_sentence_sharing_most_query_words():
    text = "Primeira frase sobre nada. Segunda frase sobre reembolso e prazo. Terceira."
    assert snippet(text, "qual o prazo do reembolso?", width=40) == (
        "… Segunda frase sobre reembolso e prazo. …")
    # as busca search shows it (search/highlight.py): from the sentence of the first match
    assert snippet(text, "qual o prazo do reembolso?") == (
        "… Segunda frase sobre reembolso e prazo. Terceira.")
    assert snippet(text, "oi") == text
    long = "palavra " * 100
    assert snippet(long, "palavra", width=20).endswith(" …")


def test_fusion_settings_are_values_not_shared_state(tmp_path, fake):
    """Two calls with different settings on one index do not affect each other."""
    home = LocalHome(tmp_path)
    for url, title, text in DOCS:
        home.put(Document(url, title, text))
    build_index(home, methods=("tfidf", "dense", "hybrid"), options={"dense": "fake"})
    index = home.current()
    query = "senha do código de erro"
    default = rank(index, query, method="hybrid", k=4)[0].tolist()
    dense_only = FusionSettings(weights={"dense": 1.0, "tfidf": 0.0})
    assert rank(index, query, method="hybrid", k=4, fusion=dense_only)[0].tolist() == \
        rank(index, query, method="dense", k=4)[0].tolist()
    assert rank(index, query, method="hybrid", k=4)[0].tolist() == default
    home.close()
