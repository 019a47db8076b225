"""Term counts from whitespace pieces against scikit-learn's CountVectorizer on whole texts."""

import random
from collections import Counter
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer

from busca.index.text.analyzers import (counted_terms, get_term_filter, java_terms, pt_terms,
                                        simple_terms)
from busca.index.text import counting
from busca.index.text.counting import (CountMerger, PackedTerms, column_blocks, column_targets,
                                       count_pieces, count_texts, reanalyze)

WORDS = ("Ação ação AÇÃO informações informação não nao é e à às O o de DE universidade "
         "Universidades curso cursos 2019 3,5% snake_case R$1.234,56 pós-graduação ΟΔΟΣ ΣΟΦΙΑ "
         "ΑΣ.ΒΣ İstanbul ß ẞ ﬁ ½ ² ٣ 東京 café cafe\u0301 Ångström naïve — ... ( ) «» x\x00y "
         "ﬁm ǅ 𝔸𝔹 😀").split(" ")
SEPARATORS = (" ", " ", " ", "\n", "\t", "  ", "\xa0", "\u2003", "\x1c", "\r\n", "", ",")


def random_texts(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(WORDS) + rng.choice(SEPARATORS)
                    for _ in range(rng.randint(0, 40))) for _ in range(n)]


def reference(texts, analyzer):
    vectorizer = CountVectorizer(analyzer=analyzer, lowercase=False)
    matrix = vectorizer.fit_transform(texts)
    return matrix, vectorizer.get_feature_names_out().tolist()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("name, analyzer", [("java", java_terms), ("simple", simple_terms),
                                            ("pt", pt_terms)])
def test_counts_match_count_vectorizer(seed, name, analyzer):
    rng = random.Random(seed)
    texts = random_texts(rng, rng.randint(1, 60))
    texts.append("ΑΣ ΑΣ\xa0Β σσς")  # final sigma decided inside one piece
    expected, terms = reference(texts, analyzer)
    counts = reanalyze(count_texts(texts, batch=rng.randint(1, 9)), name)
    assert counts.terms == terms
    assert counts.matrix.shape == expected.shape
    assert (counts.matrix != expected).nnz == 0


def test_merger_keeps_row_order_and_one_vocabulary():
    merger = CountMerger()
    merger.add(count_pieces([["b", "a", "b"], []]))
    merger.add(count_pieces([["c", "a"]]))
    counts = merger.result()
    assert counts.terms == ["a", "b", "c"]
    assert counts.matrix.toarray().tolist() == [[1, 2, 0], [0, 0, 0], [1, 0, 1]]


ALPHABETS = {"astral": "aaabcçãé09zΣ東😀\ud800", "bmp": "aaabcçãé09zΣ東\ud800\uffff",
             "latin1": "aaabcçãé09zÿ\x01",
             "above 8 bits": "ab\x01ÿ\u0100", "above 16 bits": "ab\x01\uffff\U00010000"}


def random_terms(rng: random.Random, n: int, alphabet: str = ALPHABETS["astral"],
                 longest: int = 11) -> list[str]:
    """Distinct terms over a small alphabet (many shared prefixes); by default astral codes
    and a lone surrogate among them."""
    return list({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, longest)))
                 for _ in range(n)})


def test_packed_terms_hold_what_their_strings_hold():
    terms = ["ação", "a", "😀東", "\ud800x", "zz"]
    packed = PackedTerms.of(terms)
    assert len(packed) == 5 and packed.strings() == terms and list(packed) == terms
    assert packed[0] == "ação" and packed[-1] == "zz" and packed[1:3] == ["a", "😀東"]
    with pytest.raises(IndexError):
        packed[5]
    assert packed.taken(np.array([4, 0, 2])).strings() == ["zz", "ação", "😀東"]
    assert PackedTerms.of([]).strings() == []


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("alphabet", sorted(ALPHABETS))
def test_term_order_is_pythons_str_order(seed, alphabet):
    """Codes 8, 16 or 21 bits wide (8, 4 or 3 of them per key), terms longer than a key,
    runs that tie sorted by insertion and by argsort."""
    kernels = pytest.importorskip("busca.index.text.tokens_numba")
    rng = random.Random(seed)
    for _ in range(50):
        terms = random_terms(rng, rng.randint(1, 2000), ALPHABETS[alphabet], 20) + (
            ["a", "aa", "ab", "a0", "a" * 17, "a" * 16, "a" * 8 + "b"] if seed else [])
        terms = list(dict.fromkeys(terms))
        packed = PackedTerms.of(terms)
        order = kernels.term_order(packed.codes, packed.at)
        assert [terms[i] for i in order] == sorted(terms)


@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_vocabulary_merges_as_the_dict_does(seed):
    """Batches of sorted terms (lists and PackedTerms mixed) through both vocabularies: the
    same terms, ids and counts; the compiled table grows on the way."""
    kernels = pytest.importorskip("busca.index.text.tokens_numba")
    rng = random.Random(seed)
    merged = [CountMerger(), CountMerger(kernels=kernels)]
    for i in range(12):
        texts = [" ".join(rng.sample(random_terms(rng, 600), 80)) for _ in range(8)]
        batch = count_pieces([t.split() for t in texts])
        if i % 2:
            batch = type(batch)(PackedTerms.of(batch.terms), batch.indptr, batch.indices,
                                batch.data)
        for merger in merged:
            merger.add(batch)
    (a, b) = (m.result() for m in merged)
    assert a.terms == b.terms and len(a.terms) > 4096  # the table (4,096 slots) grew
    assert (a.matrix != b.matrix).nnz == 0
    assert a.targets("java")[0] == b.targets("java")[0] == sorted(a.terms)


class AtOnce(Executor):
    """An executor that runs the work when it is submitted (the pool's, without processes)."""

    def __init__(self, work=None):
        self.work, self.shut = work, False

    def submit(self, function, *args):
        future = Future()
        try:
            future.set_result((self.work or function)(*args))
        except Exception as e:  # noqa: BLE001
            future.set_exception(e)
        return future

    def shutdown(self, wait=True, **kwargs):
        self.shut = True


@pytest.mark.parametrize("packed", [False, True])
def test_term_maps_worked_out_beside_the_merge_are_the_local_ones(packed):
    """`prefetch` sends the vocabulary in id order; the targets come back reordered to the
    sorted terms: the same as column_targets over them (pt merges and drops columns)."""
    kernels = pytest.importorskip("busca.index.text.tokens_numba") if packed else None
    rng = random.Random(4)
    texts = random_texts(rng, 60) + ["Informações informação INFORMAÇÃO não de zebra abacaxi"]
    merger = CountMerger(kernels=kernels, analyzers=("pt", "java"))  # java: nothing to map
    for lo in range(0, len(texts), 16):  # ids in order of first appearance, not sorted
        merger.add(count_pieces([t.split() for t in texts[lo:lo + 16]]))
    pool = AtOnce()
    merger.prefetch(pool)
    counts = merger.result()
    assert set(counts.prefetched) == {"pt", "java"} and not pool.shut  # java: sorted here
    kept, target = counts.targets("pt")
    local_kept, local_target = column_targets(counts.terms, "pt")
    assert kept == local_kept and target.tolist() == local_target.tolist()
    assert -1 in target and len(kept) < len(counts.terms)  # dropped and merged columns
    assert pool.shut  # taken: the pool is done
    assert (reanalyze(counts, "pt").matrix != reanalyze(count_texts(texts), "pt").matrix).nnz == 0


@pytest.mark.parametrize("packed", [False, True])
def test_term_maps_sent_ahead_during_the_merge_join_as_one(packed, monkeypatch):
    """map_ahead sends the terms new since its last call once there are AHEAD of them;
    prefetch the rest: the jobs' maps, in id order, give what column_targets gives."""
    kernels = pytest.importorskip("busca.index.text.tokens_numba") if packed else None
    monkeypatch.setattr(counting, "AHEAD", 25)
    rng = random.Random(8)
    texts = random_texts(rng, 80) + ["Informações informação INFORMAÇÃO não de zebra abacaxi"]
    merger = CountMerger(kernels=kernels, analyzers=("pt",))
    pool = AtOnce()
    sent = []
    for lo in range(0, len(texts), 8):
        merger.add(count_pieces([t.split() for t in texts[lo:lo + 8]]))
        merger.map_ahead(pool)
        sent.append(merger.sent)
    assert 0 < sent[0] < sent[-1] and merger.vocabulary.n - sent[-1] < 25  # sent ahead
    merger.prefetch(pool)
    counts = merger.result()
    assert len(counts.prefetched["pt"].args[0]) > 3
    kept, target = counts.targets("pt")
    local_kept, local_target = column_targets(counts.terms, "pt")
    assert kept == local_kept and target.tolist() == local_target.tolist()
    assert pool.shut


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("words", [["de"], ["de", "não", "A"], ["zebra"], ["Ação", "acao", "de"]])
def test_term_maps_in_more_parts_than_terms(packed, words):
    """Parts of the vocabulary without a term, or without a term kept, join as the rest."""
    kernels = pytest.importorskip("busca.index.text.tokens_numba") if packed else None
    merger = CountMerger(kernels=kernels, analyzers=("pt",))
    merger.add(count_pieces([words]))
    merger.prefetch(AtOnce(), parts=3)
    counts = merger.result()
    kept, target = counts.targets("pt")
    local_kept, local_target = column_targets(counts.terms, "pt")
    assert kept == local_kept and target.tolist() == local_target.tolist()


def by_term(counts):
    """{term: count} of each chunk."""
    m, terms = counts.matrix, list(counts.terms)
    return [{terms[c]: int(v) for c, v in zip(m.indices[m.indptr[r]:m.indptr[r + 1]],
                                              m.data[m.indptr[r]:m.indptr[r + 1]])}
            for r in range(m.shape[0])]


@pytest.mark.parametrize("packed", [False, True])
def test_the_merge_keeps_the_order_terms_came_in(packed):
    """CountMerger sorts nothing: its columns follow the order the terms first appeared;
    `targets("java")` gives the sorted order and `reanalyze(…, "java")` the sorted counts,
    the same counts per chunk and term; the prefetched term maps are in id order."""
    kernels = pytest.importorskip("busca.index.text.tokens_numba") if packed else None
    rng = random.Random(6)
    texts = random_texts(rng, 60) + ["Informações informação INFORMAÇÃO não de zebra abacaxi"]
    merger = CountMerger(kernels=kernels, analyzers=("pt",))
    for lo in range(0, len(texts), 16):
        merger.add(count_pieces([t.split() for t in texts[lo:lo + 16]]))
    merger.prefetch(AtOnce())
    counts = merger.result()
    terms = list(counts.terms)
    assert terms != sorted(terms) and len(set(terms)) == len(terms)
    assert by_term(counts) == [dict(Counter(t for piece in text.split()
                                            for t in counted_terms(piece))) for text in texts]
    # java terms, and the number groups counted whole ("3,5"), which java's columns leave out
    java = [t for t in terms if t.isalnum()]
    assert len(java) < len(terms)
    kept, rank = counts.targets("java")
    assert list(kept) == sorted(java) and [kept[i] for i in rank if i >= 0] == java
    assert [terms[i] for i in np.flatnonzero(rank < 0)] == [t for t in terms if t not in java]
    ordered = reanalyze(counts, "java")
    assert list(ordered.terms) == sorted(java)
    assert by_term(ordered) == [{t: n for t, n in row.items() if t.isalnum()}
                                for row in by_term(counts)]
    kept, target = counts.targets("pt")
    local_kept, local_target = column_targets(terms, "pt")
    assert kept == local_kept and target.tolist() == local_target.tolist()


@pytest.mark.parametrize("packed", [False, True])
def test_the_sorted_terms_are_made_when_first_read(packed):
    kernels = pytest.importorskip("busca.index.text.tokens_numba") if packed else None
    merger = CountMerger(kernels=kernels)
    merger.add(count_pieces([["zebra", "Ação", "abacaxi", "ação"]]))
    counts = merger.result()
    assert counts.terms._made is None  # a build of bm25 alone never makes them
    assert counts.terms == ["abacaxi", "ação", "zebra"] and len(counts.terms) == 3
    assert counts.terms[1] == "ação" and "\n".join(counts.terms) == "abacaxi\nação\nzebra"
    assert counts.terms[1:] == ["ação", "zebra"] and list(counts.terms) == counts.terms.data
    assert counts.matrix.shape == (1, 3) and counts.matrix.toarray().tolist() == [[1, 2, 1]]


def test_a_term_map_whose_worker_failed_is_worked_out_here():
    merger = CountMerger(analyzers=("pt",))
    merger.add(count_pieces([["informações", "Informação", "de"]]))
    merger.prefetch(AtOnce(_killed))
    counts = merger.result()
    kept, target = counts.targets("pt")
    assert counts.terms == ["de", "informação", "informações"]
    assert kept == ["inform"] and target.tolist() == [-1, 0, 0]


def _killed(*args):
    raise BrokenProcessPool("a worker died")


def test_counts_that_do_not_fit_16_bits():
    counts = count_texts(["a " * 70_000])
    assert counts.matrix.dtype == np.int32 and counts.matrix[0, 0] == 70_000


def test_column_targets_as_a_set_of_the_filtered_terms_gives_them():
    """Against the plain definition: the distinct filtered terms sorted, each term's column."""
    rng = random.Random(8)
    terms = sorted({t for text in random_texts(rng, 200) for t in java_terms(text)})
    for name in ("pt", "simple", "en"):
        mapped = [get_term_filter(name)(t) for t in terms]
        kept = sorted({t for t in mapped if t})
        got_kept, got_target = column_targets(terms, name)
        assert got_kept == kept
        assert got_target.tolist() == [kept.index(t) if t else -1 for t in mapped]


def test_reanalyze_merges_and_drops_columns():
    counts = count_texts(["Ação ação acao de", "não informações informação"])
    pt = reanalyze(counts, "pt")
    assert pt.terms == ["aca", "inform"]
    assert pt.matrix.toarray().tolist() == [[3, 0], [0, 2]]


def test_column_blocks_cover_every_column_once():
    indptr = np.array([0, 5, 5, 30, 31, 40, 100])
    blocks = list(column_blocks(indptr, size=10))
    assert blocks[0][0] == 0 and blocks[-1][1] == 6
    assert all(a < b for a, b in blocks)
    assert all(blocks[i][1] == blocks[i + 1][0] for i in range(len(blocks) - 1))


def test_tfidf_arrays_equal_a_count_vectorizer_build_bit_for_bit(tmp_path):
    """The streamed counts give the TF-IDF arrays of the first builder (CountVectorizer and
    scipy row sums), norms included, to the last bit."""
    from busca.index.lexical import tfidf
    from busca.index.home.storage import LocalBuildWriter
    texts = random_texts(random.Random(11), 300)
    tfidf.build(texts, LocalBuildWriter(None, tmp_path), options={})
    counts, terms = reference(texts, java_terms)
    n = counts.shape[0]
    idf = np.log(n / np.bincount(counts.indices, minlength=counts.shape[1]))
    weights = counts.astype(np.float64).multiply(idf).tocsr()
    norms = np.sqrt(np.asarray(weights.multiply(weights).sum(axis=1)).ravel())
    assert np.load(tmp_path / "tfidf.norms.npy").tolist() == norms.tolist()
    assert np.load(tmp_path / "tfidf.idf.npy").tolist() == idf.tolist()
    csc = counts.tocsc()
    csc.sort_indices()
    assert np.load(tmp_path / "tfidf.indices.npy").tolist() == csc.indices.tolist()
    assert (tmp_path / "tfidf.vocab.txt").read_text(encoding="utf-8").split("\n")[:-1] == terms
