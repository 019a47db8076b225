import json
import multiprocessing
import subprocess
import sys
from dataclasses import replace

import pytest

from busca.crawler.store import Document
from busca.index.methods import METHODS
from busca.index.home import storage
from busca.index.build import NothingToIndex, build_index
from busca.index.home.storage import IndexFormatError, IndexNotFound, load_index
from busca import search as core
from busca.index import LocalHome


def words(n, prefix="w"):
    return " ".join(f"{prefix}{i}" for i in range(n))


@pytest.fixture
def store(tmp_path):
    s = LocalHome(tmp_path)
    s.put(Document("a", "A", words(450)))
    s.put(Document("b", "B", words(150, "b")))
    s.put(Document("empty", "E", "  "))
    return s


def test_figures_and_chunk_rows(store):
    manifest = build_index(store)
    assert (manifest["documents"], manifest["words"], manifest["chunks"]) == (3, 600, 4)
    rows = load_index(store.home).chunks()
    assert [(r.url, r.position) for r in rows] == [("a", 0), ("a", 1), ("a", 2), ("b", 0)]


def test_empty_store_is_refused(tmp_path):
    with pytest.raises(NothingToIndex, match="busca add"):
        build_index(LocalHome(tmp_path))


def test_only_changed_documents_are_rechunked(store):
    build_index(store)
    store.put(Document("b", "B", words(10, "novo")))
    manifest = build_index(store)
    assert manifest["rechunked_documents"] == 2  # "b" changed; "empty" has no rows to reuse
    index = load_index(store.home)
    assert core.rank(index, "novo3")[0].tolist() == [3]


def test_interrupted_build_keeps_previous_index(store, monkeypatch):
    first = build_index(store)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    tfidf = replace(METHODS["tfidf"], build=crash, build_counts=None)
    monkeypatch.setitem(METHODS, "tfidf", tfidf)
    store.put(Document("c", "C", "documento novo"))
    with pytest.raises(KeyboardInterrupt):
        build_index(store)
    index = load_index(store.home)
    assert index.build == first["build"]
    assert len(index.chunks()) == first["chunks"]
    assert core.rank(index, "w10")[0].tolist() == [0]
    monkeypatch.undo()
    second = build_index(store)  # the next build cleans up the leftovers
    assert [p.name for p in store.home.glob("index-*")] == [second["build"]]


INTERRUPTED_IN_WORKERS = """
import multiprocessing, sys
from pathlib import Path
import pytest
from busca.crawler.store import Document
from busca.index import LocalHome, build
from busca.index.text import stream
from busca.index.build import build_index
from busca.index.home.storage import load_index
from busca import search as core

stream.PARALLEL_MIN_DOCS = 1  # worker processes, 5 documents a range
build.BATCH_DOCS = 5
pools = []  # the real pool, counted: the build must go through worker processes
stream_pool = stream.ProcessPoolExecutor

def pool(*args, **kwargs):
    pools.append(args)
    return stream_pool(*args, **kwargs)

stream.ProcessPoolExecutor = pool
home = LocalHome(Path(sys.argv[1]))
for i in range(40):
    home.put(Document(f"d{i:02d}", "", " ".join(f"t{i}x{j}" for j in range(30 + i))))
first = build_index(home)
home.put(Document("d99", "", "documento novo"))
calls = []

def interrupt(stage, done, total):
    if stage.startswith("chunking"):
        calls.append(done)
        if len(calls) == 2:  # ranges still in the workers' hands
            raise KeyboardInterrupt

with pytest.raises(KeyboardInterrupt):
    build_index(home, on_progress=interrupt)
assert pools and calls[-1] < 41 and multiprocessing.active_children() == []
index = load_index(home.home)
assert index.build == first["build"] and len(index.chunks()) == first["chunks"] == 40
assert core.rank(index, "t7x3")[0].tolist() == [7]
second = build_index(home)
assert second["chunks"] == 41
assert [p.name for p in home.home.glob("index-*")] == [second["build"]]
print("kept")
"""


def test_build_interrupted_while_workers_read_the_store_keeps_previous_index(tmp_path):
    """In a fresh interpreter: the build forks its workers only when no other thread runs."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork start method on this platform: builds run in one process")
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_IN_WORKERS, str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "kept"


CTRL_C_AT_THE_TERMINAL = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a run started in the background inherits SIGINT ignored
from busca.index import build
from busca.index.text import stream
from busca.cli import main

stream.PARALLEL_MIN_DOCS, build.BATCH_DOCS = 1, 5  # worker processes, 5 documents a range
stream.default_workers = lambda: 4  # idle ones wait on their task queue
chunk_documents, calls = build.chunk_documents, []

def chunking(*args, on_progress, **kwargs):
    def progress(stage, done, total):
        calls.append(stage)
        if stage.startswith("chunking") and len(calls) == 2:  # the workers are alive
            os.killpg(0, signal.SIGINT)  # Ctrl-C: the terminal signals the whole group
        on_progress(stage, done, total)
    return chunk_documents(*args, on_progress=progress, **kwargs)

build.chunk_documents = chunking
sys.argv = ["busca", "--home", sys.argv[1], "index", "--methods", "bm25", "--size", "20",
            "--overlap", "5"]
main()
"""


def test_ctrl_c_at_the_terminal_during_a_build_is_one_line(tmp_path):
    """Ctrl-C at a terminal signals every process of the command, the build's worker
    processes too: each idle one printed a KeyboardInterrupt traceback of
    multiprocessing's above the one-line message."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork start method on this platform: builds run in one process")
    home = LocalHome(tmp_path / "home")
    for i in range(40):
        home.put(Document(f"d{i:02d}", "", " ".join(f"t{i}x{j}" for j in range(30 + i))))
    first = build_index(home)
    home.close()
    done = subprocess.run([sys.executable, "-c", CTRL_C_AT_THE_TERMINAL, str(home.home)],
                          capture_output=True, text=True, timeout=120, start_new_session=True)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().splitlines()[-1] == (
        "Error: interrupted; the index being built is discarded, the previous one still"
        " answers — run busca index again to build it")
    assert load_index(home.home).build == first["build"]


def test_unknown_format_version_is_refused(store):
    build_index(store)
    path = storage.current_dir(store.home)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["format_version"] = 999
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="rebuild"):
        load_index(store.home)


def test_no_index(tmp_path):
    with pytest.raises(IndexNotFound, match="busca index"):
        load_index(tmp_path)


def test_calibrated_floors_survive_a_rebuild_with_the_same_settings(store):
    build_index(store)
    storage.update_manifest(load_index(store.home), {"methods": {"tfidf": {"floor": 0.2},
                                                                 "bm25": {"floor": 3.0}}})
    store.put(Document("c", "C", "um artigo novo"))
    kept = build_index(store)["methods"]
    assert (kept["tfidf"]["floor"], kept["bm25"]["floor"]) == (0.2, 3.0)
    changed = build_index(store, options={"bm25_k1": 0.9})["methods"]
    assert changed["tfidf"]["floor"] == 0.2 and changed["bm25"]["floor"] is None
    assert build_index(store, size=50, overlap=10)["methods"]["tfidf"]["floor"] is None


def test_a_build_of_format_2_is_read_and_new_builds_are_format_3(store):
    """Format 3 marks builds whose pt analyzer accents a document's plain suffixes: a busca
    that reads only 2 refuses them ("rebuild") where it silently found nothing for
    "informacao"; this busca reads 2 as before (asked as it was built)."""
    from busca.index.home.manifest import FORMAT_VERSION, READS

    build_index(store)
    path = storage.current_dir(store.home)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format_version"] == FORMAT_VERSION == 3 and READS == (2, 3)
    (path / "manifest.json").write_text(json.dumps({**manifest, "format_version": 2}))
    assert load_index(store.home).manifest.chunks == manifest["chunks"]


ENGLISH = ("The refund is paid to the card that was used for the order, and the bank shows it"
           " within ten days; this is the rule for all of the orders that are returned.")
PORTUGUESE = ("O reembolso é pago no cartão que foi usado para a compra, e o banco mostra o"
              " valor em até dez dias; essa é a regra para todos os pedidos devolvidos.")


def test_language_marks_count_the_words_only_one_language_writes_often():
    from busca.index.text.analyzers import language_marks

    # The, is, to, the, that, was, for, the, and, the, this, is, the, for, of, the, that, are
    assert language_marks([ENGLISH]) == (18, 0)
    # é, que, para, em, é, para, os ("o", "a", "no" and "e" are words of both languages)
    assert language_marks([PORTUGUESE]) == (0, 7)
    assert language_marks(["THE Ends", "de 1999 the_end"]) == (2, 1)  # letters, any case


@pytest.mark.parametrize("texts, options, warned", [
    ([ENGLISH] * 3, {}, True),  # a first build nobody chose an analyzer for
    ([ENGLISH] * 3, {"bm25_analyzer": "en"}, False),
    ([ENGLISH] * 3, {"bm25_analyzer": "pt"}, False),  # asked for: the user's choice
    ([ENGLISH] * 2 + [PORTUGUESE] * 3, {}, False),  # 36 to 21: both languages
    ([PORTUGUESE] * 3, {}, False),
])
def test_a_first_bm25_build_of_english_documents_says_to_use_en(tmp_path, caplog, texts,
                                                                 options, warned):
    """`busca index` of an English site stemmed it as Portuguese without a word (and its
    prompt spoke Portuguese): a first build whose analyzer nobody chose says how to fix it;
    the next build keeps the analyzer, and says nothing again."""
    pytest.importorskip("Stemmer")
    home = LocalHome(tmp_path)
    for n, text in enumerate(texts):
        home.put(Document(f"https://help.example/{n}", f"T{n}", text))
    with caplog.at_level("WARNING", logger="busca.index.build"):
        build_index(home, methods=("bm25",), options=dict(options))
    said = [r.getMessage() for r in caplog.records if r.name == "busca.index.build"]
    assert bool(said) == warned, said
    if warned:
        assert said == ['the documents read as English (54 English words such as "the" to 0'
                        ' Portuguese ones such as "de"), but bm25 analyzes them as Portuguese:'
                        ' run busca index --analyzer en (the prompt then speaks English too)']
        caplog.clear()
        build_index(home, methods=("bm25",))  # kept pt: said once
        assert not [r for r in caplog.records if r.name == "busca.index.build"]
    home.close()
