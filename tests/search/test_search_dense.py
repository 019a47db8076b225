"""Dense top k: the int8 first pass with exact rescoring returns the exhaustive float32 top k."""

import math

import numpy as np
import pytest

from busca import search as core
from busca.index.home import storage
from busca.index.dense import vectors as dense
from busca.index.home.manifest import Manifest
from busca.index.home.storage import Index
from busca.index.dense.vectors import DenseScorer

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
    scorer.prepare()
    for q in queries:
        ids, scores = scorer.top("q", k)
        want, exact, float32 = brute_force(vectors, q, k)
        assert ids.tolist() == want.tolist()
        assert scores == pytest.approx(exact[want], abs=1e-12)


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
    codes, scales, errors, norm = dense.quantise(vectors[::-1], dense._kernel())  # not a file
    vectors = vectors[::-1]
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


def brute_force(vectors, q, k):
    """The top k by exactly rounded cosine (math.fsum of the exact products), lower id first;
    and every row's float32 product."""
    exact = np.array([math.fsum(p) for p in vectors.astype(np.float64) * q.astype(np.float64)])
    return np.lexsort((np.arange(exact.size), -exact))[:k], exact, vectors @ q


@pytest.mark.parametrize("n, d, k", [(0, 8, 1), (5, 8, 10), (400, 8, 3), (3000, 96, 10),
                                     (2000, 300, 100), (1000, 64, 999), (1000, 64, 1000)])
def test_random_vectors_with_ties_give_the_brute_force_top(tmp_path, monkeypatch, n, d, k):
    """Random unit vectors, runs of exact duplicates and near-duplicates (ties at the k-th
    place), k around n and n = 0: ids exactly those of the float32 product, lower id first."""
    monkeypatch.setattr(dense, "QUANTISED_MIN_ROWS", 0)
    rng = np.random.default_rng(n + d + k)
    vectors = unit(rng.standard_normal((max(n, 1), d)))[:n]
    if n >= 400:
        vectors[n // 2:n // 2 + 30] = vectors[7]  # 31 equal scores
        vectors[n // 3:n // 3 + 20] = unit(vectors[11] + 1e-7 * rng.standard_normal((20, d)))
    queries = np.concatenate([unit(rng.standard_normal((6, d))),
                              vectors[[7, 11]] if n >= 400 else np.empty((0, d), np.float32),
                              unit(vectors[:3] + 0.1 * rng.standard_normal((min(n, 3), d)))])
    scorer = scorer_for(tmp_path, vectors, queries)
    scorer.prepare()
    for q in queries:
        ids, scores = scorer.top("q", k)
        want, exact, float32 = brute_force(vectors, q, k)
        assert ids.tolist() == want.tolist()
        np.testing.assert_allclose(scores, exact[want], rtol=0, atol=1e-12)
        np.testing.assert_allclose(scores, float32[want], rtol=0, atol=1e-6)
        # the float32 ranking agrees wherever its rounding cannot swap two rows
        order = np.lexsort((np.arange(float32.size), -float32))[:k]
        clear = np.abs(exact[order] - exact[want]) > 1e-5
        assert (order[clear] == want[clear]).all()


def test_the_first_search_skips_the_int8_copy_and_prepare_makes_it(tmp_path, clustered,
                                                                   monkeypatch):
    """A one-shot command (one search) never pays for the int8 copy; a server makes it up
    front; below QUANTISED_MIN_ROWS it is never made."""
    vectors, queries = clustered
    scorer = scorer_for(tmp_path, vectors, queries)
    scorer.prepare()
    assert getattr(scorer, "_codes", None) is None  # 3,000 rows: the float32 product is enough
    monkeypatch.setattr(dense, "QUANTISED_MIN_ROWS", 0)
    first = scorer.top("q", 10)
    assert getattr(scorer, "_codes", None) is None
    scorer.encoder.at = 0
    second = scorer.top("q", 10)
    assert scorer._codes is not None
    assert first[0].tolist() == second[0].tolist()
    np.testing.assert_array_equal(first[1], second[1])
    other = scorer_for(tmp_path, vectors, queries)
    other.prepare()
    assert other._codes is not None


def test_a_memory_mapped_file_is_read_not_mapped_and_quantised_alike(tmp_path, clustered):
    vectors, _ = clustered
    storage.save_array(tmp_path, "v", vectors)
    mapped = storage.load_array(tmp_path, "v")
    assert dense._whole_file(mapped) and not dense._whole_file(mapped[1:])
    from_file = dense.quantise(mapped, dense._kernel())
    in_memory = dense.quantise(np.array(vectors), dense._kernel())
    for a, b in zip(from_file, in_memory):
        np.testing.assert_array_equal(a, b)


def test_a_removed_vectors_file_is_still_searched_through_its_mapping(tmp_path, clustered,
                                                                      monkeypatch):
    """`busca index` may remove the build a server still holds: the mapping keeps reading."""
    monkeypatch.setattr(dense, "QUANTISED_MIN_ROWS", 0)
    vectors, queries = clustered
    scorer = scorer_for(tmp_path, vectors, queries)
    scorer.prepare()
    want = scorer.top("q", 10)
    (tmp_path / "dense.vectors.npy").unlink()
    scorer.encoder.at = 0
    got = scorer.top("q", 10)
    assert got[0].tolist() == want[0].tolist()
    np.testing.assert_array_equal(got[1], want[1])
