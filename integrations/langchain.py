"""`BuscaRetriever`: a busca corpus as a LangChain retriever (langchain-core only).

Each call is one `Corpus.search` (busca.open): the method, k, floor and re-ranker of
`busca search`, and a `Document` per hit whose metadata carries the citation URL (`source`,
`url`), the title, the score and rank (the re-ranker's when re-ranked), the chunk id and the
span in the document. A question with nothing above the floor gives no documents.
`filters` are not supported yet (another issue): a non-empty one is refused, never ignored.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr

from ..corpus import METHOD, SearchSpec, open as open_corpus
from ..errors import BuscaError
from ..search.collapse import PER_DOC
from ..search.scorers import K


class FiltersNotSupported(BuscaError):
    """A retriever asked to filter documents, which busca cannot do yet."""


class BuscaRetriever(BaseRetriever):
    """The passages of a busca home (folder or postgresql:// URL) for a question."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    home: str | Path  # a folder, or a postgresql:// URL
    method: str = METHOD
    k: int = K
    min_score: float | None = None  # None: the method's calibrated floor, as busca search
    per_doc: int = PER_DOC
    filters: dict[str, Any] | None = None  # not supported yet: must stay empty
    rerank: Any = None  # busca.index.parse_rerank(...) settings, or None
    log: bool = False  # record the questions in the home's query log

    _local: threading.local = PrivateAttr(default_factory=threading.local)

    def model_post_init(self, context: Any) -> None:
        if self.filters:
            raise FiltersNotSupported(
                f"filters are not supported yet (got {sorted(self.filters)}); leave filters"
                " out — busca searches the whole corpus")

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        spec = SearchSpec(method=self.method, k=self.k, min_score=self.min_score,
                          per_doc=self.per_doc, log=self.log, rerank=self.rerank)
        result = self._corpus().search(query, spec)
        return [Document(page_content=hit.text, id=str(hit.chunk_id), metadata={
            "source": hit.url, "url": hit.url, "title": hit.title, "score": hit.score,
            "rank": hit.rank, "chunk_id": hit.chunk_id, "start": hit.start, "end": hit.end,
            "method": result.method, "floor": result.floor,
            **({"rerank": result.rerank} if result.rerank else {})}) for hit in result.hits]

    def _corpus(self):
        """This thread's Corpus (SQLite handles stay in the thread that opened them)."""
        corpus = getattr(self._local, "corpus", None)
        if corpus is None:
            corpus = self._local.corpus = open_corpus(self.home, create=False)
        return corpus
