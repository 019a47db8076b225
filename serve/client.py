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

from ..errors import BuscaError
from ..search.context import Context, Passage, Span
from ..search.hits import Hit
from .discovery import Record

TIMEOUT = 3.0  # seconds for the connection and for each read


class NotServed(BuscaError):
    """The server gave no usable answer; `note` is one line for stderr, or empty."""

    def __init__(self, note: str = ""):
        super().__init__(note or "no usable answer from busca serve")
        self.note = note


def search(record: Record, query: str, *, method: str, k: int, min_score: float | None,
           per_doc: int, log: bool, build: str, timeout: float = TIMEOUT) -> tuple[list[Hit], str]:
    """GET /api/search: the hits after the floor and the note when no word of the question
    is in the index (`busca search` prints it and exits 3)."""
    params = {"q": query, "method": method, "k": k, "per_doc": per_doc, "log": int(log)}
    if min_score is not None:
        params["min_score"] = repr(float(min_score))
    status, data = _request(record, "GET", "/api/search?" + urlencode(params), None, timeout)
    if status != 200:
        raise NotServed(_note(record, status, data))
    _same_build(record, data, build)
    with _readable(record):
        hits = [Hit(h["rank"], h["score"], h["chunk_id"], h["url"], h["title"], h["start"],
                    h["end"], h["text"], method) for h in data["hits"]]
        return hits, str(data.get("note") or "")


def context(record: Record, question: str, *, method: str, k: int, max_chars: int,
            min_score: float | None, per_doc: int, log: bool, build: str,
            timeout: float = TIMEOUT) -> Context:
    """POST /api/context: the Context `busca context` would build (its prompt is rendered
    by the caller, so --template and --lang apply as usual)."""
    body = {"q": question, "method": method, "k": k, "max_chars": max_chars,
            "per_doc": per_doc, "log": log}
    if min_score is not None:
        body["min_score"] = float(min_score)
    status, data = _request(record, "POST", "/api/context", body, timeout)
    if status == 409 and data.get("answer", "") is None and "best" in data:
        _same_build(record, data, build)
        with _readable(record):
            best = data["best"]
            hits = () if best is None else (Hit(1, float(best), -1, "", "", 0, 0, "", method),)
            return Context(question, method, data["floor"], hits,
                           reason=str(data.get("note") or ""), max_chars=max_chars)
    if status != 200:
        raise NotServed(_note(record, status, data))
    _same_build(record, data, build)
    with _readable(record):
        passages = tuple(_passage(p, method) for p in data["passages"])
        hits = tuple(h for p in passages for h in p.hits)
        return Context(question, method, data["floor"], hits, passages,
                       max_chars=data["max_chars"])


def _passage(p: dict, method: str) -> Passage:
    hits = tuple(Hit(h["rank"], h["score"], h["chunk_id"], p["url"], p["title"], h["start"],
                     h["end"], "", method) for h in p["hits"])
    spans = tuple(Span(s["start"], s["end"], s["text"]) for s in p["spans"])
    return Passage(p["rank"], p["url"], p["title"], p["score"], spans, hits, p["truncated"],
                   cite=p.get("cite") or "", section=p.get("section") or "")


@contextmanager
def _readable(record: Record):
    """NotServed, with a note, for an answer without the fields this client reads."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise NotServed(f"note: busca serve at {record.url} (pid {record.pid}) gave an answer"
                        f" this busca cannot read ({type(e).__name__}: {e}); searching in this"
                        " process") from None


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
