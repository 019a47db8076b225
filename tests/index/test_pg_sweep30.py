"""The 30th session's hostile sweep of PostgreSQL homes, on the embedded server.

A `read=` home writes while its standby is away and `stats` reads where `search` reads; a NUL
in a question is logged; ef_search and k stay in pgvector's range; no password reaches a
message; a URL without a host part connects; long dense model names get tables of their own;
the URL's connect_timeout holds; bad options, reserved corpus names and builds changed by
hand are one line naming the fix, never a traceback nor fewer hits.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from urllib.parse import quote, urlsplit

import pytest
from click.testing import CliRunner

from busca.cli import cli
from conftest import FIXTURES

pytestmark = pytest.mark.postgres

ARTICLES = str(FIXTURES / "site" / "articles.jsonl")
QUESTION = "carga horária do estágio"
SEARCH = ["search", QUESTION, "--method", "bm25", "--json", "--no-serve", "-k", "5"]


def invoke(*args):
    return CliRunner().invoke(cli, list(args), obj={})


def _ok(*args) -> str:
    done = invoke(*args)
    assert done.exit_code == 0, done.output
    assert "Traceback" not in done.output
    return done.stdout


def _one_line(result, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and result.output.count("\n") == 1, result.output
    return result.output


def _indexed(home: str, *index_args: str) -> str:
    _ok("--home", home, "add", ARTICLES)
    _ok("--home", home, "index", "-q", *index_args)
    return home


def _server(home: str) -> str:
    """The database URL of a home (without busca's parameters)."""
    return home.split("?", 1)[0]


def _schema(home: str) -> str:
    return home.split("corpus=", 1)[1].split("&", 1)[0]


def _sql(home: str, sql: str, *args):
    import psycopg

    with psycopg.connect(_server(home), autocommit=True) as db:
        cur = db.execute(sql, args)
        return cur.fetchall() if cur.description else None


def _live(home: str) -> str:
    return _sql(home, f'SELECT value FROM "{_schema(home)}".busca_meta WHERE key = \'live\'')[0][0]


def _dead_url() -> str:
    """A PostgreSQL URL on a port where nothing listens: a server that is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"postgresql://postgres@127.0.0.1:{port}/busca_test"


# --- 1. a read= home and its standby --------------------------------------------------------
def test_a_routed_home_writes_on_the_primary_while_its_standby_is_down(pg_home, tmp_path):
    from busca.fixtures.server import FixtureSite, load_articles

    routed = f"{pg_home}&read={quote(_dead_url(), safe='')}&read_wait=1"
    _ok("--home", routed, "add", ARTICLES)
    note = tmp_path / "nota.md"  # not JSON lines: add reads the stored hashes first
    note.write_text("# Ornitorrinco\n\nO ornitorrinco bota ovos.", encoding="utf-8")
    _ok("--home", routed, "add", str(note))
    with FixtureSite(load_articles()[:3]) as site:
        for _ in range(2):  # the second crawl reads what the first stored
            _ok("--home", routed, "crawl", site.url, "--rate", "500")
    _ok("--home", routed, "index", "-q")
    assert json.loads(_ok("--home", pg_home, "stats", "--json"))["documents"] == 43
    # (stats and search from the standby while the primary is down: test_pg_replica.py)


def test_an_index_through_a_routed_home_whose_standby_is_down_knows_the_previous_build(
        pg_home):
    """The notes of `busca index` come from the build it starts from, the primary's: it said
    "the previous index could not be read (cannot connect to <standby>): this build took the
    defaults" while it kept the previous windows, and left out the floors it dropped."""
    _indexed(pg_home, "--size", "120", "--overlap", "20")
    _ok("--home", pg_home, "eval", str(FIXTURES / "golden" / "golden.json"), "--calibrate", "-q")
    routed = f"{pg_home}&read={quote(_dead_url(), safe='')}&read_wait=1"
    changed = invoke("--home", routed, "index", "--size", "100")
    assert changed.exit_code == 0, changed.output
    assert "could not be read" not in changed.stderr, changed.stderr
    assert "dropped the calibrated floors of tfidf, bm25" in changed.stderr, changed.stderr
    kept = invoke("--home", routed, "index")
    assert kept.exit_code == 0 and "could not be read" not in kept.stderr, kept.stderr
    assert "kept the previous build's windows: 100 words, overlap 20" in kept.stderr


# --- 2. NUL -------------------------------------------------------------------------------------
def test_a_nul_in_a_question_is_logged_not_a_crash(pg_home):
    from starlette.testclient import TestClient

    from busca.serve.app import create_app
    from busca.serve.engine import Engine

    _indexed(pg_home)
    shown = _ok("--home", pg_home, "search", "estágio\0", "--method", "bm25", "-k", "3")
    assert "estágio" in shown.lower()
    client = TestClient(create_app(Engine(pg_home, log_queries=True)),
                        base_url="http://127.0.0.1")
    answer = client.get("/api/search", params={"q": "carga\0horária", "method": "bm25"})
    assert answer.status_code == 200, answer.text
    logged = [r[0] for r in _sql(pg_home, f'SELECT query FROM "{_schema(pg_home)}".queries'
                                          " ORDER BY id")]
    assert logged == ["estágio\ufffd", "carga\ufffdhorária"]


# --- 3. ef_search and k ---------------------------------------------------------------------
def test_ef_search_above_pgvectors_range_is_refused_in_one_line(pg_home):
    message = _one_line(invoke("--home", pg_home + "&ef_search=1001", "stats"))
    assert "ef_search=1001 in the home URL: at most 1000" in message


def test_dense_answers_every_question_whatever_k_and_ef_search(pg_home, fake):
    """k above 1000 scans exactly (HNSW gives at most 1000 candidates); ef_search 1000 with
    k 10 stays within pgvector's range: the second question too, on the same ranker."""
    from busca.index import open_home

    _indexed(pg_home, "--dense", "fake")
    with open_home(pg_home + "&ef_search=1000") as home:
        build = home.current()
        chunks = int(build.manifest.chunks)
        ranker = build.ranker("dense")
        for _ in range(2):
            assert ranker.top(QUESTION, 10)[0].size == 10
            ids, scores = ranker.top(QUESTION, 1500)
            assert ids.size == chunks
    with open_home(pg_home + "&dense=exact") as home:
        exact_ids, exact_scores = home.current().ranker("dense").top(QUESTION, 1500)
    assert ids.tolist() == exact_ids.tolist()
    assert scores == pytest.approx(exact_scores, abs=1e-6)


# --- 4. passwords ---------------------------------------------------------------------------
def test_an_applications_schema_is_refused_and_left_as_it_was(pg_home, tmp_path):
    """?corpus= naming a schema of another application: one line, nothing written (busca
    added a meta column and an index to its `documents`, then failed with a traceback on
    every command)."""
    import psycopg

    base, schema = pg_home.split("?corpus=")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'CREATE TABLE "{schema}".documents (id serial primary key, body text)')
        conn.execute(f"INSERT INTO \"{schema}\".documents (body) VALUES ('precious')")
        before = conn.execute("SELECT column_name FROM information_schema.columns WHERE"
                              " table_schema = %s ORDER BY 1", (schema,)).fetchall()
    for args in (["add", ARTICLES], ["index"], ["stats"]):
        done = invoke("--home", pg_home, *args)
        assert done.exit_code == 1 and "Traceback" not in done.output, done.output
        assert any(words in done.stderr for words in (
            "already holds tables that are not a busca corpus (documents); busca keeps",
            "no corpus", "nothing to index")), done.stderr
    with psycopg.connect(base, autocommit=True) as conn:
        after = conn.execute("SELECT column_name FROM information_schema.columns WHERE"
                             " table_schema = %s ORDER BY 1", (schema,)).fetchall()
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = %s",
                              (schema,)).fetchone()[0]
        assert conn.execute(f'SELECT body FROM "{schema}".documents').fetchall() == [
            ("precious",)]
    assert after == before and tables == 1


def test_redact_hides_every_password_of_a_url():
    from busca.index.postgres.schema import redact

    inner = "postgresql://reader:inner%21pw@standby:5433/rag?password=alsoinner"
    url = (f"postgresql://writer:outerpw@primary/rag?corpus=blog&password=querypw"
           f"&read={quote(inner, safe='')}&sslmode=require")
    shown = redact(url)
    for secret in ("outerpw", "querypw", "inner%21pw", "inner%2521pw", "alsoinner"):
        assert secret not in shown
    assert shown.startswith("postgresql://writer:***@primary/rag?corpus=blog&password=***")
    assert shown.endswith("&sslmode=require")
    assert redact("postgresql://u@h/db?corpus=a") == "postgresql://u@h/db?corpus=a"
    assert "pw" not in redact("postgresql://u:pw@[::1/db?password=pw")  # malformed too
    for path in ("zz", "/work/h/.busca", "rel/home"):  # a local home ("1 documents in ://zz")
        assert redact(path) == path


def test_no_message_shows_a_password(pg_home, postgres_server_url):
    secret = "s3cret-word"
    home = f"{pg_home}&password={secret}"  # trust authentication: libpq sends it unused
    assert secret not in _ok("--home", home, "add", ARTICLES)
    missing = home.replace("corpus=", "corpus=nope")
    assert secret not in _one_line(invoke("--home", missing, "stats"))
    dead = f"{_dead_url()}?corpus=c&password={secret}"
    assert secret not in _one_line(invoke("--home", dead, "stats"))
    reader = f"postgresql://someone:{secret}@127.0.0.1:{urlsplit(_dead_url()).port}/x"
    routed = f"{pg_home}&read={quote(reader, safe='')}"
    message = _one_line(invoke("--home", routed, "stats"))
    assert "cannot connect" in message and secret not in message


# --- 5. a URL without a host part ---------------------------------------------------------
def test_a_url_without_a_host_part_connects(pg_home):
    parts = urlsplit(pg_home)
    hostless = (f"postgresql://{parts.path}?host={parts.hostname}&port={parts.port}"
                f"&user={parts.username}&{parts.query}")
    assert hostless.startswith("postgresql:///")
    _ok("--home", hostless, "add", ARTICLES)
    assert json.loads(_ok("--home", hostless, "stats", "--json"))["documents"] == 39


# --- 6. long dense model names ------------------------------------------------------------
LONG = "a-dense-model-with-a-name-long-enough-to-pass-postgresql-identifiers"


def test_long_dense_model_names_get_tables_of_their_own(pg_home, fake):
    _indexed(pg_home, "--dense", f"fake,{LONG}-one=fake,{LONG}-two=fake")
    tables = [r[0] for r in _sql(pg_home, "SELECT tablename FROM pg_tables WHERE schemaname"
                                          " = %s", _schema(pg_home))]
    assert len([t for t in tables if "a-dense-model" in t]) == 2
    assert max(len(t.encode()) for t in tables) <= 63
    for name in ("one", "two"):
        shown = _ok("--home", pg_home, "search", QUESTION, "--method", f"dense:{LONG}-{name}",
                    "--json", "--no-serve", "-k", "3")
        assert len(shown.splitlines()) == 3
    parted = pg_home.replace("corpus=", "corpus=p") + "&partitions=2"
    _indexed(parted, "--dense", f"fake,{LONG}-one=fake")
    assert len(_ok("--home", parted, "search", QUESTION, "--method", f"dense:{LONG}-one",
                   "--json", "--no-serve", "-k", "3").splitlines()) == 3


def test_a_build_whose_long_table_name_postgresql_cut_reads_unchanged(pg_home, fake):
    """A build made before names were shortened: its table has the name PostgreSQL cut."""
    from busca.index.postgres.schema import short_name

    _indexed(pg_home, "--dense", f"fake,{LONG}=fake")
    name = f"{_live(pg_home)}_dense.{LONG}"
    schema = _schema(pg_home)
    _sql(pg_home, f'ALTER TABLE "{schema}"."{short_name(name)}" RENAME TO "{name[:63]}"')
    shown = _ok("--home", pg_home, "search", QUESTION, "--method", f"dense:{LONG}", "--json",
                "--no-serve", "-k", "3")
    assert len(shown.splitlines()) == 3


# --- 7. connect_timeout ---------------------------------------------------------------------
def test_the_urls_connect_timeout_is_honoured(pg_home):
    """A server that accepts the connection and never answers: the URL's 1 s, not 10 s."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        home = f"postgresql://postgres@127.0.0.1:{port}/x?corpus=c&connect_timeout=1"
        started = time.monotonic()
        message = _one_line(invoke("--home", home, "stats"))
        assert time.monotonic() - started < 6
    assert "cannot connect" in message


# --- 8. bad URLs and options --------------------------------------------------------------
@pytest.mark.parametrize("option, expected", [
    ("answer_wait=²", "answer_wait=² in the home URL: use a whole number"),
    ("partitions=²", "partitions=² in the home URL: use a whole number"),
    ("read_wait=%C2%B2", "read_wait=² in the home URL: use a whole number"),
    ("cache_mb=²", "cache_mb=² in the home URL: use a whole number, e.g. cache_mb=256"),
    ("answer_wait=-1", "answer_wait=-1 in the home URL must not be negative"),
    ("corpus=pg_blog", "bad corpus name 'pg_blog'"),
    ("corpus=information_schema", "bad corpus name 'information_schema'"),
    ("corpus=1blog", "bad corpus name '1blog' in the home URL: use lowercase letters, digits"
                     " and _, starting with a letter or _"),
    ("corpus=t_other&corpus=t_more", "?corpus= is given twice in the home URL"),
])
def test_bad_options_and_reserved_corpus_names_are_one_line(pg_home, option, expected):
    if option.startswith("corpus="):  # instead of the home's own (given twice otherwise)
        home = re.sub(r"corpus=t_[0-9a-f]+", option, pg_home)
    else:
        home = f"{pg_home}&{option}"
    for args in (["stats"], ["add", ARTICLES]):
        assert expected in _one_line(invoke("--home", home, *args))


def test_a_malformed_url_is_one_line_without_its_password():
    message = _one_line(invoke("--home", "postgresql://postgres:x9pw@[::1/busca?corpus=c1",
                               "stats"))
    assert "malformed PostgreSQL URL (Invalid IPv6 URL)" in message and "x9pw" not in message


@pytest.mark.parametrize("password", ["kx9@wq7", "kx9/wq7", "kx9?wq7", "kx9#wq7", "kx9%wq7",
                                      "kx9@wq7:zz8/vv6%"])
def test_a_password_left_unencoded_is_refused_without_showing_it(pg_home, password):
    """A password with @ / ? # % written as it is: libpq would cut the URL elsewhere (part of
    the password taken for a host or a database) and busca printed it (before: `cannot
    connect to postgresql://postgres:kx9/wq7@127.0.0.1…`); written percent-encoded, it works."""
    from busca.index.postgres.schema import redact

    parts = urlsplit(pg_home)
    raw = pg_home.replace(f"//{parts.netloc}/",
                          f"//{parts.username}:{password}@{parts.hostname}:{parts.port}/")
    for args in (["stats"], ["add", ARTICLES]):
        message = _one_line(invoke("--home", raw, *args))
        assert "must be percent-encoded" in message, message
        for piece in ("kx9", "wq7", "zz8", "vv6"):
            assert piece not in message and piece not in redact(raw), message
    encoded = raw.replace(password, quote(password, safe=""))
    assert "documents in" in _ok("--home", encoded, "add", ARTICLES)  # trust: sent, unused


# --- 8-11. builds changed by hand ------------------------------------------------------------
def _damaged(home: str, args=SEARCH) -> str:
    message = _one_line(invoke("--home", home, *args))
    assert "is damaged" in message and 'run "busca index"' in message, message
    return message


def test_a_live_pointer_that_is_not_a_build_name_is_damaged_and_index_repairs_it(pg_home):
    _indexed(pg_home)
    _sql(pg_home, f"UPDATE \"{_schema(pg_home)}\".busca_meta SET value = '42' WHERE key = 'live'")
    _damaged(pg_home)
    _ok("--home", pg_home, "index", "-q")
    _ok("--home", pg_home, *SEARCH)


def test_a_posting_column_of_another_type_is_damaged(pg_home):
    _indexed(pg_home)
    table = f'"{_schema(pg_home)}"."{_live(pg_home)}_bm25_postings"'
    _sql(pg_home, f"ALTER TABLE {table} ALTER COLUMN ids TYPE text USING encode(ids, 'hex')")
    _damaged(pg_home + "&cache_mb=0")
    _ok("--home", pg_home, "index", "-q")
    _ok("--home", pg_home + "&cache_mb=0", *SEARCH)


def test_a_table_dropped_from_the_live_build_is_damaged_and_healthz_says_so(pg_home):
    from starlette.testclient import TestClient

    from busca.serve.app import create_app
    from busca.serve.engine import Engine

    _indexed(pg_home)
    client = TestClient(create_app(Engine(pg_home, log_queries=False)),
                        base_url="http://127.0.0.1")
    assert client.get("/healthz").json()["status"] == "ok"
    _sql(pg_home, f'DROP TABLE "{_schema(pg_home)}"."{_live(pg_home)}_bm25_postings"')
    message = _damaged(pg_home + "&cache_mb=0")
    assert "replaced while reading" not in message
    answer = client.get("/api/search", params={"q": QUESTION, "method": "bm25"})
    assert answer.status_code == 503 and "is damaged" in answer.json()["error"]
    health = client.get("/healthz").json()
    assert health["status"] == "degraded" and "is damaged" in health["problem"]
    _ok("--home", pg_home, "index", "-q")
    _ok("--home", pg_home, *SEARCH)
    assert client.get("/healthz").json()["status"] == "ok"


def test_chunk_rows_deleted_by_hand_are_damage_not_fewer_hits(pg_home):
    _indexed(pg_home)
    hits = [json.loads(line)["chunk_id"] for line in _ok("--home", pg_home, *SEARCH).splitlines()]
    _sql(pg_home, f'DELETE FROM "{_schema(pg_home)}"."{_live(pg_home)}_chunks" WHERE id = %s',
         hits[1])
    _damaged(pg_home)


def test_a_missing_format_version_is_named(pg_home):
    _indexed(pg_home)
    _sql(pg_home, f"DELETE FROM \"{_schema(pg_home)}\".busca_meta WHERE key = 'format_version'")
    message = _one_line(invoke("--home", pg_home, "stats"))
    assert "has no format version" in message and "None" not in message
    assert "INSERT INTO" in message


# --- 12. the fixture's command line -------------------------------------------------------
def test_the_fixture_server_command_has_help():
    done = subprocess.run([sys.executable, "-m", "busca.fixtures.postgres", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--standby" in done.stdout
