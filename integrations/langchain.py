"""`BuscaRetriever`: a busca corpus as a LangChain retriever (langchain-core only).

Each call is one `Corpus.search` (busca.open): the method, k, floor, filters, re-ranker and
query log of `busca search`, and a `Document` per hit whose metadata carries the citation URL
(`source`, `url`), the title, the score and rank (the re-ranker's when re-ranked), the chunk
id, the span in the document and, under `meta`, the document's own metadata (as a hit of
`busca search --json` and GET /api/search). A question with nothing above the floor gives no
documents.

The search options are `SearchSpec`'s, checked by it when the retriever is made (BadSpec,
BadFilter: one line) and again at each call: the retriever's fields, then LangChain's
`search_kwargs` (any option of `Corpus.search`; LangChain's `filter` is `filters`), then the
keyword arguments of `invoke(question, k=…)`, each overriding the one before — except an
access rule (`search.visible_to`) among the filters, which a later layer's filters never drop.
Filters are busca's texts ("category=Python"), or LangChain's dict of field to value(s),
translated.

The retriever keeps one `Corpus`, which its threads share (each opens its own handle of the
home on its first call; the build is loaded once); `close()` closes it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from langchain_core.callbacks import (AsyncCallbackManagerForRetrieverRun,
                                      CallbackManagerForRetrieverRun)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, PrivateAttr

from ..corpus import METHOD, Corpus, SearchSpec, open as open_corpus
from ..corpus.specs import BadSpec
from ..search.collapse import PER_DOC
from ..search.filters import BadFilter, Visible
from ..search.scorers import K

OPTIONS = tuple(f.name for f in fields(SearchSpec))  # what search_kwargs and invoke take
OWN = ("method", "k", "min_score", "per_doc", "filters", "rerank", "log")  # fields among them
ALIASES = {"filter": "filters"}  # LangChain's names for busca's options
HINTS = {"top_k": "k", "n": "k", "score_threshold": "min_score", "filter_dict": "filters"}
LANGCHAIN_ARGS = ("verbose",)  # what BaseRetriever.invoke passes on besides the options


class FiltersNotSupported(BadFilter):
    """A LangChain filter busca cannot express (an operator such as $and or $gte)."""


class BuscaRetriever(BaseRetriever):
    """The passages of a busca home (folder or postgresql:// URL) for a question."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    home: str | Path  # a folder, or a postgresql:// URL
    method: str = METHOD
    k: int = K
    min_score: float | None = None  # None: the method's calibrated floor, as busca search
    per_doc: int = PER_DOC
    filters: Any = None  # "category=Python", a list of such texts, or {"category": "Python"}
    search_kwargs: dict[str, Any] | None = None  # LangChain's: any option of Corpus.search
    rerank: Any = None  # busca.index.parse_rerank(...) settings, or None
    log: bool = True  # record the questions in the home's query log, as busca search does

    _corpus: Corpus = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        """Checked before pydantic sees the values (it would take k="3" as 3 and answer a
        bad one in four lines): one busca error of one line, as Corpus.search gives."""
        unknown = sorted(set(data) - set(type(self).model_fields))
        if unknown:
            raise BadSpec(f"BuscaRetriever has no option {unknown[0]}{_hint(unknown[0])}: its"
                          f" options are {', '.join(_public(type(self).model_fields))}")
        if "home" not in data:
            raise BadSpec("BuscaRetriever needs home=, the corpus's folder (e.g. \".busca\")"
                          " or postgresql:// URL")
        search_spec({n: data[n] for n in OWN if n in data}, data.get("search_kwargs"))
        corpus = open_corpus(data["home"], create=False)  # BadSpec, HomeNotFound
        try:
            super().__init__(**data)
        except BaseException:
            corpus.close()
            raise
        self._corpus = corpus

    def _spec(self, **options: Any) -> SearchSpec:
        """The SearchSpec of a call: the fields, then search_kwargs, then `options`."""
        return search_spec({n: getattr(self, n) for n in OWN}, self.search_kwargs, options)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **options: Any) -> list[Document]:
        spec = self._spec(**{n: v for n, v in options.items() if n not in LANGCHAIN_ARGS})
        result = self._corpus.search(query, spec)
        return [Document(page_content=hit.text, id=str(hit.chunk_id), metadata={
            "source": hit.url, "url": hit.url, "title": hit.title, "score": hit.score,
            "rank": hit.rank, "chunk_id": hit.chunk_id, "start": hit.start, "end": hit.end,
            "method": result.method, "floor": result.floor,
            **({"meta": hit.meta} if hit.meta else {}),
            **({"rerank": result.rerank} if result.rerank else {})}) for hit in result.hits]

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **options: Any) -> list[Document]:
        return await run_in_executor(None, self._get_relevant_documents, query,
                                     run_manager=run_manager.get_sync(), **options)

    def close(self) -> None:
        """Close the corpus (a call after it is an error naming the fix)."""
        self._corpus.close()

    def __enter__(self) -> BuscaRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def search_spec(given: Mapping[str, Any], search_kwargs: Any = None,
                call: Mapping[str, Any] | None = None) -> SearchSpec:
    """The SearchSpec of the retriever's options `given`, then `search_kwargs`, then a call's
    options (BadSpec for a name Corpus.search does not take); the access rules
    (search.visible_to) of each are kept (`_with_rules`)."""
    layers = (given, _named(search_kwargs, "search_kwargs"), _named(call, "invoke"))
    options = {name: value for layer in layers for name, value in layer.items()}
    options["filters"] = _with_rules(layers, filter_texts(options.get("filters")))
    return SearchSpec(**options)


def _with_rules(layers, filters: Any) -> Any:
    """`filters` (the last ones given) with every access rule (search.visible_to) given in
    any layer: a later filter replaces the filters before it, never who may read (a rule
    given later narrows: both hold)."""
    rules = [f for layer in layers for f in _listed(layer.get("filters"))
             if isinstance(f, Visible)]
    if not rules or not isinstance(filters, (str, list, tuple)):
        return filters  # no rule, or filters SearchSpec refuses
    return (*dict.fromkeys(rules), *(f for f in _listed(filters) if not isinstance(f, Visible)))


def _listed(filters: Any) -> tuple:
    return (filters,) if isinstance(filters, str) else \
        tuple(filters) if isinstance(filters, (list, tuple)) else ()


def _named(options: Any, where: str) -> dict[str, Any]:
    """`options` with LangChain's names as busca's; BadSpec for any other name."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise BadSpec(f"{where} must map option names to values, e.g. {{'k': 5}}, not"
                      f" {type(options).__name__}")
    named = {}
    for name, value in options.items():
        option = ALIASES.get(name, name)
        if option not in OPTIONS:
            raise BadSpec(f"{where} has {name!r}{_hint(name)}, which busca's search does not"
                          f" take: use {', '.join(OPTIONS)} (filter = filters)")
        if option in named:
            raise BadSpec(f"{where} gives {option} twice (as filter and filters): give one")
        named[option] = value
    return named


def filter_texts(filters: Any) -> Any:
    """busca's filter texts for LangChain's dict of field to value or list of values
    ({"category": "Python", "tags": ["a", "b"]} -> "category=Python", "tags=a,b"); anything
    else as given (SearchSpec reads texts and lists of texts)."""
    if filters is None:
        return ()
    if not isinstance(filters, Mapping):
        return filters
    return tuple(_filter_text(field, value) for field, value in filters.items())


def _filter_text(field: Any, value: Any) -> str:
    values = value if isinstance(value, (list, tuple)) else [value]
    if not isinstance(field, str) or field.startswith("$") or not values or not all(
            isinstance(v, (str, int, float)) for v in values):
        raise FiltersNotSupported(
            f"filter {{{field!r}: {value!r}}}: a dict filter maps a field to a value or a list"
            " of values (one of them); for other conditions give busca's texts, e.g."
            " ['category=Python', 'date>=2015-01-01']")
    texts = [_filter_value(v) for v in values]
    if any("," in t or not t.strip() for t in texts):
        raise BadFilter(f"filter {{{field!r}: {value!r}}}: a value is empty or has a comma"
                        f" (a comma separates values): give a list, e.g. {{{field!r}: ['a', 'b']}}")
    return f"{field}={','.join(texts)}"


def _filter_value(value: str | int | float) -> str:
    if isinstance(value, bool):  # as busca reads a document's true/false (search/filters.py)
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    return str(value)


def _hint(name: str) -> str:
    if name in OPTIONS:
        return f" (give it in search_kwargs={{{name!r}: …}})"
    return f" (busca calls it {HINTS[name]})" if name in HINTS else ""


def _public(names) -> list[str]:
    return [n for n in names if n != "name"]
