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
    "ApiRefused": ".crawler.errors",
    "ApiUnusable": ".crawler.errors",
    "AuthFailed": ".index.dense.embedding_api",
    "BackendUnavailable": ".index.backend",
    "BadDocument": ".crawler.store",
    "BadFilter": ".search.filters",
    "BadFloor": ".search.hits",
    "BadGroup": ".crawler.groups",
    "BadGroups": ".index.dense.dense_groups",
    "BadHostName": ".serve.hosts",
    "BadJson": ".search.hits",
    "BadModelList": ".index.dense.dense_models",
    "BadOrigin": ".serve.hosts",
    "BadParameter": ".serve.errors",
    "BadPerDoc": ".search.collapse",
    "BadResponse": ".index.dense.embedding_api",
    "BadSpec": ".corpus.specs",
    "BadTitles": ".index.text.titles",
    "BadTokens": ".serve.access",
    "BadVectors": ".index.dense.dense",
    "BadWindow": ".index.text.chunking",
    "BatchTooLarge": ".index.dense.embedding_api",
    "Bm25ParameterError": ".index.lexical.bm25",
    "BodyTooLarge": ".serve.app",
    "BuildLocked": ".index.home.buildlock",
    "BuildRunning": ".serve.errors",
    "CacheError": ".index.dense.vector_cache",
    "ChunkingError": ".index.text.chunking",
    "ConnectFailed": ".crawler.errors",
    "ContextTooSmall": ".search.context",
    "CorpusNotFound": ".index.postgres.schema",
    "CrawlError": ".crawler.errors",
    "CrawlStopped": ".crawler.errors",
    "DimensionChanged": ".index.dense.vector_cache",
    "Disallowed": ".crawler.errors",
    "DiskFull": ".index.home.diskfull",
    "EmbeddingServerError": ".index.dense.embedding_api",
    "EmptyQuery": ".index.dense.vectors",
    "EmptyVocabulary": ".index.text.counting",
    "EncoderError": ".index.dense.encoders",
    "EncoderMismatch": ".index.dense.vectors",
    "EncoderMissing": ".index.dense.encoders",
    "FetchError": ".crawler.errors",
    "FiltersNotSupported": ".integrations.langchain",
    "FloorError": ".search.eval.floors",
    "FusionError": ".search.fusion",
    "GoldenError": ".search.eval.golden",
    "HomeNotFound": ".index.home.storage",
    "HttpError": ".serve.errors",
    "IndexFormatError": ".index.home.storage",
    "IndexNotFound": ".index.home.storage",
    "MetricError": ".search.eval.metrics",
    "MissingServer": ".index.dense.encoders",
    "MissingStemmer": ".index.text.analyzers",
    "ModelChanged": ".index.dense.openai_encoder",
    "ModelFileError": ".index.dense.e5_weights",
    "ModelNotFound": ".index.dense.encoders",
    "NoFloorToStore": ".search.eval.floors",
    "NoSearchableTerms": ".index.lexical.lexical",
    "NothingRelevant": ".search.eval.harness",
    "NothingToIndex": ".index.build",
    "NotServed": ".serve.client",
    "NoVectors": ".index.dense.vectors",
    "OffSite": ".crawler.errors",
    "PdfError": ".crawler.pdf",
    "PlotUnavailable": ".search.eval.plots",
    "PostgresDamaged": ".index.postgres.schema",
    "PostgresDenied": ".index.postgres.conn",
    "PostgresError": ".index.postgres.schema",
    "PostgresFormatError": ".index.postgres.schema",
    "PostgresMissingTable": ".index.postgres.conn",
    "PostgresOldFormat": ".index.postgres.schema",
    "PostgresReadOnly": ".index.postgres.conn",
    "PostgresUnavailable": ".index.postgres.conn",
    "ReadOnlyHome": ".index.home.documents",
    "RerankError": ".index.dense.rerank_api",
    "RunError": ".search.eval.runs",
    "SaeFileError": ".index.dense.e5_sae",
    "ScopeError": ".search.eval.scope",
    "ServerUnreachable": ".index.dense.embedding_api",
    "SessionError": ".shell",
    "StaleBuild": ".index.postgres.home",
    "StaleIndex": ".search.hits",
    "StoreDamaged": ".index.home.documents",
    "StoreError": ".crawler.store",
    "TemplateError": ".search.context",
    "TooLarge": ".crawler.errors",
    "TooSlow": ".crawler.errors",
    "Unauthorized": ".serve.access",
    "UnknownAnalyzer": ".index.text.analyzers",
    "UnknownEncoder": ".index.dense.encoders",
    "UnknownField": ".search.eval.scope",
    "UnknownMethod": ".index.methods",
    "UnknownModel": ".index.dense.embedding_api",
    "UnknownOption": ".corpus.specs",
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
