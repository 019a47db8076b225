"""Dense top k: the int8 first pass with exact rescoring returns the exhaustive float32 top k."""

import numpy as np
import pytest

from busca import search as core
from busca.index import storage
from busca.index import vectors as dense
from busca.index.manifest import Manifest
from busca.index.storage import Index
from busca.index.vectors import DenseScorer

pytest.importorskip("numba")


class Given:
    """Query vectors given in turn, as an encoder would return them."""

    name, version = "given", "1"

    def __init__(self, vectors):
        self.vectors, self.at, self.dimension = vectors, 0, vectors.shape[1]

    def encode(self, texts, *, query=False):
        self.at += 1
        return self.vectors[(self.at - 1) % len(self.vectors)][None, :]


def unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def index_of(tmp_path, vectors):
    storage.save_array(tmp_path, "dense.vectors", vectors)
    manifest = Manifest(build=tmp_path.name, chunker={}, documents=len(vectors),
                        chunks=len(vectors), methods={"dense": {
                            "encoder": "given", "encoder_version": "1",
                            "dimension": vectors.shape[1]}})
    return Index(tmp_path, tmp_path, manifest)


def scorer_for(tmp_path, vectors, queries):
    return DenseScorer(index_of(tmp_path, vectors), encoder=Given(queries))


@pytest.fixture
def clustered():
    """Clusters of near-duplicates (ties within int8 error) and exact duplicates."""
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((40, 96)).astype(np.float32)
    rows = centres[rng.integers(0, 40, 3000)] + 0.05 * rng.standard_normal((3000, 96))
    vectors = unit(rows)
    vectors[2000:2010] = vectors[5]  # equal scores: ties go to the lower id
    queries = unit(vectors[rng.integers(0, 3000, 30)] + 0.1 * rng.standard_normal((30, 96)))
    return vectors, np.concatenate([queries, vectors[5:6]])


@pytest.mark.parametrize("k", [1, 10, 50])
def test_int8_top_is_the_exhaustive_float32_top(tmp_path, clustered, k, monkeypatch):
    monkeypatch.setattr(dense, "QUANTISED_MIN_ROWS", 0)
    vectors, queries = clustered
    scorer = scorer_for(tmp_path, vectors, queries)
    for q in queries:
        ids, scores = scorer.top("q", k)
        exhaustive = vectors @ q
        want = np.lexsort((np.arange(exhaustive.size), -exhaustive))[:k]
        assert ids.tolist() == want.tolist()
        assert scores == pytest.approx(exhaustive[want], abs=1e-6)


def test_int8_contenders_are_few_and_the_float32_path_agrees(tmp_path, clustered, monkeypatch):
    vectors, queries = clustered
    scorer = scorer_for(tmp_path, vectors, queries)
    monkeypatch.setattr(dense, "QUANTISED_MIN_ROWS", 0)
    quantised = [scorer.top("q", 10) for _ in queries]
    assert all(scorer.contenders(q, 10).size < 300 for q in queries[:-1])  # pruning works
    monkeypatch.setenv("BUSCA_NUMBA", "0")
    scorer.encoder.at = 0
    for ids, scores in quantised:
        want = scorer.top("q", 10)
        assert ids.tolist() == want[0].tolist()
        assert scores == pytest.approx(want[1], abs=1e-6)


def test_quantised_error_bound_holds(clustered):
    vectors, queries = clustered
    codes, scales, errors, norm = dense.quantise(vectors, dense._kernel())
    rebuilt = codes.astype(np.float64) * scales[:, None]
    assert np.linalg.norm(vectors - rebuilt, axis=1) == pytest.approx(errors, abs=1e-6)
    assert np.abs(codes).max() == 127
    assert norm == pytest.approx(np.linalg.norm(vectors, axis=1).max())


def test_rank_uses_top_and_refuses_k_zero(tmp_path, clustered):
    vectors, queries = clustered
    index = index_of(tmp_path, vectors)
    scorer = index._rankers["dense"] = DenseScorer(index, encoder=Given(queries))
    ids, _ = core.rank(index, "q", method="dense", k=3)
    assert ids.tolist() == np.argsort(-(vectors @ queries[0]), kind="stable")[:3].tolist()
    with pytest.raises(ValueError, match="k must be at least 1"):
        scorer.top("q", 0)
