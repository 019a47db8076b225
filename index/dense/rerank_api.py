"""Client of the user's cross-encoder re-ranking server, in one of three request shapes.

No package ships a multilingual cross-encoder's weights, so, as for embeddings, the re-ranker
is the one the user serves. `KIND:MODEL` names the shape (docs/rerank.md gives the source of
each):
- `tei`: Hugging Face text-embeddings-inference, `POST {base}/rerank`
  `{"query", "texts", "truncate"}` → `[{"index", "score"}, …]` (TEI serves one model).
- `llamacpp`: llama.cpp's `llama-server --rerank`, `POST {base}/v1/rerank`
  `{"model", "query", "documents", "top_n"}` → `{"results": [{"index", "relevance_score"}]}`.
- `openai`: the hosted re-ranking APIs of the same shape (Jina, Cohere v1, vLLM),
  `POST {base}/v1/rerank`, as llamacpp.
Retries, timeouts, Retry-After and the key (`BUSCA_RERANK_KEY`, read by cli.py; only in the
Authorization header) work as for embeddings: the same ModelServerClient (embedding_api.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .embedding_api import (RETRIES, BadResponse, EmbeddingServerError, ModelServerClient,
                            public_url, usable_url)

if TYPE_CHECKING:
    import requests

KINDS = ("openai", "tei", "llamacpp")
TOP = 30  # candidates of the first stage the re-ranker re-scores
TIMEOUT = 60.0  # seconds per request (TOP passages through a cross-encoder on a CPU)
SUFFIX = "+rerank"  # the name of a re-ranked method in busca eval's rows: bm25+rerank


class RerankError(EmbeddingServerError, ValueError):
    """A malformed --rerank / --rerank-url."""


@dataclass(frozen=True)
class RerankSettings:
    """Which re-ranker, where, and how many candidates it re-scores; `key` stays out of reprs."""

    kind: str
    model: str
    url: str
    key: str | None = field(default=None, repr=False, compare=False)
    top: int = TOP
    timeout: float = TIMEOUT
    retries: int = RETRIES

    @property
    def label(self) -> str:
        """`KIND:MODEL`, as given to --rerank."""
        return f"{self.kind}:{self.model}"

    def describe(self) -> dict:
        return {"rerank": self.label, "url": public_url(self.url), "top": self.top}


def parse_rerank(value: str, url: str | None, *, key: str | None = None,
                 top: int = TOP) -> RerankSettings:
    """`KIND:MODEL` and the server's base URL as settings, or RerankError naming the fix."""
    kind, _, model = value.partition(":")
    if kind not in KINDS or not model.strip():
        raise RerankError(f"--rerank {value!r}: write KIND:MODEL with KIND one of"
                          f" {', '.join(KINDS)}, e.g. tei:BAAI/bge-reranker-v2-m3")
    if not url:
        raise RerankError(f"--rerank {value} needs the URL of its server: --rerank-url"
                          " http://HOST:PORT (or BUSCA_RERANK_URL)")
    if not usable_url(url):
        raise RerankError(f"bad re-ranking server URL {public_url(url)!r}: write it as"
                          " http://HOST:PORT")
    if top < 1:
        raise RerankError(f"--rerank-top must be at least 1, got {top}")
    return RerankSettings(kind, model.strip(), url, key or None, top)


def endpoint(settings: RerankSettings) -> str:
    """The URL each shape posts to, accepting a base that already ends in /v1."""
    base = settings.url.rstrip("/")
    if settings.kind == "tei":
        return base + "/rerank"
    return base + ("/rerank" if base.endswith("/v1") else "/v1/rerank")


class RerankClient(ModelServerClient):
    """Scores passages against a question through one re-ranking server."""

    what = "re-ranking server"
    fix = "start it or fix --rerank-url / BUSCA_RERANK_URL"
    fix_url = ("--rerank-url http://HOST:PORT, and a --rerank KIND that is the server's: tei,"
               " llamacpp or openai")
    key_variable = "BUSCA_RERANK_KEY"

    def __init__(self, settings: RerankSettings, *, session: requests.Session | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        super().__init__(settings.model, settings, endpoint(settings), session=session,
                         sleep=sleep)

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text, in the texts' order; one request."""
        if not texts:
            return []
        texts = list(texts)
        if self.settings.kind == "tei":
            body = {"query": query, "texts": texts, "truncate": True}
        else:
            body = {"model": self.model, "query": query, "documents": texts,
                    "top_n": len(texts)}
        return self._read(self._post(body), len(texts))

    def _read(self, answer, n: int) -> list[float]:
        """The scores of a TEI list or a `{"results": […]}` object, every index once."""
        key = "score" if self.settings.kind == "tei" else "relevance_score"
        try:
            items = answer if self.settings.kind == "tei" else answer["results"]
            found = {int(item["index"]): float(item[key]) for item in items}
        except (KeyError, TypeError, ValueError, OverflowError):
            raise BadResponse(f"the re-ranking server at {self.where} answered {_shape(answer)},"
                              f" not a {self.settings.kind} re-ranking ({SHAPES[self.settings.kind]})"
                              " — is --rerank's KIND right?") from None
        if sorted(found) != list(range(n)):
            raise BadResponse(f"the re-ranking server at {self.where} {_mismatch(found, n)}"
                              f" (it was sent {n}, 0 to {n - 1}, each to be scored once) — is"
                              " --rerank's KIND right?")
        if not all(map(math.isfinite, found.values())):
            raise BadResponse(f"the re-ranking server at {self.where} gave a score that is"
                              " NaN or infinite — check the server's model")
        return [found[i] for i in range(n)]


SHAPES = {"tei": 'a list of {"index", "score"}',
          "llamacpp": '{"results": [{"index", "relevance_score"}, …]}',
          "openai": '{"results": [{"index", "relevance_score"}, …]}'}


def _shape(answer) -> str:
    """What a JSON answer is, for a message: its type, and an object's (first item's) keys."""
    if isinstance(answer, dict):
        return f"an object with {_few(list(answer)) or 'no key'}"
    if isinstance(answer, list):
        first = _shape(answer[0]) if answer else ""
        return f"a list of {len(answer)}" + (f", the first {first}" if first else "")
    return f"a {type(answer).__name__}"


def _mismatch(found: dict, n: int) -> str:
    """Which passages an answer scored wrong: indexes beyond those sent, or none scored."""
    outside = sorted(i for i in found if not 0 <= i < n)
    missing = [i for i in range(n) if i not in found]
    told = ([f"scored passage {_few(outside)}, beyond those it was sent"] if outside else []) + (
        [f"scored no passage {_few(missing)}"] if missing else [])
    return " and ".join(told)


def _few(items: list) -> str:
    return ", ".join(map(str, items[:6])) + (", …" if len(items) > 6 else "")
