"""The compiled MaxScore (numba, the `fast` extra) gives the exhaustive ranking bit for bit,
the numpy path's results, and Lucene BM25 as an independent brute force computes it."""

import math
import random
from collections import Counter

import numpy as np
import pytest

from busca import search as core
from busca.crawler.store import Document
from busca.index import LocalHome, maxscore
from busca.index.analyzers import pt_terms
from busca.index.build import build_index
from busca.index.lexical import NoSearchableTerms
from busca.index.storage import load_index

pytest.importorskip("numba")

WORDS = ("gato rato cão casa universidade federal curso aluno prova nota semestre matrícula "
         "estágio reembolso prazo boleto biblioteca senha banco dados professora horário "
         "inscrição bolsa pesquisa laboratório").split()
COMMON = "de o a que e do da em para com sobre ano dia".split()


def corpus(seed: int, n: int) -> list[str]:
    """Zipf-like word frequencies: long and short posting lists, repeated words, ties."""
    rng = random.Random(seed)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    return [" ".join(rng.choices(WORDS, weights, k=rng.randint(3, 40))
                     + rng.choices(COMMON, k=rng.randint(0, 10))) for _ in range(n)]


def queries(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS + COMMON, k=rng.randint(1, 8))) for _ in range(count)]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    texts = corpus(3, 1500)
    home = tmp_path_factory.mktemp("maxscore")
    with LocalHome(home) as store:
        for i, text in enumerate(texts):
            store.put(Document(f"d{i:04d}", "", text))
        build_index(store, methods=("tfidf", "bm25"))
    return texts, load_index(home)


@pytest.fixture
def compiled(monkeypatch):
    monkeypatch.setattr(maxscore, "COMPILED_MIN_ROWS", 0)
    monkeypatch.setenv("BUSCA_NUMBA", "1")


def ranked(scorer, query, k):
    try:
        return scorer.top(query, k)
    except NoSearchableTerms:
        return None


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
@pytest.mark.parametrize("k", [1, 3, 10, 100, 5000])
def test_compiled_top_equals_exhaustive_ranking(built, method, k, compiled):
    scorer = core.scorer(built[1], method)
    assert maxscore.usable(scorer.n_rows)
    for query in queries(k, 60):
        got = ranked(scorer, query, k)
        if got is None:
            continue
        want = core.top_k(*scorer.score(query), k)
        assert got[0].tolist() == want[0].tolist(), query
        assert got[1].tolist() == want[1].tolist(), query  # bit for bit


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_compiled_and_numpy_paths_agree(built, method, monkeypatch):
    scorer = core.scorer(built[1], method)
    for query in queries(7, 60):
        monkeypatch.setattr(maxscore, "COMPILED_MIN_ROWS", 0)
        fast = ranked(scorer, query, 10)
        monkeypatch.setenv("BUSCA_NUMBA", "0")
        slow = ranked(scorer, query, 10)
        monkeypatch.delenv("BUSCA_NUMBA")
        if slow is None:
            assert fast is None
            continue
        assert fast[0].tolist() == slow[0].tolist() and fast[1].tolist() == slow[1].tolist()


def test_compiled_exact_sums_are_numpys(built, compiled, monkeypatch):
    for method in ("tfidf", "bm25"):
        scorer = core.scorer(built[1], method)
        columns, weights = scorer.query_counts("gato gato casa de prova nota senha")
        ids = np.arange(0, scorer.n_rows, 3)
        fast = scorer.lookup(ids, columns, weights)
        monkeypatch.setenv("BUSCA_NUMBA", "0")
        slow = scorer.lookup(ids, columns, weights)
        monkeypatch.setenv("BUSCA_NUMBA", "1")
        assert fast.dtype == slow.dtype and fast.tobytes() == slow.tobytes()


def lucene_bm25(texts: list[str], query: str, k1=1.2, b=0.75) -> list[float]:
    """Lucene BM25 of every text, from scratch in Python floats (the brute-force oracle)."""
    docs = [Counter(pt_terms(t)) for t in texts]
    lengths = [sum(d.values()) for d in docs]
    avgdl = sum(lengths) / len(docs)
    df = Counter(term for d in docs for term in d)
    scores = []
    for d, dl in zip(docs, lengths):
        s = 0.0
        for term in pt_terms(query):
            if term in d:
                idf = math.log(1 + (len(docs) - df[term] + 0.5) / (df[term] + 0.5))
                s += idf * d[term] / (d[term] + k1 * (1 - b + b * dl / avgdl))
        scores.append(s)
    return scores


def test_compiled_bm25_matches_a_brute_force_oracle(built, compiled):
    texts, index = built
    scorer = core.scorer(index, "bm25")
    checked = 0
    for query in queries(11, 25):
        got = ranked(scorer, query, 10)
        if got is None:
            continue
        oracle = np.array(lucene_bm25(texts, query))
        want = sorted(range(len(texts)), key=lambda i: (-oracle[i], i))[:got[0].size]
        assert got[1] == pytest.approx(oracle[want], rel=1e-5)
        for rank, (i, j) in enumerate(zip(got[0].tolist(), want)):
            # ids agree except between scores equal within float32 rounding
            assert i == j or abs(oracle[i] - oracle[j]) <= 1e-5 * oracle[j], (query, rank)
        checked += 1
    assert checked > 15
