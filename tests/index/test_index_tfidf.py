"""TF-IDF scores against a brute-force implementation of the seed's definition."""

import math
import random
from collections import Counter

import numpy as np
import pytest

from busca.crawler.store import Document
from busca.index.text.analyzers import java_terms
from busca.index.build import build_index
from busca.index.home.storage import load_index
from busca import search as core
from busca.index.lexical.lexical import NoSearchableTerms
from busca.index import LocalHome

CORPUS = [
    "O gato comeu o rato na cozinha.",
    "O cão latiu para o carteiro; o gato fugiu!",
    "Reembolso: o prazo do estorno é de 7 dias úteis.",
    "A universidade oferece cursos de graduação e pós-graduação.",
    "Gato, GATO, gato: três vezes gato.",
]


def brute_force(texts, query):
    """The seed's HashMap TF-IDF and `cosseno`, written out plainly."""
    tfs = [Counter(java_terms(t)) for t in texts]
    n = len(texts)
    df = Counter(term for tf in tfs for term in tf)
    idf = {t: math.log(n / d) for t, d in df.items()}
    q = Counter(t for t in java_terms(query) if t in idf)
    qv = {t: c * idf[t] for t, c in q.items()}
    scores = []
    for tf in tfs:
        dv = {t: c * idf[t] for t, c in tf.items()}
        dot = sum(w * dv.get(t, 0.0) for t, w in qv.items())
        na = math.sqrt(sum(v * v for v in qv.values()))
        nb = math.sqrt(sum(v * v for v in dv.values()))
        scores.append(0.0 if na == 0 or nb == 0 else dot / (na * nb))
    return scores, len(df)


def indexed(tmp_path, texts):
    store = LocalHome(tmp_path)
    for i, text in enumerate(texts):
        store.put(Document(f"doc{i:03d}", f"T{i}", text))
    build_index(store)
    return load_index(tmp_path), store


@pytest.mark.parametrize("query", ["gato", "o prazo do reembolso", "cursos de graduação",
                                   "GATO carteiro", "gato gato rato"])
def test_scores_match_brute_force(tmp_path, query):
    index, _ = indexed(tmp_path, CORPUS)
    expected, vocabulary = brute_force(CORPUS, query)
    ids, scores = core.rank(index, query, k=len(CORPUS))
    assert index.methods["tfidf"]["vocabulary"] == vocabulary
    want = sorted(((s, -i) for i, s in enumerate(expected) if s > 0), reverse=True)
    assert list(ids) == [-i for _, i in want]
    assert scores == pytest.approx([s for s, _ in want], abs=1e-12)


def test_random_corpus_matches_brute_force(tmp_path):
    rng = random.Random(7)
    words = "ação educação gato cão rato prazo 7 dias úteis curso São Paulo X9".split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(60)]
    index, _ = indexed(tmp_path, texts)
    for _ in range(30):
        query = " ".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
        expected, _ = brute_force(texts, query)
        try:
            ids, scores = core.rank(index, query, k=5)
        except NoSearchableTerms:
            assert max(expected) == 0
            continue
        oracle = sorted(range(len(texts)), key=lambda i: (-expected[i], i))[:5]
        oracle = [i for i in oracle if expected[i] > 0]
        assert list(ids) == oracle
        assert scores == pytest.approx([expected[i] for i in oracle], abs=1e-12)


def test_unknown_and_empty_queries_say_why(tmp_path):
    index, _ = indexed(tmp_path, CORPUS)
    with pytest.raises(NoSearchableTerms, match="none of the query's words"):
        core.rank(index, "xilofone")
    with pytest.raises(NoSearchableTerms, match="no words"):
        core.rank(index, "?!")


def test_top_k_ties_keep_chunk_order():
    ids = np.arange(10, dtype=np.int64)[::-1].copy()
    scores = np.array([0.5, 0.9, 0.5, 0.5, 0.1, 0.9, 0.5, 0.2, 0.5, 0.5])
    got_ids, got = core.top_k(ids, scores, 4)
    oracle = sorted(zip(ids, scores), key=lambda p: (-p[1], p[0]))[:4]
    assert list(got_ids) == [i for i, _ in oracle]
    assert list(got) == [s for _, s in oracle]
