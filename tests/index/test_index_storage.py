"""The local home (index/home/storage.py): builds are invisible until published, one live build,
the manifest as a typed record, format 1 refused with the rebuild hint, the query log table."""

import json
import sqlite3

import numpy as np
import pytest

from busca.crawler.store import Document
from busca.errors import BuscaError
from busca.index import Manifest, open_home
from busca.index.build import build_index
from busca.index.text.chunks import ChunkRow
from busca.index.home.storage import (IndexFormatError, IndexNotFound, LocalHome, current_dir,
                                 load_index)


def manifest(build="b", **changes):
    fields = {"build": build, "chunker": {"kind": "words", "size": 2, "overlap": 0},
              "documents": 1, "chunks": 2, "methods": {"m": {"floor": None}}, "words": 4}
    return Manifest(**{**fields, **changes})


def write_build(home, values=(1.0, 2.0)):
    out = home.new_build()
    out.save_array("m", "values", np.array(values))
    out.write_terms("m", ["gato", "rato"])
    out.write_chunks([ChunkRow(0, "u", 0, 0, 3), ChunkRow(1, "u", 1, 4, 9)])
    return out


def test_a_build_is_invisible_until_published(tmp_path):
    home = LocalHome(tmp_path)
    out = write_build(home)
    with pytest.raises(IndexNotFound, match="busca index"):
        home.current()
    assert home.previous() is None
    index = out.publish(manifest())
    live = home.current()
    assert live.build == out.name == index.build
    assert live.manifest.build == out.name and live.manifest.chunks == 2
    assert live.array("m", "values").tolist() == [1.0, 2.0]
    assert isinstance(live.array("m", "values"), np.memmap)
    assert live.terms("m") == ["gato", "rato"]
    assert [r.end for r in live.chunks([1, 0])] == [9, 3]


def test_publishing_swaps_the_live_build_and_removes_the_old_one(tmp_path):
    home = LocalHome(tmp_path)
    first = write_build(home)
    first.publish(manifest())
    second = write_build(home, values=(3.0, 4.0))
    assert home.current().build == first.name  # the new build is still unpublished
    second.publish(manifest())
    assert home.current().array("m", "values").tolist() == [3.0, 4.0]
    assert [p.name for p in tmp_path.glob("index-*")] == [second.name]


def test_an_aborted_build_leaves_the_live_one(tmp_path):
    home = LocalHome(tmp_path)
    write_build(home).publish(manifest())
    live = home.current().build
    out = write_build(home)
    out.abort()
    assert not out.path.exists() and home.current().build == live


def test_manifest_is_a_frozen_record_with_a_json_form(tmp_path):
    m = manifest()
    with pytest.raises(AttributeError):
        m.chunks = 3
    assert Manifest.from_json(json.loads(json.dumps(m.to_json()))) == m
    assert m["chunks"] == m.chunks == 2 and m.get("missing", 7) == 7
    assert m.floor("m") is None and m.with_floors({"m": 0.5}).floor("m") == 0.5
    assert m.floor("m") is None  # with_floors made a new record
    assert m.figures()["vocabulary"] == {} and m.figures()["chunks"] == 2


def test_floors_are_stored_in_the_live_manifest(tmp_path):
    home = LocalHome(tmp_path)
    write_build(home).publish(manifest())
    home.set_floors({"m": 0.25})
    assert load_index(tmp_path).manifest.floor("m") == 0.25


def test_a_home_of_a_newer_busca_says_so_and_to_upgrade_before_rebuilding(tmp_path):
    """A build made by a newer busca (a user pinned back): the hint named only "busca
    index", which deletes that build (its dense vectors, floors and models) to make this
    version's; it says a newer busca made it and to upgrade, or rebuild."""
    from busca.index.home.manifest import FORMAT_VERSION, READS

    home = LocalHome(tmp_path)
    home.put(Document("u", "T", "o gato subiu no telhado"))
    build_index(home)
    path = current_dir(tmp_path)
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    newer = max(READS) + 1
    manifest["format_version"] = newer
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(IndexFormatError) as e:
        load_index(tmp_path)
    message = str(e.value)
    assert "\n" not in message and f"format version {newer}" in message
    assert "newer busca" in message and "pip install -U busca" in message
    assert 'rebuild it with "busca index"' in message and str(FORMAT_VERSION) in message


def test_format_1_home_is_refused_then_rebuilt_keeping_documents(tmp_path):
    """A home of format 1 (chunk rows in busca.db): one-line rebuild hint, documents kept."""
    home = LocalHome(tmp_path)
    home.put(Document("u", "T", "o gato subiu no telhado"))
    home.db.execute("CREATE TABLE chunks (build TEXT, id INTEGER, url TEXT)")
    old = tmp_path / "index-old"
    old.mkdir()
    (old / "manifest.json").write_text(json.dumps({"format_version": 1, "build": "index-old"}))
    (tmp_path / "CURRENT").write_text("index-old\n")
    with pytest.raises(IndexFormatError, match='format version 1.*rebuild it with "busca index"'):
        load_index(tmp_path)
    build_index(home)
    assert home.count() == 1 and load_index(tmp_path).manifest.documents == 1
    tables = {r[0] for r in home.db.execute("SELECT name FROM sqlite_master")}
    assert "chunks" not in tables and "documents" in tables
    assert current_dir(tmp_path).name != "index-old" and not old.exists()


def test_damaged_manifest_names_the_fix(tmp_path):
    home = LocalHome(tmp_path)
    out = write_build(home)
    out.publish(manifest())
    (out.path / "manifest.json").write_text("{not json")
    with pytest.raises(IndexFormatError, match="damaged.*busca index"):
        home.current()


@pytest.mark.parametrize("spoil", [
    lambda pointer: (pointer.unlink(), pointer.mkdir()),  # a folder where the file goes
    lambda pointer: pointer.write_bytes(b"index-\xff\xfe\n")])  # not UTF-8
def test_an_unreadable_index_pointer_names_the_fix(tmp_path, spoil):
    """CURRENT that cannot be read is one line naming it and the fix, for every caller (a
    long-lived Corpus too); it was a raw IsADirectoryError or UnicodeDecodeError (and
    "Too many open files" a raw OSError, out of a Corpus catching BuscaError)."""
    home = LocalHome(tmp_path)
    write_build(home).publish(manifest())
    spoil(tmp_path / "CURRENT")
    with pytest.raises(IndexFormatError, match=r"CURRENT.*cannot be read.*busca index"):
        home.current()
    import busca
    with busca.open(tmp_path) as corpus, pytest.raises(BuscaError, match="CURRENT"):
        corpus.search("gato", method="bm25", log=False)


def test_query_log_lives_in_its_own_table(tmp_path):
    with LocalHome(tmp_path) as home:
        home.log_query(command="search", query="gato", method="bm25", k=3, scores=[0.5],
                       floor=None, answered=True, seconds=0.01, at="2026-01-01T00:00:00+00:00")
        [row] = home.logged_queries()
        assert (row["query"], row["scores"], row["answered"]) == ("gato", [0.5], True)
    db = sqlite3.connect(tmp_path / "busca.db")
    assert db.execute("SELECT COUNT(*) FROM queries").fetchone() == (1,)


def test_open_home_picks_the_backend(tmp_path):
    with open_home(tmp_path / "h") as home:
        assert isinstance(home, LocalHome) and (tmp_path / "h" / "busca.db").exists()
    # a postgresql:// URL goes to index/postgres/home.py (port 1 on this machine refuses at once)
    pytest.importorskip("psycopg")
    with pytest.raises(BuscaError, match="cannot connect to") as e:
        open_home("postgresql://busca:secret@127.0.0.1:1/corpus")
    assert "secret" not in str(e.value) and "\n" not in str(e.value)


def test_a_block_that_fails_on_a_home_it_created_and_left_empty_leaves_no_home(tmp_path):
    """A first crawl or add that fails before storing anything leaves no busca.db (nor the
    folders its open made), as a PostgreSQL corpus is made by its first write; a home that
    holds anything, or was there before, is kept."""
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "notes.txt").write_text("mine", encoding="utf-8")
    for where in (tmp_path / "a" / "b", tmp_path / "keep"):
        with pytest.raises(BuscaError), LocalHome(where):
            raise BuscaError("the site is down")
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "keep" / "busca.db").exists()
    assert (tmp_path / "keep" / "notes.txt").read_text(encoding="utf-8") == "mine"
    with pytest.raises(BuscaError), LocalHome(tmp_path / "c") as home:
        home.set_meta("querylog", False)
        raise BuscaError("after a write")
    with LocalHome(tmp_path / "d"):
        pass  # no error: opening still creates the home
    with pytest.raises(BuscaError), LocalHome(tmp_path / "d"):
        raise BuscaError("on a home that was there")
    assert (tmp_path / "c" / "busca.db").is_file() and (tmp_path / "d" / "busca.db").is_file()


def test_a_home_under_tilde_is_in_the_users_folder(tmp_path, monkeypatch):
    """busca.open("~/notes") (or BUSCA_HOME="~/notes" from an MCP client's config, which no
    shell expands) made a folder named "~" in the working folder."""
    import busca

    (tmp_path / "user").mkdir()
    (tmp_path / "work").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.chdir(tmp_path / "work")
    with open_home("~/notes") as home:
        assert isinstance(home, LocalHome)
    with busca.open("~/notes") as corpus:
        assert corpus.location == str(tmp_path / "user" / "notes")
    assert (tmp_path / "user" / "notes" / "busca.db").exists()
    assert not (tmp_path / "work" / "~").exists()


def test_the_local_backend_has_every_method_of_the_boundary(tmp_path):
    """LocalHome / Index / LocalBuildWriter against the protocols of index/backend.py."""
    from busca.index import backend

    def members(protocol):
        names = {n for n in dir(protocol) if not n.startswith("_")}
        return names | {"__enter__", "__exit__"} & set(dir(protocol)) | set(
            protocol.__annotations__)

    home = LocalHome(tmp_path)
    out = write_build(home)
    index = out.publish(manifest())
    for protocol, thing in ((backend.Home, home), (backend.BuildWriter, out),
                            (backend.Build, index)):
        missing = {n for n in members(protocol) if not hasattr(thing, n)}
        assert not missing, f"{type(thing).__name__} lacks {missing}"
    assert {"score", "top"} <= members(backend.Ranker)


def test_arrays_load_one_at_a_time_across_threads(tmp_path, monkeypatch):
    """np.load parses each header with ast.literal_eval, which CPython 3.11 can fail in two
    threads at once (SystemError, CPython issue 106905): load_array lets one thread in."""
    import threading
    import time

    import numpy as np

    from busca.index.home import storage
    for i in range(3):
        np.save(tmp_path / f"m.a{i}.npy", np.arange(5 + i))
    inside, most, lock = [0], [0], threading.Lock()
    real = np.load

    def slow_load(*args, **kwargs):
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.01)
        try:
            return real(*args, **kwargs)
        finally:
            with lock:
                inside[0] -= 1

    monkeypatch.setattr(storage.np, "load", slow_load)
    loaded = []
    threads = [threading.Thread(target=lambda i=i: loaded.append(
        storage.load_array(tmp_path, f"m.a{i % 3}").size)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(loaded) == [5, 5, 6, 6, 7, 7]
    assert most[0] == 1
