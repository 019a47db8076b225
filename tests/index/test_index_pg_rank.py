"""A PostgreSQL home answers as a local home does: same stats, same top 10 (urls and scores),
same eval metrics, on the fixture corpus and on a synthetic corpus of 10k+ chunks — with busca
ranking the lists it reads (the default) and with PostgreSQL ranking (`lexical=sql`)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from busca.cli import cli
from busca.index import open_home

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parents[2]
ARTICLES = REPO / "fixtures" / "site" / "articles.jsonl"
GOLDEN = REPO / "fixtures" / "golden" / "golden.json"


def busca(home, *args) -> str:
    result = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False,
                                obj={})
    assert result.exit_code == 0, result.output
    return result.stdout


def questions(n: int | None = None) -> list[str]:
    items = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return [q["pergunta"] for q in items][:n]


def top10(home, method: str, query: str) -> list[tuple[str, int, float]]:
    out = busca(home, "search", query, "--method", method, "-k", "10", "--json", "--no-log",
                "--min-score", "0")
    hits = [json.loads(line) for line in out.splitlines() if line.strip()]
    return [(h["url"], h["chunk_id"], h["score"]) for h in hits]


def assert_same_answers(local, pg, queries, methods=("tfidf", "bm25")):
    compared = 0
    for method in methods:
        for query in queries:
            a, b = top10(local, method, query), top10(pg, method, query)
            assert [x[:2] for x in a] == [x[:2] for x in b], (method, query)
            assert np.allclose([x[2] for x in a], [x[2] for x in b], rtol=0, atol=1e-6)
            compared += bool(a)
    return compared


def figures(home) -> dict:
    data = json.loads(busca(home, "stats", "--json"))
    data.pop("build")
    return data


RANKING = ["busca", "sql"]  # the home URL's lexical=


@pytest.fixture(scope="module")
def fixture_built(tmp_path_factory, postgres_server_url):
    """A local home and a PostgreSQL one built with lexical=sql (so both rankers can read it)."""
    local = tmp_path_factory.mktemp("local") / "home"
    pg = f"{postgres_server_url}?corpus=fixture_{random.getrandbits(32):x}"
    for home in (local, pg + "&lexical=sql"):
        busca(home, "add", str(ARTICLES))
        busca(home, "index", "--quiet")
    return local, pg


@pytest.fixture(params=RANKING)
def fixture_homes(request, fixture_built):
    local, pg = fixture_built
    return local, f"{pg}&lexical={request.param}"


def test_fixture_corpus_same_stats(fixture_homes):
    local, pg = fixture_homes
    assert figures(local) == figures(pg)


def test_fixture_corpus_same_top10_for_every_golden_question(fixture_homes):
    local, pg = fixture_homes
    assert len(questions()) >= 50
    assert assert_same_answers(local, pg, questions()) >= 100


def test_fixture_corpus_same_eval_metrics(fixture_homes):
    local, pg = fixture_homes
    reports = [json.loads(busca(h, "eval", str(GOLDEN), "--json")) for h in fixture_homes]
    for key in ("summary", "slices", "pairs", "floors", "per_question", "answerability"):
        assert reports[0][key] == reports[1][key], key
    assert reports[0]["info"]["questions"] == 76


def test_rankers_return_the_local_score_arrays(fixture_homes):
    local, pg = fixture_homes
    with open_home(local) as a, open_home(pg) as b:
        for method in ("tfidf", "bm25"):
            ra, rb = a.current().ranker(method), b.current().ranker(method)
            for query in questions(20):
                ids_a, scores_a = ra.score(query)
                ids_b, scores_b = rb.score(query)
                order = np.argsort(ids_a)
                assert np.array_equal(ids_a[order], ids_b)
                assert np.allclose(scores_a[order], scores_b, rtol=0, atol=1e-9)


def test_unknown_words_and_stopwords_get_the_local_messages(fixture_homes):
    local, pg = fixture_homes
    for query in ("xyzzyplugh", "de o a", "xilofones"):  # named as typed, not "xilofon"
        a = CliRunner().invoke(cli, ["--home", str(local), "search", query, "--method", "bm25"],
                               obj={})
        b = CliRunner().invoke(cli, ["--home", pg, "search", query, "--method", "bm25"], obj={})
        assert (a.exit_code, a.output) == (b.exit_code, b.output)
        assert "none of the query's words" in a.output or "stopword" in a.output
        assert query.split()[-1] in a.output


@pytest.fixture(scope="module")
def large_built(tmp_path_factory, postgres_server_url, synthetic_corpus):
    docs, asked = synthetic_corpus
    local = tmp_path_factory.mktemp("large") / "home"
    pg = f"{postgres_server_url}?corpus=large_{random.getrandbits(32):x}"
    for home in (local, pg + "&lexical=sql"):
        busca(home, "add", str(docs))
        busca(home, "index", "--quiet")
    return local, pg, asked


@pytest.fixture(params=RANKING)
def large_homes(request, large_built):
    local, pg, asked = large_built
    return local, f"{pg}&lexical={request.param}", asked


def test_large_corpus_same_stats_and_top10_on_60_questions(large_homes):
    local, pg, asked = large_homes
    stats = figures(local)
    assert stats["chunks"] >= 10_000
    assert stats == figures(pg)
    assert assert_same_answers(local, pg, asked[:60]) >= 100


def test_large_corpus_bit_for_bit_with_and_without_numba(large_built, monkeypatch):
    """busca's ranking of the lists read from PostgreSQL is the local code on the same numbers:
    the same scores bit for bit, whether MaxScore runs compiled or in numpy."""
    local, pg, asked = large_built
    for numba in ("1", "0"):
        monkeypatch.setenv("BUSCA_NUMBA", numba)
        with open_home(local) as a, open_home(pg) as b:
            for method in ("tfidf", "bm25"):
                ra, rb = a.current().ranker(method), b.current().ranker(method)
                for query in asked[:40]:
                    for k in (1, 10, 100):
                        ids_a, scores_a = ra.top(query, k)
                        ids_b, scores_b = rb.top(query, k)
                        assert np.array_equal(ids_a, ids_b), (method, query, k)
                        assert np.array_equal(scores_a, scores_b), (method, query, k)


def test_a_build_without_the_sql_tables_is_refused_by_lexical_sql_in_one_line(pg_home):
    from busca.index import IndexFormatError

    busca(pg_home, "add", str(ARTICLES))
    busca(pg_home, "index", "--quiet", "--methods", "bm25")
    with open_home(pg_home) as home:
        assert home.current().ranker("bm25").top("matrícula", 3)[0].size == 3
    with open_home(pg_home + "&lexical=sql") as home:
        with pytest.raises(IndexFormatError, match="lexical=sql") as e:
            home.current().ranker("bm25")
    assert "\n" not in str(e.value)
    result = CliRunner().invoke(cli, ["--home", pg_home + "&lexical=sql", "search", "matrícula",
                                      "--method", "bm25"], obj={})
    assert result.exit_code == 1 and "lexical=sql" in result.output
    assert "Traceback" not in result.output


def test_same_answers_without_the_intarray_extension(fixture_built, monkeypatch):
    from busca.index.postgres.home import PostgresHome

    local, pg = fixture_built
    pg += "&lexical=sql"
    monkeypatch.setattr(PostgresHome, "find_function", lambda self: "array_position")
    with open_home(local) as a, open_home(pg) as b:
        for method in ("tfidf", "bm25"):
            ra, rb = a.current().ranker(method), b.current().ranker(method)
            assert rb.find == "array_position"
            for query in questions(20):
                ids_a, scores_a = ra.top(query, 10)
                ids_b, scores_b = rb.top(query, 10)
                assert np.array_equal(ids_a, ids_b)
                assert np.allclose(scores_a, scores_b, rtol=0, atol=1e-6)


def test_both_backends_read_the_same_idf_shares(fixture_homes):
    """What the hybrid's lift and coordination bonus and the idf answerability features read
    (search/coverage.py): the same shares of each question's idf mass, for held, partly held
    and unknown terms, one chunk or several at a time."""
    from busca.search.coverage import Lexicon, StoredLexicon, lexicon_of
    local, pg = fixture_homes
    with open_home(local) as a, open_home(pg) as b:
        la, lb = lexicon_of(a.current()), lexicon_of(b.current())
        assert isinstance(la, Lexicon) and isinstance(lb, StoredLexicon)
        coverages = []
        for query in questions(20) + ["zzzz inexistente computação"]:
            best = int(a.current().ranker("bm25").top(query, 1)[0][0])
            for chunk in (best, 0, best + 1):
                shares = la.shares(query, chunk)
                assert lb.shares(query, chunk) == shares, (query, chunk)
                coverages.append(shares[0])
            several = [best, 0, best + 1, best]  # in one call (the coordination bonus)
            assert lb.coverages(query, several) == la.coverages(query, several) \
                == [la.coverage(query, chunk) for chunk in several], query
        assert 0.0 in coverages and any(0 < c < 1 for c in coverages)


def test_text_typed_without_accents_is_found_on_both_backends(tmp_path, postgres_server_url):
    """The documents' words typed without accents are stemmed as the questions' (with the
    suffix's accents) by the PostgreSQL build and both of its rankers, as locally."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(json.dumps({"url": f"https://x.test/{i}", "title": t, "text": t})
                              for i, t in enumerate(["Sistemas de informacao e gestao",
                                                     "Bolo de cenoura com cobertura"])),
                    encoding="utf-8")
    pg = f"{postgres_server_url}?corpus=plain_{random.getrandbits(32):x}"
    homes = [tmp_path / "home", pg + "&lexical=sql"]
    for home in homes:
        busca(home, "add", str(docs))
        busca(home, "index", "--quiet", "--methods", "bm25")
    for home in (*homes, pg + "&lexical=busca"):
        for query in ("informacao", "informações"):
            assert [h[0] for h in top10(home, "bm25", query)] == ["https://x.test/0"], (home, query)


def test_numbers_written_with_separators_are_found_on_both_backends(tmp_path,
                                                                     postgres_server_url):
    """"R$ 1.000,00" and a CPF are counted whole by the PostgreSQL build, and both of its
    rankers ask a question's "1000" and "12345678909" as the local home does."""
    texts = ["O curso custa R$ 1.000,00 por semestre e oferece 10.000 vagas.",
             "Informe o CPF 123.456.789-09 e o CEP 01310-100 no formulário.",
             "O prazo é de 000 dias e a taxa de 10 reais."]
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(json.dumps({"url": f"https://x.test/{i}", "title": t, "text": t})
                              for i, t in enumerate(texts)), encoding="utf-8")
    pg = f"{postgres_server_url}?corpus=numbers_{random.getrandbits(32):x}"
    local = tmp_path / "home"
    for home in (local, pg + "&lexical=sql"):
        busca(home, "add", str(docs))
        busca(home, "index", "--quiet")
    asked = {"quanto custa 1000 reais": 0, "10.000": 0, "12345678909": 1, "01310100": 1}
    for home in (local, pg + "&lexical=sql", pg + "&lexical=busca"):
        for query, doc in asked.items():
            assert top10(home, "bm25", query)[0][0] == f"https://x.test/{doc}", (home, query)
        assert [h[0] for h in top10(home, "bm25", "10.000")] == ["https://x.test/0"]
    assert assert_same_answers(local, pg + "&lexical=sql", list(asked), ("bm25",)) == 4
