"""The compiled postings of tfidf and bm25 (index/lexical/postings_numba.py) against their numpy
path: every array of the index folder equal, value for value and dtype for dtype."""

import random

import numpy as np
import pytest

from busca.index.lexical import bm25, tfidf
from busca.index import compiled
from busca.index.text.counting import count_texts
from busca.index.home.storage import LocalBuildWriter

from test_index_counting import random_texts

pytest.importorskip("numba")


def build_both(tmp_path, monkeypatch, counts, module, options, shift=None):
    """The index folder made by the compiled loops (transposed in blocks of 2**shift
    columns: a small shift makes a small vocabulary many blocks) and by numpy."""
    monkeypatch.setattr(compiled, "MIN_POSTINGS", 0)  # compiled even for a small index
    if shift is not None:
        monkeypatch.setattr(compiled.module("postings_numba"), "BLOCK_SHIFT", shift)
    folders = []
    for numba_on in ("1", "0"):
        folder = tmp_path / f"numba{numba_on}"
        folder.mkdir()
        with monkeypatch.context() as m:
            m.setenv("BUSCA_NUMBA", numba_on)
            entry = module.build_counts(counts, LocalBuildWriter(None, folder), options=options)
        folders.append((folder, entry))
    return folders


def assert_same_folders(a, b):
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    for name in names:
        if name.endswith(".npy"):
            x, y = np.load(a / name), np.load(b / name)
            assert x.dtype == y.dtype and np.array_equal(x, y), name
        else:
            assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("analyzer, k1, b, shift", [
    ("pt", 1.2, 0.75, None), ("simple", 0.9, 0.4, 1), ("en", 2.0, 1.0, 3), ("java", 0.0, 0.0, 0)])
def test_bm25_compiled_equals_numpy(tmp_path, monkeypatch, seed, analyzer, k1, b, shift):
    texts = random_texts(random.Random(seed), 200) + ["", "de o a", "x " * 70_000]
    counts = count_texts(texts)
    (one, entry), (two, expected) = build_both(
        tmp_path, monkeypatch, counts, bm25,
        {"bm25_analyzer": analyzer, "bm25_k1": k1, "bm25_b": b}, shift)
    assert entry == expected
    assert_same_folders(one, two)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shift", [None, 0, 2])
def test_tfidf_compiled_equals_numpy(tmp_path, monkeypatch, seed, shift):
    # "a a" in every chunk: idf 0, so a chunk made only of it has norm 0 (its bound is 0)
    texts = [t + " a a" for t in random_texts(random.Random(seed), 200)] + ["a"]
    (one, entry), (two, expected) = build_both(tmp_path, monkeypatch, count_texts(texts),
                                               tfidf, {}, shift)
    assert entry == expected
    assert_same_folders(one, two)
    assert np.load(one / "tfidf.norms.npy")[-1] == 0


def test_tfidf_from_rows_in_any_order(tmp_path, monkeypatch):
    """The merged counts of a compiled tokenising pass hold each row's terms in order of
    first occurrence: tfidf's compiled build gives the arrays numpy gives from sorted rows."""
    counts = count_texts(random_texts(random.Random(7), 300))
    m = counts.matrix.copy()
    rng = np.random.default_rng(1)
    for r in range(m.shape[0]):
        lo, hi = m.indptr[r], m.indptr[r + 1]
        within = rng.permutation(hi - lo) + lo
        m.indices[lo:hi], m.data[lo:hi] = m.indices[within], m.data[within]
    m.has_sorted_indices = False
    shuffled = type(counts)(m, counts.terms)
    monkeypatch.setattr(compiled, "MIN_POSTINGS", 0)
    folders = []
    for numba_on, these in (("1", shuffled), ("0", counts)):
        folder = tmp_path / numba_on
        folder.mkdir()
        with monkeypatch.context() as patched:
            patched.setenv("BUSCA_NUMBA", numba_on)
            tfidf.build_counts(these, LocalBuildWriter(None, folder), options={})
        folders.append(folder)
    assert_same_folders(*folders)


@pytest.mark.parametrize("block", [1, 7, 1 << 16])
def test_compiled_row_sums_add_in_numpy_order(block):
    """np.add.reduceat adds a row's first value to the pairwise sum of the others (8 running
    sums up to 128 values, halves above), its terms in column order: the compiled sums, read
    from the term-major counts a block of rows at a time, must give the same bits."""
    from busca.index.lexical.postings_numba import columns, row_squares
    rng = np.random.default_rng(0)
    lengths = np.array(list(range(0, 300)) + [511, 512, 777, 1000, 2049, 0, 1])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate([np.sort(rng.choice(3000, n, replace=False)) for n in lengths])
    indices = indices.astype(np.int32)
    data = rng.integers(1, 2000, indptr[-1]).astype(np.uint16)
    idf = rng.random(3000) * 9
    weights = data * idf[indices]
    expected = np.zeros(lengths.size)
    filled = np.flatnonzero(lengths)
    expected[filled] = np.add.reduceat(weights * weights, indptr[filled])
    for r in range(lengths.size):  # each row's terms in any order: the sums stay the same
        within = rng.permutation(lengths[r]) + indptr[r]
        indices[indptr[r]:indptr[r + 1]], data[indptr[r]:indptr[r + 1]] = \
            indices[within], data[within]
    for row_ptr in (indptr, indptr.astype(np.int32)):  # the merged counts' indptr is int32
        col_ptr, rows, values = columns(row_ptr, indices, data, np.arange(3000, dtype=np.int32), 3000,
                                        4)
        got = row_squares(row_ptr, col_ptr, rows, values, idf, block)
        assert got.tolist() == expected.tolist()
