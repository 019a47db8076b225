"""The filters' masks kept between queries on a PostgreSQL home (search/filters.py
`remembered`, `changes.version` of index/postgres/schema.py): a repeated filtered query
reuses its mask, and any write of the documents — another handle, another process, any
client — changes the answer at once; a corpus made before `changes` gets it at its next
write and is read exactly meanwhile."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import write_jsonl

from busca.cli import cli
from busca.crawler.store import Document
from busca.index import open_home
from busca.index.postgres import schema as pg_schema
from busca.index.postgres.home import PostgresHome
from busca.search import filters as f

pytestmark = pytest.mark.postgres

DOCS = [
    {"url": "https://c.example/a", "title": "A", "text": "ovos e farinha", "groups": "staff"},
    {"url": "https://c.example/b", "title": "B", "text": "farinha de trigo", "groups": "sales"},
    {"url": "https://c.example/c", "title": "C", "text": "açúcar e farinha"},
]
STAFF, SALES = f.visible_to("staff"), f.visible_to("sales")
A, B, C = (d["url"] for d in DOCS)


@pytest.fixture
def indexed(pg_home, tmp_path):
    source = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    for args in (["add", str(source)], ["index", "-q", "--methods", "tfidf,bm25"]):
        result = CliRunner().invoke(cli, ["--home", pg_home, *args], obj={})
        assert result.exit_code == 0, result.output
    return pg_home


def urls(index, store, *filters) -> set[str]:
    mask = f.allowed(index, store, filters)
    assert np.array_equal(mask, f._allowed(index, store, filters))  # as computed afresh
    return {r.url for r in index.chunks(np.flatnonzero(mask))}


def test_a_repeated_query_reuses_its_mask_and_every_write_changes_the_answer(indexed, tmp_path):
    with open_home(indexed) as store, PostgresHome(indexed) as other:
        index = store.current()
        assert store.version() is not None
        first = f.allowed(index, store, (STAFF,))
        assert f.allowed(index, store, (STAFF,)) is first  # kept: no record read again
        assert urls(index, store, STAFF) == {A, C} and urls(index, store, SALES) == {B, C}
        other.put(Document(A, "A", "ovos e farinha", meta={"groups": "sales"}))
        assert urls(index, store, STAFF) == {C} and urls(index, store, SALES) == {A, B, C}
        other.delete(C)
        assert urls(index, store, STAFF) == set() and urls(index, store, SALES) == {A, B}
        other.conn().execute(f"UPDATE {pg_schema.quoted(other.schema, 'documents')} SET meta ="
                             """ '{"groups": "staff"}'::jsonb WHERE url = %s""", (B,))
        assert urls(index, store, STAFF) == {B} and urls(index, store, SALES) == {A}
        changed = write_jsonl(tmp_path / "changed.jsonl", [{**DOCS[2], "groups": "staff"}])
        done = subprocess.run([sys.executable, "-m", "busca.cli", "--home", indexed, "add",
                               str(changed)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert urls(index, store, STAFF) == {B, C} and urls(index, store, SALES) == {A}


def test_a_corpus_made_before_changes_is_read_each_time_until_its_next_write(indexed):
    with open_home(indexed) as home:
        s = pg_schema.quoted(home.schema)
        home.conn().execute(f"DROP TRIGGER busca_documents_changed ON {s}.documents;"
                            f" DROP FUNCTION {s}.busca_documents_changed(); DROP TABLE {s}.changes")
    with PostgresHome(indexed) as older, PostgresHome(indexed) as writer:
        index = older.current()
        assert older.version() is None
        assert urls(index, older, STAFF) == {A, C}
        assert f.allowed(index, older, (STAFF,)) is not f.allowed(index, older, (STAFF,))
        writer.put(Document(C, "C", "açúcar e farinha", meta={"groups": "sales"}))
        assert pg_schema.has_changes(writer.conn(), writer.schema)
        version = older.version()
        assert version is not None and urls(index, older, STAFF) == {A}
        writer.put(Document(A, "A", "ovos e farinha", meta={"groups": "sales"}))
        assert older.version() != version and urls(index, older, STAFF) == set()


def test_roles_granted_before_changes_existed_still_read_and_write(indexed, postgres_server_url):
    """A reader granted the corpus's tables before `changes` existed reads the documents each
    time (no permission error); a writer that owns neither `documents` nor `changes` still
    writes, and its writes change the version (the trigger runs as its owner)."""
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    with open_home(indexed) as home:
        schema = home.schema
        s = pg_schema.quoted(schema)
        home.conn().execute(f"DROP TRIGGER busca_documents_changed ON {s}.documents;"
                            f" DROP FUNCTION {s}.busca_documents_changed(); DROP TABLE {s}.changes")
    tag = uuid.uuid4().hex[:8]
    reader, writer = f"r_{tag}", f"w_{tag}"
    with psycopg.connect(postgres_server_url, autocommit=True) as db:
        for role in (reader, writer):
            db.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
            db.execute(f"GRANT USAGE ON SCHEMA {s} TO {role}")
        db.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {s} TO {reader}")
        db.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {writer}")
    with open_home(indexed) as owner:  # the owner's next write upgrades the corpus
        owner.put(Document(C, "C", "açúcar e farinha", meta={"groups": "sales"}))
        assert pg_schema.has_changes(owner.conn(), schema)

    def as_role(role):
        parts = urlsplit(indexed)
        host = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit(parts._replace(netloc=f"{role}:pw@{host}"))

    try:
        with PostgresHome(as_role(reader)) as store, PostgresHome(as_role(writer)) as other:
            index = store.current()
            assert store.version() is None and urls(index, store, SALES) == {B, C}
            before = PostgresHome(indexed).version()
            other.put(Document(A, "A", "ovos e farinha", meta={"groups": "sales"}))
            assert PostgresHome(indexed).version() != before
            assert urls(index, store, SALES) == {A, B, C}
    finally:
        with psycopg.connect(postgres_server_url, autocommit=True) as db:
            for role in (reader, writer):
                db.execute(f"DROP OWNED BY {role}")
                db.execute(f"DROP ROLE {role}")


def test_a_renamed_corpus_is_still_written_and_its_version_still_drawn(indexed, tmp_path):
    """A corpus renamed by hand (ALTER SCHEMA … RENAME TO, e.g. to keep it beside a fresh
    crawl) keeps working under its new ?corpus= name: its trigger names no schema (it wrote
    the old name's `changes`: every add and remove failed, 'relation "<old>.changes" does
    not exist')."""
    import uuid

    renamed = f"t_{uuid.uuid4().hex[:12]}"
    with open_home(indexed) as home:
        home.conn().execute(f"ALTER SCHEMA {pg_schema.quoted(home.schema)} RENAME TO {renamed}")
    home_url = indexed.rsplit("corpus=", 1)[0] + f"corpus={renamed}"
    changed = write_jsonl(tmp_path / "changed.jsonl", [{**DOCS[2], "groups": "staff"}])
    with open_home(home_url) as store:
        index = store.current()
        before = store.version()
        assert before is not None and urls(index, store, STAFF) == {A, C}
        for args in (["add", str(changed)], ["remove", A]):
            result = CliRunner().invoke(cli, ["--home", home_url, *args], obj={})
            assert result.exit_code == 0, result.output
            assert store.version() != before
            before = store.version()
        assert urls(index, store, STAFF) == {C} and urls(index, store, SALES) == {B}
