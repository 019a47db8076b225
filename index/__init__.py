"""index: turn a home's documents into index builds (chunks, weights, vectors) and load them.

Names load on first use (busca/lazy.py).
"""

from ..lazy import face

EXPORTS = {
    "ANALYZERS": ".analyzers",
    "B": ".bm25",
    "BackendUnavailable": ".backend",
    "BadTitles": ".titles",
    "Build": ".backend",
    "build_index": ".build",
    "BuildWriter": ".backend",
    "check_server": ".encoders",
    "ChunkingError": ".chunking",
    "ChunkRow": ".chunks",
    "DEFAULT": ".methods",
    "DEFAULT_ENCODER": ".encoders",
    "EMBED_BATCH": ".embedding_api#BATCH",
    "encoder_names": ".encoders",
    "EncoderError": ".encoders",
    "FALLBACK_ENCODER": ".encoders",
    "FORMAT_VERSION": ".manifest",
    "get_encoder": ".encoders",
    "Home": ".backend",
    "HYBRID": ".methods",
    "IndexFormatError": ".storage",
    "IndexNotFound": ".storage",
    "is_dense": ".dense_models",
    "is_hybrid": ".dense_models",
    "K1": ".bm25",
    "K1_MAX": ".bm25",
    "LEXICAL": ".methods",
    "load_index": ".storage",
    "LocalHome": ".storage",
    "Manifest": ".manifest",
    "METHODS": ".methods",
    "methods_for": ".build",
    "NothingToIndex": ".build",
    "open_home": ".backend",
    "OPENAI_PREFIX": ".encoders",
    "OVERLAP": ".chunking",
    "parse_chunker": ".chunking",
    "Ranker": ".backend",
    "resolve": ".dense_models",
    "server_settings": ".dense_models",
    "SIZE": ".chunking",
    "THREADS": ".encoders",
    "TITLES": ".titles",
    "GROUP_WORDS": ".dense_groups",
    "GROUP_BLEND": ".dense_groups",
    "titled_methods": ".titles",
    "UnknownMethod": ".methods",
}
__all__ = sorted(EXPORTS)
face(__name__)
