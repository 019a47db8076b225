"""The compact vocabulary (index/home/vocabulary.py) answers as the dict of its terms does."""

import random

import pytest

from busca.errors import BuscaError
from busca.index.home import vocabulary
from busca.index.home.storage import read_terms, read_vocabulary, write_terms
from busca.index.home.vocabulary import Vocabulary


def words(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return list(dict.fromkeys("".join(rng.choices("açãéíõúbcdemnorst019", k=rng.randint(1, 14)))
                              for _ in range(count)))


def test_hand_worked_columns():
    v = Vocabulary.of(["gato", "rato", "ação", "é"])
    assert len(v) == 4
    assert [v.get(t) for t in ("gato", "rato", "ação", "é")] == [0, 1, 2, 3]
    assert v.get("acao") is None and v.get("gat") is None and v.get("gatos", -1) == -1
    assert "ação" in v and "" not in v and 3 not in v


@pytest.mark.parametrize("order", ["sorted", "as made"])
def test_every_term_and_no_other_as_a_dict(order):
    terms = words(1, 70_000)  # more than one block of hashing
    if order == "sorted":
        terms.sort()
    v = Vocabulary.of(terms)
    expected = {t: i for i, t in enumerate(terms)}
    assert all(v.get(t) == i for t, i in expected.items())
    for t in words(2, 5_000):
        assert v.get(t) == expected.get(t)


def test_colliding_hashes_are_told_apart_by_the_bytes(monkeypatch):
    monkeypatch.setattr(vocabulary, "term_hash", len)  # every term of a length collides
    terms = words(3, 3_000)
    v = Vocabulary.of(terms)
    assert all(v.get(t) == i for i, t in enumerate(terms))
    assert v.get("zzzz") is None and v.get("x" * 40) is None


def test_the_stored_file_reads_as_its_list(tmp_path):
    terms = words(4, 2_000)
    write_terms(tmp_path, "bm25", terms)
    assert read_terms(tmp_path, "bm25") == terms
    v = read_vocabulary(tmp_path, "bm25")
    assert len(v) == len(terms) and all(v.get(t) == i for i, t in enumerate(terms))


def test_an_empty_vocabulary_finds_nothing():
    v = Vocabulary.of([])
    assert len(v) == 0 and v.get("gato") is None


def test_a_file_written_with_windows_line_ends_reads_the_same(tmp_path):
    (tmp_path / "bm25.vocab.txt").write_bytes("gato\r\nação\r\n".encode("utf-8"))
    assert read_terms(tmp_path, "bm25") == ["gato", "ação"]
    assert read_vocabulary(tmp_path, "bm25").get("ação") == 1


def test_a_file_that_is_not_utf8_is_reported_in_one_line(tmp_path):
    (tmp_path / "bm25.vocab.txt").write_bytes(b"gato\n\xff\xfe\n")
    with pytest.raises(BuscaError, match="cannot read bm25.vocab.txt"):
        read_vocabulary(tmp_path, "bm25")
