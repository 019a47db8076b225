"""index: turn a home's documents into index builds (chunks, weights, vectors) and load them."""

from .analyzers import ANALYZERS
from .backend import BackendUnavailable, Build, BuildWriter, Home, Ranker, open_home
from .bm25 import B, K1, K1_MAX
from .build import NothingToIndex, build_index, methods_for
from .chunking import OVERLAP, SIZE, ChunkingError, parse_chunker
from .chunks import ChunkRow
from .dense_models import is_dense, is_hybrid, resolve, server_settings
from .embedding_api import BATCH as EMBED_BATCH
from .encoders import (DEFAULT_ENCODER, OPENAI_PREFIX, THREADS, EncoderError, check_server,
                       encoder_names, get_encoder)
from .manifest import FORMAT_VERSION, Manifest
from .methods import DEFAULT, HYBRID, LEXICAL, METHODS, UnknownMethod
from .storage import IndexFormatError, IndexNotFound, LocalHome, load_index

__all__ = [
    "ANALYZERS", "B", "ChunkingError", "DEFAULT_ENCODER", "EncoderError", "K1", "K1_MAX",
    "OVERLAP", "SIZE", "THREADS", "encoder_names", "get_encoder", "parse_chunker",
    "BackendUnavailable", "Build", "BuildWriter", "ChunkRow", "DEFAULT", "FORMAT_VERSION",
    "HYBRID", "Home", "IndexFormatError", "IndexNotFound", "LEXICAL", "LocalHome", "METHODS",
    "Manifest", "NothingToIndex", "Ranker", "UnknownMethod", "build_index", "load_index",
    "methods_for", "open_home",
    "EMBED_BATCH", "OPENAI_PREFIX", "check_server", "is_dense", "is_hybrid", "resolve",
    "server_settings",
]
