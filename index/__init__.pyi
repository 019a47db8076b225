"""Types of the lazy face busca.index (busca/lazy.py loads the names on first use)."""

from .text.analyzers import ANALYZERS as ANALYZERS
from .text.analyzers import as_asked as as_asked
from .lexical.bm25 import B as B
from .backend import BackendUnavailable as BackendUnavailable
from .text.titles import BadTitles as BadTitles
from .text.chunking import BadWindow as BadWindow
from .backend import Build as Build
from .build import build_index as build_index
from .home.buildlock import BuildLocked as BuildLocked
from .home.buildlock import builds_by as builds_by
from .backend import BuildWriter as BuildWriter
from .dense.encoders import check_server as check_server
from .text.chunking import check_window as check_window
from .text.chunking import ChunkingError as ChunkingError
from .text.chunks import ChunkRow as ChunkRow
from .methods import DEFAULT as DEFAULT
from .dense.encoders import DEFAULT_ENCODER as DEFAULT_ENCODER
from .home.diskfull import DiskFull as DiskFull
from .build import dropped_calibration as dropped_calibration
from .dense.embedding_api import BATCH as EMBED_BATCH
from .dense.embedding_api import TIMEOUT as EMBED_TIMEOUT
from .dense.embedding_api import EmbeddingServerError as EmbeddingServerError
from .dense.encoders import encoder_names as encoder_names
from .dense.encoders import EncoderError as EncoderError
from .dense.encoders import FALLBACK_ENCODER as FALLBACK_ENCODER
from .home.manifest import FORMAT_VERSION as FORMAT_VERSION
from .dense.encoders import get_encoder as get_encoder
from .dense.dense_groups import GROUP_BLEND as GROUP_BLEND
from .dense.dense_groups import GROUP_WORDS as GROUP_WORDS
from .backend import Home as Home
from .methods import HYBRID as HYBRID
from .home.storage import IndexFormatError as IndexFormatError
from .home.storage import IndexNotFound as IndexNotFound
from .dense.dense_models import is_dense as is_dense
from .backend import is_folder as is_folder
from .dense.dense_models import is_hybrid as is_hybrid
from .lexical.bm25 import K1 as K1
from .lexical.bm25 import K1_MAX as K1_MAX
from .methods import LEXICAL as LEXICAL
from .home.storage import load_index as load_index
from .home.storage import LocalHome as LocalHome
from .text.analyzers import lone_surrogate as lone_surrogate
from .home.manifest import Manifest as Manifest
from .methods import METHODS as METHODS
from .build import methods_for as methods_for
from .build import NothingToIndex as NothingToIndex
from .backend import open_home as open_home
from .dense.encoders import OPENAI_PREFIX as OPENAI_PREFIX
from .text.chunking import OVERLAP as OVERLAP
from .text.chunking import parse_chunker as parse_chunker
from .dense.rerank_api import parse_rerank as parse_rerank
from .postgres.schema import PostgresError as PostgresError
from .backend import Ranker as Ranker
from .postgres.schema import redact as redact
from .dense.rerank_api import TOP as RERANK_TOP
from .dense.rerank_api import RerankClient as RerankClient
from .dense.rerank_api import RerankError as RerankError
from .dense.rerank_api import RerankSettings as RerankSettings
from .dense.dense_models import resolve as resolve
from .dense.dense_models import server_settings as server_settings
from .build import settings_flags as settings_flags
from .text.chunking import SIZE as SIZE
from .methods import sparse_left_out as sparse_left_out
from .dense.encoders import THREADS as THREADS
from .text.titles import titled_methods as titled_methods
from .text.titles import TITLES as TITLES
from .methods import UnknownMethod as UnknownMethod
from .build import window_for as window_for

EXPORTS: dict[str, str]
__all__ = [
    "ANALYZERS",
    "B",
    "BackendUnavailable",
    "BadTitles",
    "BadWindow",
    "Build",
    "BuildLocked",
    "BuildWriter",
    "ChunkRow",
    "ChunkingError",
    "DEFAULT",
    "DEFAULT_ENCODER",
    "DiskFull",
    "EMBED_BATCH",
    "EMBED_TIMEOUT",
    "EmbeddingServerError",
    "EncoderError",
    "FALLBACK_ENCODER",
    "FORMAT_VERSION",
    "GROUP_BLEND",
    "GROUP_WORDS",
    "HYBRID",
    "Home",
    "IndexFormatError",
    "IndexNotFound",
    "K1",
    "K1_MAX",
    "LEXICAL",
    "LocalHome",
    "METHODS",
    "Manifest",
    "NothingToIndex",
    "OPENAI_PREFIX",
    "OVERLAP",
    "PostgresError",
    "RERANK_TOP",
    "Ranker",
    "RerankClient",
    "RerankError",
    "RerankSettings",
    "SIZE",
    "THREADS",
    "TITLES",
    "UnknownMethod",
    "as_asked",
    "build_index",
    "builds_by",
    "check_server",
    "check_window",
    "dropped_calibration",
    "encoder_names",
    "get_encoder",
    "is_dense",
    "is_folder",
    "is_hybrid",
    "load_index",
    "lone_surrogate",
    "methods_for",
    "open_home",
    "parse_chunker",
    "parse_rerank",
    "redact",
    "resolve",
    "server_settings",
    "settings_flags",
    "sparse_left_out",
    "titled_methods",
    "window_for",
]
