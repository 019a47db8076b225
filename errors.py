"""The one error base: every error a user can fix derives from BuscaError.

Library code raises a narrow subclass whose message is one line naming the problem and the
fix; cli.py catches BuscaError once, prints the message and exits 1. Every error class of the
package is also reachable here (`from busca.errors import IndexNotFound`), loaded on first use
so that this module, under all the others, imports none of them (errors.pyi types them).
"""

from __future__ import annotations

import importlib


class BuscaError(Exception):
    """A problem the user can fix; the message names it and the fix, on one line."""


# error class -> the module that defines it (relative to the package)
WHERE = {
    "ApiUnusable": ".crawler.errors",
    "AuthFailed": ".index.embedding_api",
    "BackendUnavailable": ".index.backend",
    "BadFilter": ".search.filters",
    "BadFloor": ".search.hits",
    "BadGroup": ".crawler.groups",
    "BadGroups": ".index.dense_groups",
    "BadHostName": ".serve.hosts",
    "BadModelList": ".index.dense_models",
    "BadParameter": ".serve.errors",
    "BadPerDoc": ".search.collapse",
    "BadResponse": ".index.embedding_api",
    "BadTitles": ".index.titles",
    "BadTokens": ".serve.access",
    "BadVectors": ".index.dense",
    "Bm25ParameterError": ".index.bm25",
    "BodyTooLarge": ".serve.app",
    "BuildLocked": ".index.buildlock",
    "BuildRunning": ".serve.errors",
    "CacheError": ".index.vector_cache",
    "ChunkingError": ".index.chunking",
    "ConnectFailed": ".crawler.errors",
    "ContextTooSmall": ".search.context",
    "CorpusNotFound": ".index.pg_schema",
    "CrawlError": ".crawler.errors",
    "CrawlStopped": ".crawler.errors",
    "DimensionChanged": ".index.vector_cache",
    "Disallowed": ".crawler.errors",
    "DiskFull": ".index.diskfull",
    "EmbeddingServerError": ".index.embedding_api",
    "EmptyQuery": ".index.vectors",
    "EmptyVocabulary": ".index.counting",
    "EncoderError": ".index.encoders",
    "EncoderMismatch": ".index.vectors",
    "EncoderMissing": ".index.encoders",
    "FetchError": ".crawler.errors",
    "FiltersNotSupported": ".integrations.langchain",
    "FloorError": ".search.eval.floors",
    "FusionError": ".search.fusion",
    "GoldenError": ".search.eval.golden",
    "HomeNotFound": ".index.storage",
    "HttpError": ".serve.errors",
    "IndexFormatError": ".index.storage",
    "IndexNotFound": ".index.storage",
    "MetricError": ".search.eval.metrics",
    "MissingServer": ".index.encoders",
    "MissingStemmer": ".index.analyzers",
    "ModelFileError": ".index.e5_weights",
    "ModelNotFound": ".index.encoders",
    "NoFloorToStore": ".search.eval.floors",
    "NoSearchableTerms": ".index.lexical",
    "NothingRelevant": ".search.eval.harness",
    "NothingToIndex": ".index.build",
    "NotServed": ".serve.client",
    "NoVectors": ".index.vectors",
    "OffSite": ".crawler.errors",
    "PdfError": ".crawler.pdf",
    "PlotUnavailable": ".search.eval.plots",
    "PostgresDenied": ".index.pg_conn",
    "PostgresError": ".index.pg_schema",
    "PostgresFormatError": ".index.pg_schema",
    "PostgresMissingTable": ".index.pg_conn",
    "PostgresOldFormat": ".index.pg_schema",
    "PostgresReadOnly": ".index.pg_conn",
    "PostgresUnavailable": ".index.pg_conn",
    "ReadOnlyHome": ".crawler.store",
    "RerankError": ".index.rerank_api",
    "RunError": ".search.eval.runs",
    "SaeFileError": ".index.e5_sae",
    "ServerUnreachable": ".index.embedding_api",
    "SessionError": ".shell",
    "StaleBuild": ".index.postgres",
    "StaleIndex": ".search.hits",
    "StoreDamaged": ".crawler.store",
    "StoreError": ".crawler.store",
    "TemplateError": ".search.context",
    "TooLarge": ".crawler.errors",
    "TooSlow": ".crawler.errors",
    "Unauthorized": ".serve.access",
    "UnknownAnalyzer": ".index.analyzers",
    "UnknownEncoder": ".index.encoders",
    "UnknownMethod": ".index.methods",
    "UnknownModel": ".index.embedding_api",
}
__all__ = ["BuscaError", *WHERE]


def __getattr__(name: str) -> type[BuscaError]:
    """The error class `name`, imported from its module on first use (PEP 562)."""
    if name not in WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(WHERE[name], __package__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(WHERE))
