"""Pruned top-k against the exhaustive ranking, and the selection helpers."""

import random

import numpy as np
import pytest

from busca.crawler.store import Document
from busca.index.build import build_index
from busca.index.home.storage import load_index
from busca import search as core
from busca.index.lexical import lexical
from busca.index.lexical.lexical import NoSearchableTerms, kth_largest
from busca.index import LocalHome

COMMON = "de o a que e do da em para com sobre ano dia".split()
RARE = ("gato rato cão casa universidade federal curso aluno prova nota semestre matrícula "
        "estágio reembolso prazo boleto").split()


def corpus(seed: int, n: int = 150, fillers: int = 0) -> list[str]:
    """Every chunk has most common words (long posting lists) and a few rare ones."""
    rng = random.Random(seed)
    docs = []
    for _ in range(n):
        words = [w for w in COMMON if rng.random() < 0.9]
        words += rng.choices(RARE, k=rng.randint(0, 6)) + rng.choices(COMMON, k=20)
        rng.shuffle(words)
        docs.append(" ".join(words))
    # chunks of common words only: rare terms then take the few-candidates path
    return docs + [" ".join(rng.choices(COMMON, k=15)) for _ in range(fillers)]


def build(home, texts):
    store = LocalHome(home)
    for i, text in enumerate(texts):
        store.put(Document(f"d{i:03d}", "", text))
    build_index(store, methods=("tfidf", "bm25"))
    return load_index(home)


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return build(tmp_path_factory.mktemp("lexical"), corpus(1))


@pytest.fixture(scope="module")
def diluted(tmp_path_factory):
    return build(tmp_path_factory.mktemp("diluted"), corpus(2, fillers=500))


QUERIES = ["o gato de casa", "prazo do boleto para o aluno", "de que o", "curso curso de nota",
           "a universidade federal e o estágio", "reembolso", "matrícula em que semestre"]


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
@pytest.mark.parametrize("k", [1, 3, 10, 1000])
def test_pruned_top_equals_exhaustive_ranking(index, method, k, monkeypatch):
    monkeypatch.setattr(lexical, "SKIP_SHARE", 100.0)  # try to skip whenever lists are long
    monkeypatch.setattr(lexical, "LOOKUP_COST", 0)  # and look up, however many candidates
    scorer = core.scorer(index, method)
    pruned = 0
    real = scorer._pruned

    def spy(*args):
        nonlocal pruned
        found = real(*args)
        pruned += found is not None
        return found

    monkeypatch.setattr(scorer, "_pruned", spy)
    for query in QUERIES:
        try:
            want_ids, want_scores = core.top_k(*scorer.score(query), k)
        except NoSearchableTerms:
            continue
        ids, scores = scorer.top(query, k)
        assert ids.tolist() == want_ids.tolist(), query
        assert scores.tolist() == want_scores.tolist()  # the same numbers, bit for bit
    assert pruned > 0 or k > scorer.n_rows  # the corpus exercises the pruned path


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_top_equals_exhaustive_ranking_with_few_candidates(diluted, method):
    scorer = core.scorer(diluted, method)
    for query in QUERIES:
        try:
            want = core.top_k(*scorer.score(query), 5)
        except NoSearchableTerms:
            continue
        got = scorer.top(query, 5)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_top_refuses_k_zero(index):
    with pytest.raises(ValueError, match="k must be at least 1"):
        core.scorer(index, "bm25").top("gato", 0)


@pytest.mark.parametrize("size, zeros", [(10, 0.0), (5000, 0.99), (300_000, 0.9),
                                         (300_000, 0.0)])
def test_kth_largest(size, zeros):
    rng = np.random.default_rng(size)
    values = rng.random(size)
    values[rng.random(size) < zeros] = 0.0
    for k in (1, 3, 10):
        assert kth_largest(values, k) == np.sort(values)[-k]


@pytest.mark.parametrize("levels", [1, 2, 5])
def test_kth_largest_with_ties_above_and_at_the_floor(levels):
    """A term in every chunk of equal length gives them all one score: the k-th largest is
    then the block floor itself (fewer than k values above it), or among the few above it."""
    rng = np.random.default_rng(levels)
    values = rng.integers(0, levels, 200_000).astype(np.float32)
    values[rng.integers(0, values.size, 3)] = levels + 1.5  # three above every other value
    for k in (1, 3, 4, 10):
        assert kth_largest(values, k) == np.sort(values)[-k]
    assert kth_largest(np.ones(100_000, np.float32), 10) == 1.0


def test_column_sums_over_few_and_many_rows():
    indptr = np.array([0, 2, 5])
    indices = np.array([1, 3, 0, 1, 2], dtype=np.int32)
    data = np.array([1, 2, 1, 1, 4], dtype=np.uint16)
    for n_rows in (4, 1000):  # dense and sparse paths
        ids, sums = lexical.column_sums(indptr, indices, data, [0, 1], [2.0, 0.5], n_rows)
        assert ids.tolist() == [0, 1, 2, 3]
        assert sums.tolist() == [0.5, 2.5, 2.0, 4.0]
