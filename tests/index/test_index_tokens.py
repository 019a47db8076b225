"""The compiled batch (index/text/tokens.py, numba) against the Python path of stream.py: the same
windows, spans and counts per chunk and term, and the cases it leaves to the Python path."""

import random

import numpy as np
import pytest

from busca.index.text import stream, tokens
from busca.index.text.counting import CountMerger

from test_index_counting import random_texts
from test_index_stream import random_text

pytest.importorskip("numba")


def python_batch(docs, size, overlap, monkeypatch):
    with monkeypatch.context() as m:
        m.setenv("BUSCA_NUMBA", "0")
        return stream._chunk_batch(docs, size=size, overlap=overlap, count=True,
                                   keep_texts=False)


def per_chunk(counts):
    """{term: count} of each chunk, and whether every row's ids increase in term order (a
    compiled batch's are in order of first occurrence)."""
    terms = list(counts.terms)  # a compiled batch's are PackedTerms
    rows, ordered = [], terms == sorted(terms)
    for r in range(counts.indptr.size - 1):
        ids = counts.indices[counts.indptr[r]:counts.indptr[r + 1]]
        ordered = ordered and bool(np.all(np.diff(ids) > 0))
        rows.append({terms[i]: int(n) for i, n in
                     zip(ids, counts.data[counts.indptr[r]:counts.indptr[r + 1]])})
    return rows, ordered


def random_docs(rng, plain: bool):
    docs = []
    for _ in range(rng.randint(1, 8)):
        text = random_text(rng) if rng.random() < 0.5 else "".join(random_texts(rng, 3))
        if plain:  # no code that only the Python path lowercases right
            text = text.replace("Σ", "S").replace("İ", "I")
        docs.append((text, None))
    return docs


@pytest.mark.parametrize("seed", range(4))
def test_compiled_batch_equals_the_python_path(seed, monkeypatch):
    rng = random.Random(seed)
    for _ in range(60):
        docs = random_docs(rng, plain=True)
        size = rng.choice([1, 3, 20, 200])
        overlap = rng.randrange(size)
        done = tokens.compiled_batch(docs, size=size, overlap=overlap)
        assert done is not None
        words, chunks, starts, ends, counts = done
        expected = python_batch(docs, size, overlap, monkeypatch)
        assert words.tolist() == expected.words.tolist()
        assert chunks.tolist() == expected.chunks.tolist()
        assert starts.tolist() == expected.starts.tolist()
        assert ends.tolist() == expected.ends.tolist()
        got, _ = per_chunk(counts)
        want, want_ordered = per_chunk(expected.counts)
        assert got == want and want_ordered
        assert counts.data.dtype == expected.counts.data.dtype


def test_a_batch_whose_tables_grow_many_times(monkeypatch):
    """20,000 distinct words and terms in one batch: the word and term tables (4,096 slots
    at first) are grown in place five times; the counts still equal the Python path's."""
    rng = random.Random(5)
    words = [f"{rng.choice(['ação', 'x', 'pré'])}{i}.{i % 97}ü" for i in range(20_000)]
    docs = [(" ".join(rng.choices(words, k=3000)), None) for _ in range(10)]
    docs.append((" ".join(words), None))
    words_, chunks, starts, ends, counts = tokens.compiled_batch(docs, size=200, overlap=40)
    expected = python_batch(docs, 200, 40, monkeypatch)
    assert starts.tolist() == expected.starts.tolist()
    assert per_chunk(counts)[0] == per_chunk(expected.counts)[0] and len(counts.terms) > 20_000


def test_codes_that_need_the_python_path():
    assert tokens.compiled_batch([("ΟΔΟΣ", None)], size=20, overlap=5) is None  # final sigma
    assert tokens.compiled_batch([("İstanbul", None)], size=20, overlap=5) is None  # "i̇"
    assert tokens.compiled_batch([("ação 東京 😀 x\x00y", None)], size=20, overlap=5) is not None


def test_counts_that_do_not_fit_16_bits_and_every_code_page():
    text = "a " * 70_000 + " ".join(chr(c) for c in range(0x20, 0x3000, 7) if c not in (0x3A3, 0x130))
    words, chunks, starts, ends, counts = tokens.compiled_batch([(text, None)], size=10**6,
                                                               overlap=0)
    assert counts.data.dtype == np.int32 and counts.data.max() == 70_000
    assert chunks.tolist() == [1] and starts.tolist() == [0]


def test_previous_spans_are_kept_only_when_they_are_the_windows(monkeypatch):
    text = "um dois três quatro cinco"
    fresh = tokens.compiled_batch([(text, None)], size=3, overlap=1)
    spans = list(zip(fresh[2].tolist(), fresh[3].tolist()))
    assert tokens.compiled_batch([(text, spans)], size=3, overlap=1) is not None
    assert tokens.compiled_batch([(text, [(0, 7), (8, 25)])], size=3, overlap=1) is None
    batch = stream._chunk_batch([(text, [(0, 7), (8, 25)])], size=3, overlap=1, count=True,
                                keep_texts=False)  # the Python path cuts the old spans
    assert batch.starts.tolist() == [0, 8] and batch.ends.tolist() == [7, 25]


def test_merged_batches_of_both_paths(monkeypatch):
    """Compiled and Python batches mixed, through the dict and the compiled vocabulary:
    the same terms and counts; rows claimed sorted only when they are."""
    from busca.index.text import tokens_numba
    rng = random.Random(9)
    mergers = [CountMerger(), CountMerger(kernels=tokens_numba)]
    for i in range(6):
        docs = random_docs(rng, plain=i % 2 == 0)  # compiled and Python batches mixed
        counts = stream._chunk_batch(docs, size=20, overlap=5, count=True, keep_texts=False,
                                     use_compiled=True).counts
        for merger in mergers:
            merger.add(counts)
    (a, b) = (merger.result() for merger in mergers)
    assert a.terms == b.terms and (a.matrix != b.matrix).nnz == 0
    matrix = b.matrix
    rows = [matrix.indices[matrix.indptr[r]:matrix.indptr[r + 1]] for r in range(matrix.shape[0])]
    assert not all(np.all(np.diff(row) > 0) for row in rows)  # compiled rows: first occurrence
    assert not matrix.has_sorted_indices and not a.matrix.has_sorted_indices
    assert all(len(set(row.tolist())) == row.size for row in rows)  # each term once a row


@pytest.mark.parametrize("seed", range(3))
def test_utf8_bytes_give_what_their_text_gives(seed):
    rng = random.Random(seed)
    for _ in range(40):
        docs = random_docs(rng, plain=True)
        as_bytes = [(t.encode("utf-8"), None) for t, _ in docs]
        a = tokens.compiled_batch(docs, size=20, overlap=5)
        b = tokens.compiled_batch(as_bytes, size=20, overlap=5)
        assert all(x.tolist() == y.tolist() for x, y in zip(a[:4], b[:4]))
        assert per_chunk(a[4])[0] == per_chunk(b[4])[0]


def test_the_compiled_utf8_decoder_is_as_strict_as_python():
    from busca.index.text.tokens_numba import _decode
    rng = random.Random(4)
    pieces = [b"a", b" ", "ação".encode(), "😀".encode(), "東".encode(), b"\xc0\xaf",
              b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80", b"\xff", b"\xc3",
              b"\xf0\x9f\x98", b"\xe0\x80\xaf", b"\xef\xbf\xbf", b"\xf4\x8f\xbf\xbf"]
    out = np.empty(64, dtype=np.uint32)
    for _ in range(3000):
        raw = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        n = _decode(np.frombuffer(raw, dtype=np.uint8), 0, len(raw), out)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            assert n == -1, raw
            assert tokens.compiled_batch([(raw + b" ok", None)], size=5, overlap=0) is None
        else:
            assert n == len(text) and "".join(map(chr, out[:n].tolist())) == text, raw


def test_invalid_utf8_is_one_line_naming_the_fix():
    from busca.crawler.store import StoreError
    with pytest.raises(StoreError, match="not valid UTF-8"):
        stream._chunk_batch([(b"ok \xff", None)], size=20, overlap=5, count=True,
                            keep_texts=False, use_compiled=True)


def test_chunk_documents_compiled_equals_python(monkeypatch):
    from busca.index import compiled
    from test_index_stream import documents
    docs = documents(random.Random(8), 150)
    for d in docs[::2]:  # half of the batches without a code that needs the Python path
        object.__setattr__(d, "text", d.text.replace("Σ", "S").replace("İ", "I"))
    monkeypatch.setattr(stream, "BATCH_DOCS", 9)
    monkeypatch.setattr(compiled, "MIN_DOCUMENTS", 0)
    rows = [(d.url, d.sha256, d.text.encode()) for d in docs]
    fast = stream.chunk_documents(rows, size=20, overlap=5, reusable={}, total=150, workers=1)
    monkeypatch.setenv("BUSCA_NUMBA", "0")
    slow = stream.chunk_documents(docs, size=20, overlap=5, reusable={}, total=150, workers=1)
    assert list(fast.rows()) == list(slow.rows())
    assert fast.words == slow.words and fast.rechunked == slow.rechunked
    assert fast.counts.terms == slow.counts.terms
    assert (fast.counts.matrix != slow.counts.matrix).nnz == 0


BM25_ALONE = """
import random, sys
sys.path.insert(0, sys.argv[1])
from busca.index import compiled
from busca.index.home.storage import LocalBuildWriter
from busca.index.lexical import bm25
from busca.index.text import stream
from test_index_stream import documents
compiled.MIN_DOCUMENTS = compiled.MIN_POSTINGS = stream.PARALLEL_MIN_DOCS = 0
rows = [(d.url, d.sha256, d.text.replace("Σ", "S").replace("İ", "I").encode())
        for d in documents(random.Random(3), 60)]
counts = stream.chunk_documents(rows, size=20, overlap=5, reusable={}, total=60, workers=2,
                                analyzers=("pt",)).counts
entry = bm25.build_counts(counts, LocalBuildWriter(None, __import__("pathlib").Path(sys.argv[2])),
                          options={})
print(entry["vocabulary"], "scipy.sparse" in sys.modules, counts.terms._made is None)
"""


def test_a_build_of_bm25_alone_never_loads_scipy_sparse(tmp_path):
    """The compiled path reads the merged counts' arrays (CsrArrays) and writes the
    vocabulary from its packed terms: no scipy.sparse import and no str of each java term in
    the build's one process (tenths of a second of a fresh process's build)."""
    import subprocess
    import sys
    from pathlib import Path
    done = subprocess.run([sys.executable, "-c", BM25_ALONE, str(Path(__file__).parent),
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    vocabulary, sparse_loaded, java_terms_unmade = done.stdout.split()
    assert int(vocabulary) > 10 and sparse_loaded == "False" and java_terms_unmade == "True"
    written = (tmp_path / "bm25.vocab.txt").read_text(encoding="utf-8").split("\n")
    assert len(written) == int(vocabulary) + 1 and written[-1] == "" and written[:-1] == sorted(
        written[:-1])


def test_lexical_arrays_from_merged_counts_are_those_of_sorted_counts(tmp_path, monkeypatch):
    """Through the tokenising workers (their term maps), the merge (columns in the order
    terms came) and the compiled postings, tfidf and bm25 give the arrays they give from the
    same counts with their columns sorted (as a single sorted batch would have them)."""
    from busca.index import compiled
    from busca.index.lexical import bm25, tfidf
    from busca.index.home.storage import LocalBuildWriter
    import scipy.sparse as sp
    from busca.index.text.counting import TermCounts
    from test_index_postings import assert_same_folders
    from test_index_stream import documents
    monkeypatch.setattr(compiled, "MIN_DOCUMENTS", 0)
    monkeypatch.setattr(compiled, "MIN_POSTINGS", 0)
    monkeypatch.setattr(stream, "PARALLEL_MIN_DOCS", 0)
    monkeypatch.setattr(stream, "BATCH_DOCS", 9)
    docs = documents(random.Random(3), 120)
    rows = [(d.url, d.sha256, d.text.replace("Σ", "S").replace("İ", "I").encode())
            for d in docs]
    merged = stream.chunk_documents(rows, size=20, overlap=5, reusable={}, total=120,
                                    workers=2, analyzers=("pt",)).counts
    assert list(merged.terms) != sorted(merged.terms)
    raw = list(merged.terms)  # java terms and number groups counted whole, put in order
    assert any(not t.isalnum() for t in raw)
    rank = np.argsort(np.argsort(np.array(raw, dtype=object), kind="stable"))
    m = merged.matrix
    ordered = TermCounts(sp.csr_matrix((m.data, rank[m.indices].astype(np.int32), m.indptr),
                                       shape=m.shape).sorted_indices(), sorted(raw))
    for module in (bm25, tfidf):
        folders = []
        for counts in (merged, ordered):
            folder = tmp_path / f"{module.METHOD}{len(folders)}"
            folder.mkdir()
            module.build_counts(counts, LocalBuildWriter(None, folder), options={})
            folders.append(folder)
        assert_same_folders(*folders)


def test_long_words_that_share_their_ends_stay_apart(monkeypatch):
    words = ["aaaaaaaaXbbbbbbbb", "aaaaaaaaYbbbbbbbb", "aaaaaaaabbbbbbbb", "aaaaaaaa",
             "aaaaaaaabbbbbbbbb", "aaaaaaaaXbbbbbbbb", "AAAAAAAAXBBBBBBBB", "aaaa.aaaaXbbbbbbbb"]
    docs = [(" ".join(words), None), (" ".join(reversed(words)), None)]
    done = tokens.compiled_batch(docs, size=200, overlap=0)
    expected = python_batch(docs, 200, 0, monkeypatch)
    assert per_chunk(done[4])[0] == per_chunk(expected.counts)[0]
    assert per_chunk(done[4])[0][0]["aaaaaaaaxbbbbbbbb"] == 3


NUMBERY = ("1.000,00 10.000 123.456.789-09 12345678909 01310-100 05/12/2026 2026-12-05 "
           "2019-2022 1.000-2.000 1,5-2,5 3.12 192.168.0.1 a1.000 1.000km 1..2 (11) "
           "99999-9999 12.345.678/0001-90 1/2 0001234-56.2020.8.26.0100 ٣.٣ ½.5 R$ 1 000 "
           "x-1.000,00 Σ.1 ẞ-1 v2.3.1 python3.12 nº1.234 3,5kg 1.2a3.4 a1.b2 v2-3 2a.3 "
           "v10.0.1-rc1 ab12.34cd.56 éé9.9éé").split(" ")


@pytest.mark.parametrize("seed", range(3))
def test_number_groups_compiled_equal_the_python_path(seed, monkeypatch):
    """Number groups counted whole ("1.000,00", a CPF, a CEP, "2.3.1" of "v2.3.1"; not a date,
    a range of years or of numbers): the compiled pass finds the groups that analyzers.number_groups finds."""
    rng = random.Random(seed)
    seen = set()
    for _ in range(40):
        docs = [("".join(rng.choice(NUMBERY) + rng.choice(["", " ", ".", ",", "-", "/", "\n"])
                         for _ in range(rng.randint(0, 30))).replace("Σ", "S"), None)
                for _ in range(rng.randint(1, 5))]
        size = rng.choice([1, 3, 20])
        done = tokens.compiled_batch(docs, size=size, overlap=0)
        assert done is not None
        got, _ = per_chunk(done[4])
        want, _ = per_chunk(python_batch(docs, size, 0, monkeypatch).counts)
        assert got == want
        seen |= {t for row in want for t in row if not t.isalnum()}
    assert {"1.000,00", "123.456.789-09", "01310-100", "2.3.1", "3.12", "3,5"} <= seen
