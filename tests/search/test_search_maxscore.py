"""The compiled MaxScore (numba, the `fast` extra) gives the exhaustive ranking bit for bit,
the numpy path's results, and Lucene BM25 as an independent brute force computes it."""

import math
import random
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from busca import search as core
from busca.crawler.store import Document
from busca.index import LocalHome
from busca.index.lexical import maxscore
from busca.index.text.analyzers import pt_terms
from busca.index.build import build_index
from busca.index.lexical.lexical import NoSearchableTerms
from busca.index.home.storage import load_index

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


def is_exhaustive_top(scorer, query, k) -> bool:
    """Assert that the compiled top k is the exhaustive ranking, ids and scores bit for bit;
    False when the query has no searchable term."""
    got = ranked(scorer, query, k)
    if got is None:
        return False
    want = core.top_k(*scorer.score(query), k)
    assert got[0].tolist() == want[0].tolist(), query
    assert got[1].tolist() == want[1].tolist(), query  # bit for bit
    return True


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
@pytest.mark.parametrize("k", [1, 3, 10, 100, 5000])
def test_compiled_top_equals_exhaustive_ranking(built, method, k, compiled):
    scorer = core.scorer(built[1], method)
    assert maxscore.usable(scorer.n_rows)
    for query in queries(k, 60):
        is_exhaustive_top(scorer, query, k)


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


@pytest.mark.parametrize("shift", [1, 3, 6])
@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_compiled_top_is_exact_whatever_the_window(built, method, shift, compiled,
                                                   monkeypatch):
    """Windows of 2 to 64 chunks: long lists get tables, short ones are walked; the top k
    stays the exhaustive ranking bit for bit."""
    monkeypatch.setattr(maxscore, "SHIFT", shift)
    scorer = core.scorer(built[1], method)
    for query in queries(shift, 40):
        for k in (1, 10):
            is_exhaustive_top(scorer, query, k)
    assert scorer._blocks.shift == shift


@pytest.mark.parametrize("rows", ["none", "one", "all"])
@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_codes_per_chunk_keep_the_top_k_exact(built, method, rows, compiled, monkeypatch):
    """From the second query on, the longest lists get a code per chunk and the walk bounds
    each chunk with them (all such lists, only the longest one, or none when the memory cap
    leaves no room): the top k stays the exhaustive ranking bit for bit, with a chunk factor
    (TF-IDF's cosine) and k beyond the chunks that have a term."""
    scorer = core.scorer(built[1], method)
    one = maxscore.coded_bytes(scorer.n_rows)
    monkeypatch.setattr(maxscore, "DENSE_MAX_BYTES", {"none": 0, "one": one + one // 2,
                                                      "all": 1 << 30}[rows])
    monkeypatch.setattr(scorer, "_blocks", None, raising=False)  # fresh tables and codes
    checked = 0
    for query in ["de gato"] + queries(17, 50):
        for k in (1, 10, 2000):
            checked += is_exhaustive_top(scorer, query, k)
    assert checked > 100
    coded = scorer._blocks.dense[1].shape[0]
    lengths = np.diff(scorer.indptr)
    long = int((lengths * maxscore.DENSE_SHARE >= scorer.n_rows).sum())
    assert long >= 2  # the corpus has such lists
    assert coded == {"none": 0, "one": 1, "all": long}[rows]


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_prepare_makes_tables_and_codes_before_the_first_query(built, method, compiled,
                                                               monkeypatch):
    """`prepare()` (busca serve and busca shell call it at start) makes every long list's
    table and the codes at once, with the factor the method ranks with, so the first query
    already walks with them, exactly."""
    scorer = core.scorer(built[1], method)
    monkeypatch.setattr(scorer, "_blocks", None, raising=False)
    scorer.prepare()
    blocks = scorer._blocks
    assert blocks.dense[1].shape[0] > 0 and blocks.queries == 2
    assert blocks.factor is (scorer.inverse_norms if method == "tfidf" else blocks.factor)
    assert not np.any(blocks.slot == maxscore.UNSEEN)  # (every list is long here)
    for query in queries(23, 20):
        is_exhaustive_top(scorer, query, 10)
    assert scorer._blocks is blocks  # the same tables: none made again


def test_prepare_marks_every_short_list_so_new_words_take_no_lock(tmp_path, compiled):
    """After `prepare()` every list has its table row or is marked short, so a query's new
    words never take `slots`' lock and slow path (a few µs a query on new questions); the
    answers stay exact."""
    texts = corpus(5, 1200) + [f"raro{i} palavra{i % 7}" for i in range(300)]
    with LocalHome(tmp_path) as store:
        for i, text in enumerate(texts):
            store.put(Document(f"d{i:04d}", "", text))
        build_index(store, methods=("bm25",))
    scorer = core.scorer(load_index(tmp_path), "bm25")
    scorer.prepare()
    blocks = scorer._blocks
    short = np.diff(scorer.indptr) < blocks.n_windows
    assert short.sum() >= 300 and (~short).sum() > 0
    assert np.all(blocks.slot[short] == maxscore.SHORT) and np.all(blocks.slot[~short] >= 0)
    for query in ["raro7 palavra3", "raro250 " + texts[0][:40], *queries(29, 20)]:
        is_exhaustive_top(scorer, query, 10)


def test_the_heap_is_trimmed_once_the_tables_are_made(built, compiled, monkeypatch):
    """Making every table frees tens of MB (each list read, the tables' growth) that glibc
    keeps unless asked: `_trim_heap` runs once after they are made (prepare, or the second
    query), not per query; without a malloc_trim (not glibc) it does nothing."""
    trim, calls = maxscore._trim_heap, []
    monkeypatch.setattr(maxscore, "_trim_heap", lambda: calls.append(1))
    scorer = core.scorer(built[1], "bm25")
    monkeypatch.setattr(scorer, "_blocks", None, raising=False)
    for query in queries(31, 6):
        is_exhaustive_top(scorer, query, 10)
    assert scorer._blocks.queries > 2 and calls == [1]  # the second query made them all
    scorer.prepare()
    assert calls == [1]
    assert maxscore._libc("busca_no_such_function", ()) is None
    trim()  # glibc here: malloc_trim(0)
    monkeypatch.setattr(maxscore, "_libc", lambda name, argtypes: None)
    trim()  # elsewhere: nothing


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_coded_values_read_from_the_file_give_the_same_top(built, method, compiled,
                                                          monkeypatch, tmp_path):
    """Past APART_MIN_BYTES of coded lists' values, an exact score reads them from the
    values file (pread) instead of through the mapping: the same top k, bit for bit; a read
    that fails (here: an empty file) takes the mapping's value; the file is closed when the
    tables go."""
    import gc
    import os

    monkeypatch.setattr(maxscore, "APART_MIN_BYTES", 0)
    scorer = core.scorer(built[1], method)
    monkeypatch.setattr(scorer, "_blocks", None, raising=False)
    scorer.prepare()
    blocks = scorer._blocks
    assert blocks.dense[1].shape[0] > 0 and blocks.apart.fd >= 0
    assert os.path.samefile(f"/proc/self/fd/{blocks.apart.fd}", scorer.data.base.filename) \
        if os.path.isdir("/proc/self/fd") else True
    checked = 0
    for query in ["de gato"] + queries(37, 40):
        for k in (1, 10, 2000):
            checked += is_exhaustive_top(scorer, query, k)
    assert checked > 80
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    blocks.apart = maxscore._Apart(os.open(empty, os.O_RDONLY), 0)
    for query in queries(41, 10):
        is_exhaustive_top(scorer, query, 10)
    fd = blocks.apart.fd
    del blocks
    scorer._blocks = None  # (monkeypatch would keep the old value to restore it)
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)


def test_small_indexes_read_coded_values_through_the_mapping(built, compiled, monkeypatch):
    """Under APART_MIN_BYTES (the test index's few kB) no file is opened."""
    scorer = core.scorer(built[1], "bm25")
    monkeypatch.setattr(scorer, "_blocks", None, raising=False)
    scorer.prepare()
    assert scorer._blocks.dense[1].shape[0] > 0 and scorer._blocks.apart.fd == -1


def test_codes_budget_comes_from_the_environment(built, compiled, monkeypatch):
    """BUSCA_CODES_MB=0 turns the codes off (the walk reads postings, still exact); a size
    in MB caps them; anything unreadable keeps the default."""
    for value, want in (("0", 0), ("1.5", 3 << 19), ("", maxscore.DENSE_MAX_BYTES),
                        ("lots", maxscore.DENSE_MAX_BYTES)):
        monkeypatch.setenv("BUSCA_CODES_MB", value)
        assert maxscore.codes_budget() == want
    monkeypatch.setenv("BUSCA_CODES_MB", "0")
    scorer = core.scorer(built[1], "bm25")
    monkeypatch.setattr(scorer, "_blocks", None, raising=False)
    for query in queries(29, 10):
        is_exhaustive_top(scorer, query, 10)
    assert scorer._blocks.dense[1].shape[0] == 0


def test_long_lists_are_read_from_the_files_and_set_apart(built, compiled):
    """A long list is read from the index's .npy files (the same numbers as its slice of
    the mapped arrays), and setting its pages apart (a madvise hint) changes no value."""
    scorer = core.scorer(built[1], "bm25")
    assert isinstance(scorer.indices.base, np.memmap)  # the index is memory-mapped
    lengths = np.diff(scorer.indptr)
    for column in np.argsort(-lengths)[:5]:
        before = [a.copy() for a in maxscore._list(scorer, int(column))]
        ids, values = maxscore._read_list(scorer, int(column))
        assert not np.shares_memory(ids, scorer.indices)
        assert ids.tolist() == before[0].tolist() and values.tobytes() == before[1].tobytes()
        after = maxscore._list(scorer, int(column))
        assert after[0].tolist() == before[0].tolist()
        assert after[1].tobytes() == before[1].tobytes()
    plain = np.arange(10.0)  # not mapped: a view, and no advice
    assert np.shares_memory(maxscore._read(plain, 2, 5), plain)


def test_dense_row_codes_bound_each_value(built, compiled):
    """A list's code per chunk, times its scale, is at least its value there and less than
    one step above it; 0 exactly where the list has no posting (with and without a
    factor)."""
    scorer = core.scorer(built[1], "bm25")
    kernel = maxscore.kernel()
    factor = np.random.default_rng(2).random(scorer.n_rows) + 0.5
    for f in (np.empty(0), factor):
        for column in range(min(scorer.indptr.size - 1, 40)):
            lo, hi = int(scorer.indptr[column]), int(scorer.indptr[column + 1])
            row = np.zeros(maxscore.coded_bytes(scorer.n_rows), np.uint8)
            scale = kernel.dense_row(scorer.indices, scorer.data, lo, hi, f, row)
            docs = scorer.indices[lo:hi]
            values = scorer.data[lo:hi].astype(np.float64) * (f[docs] if f.size else 1.0)
            assert (row[docs] >= 1).all() and np.count_nonzero(row) == docs.size
            assert (row[docs] * scale >= values * (1 - 1e-12)).all()
            assert (row[docs] * scale <= values + scale * (1 + 1e-9)).all()


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_window_bounds_with_peaks_bound_every_chunk(built, method, compiled, monkeypatch):
    """A window's bound (`_bounds`: the long lists' peaks and the short lists' values added
    up part by part, the best part taken) is at least every chunk's score in it, within the
    walk's slack, and tighter overall than the sum of the lists' window maxima."""
    scorer = core.scorer(built[1], method)
    monkeypatch.setattr(scorer, "_blocks", None, raising=False)
    scorer.prepare()
    kernel = maxscore.kernel()
    tighter = 0
    for query in queries(31, 40):
        try:
            columns, weights = (scorer.query_weights(query) if method == "tfidf"
                                else scorer.query_counts(query))
        except NoSearchableTerms:
            continue
        if not columns:
            continue
        columns = np.asarray(columns, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.float64)
        factor, slots, maxima, rel, group, scales, shift, ub, *_, peaks, sums, _ = \
            maxscore._tables(scorer, columns, scorer.walk_factor)
        kernel._bounds(scorer.indptr, scorer.indices, scorer.data, columns, weights, factor,
                       slots, scales, shift, ub, peaks, sums, *maxscore.mask_arguments(None))
        scores = scorer.dense(columns, weights) * (factor if factor.size else 1.0)
        width = 1 << shift
        padded = np.zeros(ub.size * width)
        padded[:scores.size] = scores
        best = padded.reshape(-1, width).max(axis=1)
        assert (ub * (1 + 1e-5) >= best).all(), query
        maxima_sum = np.zeros(ub.size)  # each list's window maxima (or values) added up
        for column, weight, slot in zip(columns, weights, slots):
            if slot >= 0:
                maxima_sum += maxima[slot, :ub.size] * scales[slot] * weight
            else:
                lo, hi = scorer.indptr[column], scorer.indptr[column + 1]
                docs = scorer.indices[lo:hi]
                values = scorer.data[lo:hi] * weight * (factor[docs] if factor.size else 1)
                np.add.at(maxima_sum, docs >> shift, values)
        assert (ub <= maxima_sum * (1 + 1e-6)).all(), query
        tighter += (slots >= 0).any() and ub.sum() < maxima_sum.sum() * 0.99
    assert tighter >= 10


def test_window_tables_survive_a_reset(built, compiled, monkeypatch):
    """A memory cap smaller than one table: every new term starts fresh tables, and the
    answers stay exact."""
    monkeypatch.setattr(maxscore, "BLOCKS_MAX_BYTES", 1)
    scorer = core.scorer(built[1], "bm25")
    for query in queries(5, 30):
        is_exhaustive_top(scorer, query, 10)


def test_window_index_bounds_and_offsets(built, compiled):
    """The table of a list: each window's quantised maximum is at least its largest value
    (and within one step of it), the offsets are where the window's postings start, and its
    peaks are the largest code of each part, in tiles of windows, part-major."""
    scorer = core.scorer(built[1], "bm25")
    kernel = maxscore.kernel()
    shift = 3
    n_windows = (scorer.n_rows - 1 >> shift) + 1
    for column in range(min(scorer.indptr.size - 1, 40)):
        lo, hi = int(scorer.indptr[column]), int(scorer.indptr[column + 1])
        maxima = np.zeros(n_windows + 1, np.uint8)
        rel = np.zeros(n_windows + 1, np.uint8)
        group = np.zeros(((n_windows + 1) >> 2) + 1, np.int32)
        tile, per = 4, 1 << shift - 1  # parts of 2 chunks
        peaks = np.zeros(((n_windows - 1) // tile + 1, per, tile), np.uint8)
        scale = kernel.window_index(scorer.indices, scorer.data, lo, hi, np.empty(0), shift,
                                    maxima, rel, group, peaks, 1)
        docs, values = scorer.indices[lo:hi], scorer.data[lo:hi].astype(np.float64)
        codes = np.zeros(peaks.size * 2, np.uint8)  # each chunk's code, then its parts' peak
        codes[docs] = np.ceil(values / scale)
        parts = codes.reshape(-1, tile, per, 2).max(axis=3)  # [tile, window, part]
        assert peaks.tolist() == parts.transpose(0, 2, 1).tolist()
        for j in range(n_windows + 1):
            start = lo + group[j >> 2] + rel[j]
            assert start == lo + np.searchsorted(docs, j << shift)
            inside = values[(docs >> shift) == j]
            top = inside.max() if inside.size else 0.0
            assert maxima[j] * scale >= top * (1 - 1e-12)
            assert maxima[j] * scale <= top + scale * (1 + 1e-9)


def test_candidates_of_a_small_postings_object(compiled):
    """The entry point for postings fetched elsewhere (a plain object with the CSR arrays):
    its candidates hold the exhaustive top k, and `top` is that top k."""
    from types import SimpleNamespace
    rng = np.random.default_rng(4)
    n_rows, n_columns = 3000, 6
    columns = [np.sort(rng.choice(n_rows, size, replace=False))
               for size in (2900, 1500, 300, 40, 5, 0)]
    indptr = np.concatenate([[0], np.cumsum([c.size for c in columns])]).astype(np.int64)
    indices = np.concatenate(columns).astype(np.int32)
    data = rng.random(indices.size).astype(np.float32) + np.float32(0.01)
    postings = SimpleNamespace(indptr=indptr, indices=indices, data=data, n_rows=n_rows,
                               accumulator=np.float32)
    dense = np.zeros((n_columns, n_rows), np.float32)
    for c in range(n_columns):
        dense[c, columns[c]] = data[indptr[c]:indptr[c + 1]]
    for query, weights in (([0, 1, 2, 3, 4, 5], [1, 1, 1, 1, 1, 1]), ([0, 3], [1, 2]),
                           ([4], [1]), ([1, 2, 4], [3, 1, 2])):
        w = np.array(weights, np.float32)
        sums = np.zeros(n_rows, np.float32)
        for c, weight in zip(query, w):
            sums += dense[c] * weight
        for k in (1, 10, 50):
            want = np.lexsort((np.arange(n_rows), -sums))[:k]
            want = want[sums[want] > 0]
            found = maxscore.candidates(postings, query, np.array(weights, float), k, None)
            assert set(want.tolist()) <= set(found.tolist())
            ids, scores = maxscore.top(postings, query, np.array(weights, float), k)
            assert ids.tolist() == want.tolist()
            assert scores.tolist() == sums[want].astype(np.float64).tolist()


def test_postings_of_one_query_take_the_plain_walk(compiled):
    """PostgreSQL's ranker lays out only the query's lists per query: no window tables are
    made (they would cost a pass over every posting), the top k is still exact, with a
    chunk factor (TF-IDF's) and with the lists' stored bounds."""
    from types import SimpleNamespace
    rng = np.random.default_rng(9)
    n_rows = 4000
    columns = [np.sort(rng.choice(n_rows, size, replace=False)) for size in (3500, 900, 60)]
    indptr = np.concatenate([[0], np.cumsum([c.size for c in columns])]).astype(np.int64)
    indices = np.concatenate(columns).astype(np.int32)
    data = (rng.random(indices.size) + 0.01).astype(np.float64)
    bound = np.array([data[indptr[c]:indptr[c + 1]].max() for c in range(3)])
    factor = rng.random(n_rows) + 0.5
    postings = SimpleNamespace(indptr=indptr, indices=indices, data=data, n_rows=n_rows,
                               accumulator=np.float64, bound=bound * factor.max())
    weights = np.array([1.0, 2.0, 3.0])
    assert maxscore.one_query(postings, np.arange(3))
    sums = np.zeros(n_rows)
    for c in range(3):
        sums[columns[c]] += data[indptr[c]:indptr[c + 1]] * weights[c]
    norms = 1 / factor
    for k in (1, 10, 100):
        ids, scores = maxscore.top(postings, [0, 1, 2], weights, k, factor, norms, 2.0)
        cosine = sums / (norms * 2.0)
        want = np.lexsort((np.arange(n_rows), -cosine))[:k]
        assert ids.tolist() == want.tolist()
        assert scores.tolist() == cosine[want].tolist()
    assert getattr(postings, "_blocks", None) is None


def test_prefetch_hint_changes_nothing_even_past_the_end():
    """The walk's prefetch (llvm.prefetch) compiles with the installed numba and is only a
    hint: asking for lines inside, at and past the end of an array leaves every value and
    the sum as they were."""
    import numba

    from busca.index.lexical.maxscore_numba import _prefetch

    @numba.njit
    def total(values, ahead):
        s = 0.0
        for i in range(values.size):
            _prefetch(values, i + ahead)
            s += values[i]
        return s

    @numba.njit
    def plain(values):
        s = 0.0
        for i in range(values.size):
            s += values[i]
        return s

    values = np.random.default_rng(1).random(1000)
    before = values.copy()
    for ahead in (0, 16, 999, 10_000):
        assert total(values, ahead) == plain(before)
    assert np.array_equal(values, before)


def test_stored_bounds_serve_the_walk_only_in_the_values_dtype():
    """The walk takes a short list's bound from `postings.bound` (no pass over its postings)
    only where that bound is the values' own float32 maximum, read-only (one kernel type)."""
    values = np.array([0.5, 2.25, 1.0], dtype=np.float32)
    bound = np.array([2.25], dtype=np.float32)
    known = maxscore._known_bounds(SimpleNamespace(bound=bound, data=values), None)
    assert known.tolist() == [2.25] and not known.flags.writeable and bound.flags.writeable
    for postings, factor in [(SimpleNamespace(bound=bound, data=values), np.ones(3)),
                             (SimpleNamespace(bound=bound.astype(np.float64), data=values), None),
                             (SimpleNamespace(bound=bound, data=values.astype(np.float64)), None),
                             (SimpleNamespace(data=values), None)]:
        empty = maxscore._known_bounds(postings, factor)
        assert empty.size == 0 and empty.dtype == np.float32 and not empty.flags.writeable
