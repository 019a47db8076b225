"""Readers that only read: a PostgreSQL corpus searched by a role with USAGE + SELECT only, and
through a read-only session (`default_transaction_read_only=on`, what a standby enforces).

Real roles and sessions on the embedded server: every read command answers as the owner does,
nothing is written (the query log is skipped, with a note), a mistyped ?corpus= creates
nothing, and a missing privilege is one line naming the GRANT.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests
from click.testing import CliRunner

from busca.cli import cli
from conftest import FIXTURES

pytestmark = pytest.mark.postgres

GOLDEN = str(FIXTURES / "golden" / "golden.json")
QUESTION = "carga horária do estágio"
READ_ONLY = "options=-c%20default_transaction_read_only%3Don"
PASSWORD = "busca-test-pw"


def invoke(*args):
    return CliRunner().invoke(cli, list(args), obj={})


@dataclass(frozen=True)
class Homes:
    owner: str  # the role that created the corpus
    reader: str  # USAGE + SELECT (+ default privileges for the owner's later tables)
    session: str  # the owner, through a read-only session
    nobody: str  # a role with no privilege on the corpus
    schema: str
    admin: str  # the server URL, to look at the catalogs


def _as_role(url: str, role: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{role}:{PASSWORD}@{host}"))


def _with(url: str, param: str) -> str:
    return url + ("&" if "?" in url else "?") + param


@pytest.fixture(scope="module")
def homes(postgres_server_url) -> Homes:
    import psycopg

    tag = uuid.uuid4().hex[:10]
    schema, reader, nobody = f"ro_{tag}", f"reader_{tag}", f"nobody_{tag}"
    owner = _with(postgres_server_url, f"corpus={schema}")
    assert invoke("--home", owner, "add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    assert invoke("--home", owner, "index", "-q").exit_code == 0
    with psycopg.connect(postgres_server_url, autocommit=True) as db:
        for role in (reader, nobody):
            db.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        db.execute(f"GRANT USAGE ON SCHEMA {schema} TO {reader}")
        db.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {reader}")
        db.execute(f"ALTER DEFAULT PRIVILEGES FOR ROLE current_user IN SCHEMA {schema}"
                   f" GRANT SELECT ON TABLES TO {reader}")
    yield Homes(owner, _with(_as_role(postgres_server_url, reader), f"corpus={schema}"),
                _with(owner, READ_ONLY), _with(_as_role(postgres_server_url, nobody),
                                               f"corpus={schema}"), schema, postgres_server_url)
    with psycopg.connect(postgres_server_url, autocommit=True) as db:
        db.execute(f"DROP SCHEMA {schema} CASCADE")
        for role in (reader, nobody):
            db.execute(f"DROP OWNED BY {role}")
            db.execute(f"DROP ROLE {role}")


def _scalar(url: str, sql: str, *args):
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        return db.execute(sql, args).fetchone()[0]


READS = {
    "search tfidf": ["search", QUESTION, "--method", "tfidf", "--no-serve"],
    "search bm25": ["search", QUESTION, "--method", "bm25", "--json", "--no-serve"],
    "context": ["context", QUESTION, "--method", "bm25", "--no-serve"],
    "compare": ["compare", QUESTION, "--json"],
    "stats": ["stats", "--json"],
    "eval": ["eval", GOLDEN, "--methods", "tfidf,bm25"],
}


def _answers(home: str) -> dict[str, str]:
    out = {}
    for name, args in READS.items():
        result = invoke("--home", home, *args)
        assert result.exit_code == 0, (name, result.output)
        assert "Traceback" not in result.output
        out[name] = re.sub(r"(?m)^date .*$", "", result.stdout)  # eval's run date
    return out


@pytest.mark.parametrize("who", ["reader", "session"])
def test_every_read_command_answers_as_the_owner_and_writes_nothing(homes, who):
    home = getattr(homes, who)
    owner = _answers(homes.owner)
    logged = _scalar(homes.admin, f"SELECT count(*) FROM {homes.schema}.queries")
    assert logged > 0  # the owner's search and context were logged
    assert _answers(home) == owner
    assert _scalar(homes.admin, f"SELECT count(*) FROM {homes.schema}.queries") == logged
    searched = invoke("--home", home, *READS["search tfidf"])
    assert "did not log this question" in searched.stderr  # skipped, said, not failed


def test_a_reader_reads_the_next_builds_too_and_serves(homes):
    """With the GRANTs of docs/postgres.md, a rebuild by the owner stays readable; `busca
    serve` and `busca shell` open the corpus with the reader role and answer."""
    from serving import Server

    assert invoke("--home", homes.owner, "index", "-q", "--size", "150").exit_code == 0
    owner = invoke("--home", homes.owner, *READS["search bm25"])
    reader = invoke("--home", homes.reader, *READS["search bm25"])
    assert reader.exit_code == 0 and reader.stdout == owner.stdout
    piped = CliRunner().invoke(cli, ["--home", homes.reader, "shell", "--json", "--method",
                                     "bm25"], input=QUESTION + "\n", obj={})
    assert piped.exit_code == 0, piped.output
    assert [h["chunk_id"] for h in json.loads(piped.stdout)["hits"]] == \
        [json.loads(line)["chunk_id"] for line in owner.stdout.splitlines()]
    with Server(homes.reader, "--quiet") as server:
        health = requests.get(server.url + "healthz", timeout=60)
        found = requests.get(server.url + "api/search", params={"q": QUESTION, "method": "bm25"},
                             timeout=60)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert found.status_code == 200, found.text
    assert [h["chunk_id"] for h in found.json()["hits"]] == \
        [json.loads(line)["chunk_id"] for line in owner.stdout.splitlines()]
    assert "Traceback" not in "".join(server.stderr)


def _one_line_error(result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and result.output.count("\n") == 1, result.output
    return result.output


def test_a_role_without_privileges_is_told_the_grant_in_one_line(homes):
    role = urlsplit(homes.nobody).username
    for args in (READS["search bm25"], READS["stats"], ["add", GOLDEN]):
        message = _one_line_error(invoke("--home", homes.nobody, *args))
        assert f"role {role} may not read the corpus '{homes.schema}'" in message
        assert f'GRANT USAGE ON SCHEMA "{homes.schema}" TO {role}' in message
        assert f'GRANT SELECT ON ALL TABLES IN SCHEMA "{homes.schema}" TO {role}' in message


def test_writes_by_a_reader_are_refused_in_one_line_naming_the_fix(homes, tmp_path):
    note = tmp_path / "nota.md"
    note.write_text("# Nota\n\nTexto.", encoding="utf-8")
    role = urlsplit(homes.reader).username
    for args in (["add", str(note)], ["index", "-q"], ["log", "off"]):
        message = _one_line_error(invoke("--home", homes.reader, *args))
        assert f"role {role} may not change the corpus '{homes.schema}'" in message
        assert f'CREATE SCHEMA "{homes.schema}" AUTHORIZATION {role}' in message
    for args in (["add", str(note)], ["index", "-q"]):
        message = _one_line_error(invoke("--home", homes.session, *args))
        assert "is read-only" in message and "point them at the primary" in message
    assert _scalar(homes.admin, f"SELECT count(*) FROM {homes.schema}.documents") == 39


def test_serve_tells_a_client_the_refusal_and_its_log_the_grant(homes, tmp_path):
    """Before: busca serve and busca mcp --http answered a network client the GRANT statement
    itself (`role nobody_… may not read the corpus 'ro_…' … GRANT USAGE ON SCHEMA "ro_…" TO
    nobody_…; … FOR ROLE <owner> …`), naming the server's role, the corpus's owner and its
    schema; and with -q their log said nothing of it. Now the client reads that the server's
    role may not read (or change) the corpus, and the log names the GRANT. (busca serve
    does not start as a role without privileges: the GRANTs are revoked once it serves.)"""
    import psycopg
    from serving import Server
    from test_mcp_access import mcp_http
    from test_serve_private import _tool_search

    nobody, reader = f"revoked_{uuid.uuid4().hex[:8]}", urlsplit(homes.reader).username
    grants = [f"USAGE ON SCHEMA {homes.schema}", f"SELECT ON ALL TABLES IN SCHEMA {homes.schema}"]
    with psycopg.connect(homes.admin, autocommit=True) as db:
        db.execute(f"CREATE ROLE {nobody} LOGIN PASSWORD '{PASSWORD}'")
        for grant in grants:
            db.execute(f"GRANT {grant} TO {nobody}")
    home = _with(_as_role(homes.admin, nobody), f"corpus={homes.schema}")
    try:
        with Server(home, "--quiet", "--no-log") as server, \
                mcp_http(home, log=tmp_path / "mcp.log") as port:
            with psycopg.connect(homes.admin, autocommit=True) as db:
                for grant in grants:
                    db.execute(f"REVOKE {grant} FROM {nobody}")
            answers = [requests.get(server.url + path, timeout=60) for path in
                       ("api/search?q=prazo&method=bm25", "api/stats", "healthz", "?q=prazo")]
            tool = _tool_search(port)
    finally:
        with psycopg.connect(homes.admin, autocommit=True) as db:
            db.execute(f"DROP OWNED BY {nobody}")
            db.execute(f"DROP ROLE {nobody}")
    with Server(homes.reader, "--quiet", "--no-log", "--token", "t" * 32) as writer:
        posted = requests.post(writer.url + "api/documents", json={"documents": [
            {"url": "https://a.example/n", "title": "Nota", "text": "Texto da nota."}]},
            headers={"Authorization": "Bearer " + "t" * 32}, timeout=60)
    log = tmp_path / "mcp.log"
    assert answers[0].status_code == 503 and posted.status_code == 503, posted.text
    assert "the server's database role may not read this corpus" in answers[0].json()["error"]
    assert "the GRANT the server's log names" in answers[0].json()["error"]
    assert "may not change this corpus" in posted.json()["error"], posted.text
    assert "may not read this corpus" in tool, tool
    for text in [a.text for a in answers] + [posted.text, tool]:
        for secret in (nobody, reader, homes.schema, "GRANT USAGE", "FOR ROLE", "AUTHORIZATION"):
            assert secret not in text, (secret, text)
    served = "".join(server.stderr)
    assert f'GRANT USAGE ON SCHEMA "{homes.schema}" TO {nobody}' in served, served
    assert "503 GET /api/search: role " + nobody in served, served
    assert f'CREATE SCHEMA "{homes.schema}" AUTHORIZATION {reader}' in "".join(writer.stderr)
    assert f"tool search: Error executing tool search: role {nobody} may not read" in \
        log.read_text(encoding="utf-8")
    for text in (served, "".join(writer.stderr), log.read_text(encoding="utf-8")):
        assert PASSWORD not in text and "Traceback" not in text


def test_a_read_command_on_a_missing_corpus_creates_nothing(homes):
    typo = homes.schema + "_typo"
    home = homes.owner.replace(f"corpus={homes.schema}", f"corpus={typo}")
    for args in READS.values():
        message = _one_line_error(invoke("--home", home, *args))
        assert f"no corpus '{typo}'" in message and homes.schema in message  # listed
        assert 'crawl or add documents into it and run "busca index"' in message
    assert _scalar(homes.admin, "SELECT count(*) FROM pg_namespace WHERE nspname = %s",
                   typo) == 0


def test_a_role_set_read_only_searches_without_logging_and_writes_nothing(homes, tmp_path):
    """The read-only transaction on its own: a role with every privilege a writer has (the
    corpus's tables, the query log, CREATE on the schema) but `ALTER ROLE … SET
    default_transaction_read_only = on` — no URL option — answers as the owner, logs nothing
    (said on stderr) and is refused writes in one line."""
    import psycopg

    role = f"rorole_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(homes.admin, autocommit=True) as db:
        db.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        db.execute(f"GRANT USAGE, CREATE ON SCHEMA {homes.schema} TO {role}")
        db.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA {homes.schema} TO {role}")
        db.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA {homes.schema} TO {role}")
        db.execute(f"ALTER ROLE {role} SET default_transaction_read_only = on")
    home = _with(_as_role(homes.admin, role), f"corpus={homes.schema}")
    note = tmp_path / "nota.md"
    note.write_text("# Nota\n\nTexto.", encoding="utf-8")
    try:
        logged = _scalar(homes.admin, f"SELECT count(*) FROM {homes.schema}.queries")
        owner = invoke("--home", homes.owner, *READS["search bm25"])
        logged += 1
        searched = invoke("--home", home, *READS["search bm25"])
        assert searched.exit_code == 0 and searched.stdout == owner.stdout
        assert "did not log this question" in searched.stderr
        assert _scalar(homes.admin, f"SELECT count(*) FROM {homes.schema}.queries") == logged
        for args in (["add", str(note)], ["log", "off"]):
            message = _one_line_error(invoke("--home", home, *args))
            assert "is read-only" in message and "point them at the primary" in message
        assert _scalar(homes.admin, f"SELECT count(*) FROM {homes.schema}.documents") == 39
    finally:
        with psycopg.connect(homes.admin, autocommit=True) as db:
            db.execute(f"DROP OWNED BY {role}")
            db.execute(f"DROP ROLE {role}")


@dataclass(frozen=True)
class OwnSchema:
    home: str  # the role given only its schema, corpus = that schema
    admin: str  # the superuser, in that database


@pytest.fixture
def own_schema(postgres_server_url):
    """A DBA's setup of docs/postgres.md: a fresh database (no pgvector), a role without
    superuser nor CREATE on the database, given `CREATE SCHEMA blog AUTHORIZATION role`."""
    import psycopg

    tag = uuid.uuid4().hex[:10]
    database, role, schema = f"own_{tag}", f"writer_{tag}", f"blog_{tag}"
    with psycopg.connect(postgres_server_url, autocommit=True) as db:
        db.execute(f"CREATE DATABASE {database}")
        db.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
    admin = urlunsplit(urlsplit(postgres_server_url)._replace(path=f"/{database}", query=""))
    try:
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute(f"CREATE SCHEMA {schema} AUTHORIZATION {role}")
            assert not db.execute("SELECT has_database_privilege(%s, current_database(),"
                                  " 'CREATE')", (role,)).fetchone()[0]
            assert not db.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'"
                                  ).fetchone()[0]
        yield OwnSchema(_with(_as_role(admin, role), f"corpus={schema}"), admin)
    finally:
        with psycopg.connect(postgres_server_url, autocommit=True) as db:
            db.execute(f"DROP DATABASE {database} WITH (FORCE)")
            db.execute(f"DROP ROLE {role}")


def _admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(sql)


def test_a_writer_given_only_its_schema_builds_and_is_told_how_to_get_pgvector(
        own_schema, monkeypatch):
    """`add` and a lexical `index` work (before: "may not change the corpus … permission
    denied for database", naming the CREATE SCHEMA already run); a dense build is refused in
    one line naming CREATE EXTENSION vector before anything is encoded (before: after
    encoding every chunk, naming CREATE SCHEMA), and the live build stays."""
    from dense_fakes import register

    home = own_schema.home
    added = invoke("--home", home, "add", str(FIXTURES / "site" / "articles.jsonl"))
    assert added.exit_code == 0, added.output
    assert invoke("--home", home, "index", "-q").exit_code == 0
    before = invoke("--home", home, *READS["search bm25"])
    assert before.exit_code == 0 and before.stdout.strip(), before.output
    encoder = register(monkeypatch)
    message = _one_line_error(invoke("--home", home, "index", "-q", "--dense", "fake"))
    assert "pgvector" in message and "CREATE EXTENSION vector" in message, message
    assert "--dense none" in message and "AUTHORIZATION" not in message, message
    assert encoder.encoded == []  # refused before any work
    assert invoke("--home", home, *READS["search bm25"]).stdout == before.stdout
    _admin(own_schema.admin, "CREATE EXTENSION vector")
    built = invoke("--home", home, "index", "-q", "--dense", "fake")
    assert built.exit_code == 0, built.output


def test_pgvector_in_a_schema_off_the_search_path_is_one_line_naming_the_fix(
        own_schema, monkeypatch):
    """pgvector installed by the DBA in a schema of its own (`CREATE EXTENSION vector SCHEMA
    ext`): a dense build and a dense search say to put it on the search_path (before: a
    traceback, `type "vector" does not exist`, after encoding every chunk); with the URL
    option the message names, both work."""
    from dense_fakes import register

    _admin(own_schema.admin, "CREATE SCHEMA ext; CREATE EXTENSION vector SCHEMA ext;"
                             " GRANT USAGE ON SCHEMA ext TO PUBLIC")
    home = own_schema.home
    assert invoke("--home", home, "add", str(FIXTURES / "site" / "articles.jsonl")
                  ).exit_code == 0
    encoder = register(monkeypatch)
    message = _one_line_error(invoke("--home", home, "index", "-q", "--dense", "fake"))
    assert "not on role" in message and "search_path" in message, message
    assert encoder.encoded == []
    pathed = _with(home, "options=-c%20search_path%3Dpublic,ext")
    assert "options=-c%20search_path%3Dpublic,ext" in message
    built = invoke("--home", pathed, "index", "-q", "--dense", "fake")
    assert built.exit_code == 0, built.output
    dense = ["search", QUESTION, "--method", "dense", "--json", "--no-serve"]
    message = _one_line_error(invoke("--home", home, *dense))
    assert "search_path" in message, message
    found = invoke("--home", pathed, *dense)
    assert found.exit_code == 0 and found.stdout.strip(), found.output
