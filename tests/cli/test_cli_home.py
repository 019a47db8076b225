"""`--home` / BUSCA_HOME given a postgresql:// URL: every command works against the database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from busca.cli import cli
from busca.fixtures.server import FixtureSite, load_articles

pytestmark = pytest.mark.postgres

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden" / "golden.json"


def invoke(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, obj={})


def test_every_command_against_a_postgres_home(pg_home, tmp_path):
    env = {"BUSCA_HOME": pg_home}
    with FixtureSite(load_articles()[:8]) as site:
        crawled = invoke("crawl", site.url, "--rate", "500", env=env)
        assert crawled.exit_code == 0, crawled.output
        assert "8 added" in crawled.stdout
        again = invoke("crawl", site.url, "--rate", "500", env=env)
        assert "0 added, 0 updated, 8 unchanged" in again.stdout
    note = tmp_path / "nota.md"
    note.write_text("# Nota\n\nO estágio supervisionado tem carga horária própria.",
                    encoding="utf-8")
    added = invoke("add", str(note), env=env)
    assert added.exit_code == 0 and "1 added" in added.stdout
    indexed = invoke("index", "--quiet", env=env)
    assert indexed.exit_code == 0 and "indexed 9 documents" in indexed.stdout
    stats = json.loads(invoke("stats", "--json", env=env).stdout)
    assert stats["documents"] == 9 and set(stats["methods"]) == {"tfidf", "bm25"}
    found = invoke("search", "carga horária do estágio", "--method", "bm25", env=env)
    assert found.exit_code == 0 and "nota.md" in found.stdout
    context = invoke("context", "carga horária do estágio", "--method", "bm25", env=env)
    assert context.exit_code == 0 and "estágio supervisionado" in context.stdout
    logged = invoke("misses", "--json", env=env)
    assert logged.exit_code == 0
    evaluated = invoke("eval", str(GOLDEN), "--methods", "bm25", env=env)
    assert evaluated.exit_code == 0, evaluated.output


def test_home_option_takes_the_url_and_errors_are_one_line(pg_home):
    assert invoke("--home", pg_home, "log", "on").exit_code == 0  # a write creates the corpus
    stats = invoke("--home", pg_home, "stats")  # no document yet: counted, and the fix named
    assert stats.exit_code == 0 and 'no documents yet: run "busca crawl URL"' in stats.output
    result = invoke("--home", pg_home, "search", "estágio")
    assert result.exit_code == 1
    assert 'run "busca index" first' in result.output and result.output.count("\n") == 1
    bad = invoke("--home", "postgresql://busca:pw@127.0.0.1:1/nothing", "stats")
    assert bad.exit_code == 1 and "cannot connect to" in bad.output and "pw@" not in bad.output
    assert "Traceback" not in bad.output


def test_named_dense_models_on_a_postgres_home(pg_home, tmp_path, fake):
    """`--dense fake,srv=openai:MODEL` (an embedding server on 127.0.0.1): every model's
    vectors go to pgvector and rank as on a local home."""
    from embed_servers import FaultyServer

    articles = Path(__file__).resolve().parents[2] / "fixtures" / "site" / "articles.jsonl"
    local = str(tmp_path / "home")
    with FaultyServer(models=("fake-model",)) as server:
        answers = []
        for home in (local, pg_home + "&dense=exact"):
            assert invoke("--home", home, "add", str(articles)).exit_code == 0
            built = invoke("--home", home, "index", "-q", "--dense", "fake,srv=openai:fake-model",
                           "--embed-url", server.url)
            assert built.exit_code == 0, built.output
            found = invoke("--home", home, "search", "ventoinha do processador", "--method",
                           "dense:srv", "-k", "5", "--json", "--no-log", "--embed-url",
                           server.url)
            assert found.exit_code == 0, found.output
            answers.append([(h["chunk_id"], round(h["score"], 5)) for h in
                            map(json.loads, found.stdout.splitlines())])
    assert answers[0] == answers[1] and len(answers[0]) == 5


def test_two_servers_answer_every_request_while_a_third_process_reindexes(pg_home):
    import threading

    import requests
    from serving import Server

    articles = Path(__file__).resolve().parents[2] / "fixtures" / "site" / "articles.jsonl"
    assert invoke("--home", pg_home, "add", str(articles)).exit_code == 0
    assert invoke("--home", pg_home, "index", "-q").exit_code == 0
    with Server(pg_home, "--no-log", "--quiet") as a, Server(pg_home, "--no-log",
                                                             "--quiet") as b:
        stop, results = threading.Event(), []

        def client(url: str) -> None:
            session = requests.Session()
            while not stop.is_set():
                r = session.get(url + "api/search", timeout=60,
                                params={"q": "carga horária do estágio", "method": "bm25"})
                results.append((r.status_code, r.json().get("build")))

        threads = [threading.Thread(target=client, args=(s.url,)) for s in (a, b, a, b)]
        for t in threads:
            t.start()
        for size in (150, 120, 180):  # the third process: three rebuilds
            done = subprocess.run([sys.executable, "-m", "busca.cli", "--home", pg_home,
                                   "index", "-q", "--size", str(size), "--overlap", "20"],
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
        stop.set()
        for t in threads:
            t.join(60)
    assert results and all(status == 200 for status, _ in results), results[:5]
    assert len({build for _, build in results}) >= 2


def test_add_does_not_print_the_database_password(pg_home, tmp_path):
    home = pg_home.replace("postgresql://postgres@", "postgresql://postgres:s3cret-pw@")
    assert home != pg_home  # (the test server trusts local connections: any password works)
    note = tmp_path / "nota.md"
    note.write_text("# Nota\n\nTexto.", encoding="utf-8")
    added = invoke("--home", home, "add", str(note))
    assert added.exit_code == 0, added.output
    assert "s3cret-pw" not in added.output and "postgres:***@" in added.stdout


def test_stats_prints_the_same_on_both_backends(pg_home, tmp_path):
    """jsonb sorts a manifest's keys (bm25 came before tfidf, its b before k1): the builds
    table keeps the manifest as json."""
    from conftest import FIXTURES

    articles = str(FIXTURES / "site" / "articles.jsonl")
    out = []
    for home in (pg_home, str(tmp_path / "local")):
        assert invoke("--home", home, "add", articles).exit_code == 0
        assert invoke("--home", home, "index", "-q").exit_code == 0
        result = invoke("--home", home, "stats")
        assert result.exit_code == 0, result.output
        out.append(result.stdout)
    assert out[0] == out[1]
    assert out[0].index("\ntfidf ") < out[0].index("\nbm25 ")
