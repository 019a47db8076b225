"""A PostgreSQL build's posting lists: one row per term, read by busca (through a per-process
cache that never answers for another build), the format version, and served dense queries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from busca.cli import cli
from busca.crawler.store import Document
from busca.errors import BuscaError
from busca.index import IndexFormatError, open_home
from busca.index.postgres import cache as pg_cache, lists as pg_lists, schema as pg_schema
from busca.index.postgres.cache import PostingCache

ARTICLES = Path(__file__).resolve().parents[2] / "fixtures" / "site" / "articles.jsonl"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj={})


def busca(*args) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.stdout


# --- packing (no database) -------------------------------------------------------------------
@pytest.mark.parametrize("n, spread", [(0, 1), (1, 1), (127, 3), (128, 3), (5000, 200),
                                       (5000, 60_000), (3000, 10_000_000)])
def test_packed_ids_unpack_to_the_same_ids(n, spread):
    rng = np.random.default_rng(n + spread)
    ids = np.unique(rng.integers(0, max(1, n * spread), n)).astype(np.int32)
    packed = pg_lists.pack_ids(ids)
    out = pg_lists.unpack_ids(packed)
    assert out.dtype == np.int32 and np.array_equal(out, ids)
    gaps = np.diff(ids).max(initial=0)
    if ids.size >= pg_lists.MIN_PACKED and gaps < 256:
        assert len(packed) < ids.size * 1.1  # a byte per posting
    if gaps >= 1 << 16:
        assert len(packed) == 4 + 4 * ids.size  # as they are


@pytest.mark.parametrize("dtype, distinct", [(np.float32, 3), (np.float32, 300),
                                             (np.float32, 100_000), (np.uint16, 7),
                                             (np.uint32, 70_000), (np.uint16, 1)])
def test_packed_values_unpack_bit_for_bit(dtype, distinct):
    rng = np.random.default_rng(distinct)
    if np.dtype(dtype).kind == "f":
        table = rng.random(distinct).astype(dtype) * 7
        table[0] = -0.0  # a value equal to another (0.0) but with other bits: kept apart
        table[-1] = 0.0
    else:
        table = rng.choice(np.arange(1, 1 << 20), distinct, replace=False).astype(dtype)
    for n in (0, 5, 200, 4000):
        values = table[rng.integers(0, distinct, n)]
        out = pg_lists.unpack_values(pg_lists.pack_values(values), dtype)
        assert out.dtype == np.dtype(dtype) and out.tobytes() == values.tobytes()


def test_copy_buffers_cover_every_row_once_and_cut_big_lists_apart(monkeypatch):
    from busca.index.postgres import copy as pg_copy

    monkeypatch.setattr(pg_copy, "BUFFER_BYTES", 1000)
    monkeypatch.setattr(pg_copy, "BLOCK", 4)
    lengths = np.array([10, 300, 5, 5, 5, 5, 5, 400, 0, 1])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    values = np.arange(indptr[-1], dtype=np.int32)
    fields = [pg_copy.Int4(np.arange(lengths.size)),
              pg_copy.Slices(indptr, values, pg_lists.pack_ids)]
    bounds = pg_copy._bounds(fields, lengths.size)
    assert bounds[0] == 0 and bounds[-1] == lengths.size and bounds == sorted(set(bounds))
    for lo, hi in zip(bounds, bounds[1:]):
        assert hi - lo <= 4
        assert hi - lo == 1 or 4 * lengths[lo:hi].sum() <= 1000  # one big row goes alone
    assert pg_copy._bounds([pg_copy.Int4(np.arange(9))], 9) == [0, 4, 8, 9]
    assert pg_copy._bounds(fields, 0) == [0]


# --- the cache alone (no database) ----------------------------------------------------------
def test_cache_keeps_the_most_recently_used_within_its_budget():
    cache = PostingCache(3 * (1000 + pg_cache.ENTRY_OVERHEAD))
    for key in "abc":
        cache.put(key, key.upper(), 1000)
    assert cache.get_many("a") == {"a": "A"}  # a is now the most recent
    cache.put("d", "D", 1000)  # drops b, the least recently used
    assert cache.get_many("abcd") == {"a": "A", "c": "C", "d": "D"}
    assert cache.size <= cache.capacity and len(cache) == 3
    cache.put("big", "B", 10_000)  # larger than the whole budget: not kept, nothing dropped
    assert cache.get_many(["big"]) == {} and len(cache) == 3


def test_a_cache_of_zero_keeps_nothing_and_budgets_come_from_url_or_environment(monkeypatch):
    cache = PostingCache(0)
    cache.put("a", "A", 0)
    assert cache.get_many("a") == {} and cache.size == 0
    monkeypatch.delenv("BUSCA_PG_CACHE_MB", raising=False)
    assert pg_cache.budget_mb() == pg_cache.DEFAULT_MB
    monkeypatch.setenv("BUSCA_PG_CACHE_MB", "12")
    assert pg_cache.budget_mb() == 12 and pg_cache.budget_mb("0") == 0
    with pytest.raises(ValueError):
        pg_cache.budget_mb("-1")
    assert pg_cache.shared(12) is pg_cache.shared(12) and pg_cache.shared(12).capacity == 12 << 20


def test_home_url_options_are_checked_in_one_line():
    url, options = pg_schema.read_options("postgresql://u@h/db?lexical=sql&cache_mb=0&sslmode=off")
    assert url == "postgresql://u@h/db?sslmode=off"
    assert options == {"lexical": "sql", "cache_mb": "0"}
    for bad, hint in (("lexical=fast", "use lexical=busca or lexical=sql"),
                      ("cache_mb=lots", "use a whole number"), ("dense=ivf", "dense=hnsw")):
        with pytest.raises(pg_schema.PostgresError, match=hint) as e:
            pg_schema.read_options(f"postgresql://u@h/db?{bad}")
        assert "\n" not in str(e.value)


# --- PostgreSQL -------------------------------------------------------------------------------
pg = pytest.mark.postgres


def _table(home, build, part) -> str:
    return pg_schema.build_table(home.schema, build.name, part)


@pg
def test_each_term_is_one_row_holding_the_local_column(pg_home, tmp_path):
    local = tmp_path / "home"
    for home in (local, pg_home):
        busca("--home", home, "add", ARTICLES)
        busca("--home", home, "index", "--quiet")
    with open_home(local) as a, open_home(pg_home) as b:
        la, lb = a.current(), b.current()
        assert la.terms("bm25") == lb.terms("bm25")
        packed = 0
        for method, data in (("bm25", "scores"), ("tfidf", "counts")):
            indptr = la.array(method, "indptr")
            indices, values = la.array(method, "indices"), la.array(method, data)
            rows = b.conn().execute(f"SELECT term_id, df, ids, vals FROM"
                                    f" {_table(b, lb, method + '_postings')} ORDER BY term_id",
                                    binary=True).fetchall()
            assert len(rows) == indptr.size - 1
            for term_id, df, ids, vals in rows:
                span = slice(indptr[term_id], indptr[term_id + 1])
                assert df == span.stop - span.start
                assert pg_lists.unpack_ids(ids).tobytes() == indices[span].tobytes()
                assert (pg_lists.unpack_values(vals, values.dtype).tobytes()
                        == values[span].tobytes())
                packed += len(ids) < 4 * df
            storage = b.conn().execute(
                "SELECT attname, attstorage FROM pg_attribute WHERE attrelid = %s::regclass"
                " AND attname IN ('ids', 'vals')",
                (_table(b, lb, method + "_postings"),)).fetchall()
            assert dict(storage) == {"ids": "e", "vals": "e"}  # EXTERNAL: not compressed
        assert packed > 0  # the long lists (tfidf's "de": most chunks) travel packed
        # only the lists: the SQL ranker's tables are written with lexical=sql only
        assert b.conn().execute("SELECT to_regclass(%s)",
                                (_table(b, lb, "bm25_blocks"),)).fetchone()[0] is None


@pg
def test_repeated_terms_are_read_from_the_cache_and_answers_do_not_change(pg_home):
    busca("--home", pg_home, "add", ARTICLES)
    busca("--home", pg_home, "index", "--quiet")
    query = "carga horária do estágio supervisionado"
    with open_home(pg_home + "&cache_mb=0") as cold, open_home(pg_home + "&cache_mb=7") as warm:
        assert warm.cache is pg_cache.shared(7) and cold.cache.capacity == 0
        warm.cache.clear()
        for method in ("bm25", "tfidf"):
            ranker = warm.current().ranker(method)
            first = ranker.top(query, 10)
            misses, hits = warm.cache.misses, warm.cache.hits
            again = ranker.top(query, 10)
            assert warm.cache.misses == misses and warm.cache.hits > hits
            uncached = cold.current().ranker(method).top(query, 10)
            for a, b in ((first, again), (first, uncached)):
                assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        assert 0 < warm.cache.size <= warm.cache.capacity


@pg
def test_a_new_build_is_never_answered_from_the_cache_of_the_old_one(pg_home, tmp_path):
    """The cache is keyed by build: after a rebuild that changes a term's postings, the same
    process answers with the new lists (as a local home with the same documents does)."""
    local = tmp_path / "home"
    query = "ornitorrinco"
    docs = [Document(f"https://x/{i}", "", f"texto {i} sobre ornitorrinco e outras coisas "
                     + "palavra " * i) for i in range(1, 6)]
    docs += [Document(f"https://y/{i}", "", f"texto {i} sobre capivara") for i in range(5)]
    answers = {}
    with open_home(pg_home + "&cache_mb=5") as home:
        home.cache.clear()
        for step in ("before", "after"):
            for location in (local, pg_home):
                with open_home(location) as store:
                    if step == "after":  # a new document mentions the term most often
                        store.put(Document("https://x/new", "", "ornitorrinco " * 5))
                    else:
                        for doc in docs:
                            store.put(doc)
                busca("--home", location, "index", "--quiet")
            for method in ("bm25", "tfidf"):
                with open_home(local) as a:
                    expected = a.current().ranker(method).top(query, 10)
                got = home.current().ranker(method).top(query, 10)  # same process, same cache
                assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
                answers[step, method] = got[0].tolist()
            assert len(home.cache) > 0
    for method in ("bm25", "tfidf"):
        assert answers["before", method] != answers["after", method]
        assert len(answers["after", method]) == len(answers["before", method]) + 1


@pg
def test_an_older_format_is_refused_with_the_rebuild_hint_and_rebuilding_upgrades(pg_home):
    busca("--home", pg_home, "add", ARTICLES)
    busca("--home", pg_home, "index", "--quiet", "--methods", "bm25")
    with open_home(pg_home) as home:  # as busca 1 left it
        home.conn().execute(f"UPDATE {home.s}.busca_meta SET value = '1'"
                            " WHERE key = 'format_version'")
    with open_home(pg_home) as home:  # documents still readable
        assert home.count() == 39
        with pytest.raises(IndexFormatError, match='format version 1.*"busca index"') as e:
            home.current()
        assert isinstance(e.value, BuscaError) and "\n" not in str(e.value)
        assert home.previous() is None  # the rebuild does not reuse what it cannot read
    refused = invoke("--home", pg_home, "search", "estágio", "--method", "bm25")
    assert refused.exit_code == 1 and refused.output.count("\n") == 1
    assert 'run "busca index" to rebuild it' in refused.output
    busca("--home", pg_home, "index", "--quiet", "--methods", "bm25")
    found = json.loads(busca("--home", pg_home, "search", "estágio", "--method", "bm25",
                             "--json", "--no-log").splitlines()[0])
    assert found["score"] > 0
    with open_home(pg_home) as home:
        assert home.conn().execute(f"SELECT value FROM {home.s}.busca_meta WHERE key ="
                                   " 'format_version'").fetchone()[0] == pg_schema.FORMAT_VERSION


@pg
def test_served_dense_queries_on_a_postgres_home_use_pgvector(pg_home, fake):
    from busca.index.postgres.rank import DenseRanker
    from busca.serve.engine import Engine

    busca("--home", pg_home, "add", ARTICLES)
    busca("--home", pg_home, "index", "--quiet", "--dense", "fake")
    query = "ventoinha do processador"
    for url in (pg_home, pg_home + "&dense=exact"):
        engine = Engine(url, log_queries=False)
        live = engine.live()
        ranker = live.index.ranker("dense")
        assert isinstance(ranker, DenseRanker) and ranker.exact == url.endswith("exact")
        served = [(h.chunk_id, round(h.score, 6)) for h in
                  engine.search(query, method="dense", k=5, min_score=0).hits]
        cli = [(h["chunk_id"], round(h["score"], 6)) for h in map(json.loads, busca(
            "--home", url, "search", query, "--method", "dense", "-k", "5", "--json",
            "--no-log", "--min-score", "0").splitlines())]
        assert served == cli and len(served) == 5
        encoder = ranker.encoder
        busca("--home", url, "index", "--quiet", "--dense", "fake", "--size", "120")
        rebuilt = engine.live()
        assert rebuilt.build != live.build
        assert rebuilt.index.ranker("dense").encoder is encoder  # the model stays loaded
