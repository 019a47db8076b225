"""The re-ranking stage: a cross-encoder served by the user re-scores a method's top N.

The first stage (any method, with its floor and per-document cap) ranks N candidates
(`--rerank-top`, default 30, at least k); the re-ranker scores each candidate's text against
the question and the best k by that score are the answer, their `score` the re-ranker's. A
server that cannot answer raises (index/dense/rerank_api.py): the first stage's order is never
passed off as re-ranked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..index.dense.rerank_api import RerankClient, RerankSettings
from .hits import Hit


@dataclass(frozen=True)
class Reranker:
    """A re-ranking server and how many candidates it re-scores."""

    client: RerankClient
    top: int
    label: str  # KIND:MODEL

    @classmethod
    def of(cls, settings: RerankSettings) -> Reranker:
        return cls(RerankClient(settings), settings.top, settings.label)

    def depth(self, k: int) -> int:
        """How many candidates the first stage ranks for a top k."""
        return max(k, self.top)

    def __call__(self, question: str, hits: Sequence[Hit], k: int) -> list[Hit]:
        """The best `k` of `hits` by the re-ranker's score, ranked 1.. (ties keep the first
        stage's order)."""
        candidates = list(hits)[:self.depth(k)]
        scores = self.client.scores(question, [h.text for h in candidates])
        order = sorted(range(len(candidates)), key=lambda i: -scores[i])[:k]
        return [replace(candidates[i], rank=rank, score=scores[i])
                for rank, i in enumerate(order, start=1)]
