"""The filters' masks and facets kept between queries (search/filters.py `remembered`): a
repeated filtered query reads no document again, and any change of the documents — through
this handle, another one or another process — changes the answer at once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import numpy as np
import pytest
from conftest import lexical_home_of, write_jsonl

from busca.crawler.store import Document
from busca.index import LocalHome
from busca.index.home.storage import load_index
from busca.search import filters as f
from busca.search.facets import facets

DOCS = [
    {"url": "https://c.example/a", "title": "A", "text": "ovos e farinha", "groups": "staff",
     "category": "Receitas"},
    {"url": "https://c.example/b", "title": "B", "text": "farinha de trigo", "groups": "sales",
     "category": "Receitas"},
    {"url": "https://c.example/c", "title": "C", "text": "açúcar e farinha",
     "category": "Doces"},
]
STAFF, SALES = f.visible_to("staff"), f.visible_to("sales")
RECEITAS = f.parse_filter("category=Receitas")


@pytest.fixture
def home(tmp_path):
    return lexical_home_of(tmp_path / "home", DOCS)


def urls(index, store, *filters) -> set[str]:
    """The URLs the cached mask allows, checked against a mask computed afresh."""
    mask = f.allowed(index, store, filters)
    assert np.array_equal(mask, f._allowed(index, store, filters))
    return {r.url for r in index.chunks(np.flatnonzero(mask))}


def reads(store) -> list[str]:
    """The statements of `store`'s connection that read the documents, from now on."""
    seen: list[str] = []
    store.db.set_trace_callback(lambda sql: seen.append(sql) if "FROM documents" in sql else 0)
    return seen


def test_a_repeated_filtered_query_reads_no_document_again(home):
    index, store = load_index(home), LocalHome(home)
    seen = reads(store)
    first = f.allowed(index, store, (STAFF, RECEITAS))
    shown = facets(store, filters=(STAFF,))
    assert seen  # the first reads the records
    seen.clear()
    assert np.array_equal(f.allowed(index, store, (STAFF, RECEITAS)), first)
    assert f.counts(index, store, (STAFF, RECEITAS)) == (1, int(first.sum()))
    assert facets(store, filters=(STAFF,)) == shown
    assert seen == []
    assert not first.flags.writeable  # shared: no caller may change it


def test_another_handle_changes_the_answer_at_once(home):
    index, store, other = load_index(home), LocalHome(home), LocalHome(home)
    a, b, c = (d["url"] for d in DOCS)
    assert urls(index, store, STAFF) == {a, c} and urls(index, store, SALES) == {b, c}
    assert facets(store, filters=(STAFF,))["category"]["top"] == {"Receitas": 1, "Doces": 1}
    other.put(Document(a, "A", "ovos e farinha", meta={"groups": "sales", "category": "Doces"}))
    assert urls(index, store, STAFF) == {c} and urls(index, store, SALES) == {a, b, c}
    assert urls(index, store, SALES, RECEITAS) == {b}
    assert facets(store, filters=(STAFF,))["category"]["top"] == {"Doces": 1}
    other.delete(c)
    assert urls(index, store, STAFF) == set() and urls(index, store, SALES) == {a, b}
    store.put(Document(c, "C", "açúcar e farinha", meta={"groups": "staff"}))  # its own write
    assert urls(index, store, STAFF) == {c}
    raw = sqlite3.connect(home / "busca.db")  # any writer, a busca or not
    raw.execute("""UPDATE documents SET meta = '{"groups": "staff"}' WHERE url = ?""", (b,))
    raw.commit()
    raw.close()
    assert urls(index, store, STAFF) == {b, c} and urls(index, store, SALES) == {a}


def test_another_process_changes_the_answer_at_once(home, tmp_path):
    index, store = load_index(home), LocalHome(home)
    a, b, c = (d["url"] for d in DOCS)
    assert urls(index, store, SALES) == {b, c}
    changed = write_jsonl(tmp_path / "changed.jsonl", [{**DOCS[0], "groups": "sales,staff"}])
    for args in (["add", str(changed)], ["remove", c]):
        done = subprocess.run([sys.executable, "-m", "busca.cli", "--home", str(home), *args],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    assert urls(index, store, SALES) == {a, b} and urls(index, store, STAFF) == {a}


def test_a_home_made_before_versions_gets_them_and_a_read_only_one_computes_each_time(
        home, monkeypatch):
    from busca.index.home import documents

    db = sqlite3.connect(home / "busca.db")
    db.executescript("DROP TRIGGER documents_inserted; DROP TRIGGER documents_updated;"
                     " DROP TRIGGER documents_deleted; DROP TABLE changes;")
    db.close()
    with monkeypatch.context() as patch:  # a read-only share (chmod does not stop root)
        patch.setattr(documents, "writable", lambda home: False)
        older = LocalHome(home)
    assert older.read_only and older.version() is None
    index = load_index(home)
    seen = reads(older)
    assert urls(index, older, STAFF) == {DOCS[0]["url"], DOCS[2]["url"]}
    count = len(seen)
    urls(index, older, STAFF)
    assert len(seen) > count  # nothing kept without a version
    upgraded = LocalHome(home)  # opened for writing: the table and its triggers
    version = upgraded.version()
    assert version is not None
    upgraded.put(Document("https://c.example/d", "D", "mel", meta={"groups": "staff"}))
    assert upgraded.version() not in (None, version)
    assert facets(upgraded)["groups"]["values"] == 2


def test_the_as_built_mask_leaves_out_removed_and_changed_documents_once_per_state(home):
    """`as_built`: the chunks of documents stored as the build chunked them; a second query
    reads no document again, and the next change of the documents is seen at once."""
    index, store = load_index(home), LocalHome(home)
    everything, none = f.as_built(index, store)
    assert everything.all() and none == 0
    store.delete("https://c.example/a")
    store.put(Document("https://c.example/b", "B", "farinha de centeio"))
    mask, gone = f.as_built(index, store)
    assert gone == 2 and {r.url for r in index.chunks(np.flatnonzero(mask))} == {
        "https://c.example/c"}
    seen = reads(store)
    again, _ = f.as_built(index, store)
    assert again is mask and not seen and not mask.flags.writeable
    store.put(Document("https://c.example/b", "B", "farinha de trigo"))  # as it was built
    assert f.as_built(index, store)[1] == 1
