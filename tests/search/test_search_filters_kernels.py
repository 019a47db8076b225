"""Filters inside the kernels (issue #26, speed): on a 12,007-chunk corpus, the top k among the
chunks of a random mask (50 %, 5 %, 0.1 % of the chunks, clustered runs, none) from the
MaxScore walk (compiled: tables, then codes per chunk; numpy) and from the dense passes
(int8, float32) equals the unfiltered ranking restricted to the mask: ids, scores and tie
order, bit for bit."""

import random

import numpy as np
import pytest

from busca import search as core
from busca.crawler.store import Document
from busca.index import LocalHome
from busca.index.build import build_index
from busca.index.dense import vectors
from busca.index.home.storage import load_index
from busca.index.lexical import maxscore
from busca.index.lexical.lexical import NoSearchableTerms
from busca.search.filters import restricted

pytest.importorskip("numba")

CHUNKS = 12_007  # not a multiple of 4 or 32: a last window in part
DENSITIES = (0.5, 0.05, 0.001, 0.0)
SYLLABLES = "ba be bi bo bu ca ce co da de di do fa fe fi go la le li lo ma me mi mo na ne no" \
            " pa pe pi po ra re ri ro sa se si so ta te ti to va ve vi vo".split()
COMMON = "de o a que e do da em para com sobre ano dia".split()


def _vocabulary(size: int = 3000) -> list[str]:
    rng = random.Random(7)
    words = set()
    while len(words) < size:
        words.add("".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))))
    return sorted(words)


WORDS = _vocabulary()
WEIGHTS = [1 / (i + 3) ** 1.1 for i in range(len(WORDS))]  # Zipf-like: long and short lists


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = rng.choices(WORDS, WEIGHTS, k=rng.randint(4, 30)) + rng.choices(COMMON, k=3)
        if rng.random() < 0.05:  # duplicated texts: equal scores, ties broken by id
            words = WORDS[:3] + COMMON[:2]
        out.append(" ".join(words))
    return out


def _queries(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS[:400], WEIGHTS[:400], k=rng.randint(1, 4))
                     + rng.choices(COMMON, k=rng.randint(0, 2))) for _ in range(n)]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    from dense_fakes import FakeEncoder

    from busca.index.dense import encoders

    encoder = FakeEncoder(dimension=64)
    folder = tmp_path_factory.mktemp("filters-kernels")
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(encoders.ENCODERS, "fake", lambda *, threads=1: encoder)
        with LocalHome(folder) as home:
            for i, text in enumerate(_texts(26, CHUNKS)):
                home.put(Document(f"https://s/{i:05d}", "", text))
            build_index(home, methods=("tfidf", "bm25", "dense"), options={"dense": "fake"})
        loaded = load_index(folder)
        assert loaded.manifest.chunks == CHUNKS
        yield loaded


def _masks(seed: int, n: int):
    """(label, mask): random masks of each density, and runs of whole windows."""
    rng = np.random.default_rng(seed)
    for density in DENSITIES:
        yield f"{density:.1%}", rng.random(n) < density
    runs = np.zeros(n, dtype=bool)
    for start in rng.integers(0, n, 12):
        runs[start:start + int(rng.integers(1, 300))] = True
    yield "runs", runs


def _full(ranker, query: str):
    """The unfiltered ranking of every chunk: lexical `score`, dense `top` over all chunks
    (the float64 rescoring an unfiltered search ranks by)."""
    if isinstance(ranker, vectors.DenseScorer):
        return ranker.top(query, ranker.vectors.shape[0])
    return ranker.score(query)


def _expected(full, mask: np.ndarray, k: int):
    """The unfiltered ranking restricted to the mask: its top k, ids and scores."""
    ids, scores = full
    keep = mask[ids]
    ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:k]
    return ids[order].tolist(), scores[order].tolist()


def _exhaustive(query):
    raise AssertionError("a filtered query scored every chunk")


def _check(ranker, queries, seed: int, ks=(1, 10, 100)) -> int:
    """Filtered top k == the expected ranking for every query, mask and k, without the
    exhaustive `score` pass; how many compared a non-empty top k."""
    compared = 0
    for q, query in enumerate(queries):
        try:
            full = _full(ranker, query)
        except NoSearchableTerms:
            continue
        for label, mask in _masks(seed + q, ranker_rows(ranker)):
            for k in ks:
                ranker.score = _exhaustive  # the fast path only
                try:
                    got = restricted(ranker, mask).top(query, k)
                finally:
                    del ranker.score
                want = _expected(full, mask, k)
                assert got[0].tolist() == want[0], (label, query, k)
                assert got[1].tolist() == want[1], (label, query, k)  # bit for bit
                compared += bool(want[0])
    return compared


def ranker_rows(ranker) -> int:
    return ranker.vectors.shape[0] if isinstance(ranker, vectors.DenseScorer) else ranker.n_rows


@pytest.fixture(params=["compiled", "numpy"])
def numba_path(request, monkeypatch):
    monkeypatch.setenv("BUSCA_NUMBA", "1" if request.param == "compiled" else "0")
    return request.param


@pytest.mark.parametrize("method", ["bm25", "tfidf"])
def test_lexical_filtered_top_k_is_the_restricted_ranking(index, method, numba_path):
    ranker = core.scorer(index, method)
    ranker._blocks = None  # first query: window tables only; then codes per chunk too
    assert maxscore.usable(ranker.n_rows) == (numba_path == "compiled")
    assert _check(ranker, _queries(3, 12), 100) > 12 * 4 * 2
    if numba_path == "compiled":
        assert ranker._blocks.dense[1].shape[0] > 0  # the walk with codes was reached


@pytest.mark.parametrize("pass_", ["int8", "float32"])
def test_dense_filtered_top_k_is_the_restricted_ranking(index, numba_path, pass_,
                                                        monkeypatch):
    from busca.index.dense import encoders

    from dense_fakes import FakeEncoder

    monkeypatch.setitem(encoders.ENCODERS, "fake", lambda *, threads=1: FakeEncoder(dimension=64))
    monkeypatch.setattr(vectors, "QUANTISED_MIN_ROWS", 0 if pass_ == "int8" else 1 << 40)
    ranker = vectors.DenseScorer(index)
    ranker.prepare()  # the int8 copy made now when the int8 pass will answer
    uses_int8 = ranker._int8_kernel() is not None
    assert uses_int8 == (pass_ == "int8" and numba_path == "compiled")
    if pass_ == "int8" and not uses_int8:
        pytest.skip("the int8 pass needs numba")
    assert _check(ranker, _queries(5, 10), 200) > 10 * 4 * 2


def test_plain_walk_for_one_query_postings_takes_the_mask(index, monkeypatch):
    """The document-at-a-time walk (PostgreSQL's per-query postings) among the mask's
    chunks: the exhaustive ranking restricted, bit for bit."""
    from types import SimpleNamespace

    monkeypatch.setenv("BUSCA_NUMBA", "1")
    ranker = core.scorer(index, "bm25")
    compared = 0
    for q, query in enumerate(_queries(9, 12)):
        columns, weights = ranker.query_counts(query)
        spans = [ranker._span(c) for c in columns]
        postings = SimpleNamespace(
            indptr=np.concatenate([[0], np.cumsum([s.stop - s.start for s in spans])]),
            indices=np.concatenate([ranker.indices[s] for s in spans]),
            data=np.concatenate([ranker.data[s] for s in spans]), n_rows=ranker.n_rows,
            accumulator=ranker.accumulator, bound=None)
        for label, mask in _masks(300 + q, ranker.n_rows):
            got = maxscore.top(postings, np.arange(len(columns)), weights, 10, allowed=mask)
            want = _expected(ranker.score(query), mask, 10)
            assert got[0].tolist() == want[0] and got[1].tolist() == want[1], (label, query)
            compared += bool(want[0])
    assert compared > 12 * 3


@pytest.mark.parametrize("method", ["bm25", "tfidf"])
def test_masked_window_bounds_bound_every_allowed_chunk(index, method, monkeypatch):
    """With a sparse mask the window bounds are taken over the parts holding an allowed
    chunk: still at least every allowed chunk's score, 0 for a window without one, and
    below the unmasked bounds."""
    monkeypatch.setenv("BUSCA_NUMBA", "1")
    ranker = core.scorer(index, method)
    ranker.prepare()
    kernel = maxscore.kernel()
    tighter = 0
    for q, query in enumerate(_queries(13, 20)):
        columns, weights = (ranker.query_weights(query) if method == "tfidf"
                            else ranker.query_counts(query))
        if not columns:
            continue
        columns = np.asarray(columns, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.float64)
        for label, mask in _masks(500 + q, ranker.n_rows):
            bounds = []
            for allowed in (None, mask):
                factor, slots, _, _, _, scales, shift, ub, *_, peaks, sums, _ = \
                    maxscore._tables(ranker, columns, ranker.walk_factor)
                kernel._bounds(ranker.indptr, ranker.indices, ranker.data, columns, weights,
                               factor, slots, scales, shift, ub, peaks, sums,
                               *maxscore.mask_arguments(allowed))
                bounds.append(ub.copy())
            scores = ranker.dense(columns, weights) * (factor if factor.size else 1.0)
            width = 1 << shift
            padded = np.zeros(ub.size * width)
            padded[:scores.size] = np.where(mask, scores, 0)
            best = padded.reshape(-1, width).max(axis=1)
            assert (bounds[1] * (1 + 1e-5) >= best).all(), (label, query)
            assert (bounds[1] <= bounds[0] * (1 + 1e-6)).all(), (label, query)
            if label in ("0.1%", "0.0%"):
                opened = np.zeros(ub.size * width, dtype=bool)
                opened[:mask.size] = mask
                assert (bounds[1][~opened.reshape(-1, width).any(axis=1)] == 0).all()
            tighter += bounds[1].sum() < bounds[0].sum() * 0.9
    assert tighter >= 20
