"""The vector cache, and dense builds that resume from it (openai:MODEL on a real server)."""

from __future__ import annotations

import numpy as np
import pytest

from busca.crawler.store import Document
from busca.index.dense import dense
from busca.index.build import build_index
from busca.index.dense.embedding_api import AuthFailed, ServerSettings
from busca.index.dense.encoders import get_encoder
from busca.index.home.storage import LocalHome, load_index
from busca.index.dense.vector_cache import DimensionChanged, VectorCache
from embed_servers import FaultyServer
from dense_fakes import DOCS


def digests(*texts):
    return [h.tobytes() for h in dense.text_hashes(list(texts))]


def test_put_then_get_by_model_and_hash(tmp_path):
    with VectorCache(tmp_path) as cache:
        cache.put("m1", digests("a", "b"), np.eye(2, 3, dtype=np.float32))
        cache.put("m2", digests("a"), np.full((1, 5), 2, np.float32))
        got = cache.get("m1", digests("b", "c", "a"))
        assert set(got) == set(digests("a", "b"))
        np.testing.assert_array_equal(got[digests("b")[0]], [0, 1, 0])
        assert cache.dimension("m1") == 3 and cache.dimension("m2") == 5
        assert cache.dimension("m3") is None and cache.count() == 3
    with VectorCache(tmp_path) as cache:  # persisted
        assert cache.count("m1") == 2


def test_a_model_cannot_change_dimension_in_the_cache(tmp_path):
    with VectorCache(tmp_path) as cache:
        cache.put("m", digests("a"), np.ones((1, 3), np.float32))
        with pytest.raises(DimensionChanged, match="m now returns 4-dimensional vectors, 3"
                                                   " before"):
            cache.put("m", digests("b"), np.ones((1, 4), np.float32))


def test_many_lookups_are_split(tmp_path):
    texts = [f"t{i}" for i in range(1234)]
    with VectorCache(tmp_path) as cache:
        cache.put("m", digests(*texts), np.arange(1, 1235, dtype=np.float32)[:, None])
        got = cache.get("m", digests(*texts))
        assert len(got) == 1234 and got[digests("t1000")[0]][0] == 1001


def test_a_vector_of_zeros_or_nan_is_never_taken_from_the_cache(tmp_path):
    """A server's all-zero answer, cached before it was refused, came back on every rebuild
    (the 28th session's sweep)."""
    with VectorCache(tmp_path) as cache:
        cache.put("m", digests("zero", "nan", "ok"),
                  np.array([[0, 0], [np.nan, 1], [1, 0]], np.float32))
        assert list(cache.get("m", digests("zero", "nan", "ok"))) == digests("ok")
        cache.forget("m")
        assert cache.count("m") == 0 and cache.dimension("m") is None


@pytest.fixture
def store(tmp_path):
    with LocalHome(tmp_path / "home") as s:
        for url, title, text in DOCS:
            s.put(Document(url, title, text))
        yield s


def build(store, server, **settings):
    options = {"dense": "openai:fake-model", "vector_cache": store.home,
               "server": ServerSettings(server.url, batch=2, **settings)}
    return build_index(store, methods=("tfidf", "dense"), options=options)


def test_interrupted_encode_resumes_from_the_cache(store):
    with FaultyServer() as server:
        server.faults = [("ok",), ("401",)]  # the second batch fails: the build stops
        with pytest.raises(AuthFailed):
            build(store, server, retries=0)
        assert server.requests[0]["fault"] == "ok" and len(server.texts) == 4
        first = list(server.requests[0]["texts"])
        before = len(server.requests)
        entry = build(store, server)["methods"]["dense"]
        again = [t for r in server.requests[before:] for t in r["texts"]]
    assert entry["cached"] == 2 and entry["encoded"] == 2 and entry["reused"] == 0
    # the missing chunks, and one cached text asked again: is the model still the same?
    assert len(again) == 3 and set(again[:1]) <= set(first) and not set(first) & set(again[1:])
    vectors = np.asarray(load_index(store.home).array("dense", "vectors"))
    expected = np.asarray([server.vector(text) for _, _, text in sorted(DOCS)])  # URL order
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)


def test_switching_back_to_a_model_reuses_its_vectors(store, fake):
    with FaultyServer() as server:
        build(store, server)
        n = len(server.texts)
        build_index(store, methods=("tfidf", "dense"), options={"dense": "fake"})
        entry = build(store, server)["methods"]["dense"]
        assert n == 4 and len(server.texts) == 5  # one text asked again: the same model?
    assert entry["cached"] == 4 and entry["encoded"] == 0


def test_a_model_replaced_under_its_name_is_encoded_again_not_reused(store):
    """A server whose model changed (8 dimensions, then 16) kept the old vectors: the search
    said "rebuild", and the rebuild reused them again (the 28th session's sweep)."""
    with FaultyServer() as server:
        server.dimension = 8
        build(store, server)
        server.dimension = 16
        entry = build(store, server)["methods"]["dense"]
    assert entry["dimension"] == 16 and entry["encoded"] == 4 and entry["cached"] == 0
    assert np.asarray(load_index(store.home).array("dense", "vectors")).shape == (4, 16)


def test_another_passage_prefix_is_another_cache_entry(store):
    with FaultyServer() as server:
        build(store, server)
        build(store, server, passage_prefix="passage: ")
        assert len(server.texts) == 8 and server.texts[4].startswith("passage: ")


def _other_weights(server):
    """`server` answering under the same model name with other weights (same dimension)."""
    plain = server.vector
    server.vector = lambda text, dimension=None: plain(text, dimension)[::-1]
    return server


def _vectors(store):
    return np.asarray(load_index(store.home).array("dense", "vectors"))


def test_two_servers_of_one_model_name_keep_their_own_vectors(store):
    """The cache was keyed by model name and text: a second server answering "fake-model"
    with other weights got the first one's vectors (until its check threw every cached
    vector of the name away), and going back to the first encoded everything again."""
    with FaultyServer() as a, _other_weights(FaultyServer()) as b:
        build(store, a)
        from_a = _vectors(store)
        entry_b = build(store, b)["methods"]["dense"]
        from_b = _vectors(store)
        before = len(a.texts)
        entry_a = build(store, a)["methods"]["dense"]
        asked_a = a.texts[before:]
    assert entry_b["encoded"] == 4 and entry_b["cached"] == entry_b["reused"] == 0
    assert not np.allclose(from_a, from_b)
    assert entry_a["cached"] == 4 and entry_a["encoded"] == 0 and len(asked_a) == 1
    np.testing.assert_array_equal(_vectors(store), from_a)
    with VectorCache(store.home) as cache:
        assert cache.count() == 8  # each server's 4


def test_a_cache_written_before_the_key_named_the_server_is_kept(store):
    """Vectors cached under the old key (name and passage settings) are taken by the first
    server whose answer matches them, and left for the others."""
    with FaultyServer() as a, _other_weights(FaultyServer()) as b:
        build(store, a)
        encoder = get_encoder("openai:fake-model", server=ServerSettings(a.url))
        with VectorCache(store.home) as cache:  # as the cache of an older busca holds them
            cache.adopt(encoder.cache_key, encoder.legacy_cache_key)
            cache.forget(encoder.cache_key)
        store.put(Document("https://x.example/new", "Novo", "Um texto novo."))
        entry_b = build(store, b)["methods"]["dense"]
        entry_a = build(store, a)["methods"]["dense"]
    assert entry_b["encoded"] == 5 and entry_b["cached"] == 0  # another model: not taken
    assert entry_a["encoded"] == 1 and entry_a["cached"] == 4
    with VectorCache(store.home) as cache:
        assert cache.count(encoder.legacy_cache_key) == 4  # still there for other servers


def test_the_key_is_never_written_to_the_home(store):
    key = "sk-secret-abcdef0123456789"
    with FaultyServer(key=key) as server:
        manifest = build(store, server, key=key)
    assert manifest["methods"]["dense"]["server"]["url"] == server.url
    for path in store.home.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


def test_search_refuses_a_server_that_changed_dimension(store):
    with FaultyServer() as server:
        build(store, server)
        entry = load_index(store.home).methods["dense"]
        encoder = get_encoder(entry["encoder"], server=ServerSettings(server.url),
                              dimension=entry["dimension"])
        server.faults = [("dim", 32)]
        with pytest.raises(DimensionChanged, match="expected 64"):
            encoder.encode(["uma pergunta"], query=True)


def test_a_model_replaced_under_its_name_is_checked_without_a_cache_too(store):
    """A PostgreSQL home has no vector cache: the check of the model was skipped there, and
    the old model's vectors were reused for ever."""
    with FaultyServer() as server:
        options = {"dense": "openai:fake-model", "server": ServerSettings(server.url, batch=2)}
        server.dimension = 8
        build_index(store, methods=("tfidf", "dense"), options=options)
        server.dimension = 16
        entry = build_index(store, methods=("tfidf", "dense"), options=options)
    assert entry["methods"]["dense"]["dimension"] == 16
    assert entry["methods"]["dense"]["encoded"] == 4


def test_a_model_replaced_with_the_same_dimension_encodes_its_groups_again(store):
    """The windows were encoded again, but every sentence group kept the old model's vector
    (reused by text) when the new model had the same dimension."""
    store.put(Document("https://x.example/long", "Longo", "O gato dorme. O cão late alto."
                       " A ave canta cedo. O peixe nada fundo."))
    with FaultyServer() as server:
        options = {"dense": "openai:fake-model", "vector_cache": store.home,
                   "server": ServerSettings(server.url, batch=2), "dense_groups": 3}
        build_index(store, methods=("tfidf", "dense"), options=options)
        first = build_index(store, methods=("tfidf", "dense"), options=options)["methods"]["dense"]
        plain = server.vector
        server.vector = lambda text, dimension=None: plain(text, dimension)[::-1]
        entry = build_index(store, methods=("tfidf", "dense"), options=options)["methods"]["dense"]
    assert first["groups_encoded"] == 0 < first["group_vectors"]
    assert entry["groups_encoded"] > 0 and entry["encoded"] == 5
