"""search/collapse.py: at most N windows of one document, order kept, ranking deepened."""

import numpy as np
import pytest

from busca.crawler.store import Document
from busca.index import LocalHome
from busca.index.build import build_index
from busca.index.home.storage import load_index
from busca import search as core
from busca.search import collapse

# One long article about refunds (many matching windows) and three short ones.
LONG = Document("https://loja.example/politica/", "Política",
                " ".join(f"Frase {n} sobre reembolso e estorno no cartão." if n % 4 == 0
                          else f"Frase {n} sobre o atendimento da loja." for n in range(40)))
SHORT = [Document(f"https://loja.example/{n}/", f"Curto {n}",
                  f"O pedido {n} foi pago, enviado, recebido, devolvido e conferido pela loja"
                  f" e pelo banco antes do estorno, que demora uma semana.") for n in range(3)]


@pytest.fixture
def store(tmp_path):
    s = LocalHome(tmp_path)
    for doc in (LONG, *SHORT):
        s.put(doc)
    build_index(s, size=20, overlap=8)
    yield s
    s.close()


@pytest.fixture
def index(store):
    return load_index(store.home)


def test_collapse_by_hand():
    ids = np.array([10, 11, 20, 12, 30, 21])
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    urls = ["a", "a", "b", "a", "c", "b"]
    kept, kept_scores = collapse.collapse(ids, scores, urls, 1)
    assert kept.tolist() == [10, 20, 30]
    assert kept_scores.tolist() == [0.9, 0.7, 0.5]
    assert collapse.collapse(ids, scores, urls, 2)[0].tolist() == [10, 11, 20, 30, 21]
    assert collapse.collapse(ids, scores, urls, 0)[0].tolist() == ids.tolist()
    assert collapse.collapse(ids, scores, urls, 2, k=3)[0].tolist() == [10, 11, 20]


def test_backfill_only_when_other_documents_fall_below_the_floor():
    ids = np.array([10, 11, 12, 20])
    scores = np.array([0.9, 0.8, 0.7, 0.1])
    urls = ["a", "a", "a", "b"]
    # b is below the floor: a's set-aside windows take the slots, b comes last
    kept, _ = collapse.collapse(ids, scores, urls, 1, k=3, backfill=True, floor=0.5)
    assert kept.tolist() == [10, 11, 12]
    # without a floor b is relevant enough: it keeps its slot
    kept, _ = collapse.collapse(ids, scores, urls, 1, k=3, backfill=True)
    assert kept.tolist() == [10, 11, 20]


def test_negative_per_doc_is_refused():
    with pytest.raises(ValueError, match="per_doc"):
        collapse.collapse(np.array([1]), np.array([1.0]), ["a"], -1)


def test_search_keeps_k_hits_from_distinct_documents(index, store):
    plain = core.search(index, store, "estorno", k=4)
    assert {h.url for h in plain} == {LONG.url}  # the problem: one article fills every slot
    hits = collapse.search(index, store, "estorno", k=4, per_doc=1)
    assert len(hits) == 4 and len({h.url for h in hits}) == 4
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    assert hits[0].chunk_id == plain[0].chunk_id
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_search_matches_brute_force(index, store):
    """Against an oracle: the full ranking, filtered by hand."""
    ids, scores = core.rank(index, "reembolso cartão semana", method="bm25", k=10_000)
    urls = collapse.urls_of(index, ids)
    seen, expected = {}, []
    for i, u in zip(ids.tolist(), urls):
        seen[u] = seen.get(u, 0) + 1
        if seen[u] <= 2:
            expected.append(i)
    hits = collapse.search(index, store, "reembolso cartão semana", method="bm25", k=5,
                           per_doc=2)
    assert [h.chunk_id for h in hits] == expected[:5]


def test_per_doc_zero_is_plain_search(index, store):
    assert collapse.search(index, store, "reembolso", k=3, per_doc=0) == \
        core.search(index, store, "reembolso", k=3)


def test_rank_with_deepens_until_k_documents_survive():
    urls = ["a"] * 50 + ["b", "c"]  # the second and third documents rank 51st and 52nd
    depths = []

    def ranker(depth):
        depths.append(depth)
        n = min(depth, len(urls))
        return np.arange(n), np.linspace(1, 0.5, len(urls))[:n]

    ids, _ = collapse.rank_with(ranker, lambda ids: [urls[i] for i in ids], k=3, per_doc=1,
                                total=len(urls))
    assert ids.tolist() == [0, 50, 51]
    assert depths == [15, 30, 60]
    depths.clear()  # a floor stops the deepening once the ranking falls below it
    ids, _ = collapse.rank_with(ranker, lambda ids: [urls[i] for i in ids], k=3, per_doc=1,
                                total=len(urls), floor=0.9)
    assert ids.tolist() == [0] and depths == [15]
