"""The PostgreSQL home: store, query log, format version, corpora apart, transactional builds."""

from __future__ import annotations

import pytest

from busca.crawler.store import Document
from busca.errors import BuscaError
from busca.index.postgres import schema as pg_schema
from busca.index.postgres.home import PostgresHome

pytestmark = pytest.mark.postgres


def test_store_put_get_update_delete_and_documents_in_url_order(pg_home):
    with PostgresHome(pg_home) as store:
        assert store.put(Document("https://x/b", "B", "texto b")) == "added"
        assert store.put(Document("https://x/a", "A", "texto a", source="wp")) == "added"
        assert store.put(Document("https://x/a", "A", "texto a", source="wp")) == "unchanged"
        assert store.put(Document("https://x/a", "A", "texto novo")) == "updated"
        assert store.count() == 2
        assert [d.url for d in store.documents()] == ["https://x/a", "https://x/b"]
        assert store.get("https://x/a").text == "texto novo"
        assert set(store.hashes()) == {"https://x/a", "https://x/b"}
        assert store.delete("https://x/b") and not store.delete("https://x/b")
        assert store.get("https://x/b") is None


def test_text_is_stored_nfc(pg_home):
    with PostgresHome(pg_home) as home:
        home.put(Document("u", "Sa\u0303o", "informac\u0327a\u0303o"))
        assert home.get("u").text == "informação"
        assert home.get("u").title == "São"


def test_settings_round_trip_json(pg_home):
    with PostgresHome(pg_home) as home:
        assert home.get_meta("missing", 7) == 7
        home.set_meta("crawl", {"since": "2026-01-01", "pages": [1, 2]})
        home.set_meta("crawl", {"since": "2026-02-01"})
        assert home.get_meta("crawl") == {"since": "2026-02-01"}


def test_corpora_in_one_database_do_not_mix(pg_home):
    other = pg_home.rsplit("corpus=", 1)[0] + "corpus=" + pg_home.rsplit("=", 1)[1] + "_b"
    with PostgresHome(pg_home) as a, PostgresHome(other) as b:
        a.put(Document("u1", "", "um"))
        b.put(Document("u2", "", "dois"))
        assert [d.url for d in a.documents()] == ["u1"]
        assert [d.url for d in b.documents()] == ["u2"]


def test_query_log_in_time_order(pg_home):
    with PostgresHome(pg_home) as home:
        home.log_query(command="search", query="b", method="bm25", k=3, scores=[1.5],
                       floor=None, answered=True, seconds=0.1, at="2026-01-02T00:00:00+00:00")
        home.log_query(command="search", query="a", method="bm25", k=3, scores=[],
                       floor=0.2, answered=False, seconds=0.1, at="2026-01-01T00:00:00+00:00")
        logged = home.logged_queries()
        assert [q["query"] for q in logged] == ["a", "b"]
        assert logged[1]["scores"] == [1.5] and logged[0]["answered"] is False
        assert [q["query"] for q in home.logged_queries(since="2026-01-02")] == ["b"]


def test_query_log_forgets_the_questions_before_a_time(pg_home):
    with PostgresHome(pg_home) as home:
        assert home.forget_queries("2026-01-02T00:00:00+00:00") == 0  # no corpus yet
        for query, at in (("a", "2026-01-01T23:59:59+00:00"),
                          ("b", "2026-01-02T00:00:00+00:00")):
            home.log_query(command="search", query=query, method="bm25", k=3, scores=[],
                           floor=None, answered=False, seconds=0.1, at=at)
        assert home.forget_queries("2026-01-02T00:00:00+00:00") == 1
        assert [q["query"] for q in home.logged_queries()] == ["b"]


def test_other_format_version_is_refused_in_one_line(pg_home):
    with PostgresHome(pg_home) as home:
        home.set_meta("querylog", True)  # the first write creates the corpus
        home.conn().execute(f"UPDATE {pg_schema.quoted(home.schema)}.busca_meta"
                            " SET value = '99' WHERE key = 'format_version'")
    with pytest.raises(pg_schema.PostgresFormatError, match="format version 99") as e:
        PostgresHome(pg_home)
    assert "\n" not in str(e.value) and isinstance(e.value, BuscaError)


def test_a_corpus_of_format_2_is_read_and_a_build_moves_it_to_3(pg_home):
    """Format 3 marks builds whose pt analyzer accents plain suffixes: a busca reading only 2
    refuses such a corpus (it silently found nothing for "informacao"); this one reads 2."""
    with PostgresHome(pg_home) as home:
        home.set_meta("querylog", True)
        home.conn().execute(f"UPDATE {pg_schema.quoted(home.schema)}.busca_meta"
                            " SET value = '2' WHERE key = 'format_version'")
    with PostgresHome(pg_home) as home:  # read as before
        assert home.get_meta("querylog") is True
        pg_schema.check_format(home.conn(), home.schema)
        pg_schema.set_format(home.conn(), home.schema)
        assert home.conn().execute(f"SELECT value FROM {pg_schema.quoted(home.schema)}"
                                   ".busca_meta WHERE key = 'format_version'").fetchone()[0] == 3


def test_bad_corpus_name_and_unreachable_server_are_one_line_errors(pg_home):
    with pytest.raises(pg_schema.PostgresError, match="bad corpus name"):
        PostgresHome(pg_home.rsplit("corpus=", 1)[0] + "corpus=Bad-Name")
    with pytest.raises(pg_schema.PostgresError, match="cannot connect to") as e:
        PostgresHome("postgresql://nobody:secret@127.0.0.1:1/none")
    assert "secret" not in str(e.value) and "\n" not in str(e.value)


def test_url_parameters(pg_home):
    assert pg_schema.is_postgres("postgres://h/db") and pg_schema.is_postgres(pg_home)
    assert not pg_schema.is_postgres("./.busca")
    conninfo, corpus = pg_schema.parse_location("postgresql://u@h:5/db?corpus=blog&sslmode=off")
    assert (conninfo, corpus) == ("postgresql://u@h:5/db?sslmode=off", "blog")
    with pytest.raises(pg_schema.PostgresError, match="dense=hnsw or dense=exact"):
        PostgresHome(pg_home + "&dense=fast")


def test_the_postgres_backend_has_every_method_of_the_boundary(pg_home):
    """PostgresHome / PostgresBuild / PostgresBuildWriter against index/backend.py's protocols."""
    from busca.index import backend
    from busca.index.text.chunks import ChunkRow
    from busca.index.home.manifest import Manifest

    def members(protocol):
        names = {n for n in dir(protocol) if not n.startswith("_")}
        return names | {"__enter__", "__exit__"} & set(dir(protocol)) | set(
            protocol.__annotations__)

    with PostgresHome(pg_home) as home:
        out = home.new_build()
        out.write_chunks([ChunkRow(0, "u", 0, 0, 5, "h")])
        build = out.publish(Manifest(build=out.name, chunker={"kind": "words"}, documents=1,
                                     chunks=1))
        for protocol, thing in ((backend.Home, home), (backend.BuildWriter, out),
                                (backend.Build, build)):
            missing = {n for n in members(protocol) if not hasattr(thing, n)}
            assert not missing, f"{type(thing).__name__} lacks {missing}"
        assert home.current().chunks() == [ChunkRow(0, "u", 0, 0, 5, "h")]
        assert home.current().manifest.build == out.name


def test_an_aborted_build_leaves_nothing(pg_home):
    from busca.index.text.chunks import ChunkRow

    with PostgresHome(pg_home) as home:
        out = home.new_build()
        out.write_chunks([ChunkRow(0, "u", 0, 0, 5, "h")])
        out.abort()
        tables = {r[0] for r in home.conn().execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (home.schema,))}
        assert not any(t.startswith(out.name) for t in tables)
        with pytest.raises(BuscaError, match='run "busca index" first'):
            home.current()
