"""No user waits for numba (index/compiled.py): queries answer on the numpy path while the
kernels load in a background thread, with the same results before, during and after the
switch; a build without compiled kernels takes the numpy path and has another process
compile them (index/warm.py) for the next one."""

from __future__ import annotations

import random
import threading
import time

import pytest

from busca.crawler.store import Document
from busca.index import LocalHome, compiled
from busca.index.lexical import maxscore
from busca.index.build import build_index
from busca.index.lexical.lexical import NoSearchableTerms
from busca.index.home.storage import load_index

pytest.importorskip("numba")

WORDS = ("prazo reembolso boleto matrícula senha biblioteca curso aluno prova nota bolsa"
         " estágio horário pesquisa laboratório inscrição professora dados banco").split()


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    rng = random.Random(31)
    home = tmp_path_factory.mktemp("kernels")
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    with LocalHome(home) as store:
        for i in range(1200):
            text = " ".join(rng.choices(WORDS, weights, k=rng.randint(3, 30)))
            store.put(Document(f"d{i:04d}", "", text))
        build_index(store, methods=("tfidf", "bm25"))
    return load_index(home)


@pytest.fixture
def background(monkeypatch, tmp_path):
    """The default mode (kernels loaded in the background), from a fresh start."""
    monkeypatch.delenv("BUSCA_NUMBA_LOAD", raising=False)
    monkeypatch.delenv("BUSCA_NUMBA", raising=False)
    monkeypatch.setenv("BUSCA_KERNEL_RECORD", str(tmp_path / "record.pickle"))
    monkeypatch.setattr(compiled, "_ready", {})
    monkeypatch.setattr(compiled, "_started", {})
    monkeypatch.setattr(compiled, "_wanted", [])
    monkeypatch.setattr(compiled, "_waiting", {})
    monkeypatch.setattr(maxscore, "COMPILED_MIN_ROWS", 0)


def answers(ranker, queries):
    found = []
    for query in queries:
        try:
            ids, scores = ranker.top(query, 10)
            found.append((ids.tolist(), scores.tolist()))
        except NoSearchableTerms:
            found.append(None)
    return found


def queries(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(1, 6))) for _ in range(count)]


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_queries_answer_while_the_kernels_load_and_the_same_after(index, background, method,
                                                                  monkeypatch):
    ranker = index.ranker(method)
    asked = queries(5, 40)
    monkeypatch.setenv("BUSCA_NUMBA", "0")
    want = answers(ranker, asked)  # the numpy path alone
    monkeypatch.delenv("BUSCA_NUMBA")
    release = threading.Event()  # holds the loading thread before it has them compiled
    warming = compiled._start_warming
    monkeypatch.setattr(compiled, "_start_warming", lambda: release.wait(60) and warming())
    started = time.perf_counter()
    during = answers(ranker, asked)  # the loading thread is held: nothing may wait for it
    assert time.perf_counter() - started < 5
    assert compiled._started["load"].is_alive()
    assert not maxscore.usable(ranker.n_rows)
    assert during == want
    release.set()
    switching = answers(ranker, asked[:20])  # the switch may come in the middle
    assert compiled.wait_ready(240)
    assert maxscore.usable(ranker.n_rows)
    after = answers(ranker, asked)
    assert getattr(ranker, "_blocks", None) is not None  # the compiled walk answered
    assert switching == want[:20]
    assert after == want


def test_a_server_prepares_the_walk_as_soon_as_it_has_loaded(index, background, monkeypatch):
    ranker = index.ranker("bm25")
    monkeypatch.setattr(ranker, "_blocks", None, raising=False)
    release = threading.Event()  # holds the loading thread before it has them compiled
    warming = compiled._start_warming
    monkeypatch.setattr(compiled, "_start_warming", lambda: release.wait(60) and warming())
    started = time.perf_counter()
    ranker.prepare()  # busca serve, before its first question: it must not wait
    assert time.perf_counter() - started < 1
    assert ranker._blocks is None
    release.set()
    assert compiled.wait_ready(240)
    assert ranker._blocks is not None and ranker._blocks.queries == 2  # tables and codes made


def test_a_build_without_compiled_kernels_does_not_wait_and_has_them_compiled(background):
    started = time.perf_counter()
    assert compiled.for_build("postings_numba") is None
    assert time.perf_counter() - started < 2
    process = compiled._started["warm"]
    assert process.wait(timeout=280) == 0
    record = compiled.warm_record()
    assert {"top", "window_index", "exact_sums"} <= set(record["maxscore_numba"])
    assert {"terms_of", "window_counts"} <= set(record["tokens_numba"])
    assert compiled.for_build("postings_numba") is not None


def test_compiled_before_a_query_still_does_not_wait_but_a_server_start_loads_them(
        index, background, monkeypatch):
    """With the kernels compiled before, loading numba still takes about a second: a one-shot
    question takes the numpy path while they load in the background; busca serve and shell
    (`prepare`, before their first question) load them at once, in their own thread."""
    process = compiled._start_warming()
    assert process is not None and process.wait(timeout=280) == 0
    assert compiled.warm_record() is not None
    held = threading.Event()
    load = compiled._load
    monkeypatch.setattr(compiled, "_load",
                        lambda *a: held.wait(60) and load(*a)
                        if threading.current_thread().name == "busca-kernels" else load(*a))
    started = time.perf_counter()
    assert compiled.ready("maxscore_numba") is None  # the loading thread is held
    assert time.perf_counter() - started < 1
    assert compiled._started["load"].is_alive()
    ranker = index.ranker("bm25")
    monkeypatch.setattr(ranker, "_blocks", None, raising=False)
    ranker.prepare()  # a server's start: loaded here, not in the held thread
    assert compiled.ready("maxscore_numba") is not None
    assert ranker._blocks is not None and ranker._blocks.queries == 2
    held.set()
    assert compiled.wait_ready(60)


RACE = """
import sys
from busca.index import compiled
compiled.ready("maxscore_numba")  # the loading thread unpickles the record: numba's types
try:
    compiled.module("maxscore_numba")  # while this thread imports the kernels: numba
    print("imported")
except Exception as e:
    print("failed", type(e).__name__, e)
print("loaded" if compiled.wait_ready(120) and compiled.ready("maxscore_numba") else "not loaded")
"""


def test_kernels_imported_while_the_loading_thread_reads_the_record(tmp_path):
    """A caller's first `search` starts the loading thread; an `index` right after imports the
    kernels in its own thread. Both import numba's modules (the record's signatures are numba
    types), in different orders: without one import lock, importlib refused one of them
    (_DeadlockError on numba.core.types, three runs out of three before the fix)."""
    import os
    import pickle
    import subprocess
    import sys

    import numba

    record = tmp_path / "record.pickle"
    record.write_bytes(pickle.dumps({"maxscore_numba": {}, "types": [numba.types.boolean]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUSCA_NUMBA")}
    env["BUSCA_KERNEL_RECORD"] = str(record)
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", RACE], env=env, capture_output=True,
                              text=True, timeout=180)
        assert done.stdout.split("\n")[:2] == ["imported", "loaded"], done.stdout + done.stderr


WITHOUT_LINALG = """
import sys
import numpy as np
from busca.index import compiled
from busca.index.text import tokens
assert compiled.module("tokens_numba") is not None
tokens.warm_up()  # loads the compiled pass: numba's registries, its array functions
import numba
import numba.np.arraymath as arraymath
import numba.np.linalg as linalg
print("linalg imported" if "scipy.linalg" in sys.modules else "no linalg")
print(linalg.ensure_blas.__module__, linalg.ensure_blas.__name__, arraymath._HAVE_BLAS)
dot = numba.njit(lambda a, b: np.dot(a, b))
a, b = np.arange(5.0), np.arange(5.0, 10.0)
print(dot(a, b) == np.dot(a, b), "linalg imported" if "scipy.linalg" in sys.modules else "no linalg")
"""


def test_kernels_load_without_importing_scipy_linalg():
    """numba's array functions check for a BLAS by importing scipy.linalg (a tenth of a
    second before a build's workers fork); busca's kernels load without it, numba's own check
    is back in place afterwards, and np.dot compiled later still uses scipy's BLAS."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "BUSCA_NUMBA_LOAD": "wait"}
    env.pop("BUSCA_NUMBA", None)
    done = subprocess.run([sys.executable, "-c", WITHOUT_LINALG], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.stdout.split("\n")[:3] == [
        "no linalg", "numba.np.linalg ensure_blas True", "True linalg imported"], (
        done.stdout + done.stderr)
