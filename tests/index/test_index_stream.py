"""Streamed windows and counts against chunk_words and count_texts, in one process or many."""

import multiprocessing
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from busca.crawler.store import Document
from busca.index.text.chunks import ChunkRow
from busca.index.text.chunking import chunk_words, words
from busca.index.text.counting import count_texts
from busca.index.text.chunking import splits_like_java
from busca.index.text.stream import chunk_documents, windows

WORDS = "ação gato Universidade 2019 R$1.234,56 e-mail x\x00y ΟΔΟΣ 東京 😀 — ... café".split(" ")
# Java splits only at [ \t\n\x0b\f\r] and trims every char <= U+0020 at both ends.
GAPS = (" ", " ", " ", "\n", "\t", "\r\n", "  \n\n ", "\x0b", "\x0c", "\xa0", "\u2003",
        "\u3000", "\x1c", "\x85", "\u2028")
ENDS = ("", " ", "\n", "\x00", "\x01 ", " \x1f", "\t\x02\t", "\xa0")


def random_text(rng: random.Random) -> str:
    n = rng.choice([0, 1, 2, 5, 19, 20, 21, 60, 199, 200, 201, 450])
    body = "".join(rng.choice(WORDS) + rng.choice(GAPS) for _ in range(n))
    return rng.choice(ENDS) + body + rng.choice(ENDS)


@pytest.mark.parametrize("seed", range(4))
def test_windows_match_chunk_words(seed):
    rng = random.Random(seed)
    for _ in range(300):
        text = random_text(rng)
        if rng.random() < 0.5:  # the fast path: only Java whitespace, no control chars
            text = "".join(c if c > " " or c in " \t\n\r" else " " for c in text)
            text = text.replace("\xa0", " ").replace("\u2003", " ").replace("\u3000", " ")
            text = text.replace("\x85", " ").replace("\u2028", " ")
        size = rng.choice([1, 3, 20, 200])
        overlap = rng.randrange(size)
        n, spans, pieces = windows(text, size=size, overlap=overlap)
        expected = chunk_words(text, size=size, overlap=overlap)
        assert spans == [(c.start, c.end) for c in expected]
        assert [" ".join(p) for p in pieces] == [c.text for c in expected]


def test_splits_like_java():
    assert splits_like_java("  ação  gato\n\tcafé ")
    assert splits_like_java("x\x00y")  # a control char inside a word is part of it for both
    assert not splits_like_java("a\xa0b")  # Python splits at a no-break space, Java does not
    assert not splits_like_java("\x01 a")  # Java's trim drops it, Python keeps it as a word
    assert not splits_like_java("a \x1f")


def documents(rng: random.Random, n: int) -> list[Document]:
    return [Document(f"u{i:03d}", "", random_text(rng), sha256=f"h{i}") for i in range(n)]


POOL_CHECK = """
import random, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from test_index_stream import documents
from busca.index.text import stream
docs = documents(random.Random(5), 120)
stream.BATCH_DOCS = 7
one = stream.chunk_documents(docs, size=20, overlap=5, reusable={}, total=120, workers=1,
                             keep_texts=True)
stream.PARALLEL_MIN_DOCS = 0
assert stream._fork_context() is not None, "no fork here"
two = stream.chunk_documents(docs, size=20, overlap=5, reusable={}, total=120, workers=2,
                             keep_texts=True)
assert list(one.rows()) == list(two.rows())
assert one.texts == two.texts and one.words == two.words
assert one.counts.terms == two.counts.terms
assert (one.counts.matrix != two.counts.matrix).nnz == 0
from busca.index.text import counting
from busca.index.text.counting import column_targets
local = column_targets(one.counts.terms, "pt")
for ahead in (counting.AHEAD, 1):  # the terms mapped after the merge, or during it
    counting.AHEAD = ahead
    three = stream.chunk_documents(docs, size=20, overlap=5, reusable={}, total=120,
                                   workers=2, analyzers=("pt",))
    assert set(three.counts.prefetched) == {"pt", "java"}  # the idle workers mapped pt
    jobs = three.counts.prefetched["pt"].args[0]
    assert len(jobs) == 2 if ahead > 1 else len(jobs) > 2, len(jobs)  # 2: one per worker
    kept, target = three.counts.targets("pt")
    assert kept == local[0] and target.tolist() == local[1].tolist()
    assert target.dtype == np.int64
assert stream._fork_context() is not None  # taken: the pool and its thread are gone
import tempfile
from pathlib import Path
from busca.index.home.documents import Store
with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp)) as store:
    for d in docs:
        store.put(d)
    stored = list(store.documents())
    one = stream.chunk_documents(stored, size=20, overlap=5, reusable={}, total=120, workers=1)
    two = stream.chunk_documents(store.document_ranges(9), size=20, overlap=5, reusable={},
                                 total=120, workers=2)
assert list(one.rows()) == list(two.rows())
assert one.counts.terms == two.counts.terms
assert (one.counts.matrix != two.counts.matrix).nnz == 0
print("same")
"""


def test_pool_gives_the_same_as_one_process():
    """In a fresh interpreter: the pool only forks when no other thread runs, and other tests
    leave threads behind."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork start method on this platform: builds run in one process")
    done = subprocess.run([sys.executable, "-c", POOL_CHECK, str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "same"


ORPHAN_CHECK = """
import random, sys, time
sys.path.insert(0, sys.argv[1])
from test_index_stream import documents
from busca.index.text import counting, stream
stream.PARALLEL_MIN_DOCS = 0
def prefetch(self, pool):  # the workers are alive and idle here: name them, then be killed
    print(" ".join(str(p.pid) for p in pool._processes.values()), flush=True)
    time.sleep(120)
counting.CountMerger.prefetch = prefetch
stream.chunk_documents(documents(random.Random(5), 40), size=20, overlap=5, reusable={},
                       total=40, workers=2, analyzers=("pt",))
"""


def test_workers_die_with_a_killed_build():
    """A build killed (SIGKILL) while its pool is alive leaves no worker behind: an orphan
    would hold the build lock's file for ever (Linux: the workers ask for SIGKILL then)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the workers' death signal is Linux's prctl")
    process = subprocess.Popen([sys.executable, "-c", ORPHAN_CHECK, str(Path(__file__).parent)],
                               stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in process.stdout.readline().split()]
    finally:
        process.kill()
        process.wait()
    assert len(pids) == 2
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"  # a zombie is dead, not yet reaped
    except FileNotFoundError:
        return False


def test_rows_texts_and_counts_agree_with_chunk_words():
    docs = documents(random.Random(6), 40)
    chunked = chunk_documents(docs, size=20, overlap=5, reusable={}, total=len(docs),
                              keep_texts=True)
    expected = [(d.url, c) for d in docs for c in chunk_words(d.text, size=20, overlap=5)]
    assert [(r.url, r.position, r.start, r.end) for r in chunked.rows()] == \
        [(u, c.position, c.start, c.end) for u, c in expected]
    assert chunked.texts == [c.text for _, c in expected]
    reference = count_texts(chunked.texts)
    assert chunked.counts.terms == reference.terms
    assert (chunked.counts.matrix != reference.matrix).nnz == 0
    assert chunked.words == sum(len(words(d.text)) for d in docs)


def test_unchanged_documents_keep_their_previous_spans():
    doc = Document("a", "", "um dois três quatro cinco", sha256="same")
    old = {"a": ("same", [ChunkRow(0, "a", 0, 0, 7), ChunkRow(1, "a", 1, 8, 25)])}
    chunked = chunk_documents([doc], size=200, overlap=40, reusable=old, total=1,
                              keep_texts=True)
    assert [(r.start, r.end) for r in chunked.rows()] == [(0, 7), (8, 25)]
    assert chunked.texts == ["um dois", "três quatro cinco"] and chunked.rechunked == 0
    changed = chunk_documents([doc], size=200, overlap=40,
                              reusable={"a": ("other", old["a"][1])}, total=1)
    assert [(r.start, r.end) for r in changed.rows()] == [(0, 25)] and changed.rechunked == 1
    assert np.array_equal(chunked.counts.matrix.sum(axis=0), changed.counts.matrix.sum(axis=0))


def stored(tmp_path, docs):
    from busca.index.home.documents import Store
    store = Store(tmp_path / "home")
    for d in docs:
        store.put(d)
    return store


def test_store_ranges_cover_every_document_once_in_url_order(tmp_path):
    docs = documents(random.Random(3), 23)
    with stored(tmp_path, docs) as store:
        ranges = store.document_ranges(5)
        assert len(ranges) == 5
        store.put(Document("u000x", "", "added after the ranges were cut"))
        read = [row for i in range(len(ranges)) for row in ranges.read(i)]
        assert [url for url, _, _ in read] == sorted([d.url for d in docs] + ["u000x"])
        texts = {d.url: d.normalized().text for d in docs}
        assert all(text.decode("utf-8") == texts[url] for url, _, text in read if url in texts)


def test_ranges_read_by_workers_give_what_documents_give(tmp_path, monkeypatch):
    from busca.index.text import stream
    monkeypatch.setattr(stream, "BATCH_CHARS", 700)  # a range is chunked in several batches
    docs = documents(random.Random(7), 60)
    with stored(tmp_path, docs) as store:
        docs = list(store.documents())  # as stored (normalized)
        first = chunk_documents(docs, size=20, overlap=5, reusable={}, total=60)
        previous = {}
        for row in first.rows():
            previous.setdefault(row.url, (row.doc_sha256, []))[1].append(row)
        previous["u003"] = ("changed", previous["u003"][1])  # must be chunked again
        one = chunk_documents(docs, size=20, overlap=5, reusable=previous, total=60,
                              keep_texts=True)
        two = chunk_documents(store.document_ranges(7), size=20, overlap=5, reusable=previous,
                              total=60, keep_texts=True)
    assert list(one.rows()) == list(two.rows()) == list(first.rows())
    assert one.texts == two.texts and one.words == two.words
    empty = sum(d.url not in previous for d in docs)  # no chunk before: nothing to reuse
    assert one.rechunked == two.rechunked == 1 + empty
    assert one.counts.terms == two.counts.terms
    assert (one.counts.matrix != two.counts.matrix).nnz == 0


def test_a_text_that_is_not_utf8_is_one_line_naming_the_fix(tmp_path):
    from busca.crawler.store import StoreError
    with stored(tmp_path, documents(random.Random(1), 3)) as store:
        store.db.execute("UPDATE documents SET text = CAST(? AS TEXT) WHERE url = 'u001'",
                         (b"ok \xff",))
        with pytest.raises(StoreError, match="not valid UTF-8.*again"):
            chunk_documents(store.document_ranges(2), size=20, overlap=5, reusable={}, total=3)
