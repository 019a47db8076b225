"""GET /healthz of the real `busca serve` (127.0.0.1) when the build it serves lost a file
(a local home) or a table (a PostgreSQL home) after it was loaded: "degraded", the build and
the damaged-build message the next search (or a restarted server) meets, before any search
met it; "ok" again once `busca index` made a new build."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")
requests = pytest.importorskip("requests")

from click.testing import CliRunner  # noqa: E402
from conftest import write_jsonl  # noqa: E402
from serving import Server  # noqa: E402

from busca.cli import cli  # noqa: E402

DOCS = [{"url": "https://h.example/cursos", "title": "Cursos",
         "text": "A universidade oferece cursos de engenharia e de medicina."},
        {"url": "https://h.example/bolsas", "title": "Bolsas",
         "text": "A universidade paga bolsas de pesquisa aos alunos de engenharia."}]
SEARCH = {"q": "universidade engenharia", "method": "bm25"}


def _invoke(home, *args: str):
    return CliRunner().invoke(cli, ["--home", str(home), *args], obj={})


def _indexed(home, tmp_path):
    for args in (["add", str(write_jsonl(tmp_path / "docs.jsonl", DOCS))],
                 ["index", "-q", "--methods", "tfidf,bm25"]):
        done = _invoke(home, *args)
        assert done.exit_code == 0, done.output
    return home


def _health(server) -> dict:
    answer = requests.get(server.url + "healthz", timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _degraded(server, build: str) -> str:
    """The problem /healthz names: the served build's damage, in one line with the fix."""
    health = _health(server)
    assert health["status"] == "degraded" and health["build"] == build, health
    problem = health["problem"]
    assert "is damaged" in problem and 'run "busca index"' in problem, problem
    assert "\n" not in problem
    return problem


def test_a_local_build_that_lost_a_file_is_degraded(tmp_path):
    from busca.index.home.storage import load_index

    home = _indexed(tmp_path / "home", tmp_path)
    build = load_index(home)
    with Server(home, "--no-log", "--quiet") as server:
        assert _health(server)["status"] == "ok"
        (build.path / "bm25.indices.npy").unlink()
        problem = _degraded(server, build.build)
        assert "bm25.indices.npy is missing" in problem
        refused = _invoke(home, "search", SEARCH["q"], "--method", "bm25", "--no-serve")
        # the same message, which names the build's folder whole for the local user only
        local = problem.replace(build.build, str(build.path), 1)
        assert refused.exit_code == 1 and refused.output == f"Error: {local}\n"
        assert _invoke(home, "index", "-q").exit_code == 0
        assert _health(server)["status"] == "ok"


@pytest.mark.postgres
def test_a_postgres_build_that_lost_a_table_is_degraded_before_any_search(pg_home, tmp_path):
    import psycopg

    _indexed(pg_home, tmp_path)
    schema = pg_home.split("corpus=", 1)[1].split("&", 1)[0]
    with Server(pg_home, "--no-log", "--quiet") as server:
        build = _health(server)["build"]
        assert _health(server)["status"] == "ok"
        with psycopg.connect(pg_home.split("?", 1)[0], autocommit=True) as db:
            db.execute(f'DROP TABLE "{schema}"."{build}_bm25_postings"')
        problem = _degraded(server, build)  # no search has met it yet
        assert f"{build}_bm25_postings" in problem
        search = requests.get(server.url + "api/search", params=SEARCH, timeout=60)
        assert search.status_code == 503 and search.json() == {"error": problem,
                                                                 "status": 503}
        assert _invoke(pg_home, "index", "-q").exit_code == 0
        assert _health(server)["status"] == "ok"
