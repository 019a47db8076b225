"""Ask a running `busca serve` of the same home (serve/discovery.py found it) for the hits of
`busca search` or the passages of `busca context`, over its JSON API on the loopback
interface, and turn the answer back into the library's values (search.Hit, search.Context),
so the command prints exactly what it would have computed itself.

Standard library only (http.client, imported on the first request): no HTTP client stack.
Anything but a usable answer raises NotServed; the caller then computes in its own process.
`NotServed.note` says what went wrong when a person should know (the server did not answer,
or answered on another build); it is empty when the caller's own path will say it better (a
4xx: the same error, worded for the command line).
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from urllib.parse import urlencode, urlsplit

from ..corpus import ContextSpec, Result, SearchSpec
from ..errors import BuscaError
from ..index.dense.dense_models import is_hybrid
from ..search.context import Context
from ..version import __version__
from .discovery import Record

TIMEOUT = 3.0  # seconds for the connection and for each read


class NotServed(BuscaError):
    """The server gave no usable answer; `note` is one line for stderr, or empty."""

    def __init__(self, note: str = ""):
        super().__init__(note or "no usable answer from busca serve")
        self.note = note


def ask(record: Record, question: str, spec: SearchSpec, *, build: str,
        timeout: float = TIMEOUT) -> Result | Context:
    """The server's Result of a SearchSpec, or its Context of a ContextSpec (not asked when
    its record says it runs another busca version: its answers are that version's)."""
    _same_version(record)
    if isinstance(spec, ContextSpec):
        return context(record, question, spec, build=build, timeout=timeout)
    return search(record, question, spec, build=build, timeout=timeout)


def search(record: Record, query: str, spec: SearchSpec, *, build: str,
           timeout: float = TIMEOUT) -> Result:
    """GET /api/search: the hits after the floor, and the note when no word of the question
    is in the index (`busca search` prints it and exits 3)."""
    params = {"q": query, "method": spec.method, "k": spec.k, "per_doc": spec.per_doc, "offset": spec.offset,
              "log": int(spec.log), "rerank": int(spec.rerank is not None)}
    if spec.min_score is not None:
        params["min_score"] = repr(float(spec.min_score))
    params.update(_hybrid(spec))
    query = urlencode([*params.items(), *(("filter", str(f)) for f in spec.filters)])
    status, data = _request(record, "GET", "/api/search?" + query, None, timeout)
    if status != 200:
        raise NotServed(_note(record, status, data))
    _same_build(record, data, build)
    _same_rerank(data, spec)
    with _readable(record):
        return Result.from_json(data)


def _hybrid(spec: SearchSpec) -> dict:
    """hybrid's options as the API takes them (none for a method that fuses nothing)."""
    if not is_hybrid(spec.method):
        return {}
    options = {"fusion": spec.fusion, "window": spec.window, "rrf_k": float(spec.rrf_k)}
    if spec.weights:
        options["weights"] = ",".join(f"{m}={float(w)!r}" for m, w in spec.weights.items())
    return options


def _same_rerank(data: dict, spec: SearchSpec) -> None:
    """A server that re-ranks answers only a search that asks for its re-ranker."""
    if (data.get("rerank") or None) != (spec.rerank.label if spec.rerank else None):
        raise NotServed()


def context(record: Record, question: str, spec: ContextSpec, *, build: str,
            timeout: float = TIMEOUT) -> Context:
    """POST /api/context: the Context `busca context` would build (its prompt is rendered
    by the caller, so --template and --lang apply as usual)."""
    body = {"q": question, "method": spec.method, "k": spec.k, "max_chars": spec.max_chars,
            "per_doc": spec.per_doc, "log": spec.log, "rerank": spec.rerank is not None,
            **_hybrid(spec)}
    if spec.filters:
        body["filter"] = [str(f) for f in spec.filters]
    if spec.min_score is not None:
        body["min_score"] = float(spec.min_score)
    status, data = _request(record, "POST", "/api/context", body, timeout)
    if status == 409 and data.get("answer", "") is None and "best" in data:
        _same_build(record, data, build)
        with _readable(record):
            best = None if data["best"] is None else float(data["best"])
            return Context(question, spec.method, data["floor"], (), max_chars=spec.max_chars,
                           reason=str(data.get("note") or ""), top=best,
                           left_out=int(data.get("left_out") or 0))
    if status != 200:
        raise NotServed(_note(record, status, data))
    _same_build(record, data, build)
    _same_rerank(data, spec)
    with _readable(record):
        return Context.from_json(data)


@contextmanager
def _readable(record: Record):
    """NotServed, with a note, for an answer without the fields this client reads."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise NotServed(f"note: busca serve at {record.url} (pid {record.pid}) gave an answer"
                        f" this busca cannot read ({type(e).__name__}: {e}); searching in this"
                        " process") from None


def _same_version(record: Record) -> None:
    """NotServed unless the server runs this busca version (after an upgrade, a server
    started before it runs the old code: its passages, floors and notes are the old ones)."""
    if record.version != __version__:
        raise NotServed(f"note: busca serve at {record.url} (pid {record.pid}) runs busca"
                        f" {record.version}, this is busca {__version__}; searching in this"
                        " process (restart busca serve to use it)")


def _same_build(record: Record, data: dict, build: str) -> None:
    """NotServed unless the server answered on the build the caller reads (it follows
    `busca index` on its next request; a server that cannot load the new build does not)."""
    if data.get("build") != build:
        raise NotServed(f"note: busca serve at {record.url} (pid {record.pid}) answers on build"
                        f" {data.get('build')}, not {build}; searching in this process")


def _note(record: Record, status: int, data: dict) -> str:
    if 400 <= status < 500:
        return ""  # the caller's own run gives the same error, worded for the command line
    why = data.get("error") or f"HTTP {status}"
    return (f"note: busca serve at {record.url} (pid {record.pid}) failed ({why});"
            " searching in this process")


def _request(record: Record, verb: str, target: str, body: dict | None,
             timeout: float) -> tuple[int, dict]:
    import http.client  # noqa: PLC0415  (only when a server is there to ask)

    parts = urlsplit(record.url)
    payload = None if body is None else json.dumps(body).encode("utf-8")
    headers = {"Accept": "application/json"}
    if payload is not None:
        headers["Content-Type"] = "application/json"
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        connection.request(verb, target, body=payload, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        status = response.status
    except (OSError, http.client.HTTPException) as e:
        raise NotServed(f"note: busca serve at {record.url} (pid {record.pid}) did not answer"
                        f" ({_reason(e)}); searching in this process") from None
    finally:
        connection.close()
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise NotServed(f"note: busca serve at {record.url} (pid {record.pid}) gave an answer"
                        " that is not JSON; searching in this process")
    return status, data


def _reason(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return "timed out"
    return getattr(error, "strerror", None) or type(error).__name__
