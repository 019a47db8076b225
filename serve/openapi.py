"""The OpenAPI 3.1 document of `busca serve`, served at GET /openapi.json.

Generated, not written by hand: each operation's parameters and request body are the JSON
schemas of the `Field`s the API reads them with (serve/params.py), the hit's schema is the
`Hit` record's fields, and every error answer is the body serve/errors.py gives. The write
endpoints are in the document only when the server has them (started with --token).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..version import __version__
from ..search.hits import Hit
from . import params
from .assets import ASSETS
from .params import Field

# statuses the middleware may give on any route (serve/app.py's Guard): a bad Host header,
# a request of a page of another site (Origin, Sec-Fetch-Site), a body or query string over
# its cap; and 500, an unexpected error (never with details)
GUARD = (400, 403, 413, 414, 500)
REASONS = {200: "OK", 303: "Back to the page / (signed in, or a server without --tokens)",
           400: "A parameter or field is missing, malformed or out of range (or an"
                           " unexpected Host header)",
           401: "No valid Authorization: Bearer <token>", 403: "A page of another site made the"
           " request (its Origin or Sec-Fetch-Site header); /eval with --tokens: only the"
           " write token may see it", 404: "Not found",
           409: "Conflict: the index changed meanwhile, or a build is already running",
           413: "The request body is too large", 414: "The query string is too long",
           422: "A saved run cannot be read", 500: "Internal error (details in the server log)",
           503: "No index yet, or the database or the embedding/re-ranking server is away",
           507: "The disk is full"}


@dataclass(frozen=True)
class Operation:
    """One route of the app: where its parameters are read from and what it answers."""

    path: str
    method: str
    summary: str
    answer: dict | None  # the schema of the success answer (None: it has no body)
    query: tuple[Field, ...] = ()
    body: tuple[Field, ...] | dict | None = None
    statuses: tuple[int, ...] = ()  # errors answered as JSON (serve/errors.py's body)
    write: bool = False
    media: tuple[str, ...] = ("application/json",)  # the success answer's content types
    pages: tuple[int, ...] = ()  # errors answered as an HTML page with the message
    success: int = 200
    page: bool = False  # a page for people: every error of its own is a page (not JSON)


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(properties: dict, required: tuple[str, ...] = (), **extra) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), **extra}


def _nullable(kind: str) -> dict:
    return {"type": [kind, "null"]}


_TYPES = {"int": "integer", "float": "number", "str": "string"}
_HIT_FIELDS = [f for f in dataclasses.fields(Hit) if f.name not in ("method", "meta")]
COLUMNS = ("Each method's top k as whole hits, each with its rank and score under every"
           " method; busca compare --json, Corpus.compare and the MCP compare tool give"
           " chunk ids here (the rows hold the same passages).")
QUERY = {"type": "string", "description": "The question again, as `question` (kept for the"
         " clients written before it)."}
HIT = _obj({**{f.name: {"type": _TYPES[str(f.type)]} for f in _HIT_FIELDS},
            "meta": {"type": "object", "description": "The document's metadata (categories,"
                     " tags, author, dates …), when it has any."}},
           tuple(f.name for f in _HIT_FIELDS))
RANKS = {"ranks": {"type": "object", "additionalProperties": _nullable("integer")},
         "scores": {"type": "object", "additionalProperties": _nullable("number")}}
SPAN = ("rank", "score", "chunk_id", "start", "end")  # a context passage's hits
INTEGER = {"type": "integer"}
LEFT_OUT = ("Documents left out: removed or changed in the store since the build (until the"
            " next POST /api/index); absent when none.")
ADDED = ("added", "updated", "metadata_updated", "unchanged", "duplicate", "documents")
SCHEMAS = {
    "Error": _obj({"error": {"type": "string"}, "status": {"type": "integer"}},
                  ("error", "status")),
    "Hit": HIT,
    "SearchResult": _obj({"question": {"type": "string"}, "query": QUERY,
                          "method": {"type": "string"},
                          "hits": {"type": "array", "items": _ref("Hit")},
                          "floor": _nullable("number"), "build": {"type": "string"},
                          "took_ms": {"type": "number"}, "note": {"type": "string"},
                          "best": {"type": "number"}, "rerank": _nullable("string"),
                          "left_out": {"type": "integer", "description": LEFT_OUT}},
                         ("question", "query", "method", "hits", "floor", "build")),
    "Context": _obj({"question": {"type": "string"}, "method": {"type": "string"},
                     "floor": _nullable("number"), "answered": {"type": "boolean"},
                     "max_chars": {"type": "integer"}, "chars": {"type": "integer"},
                     "lang": {"enum": list(params.LANGS), "description": "The prompt's"
                              " language: as asked, else the index's (en when its bm25"
                              " analyzer is en, else pt)."},
                     "passages": {"type": "array", "items": _ref("Passage")},
                     "prompt": {"type": "string"}, "build": {"type": "string"},
                     "rerank": {"type": "string"},
                     "left_out": {"type": "integer", "description": LEFT_OUT}},
                    ("question", "method", "answered", "passages", "prompt")),
    "NothingFound": _obj({"answer": {"type": "null"}, "reason": {"type": "string"},
                          "question": {"type": "string"}, "method": {"type": "string"},
                          "floor": _nullable("number"), "best": _nullable("number"),
                          "note": {"type": "string"}, "build": {"type": "string"},
                          "left_out": {"type": "integer", "description": LEFT_OUT},
                          "status": {"const": 409}}, ("answer", "reason", "status")),
    "Comparison": _obj({"question": {"type": "string"}, "query": QUERY,
                        "methods": {"type": "array", "items": {"type": "string"}},
                        "k": {"type": "integer"}, "per_doc": {"type": "integer"},
                        "depth": {"type": "integer", "description": "Every method ranks to"
                                  " this depth; a rank beyond it is null."},
                        "notes": {"type": "object", "additionalProperties": {"type": "string"},
                                  "description": "Why a method found nothing, by method."},
                        "columns": {"type": "object", "description": COLUMNS,
                                    "additionalProperties": {"type": "array",
                                                             "items": _ref("CompareHit")}},
                        "rows": {"type": "array", "items": _ref("CompareRow")},
                        "build": {"type": "string"}, "took_ms": {"type": "number"}},
                       ("question", "query", "methods", "columns", "rows")),
    "CompareHit": {"allOf": [_ref("Hit"), _obj(RANKS, tuple(RANKS))]},
    "CompareRow": _obj({**{k: v for k, v in HIT["properties"].items()
                           if k not in ("rank", "score")}, **RANKS},
                       ("chunk_id", "url", "title", "start", "end", "text", *RANKS)),
    "Passage": _obj({"rank": {"type": "integer"}, "url": {"type": "string"},
                     "cite": {"type": "string"}, "section": {"type": "string"},
                     "title": {"type": "string"}, "score": {"type": "number"},
                     "truncated": {"type": "boolean"},
                     "spans": {"type": "array", "items": _obj(
                         {"start": {"type": "integer"}, "end": {"type": "integer"},
                          "text": {"type": "string"}, "cite": {"type": "string"},
                          "section": {"type": "string"}}, ("start", "end", "text"))},
                     "hits": {"type": "array", "items": _obj(
                         {n: HIT["properties"][n] for n in SPAN}, SPAN)}},
                    ("rank", "url", "title", "score", "truncated", "spans", "hits")),
    "Chunk": _obj({k: v for k, v in HIT["properties"].items() if k not in ("rank", "score")},
                  ("chunk_id", "url", "title", "text")),
    "Stats": _obj({"documents": INTEGER, "index": {"type": "null", "description": "Before"
                                                   " the first index (then no build figures)"},
                   "words": INTEGER, "chunks": INTEGER,
                   "vocabulary": {"type": "object", "additionalProperties": INTEGER},
                   "chunker": {"type": "object"}, "build": {"type": "string"},
                   "methods": {"type": "object", "additionalProperties": {"type": "object"},
                               "description": "Each method's parameters, by method."},
                   "busca_version": {"type": "string"},
                   "pending": _obj({"changed": INTEGER, "removed": INTEGER},
                                   ("changed", "removed")),
                   "facets": {"type": "object", "additionalProperties": _obj(
                       {"values": INTEGER, "top": {"type": "object",
                                                   "additionalProperties": INTEGER}})},
                   "restricted": {"const": True, "description": "With --tokens: counts of"
                                  " what the request may see (no words nor vocabulary)."}},
                  ("documents",), description="What busca stats --json prints: the build's"
                  " figures and the documents stored since it, or {\"documents\": N,"
                  " \"index\": null} before the first index."),
    "Health": _obj({"status": {"enum": ["ok", "degraded"]}, "build": _nullable("string"),
                    "problem": {"type": "string"},
                    "chunks": {"type": "integer", "description": "Not with --tokens."},
                    "methods": {"type": "array", "items": {"type": "string"}}},
                   ("status", "build")),
    "Added": _obj({name: {"type": "integer"} for name in ADDED}, ADDED),
    "Removed": _obj({"deleted": {"type": "integer"},
                     "removed": {"type": "array", "items": {"type": "string"},
                                 "description": "The ids of the documents deleted, as stored;"
                                 " POST /api/index drops their chunks."},
                     "missing": {"type": "array", "items": {"type": "string"},
                                 "description": "The ids given that named no document."},
                     "documents": {"type": "integer"}},
                    ("deleted", "removed", "missing", "documents")),
    "Built": _obj({"build": {"type": "string"},
                   **{name: {"type": "integer"} for name in ("documents", "words", "chunks",
                                                            "rechunked_documents")},
                   "chunker": {"type": "object", "description": "The windows: kind, size,"
                               " overlap."},
                   "methods": {"type": "array", "items": {"type": "string"}},
                   "dense": {"type": "object", "description": "Per dense method: encoder,"
                             " dimension, chunks encoded, reused and from the vector cache,"
                             " chunks_per_second, truncated, max_length."},
                   "notes": {"type": "array", "items": {"type": "string"},
                             "description": "What the build could not keep from the previous"
                             " one (calibrated floors, settings of an index of another format"
                             " version) and how to get it back, as busca index says."},
                   "took_ms": {"type": "number"}}, ("build", "chunks", "methods")),
    "OpenAPI": {"type": "object", "description": "This document."},
}
HTML = {"type": "string"}
_DOCUMENTS = {"type": "object", "additionalProperties": False, "required": ["documents"],
              "properties": {"documents": {"type": "array", "minItems": 1,
                                           "maxItems": params.MAX_DOCUMENTS,
                                           "items": None}}}  # filled from params.DOCUMENT
_REMOVE = {"type": "object", "additionalProperties": False, "required": ["urls"],
           "properties": {"urls": {"type": "array", "minItems": 1,
                                   "maxItems": params.MAX_DOCUMENTS,
                                   "items": {"type": "string", "minLength": 1},
                                   "description": "Document ids (a hit's url; a URL in any"
                                   " spelling)."},
                          "prefix": {"type": ["boolean", "null"], "default": False,
                                     "description": "Remove every document whose id starts"
                                     " with each (a URL with its site, or a folder)."}}}

OPERATIONS = (
    Operation("/", "get", "The search page", HTML, query=params.PAGE, media=("text/html",),
              pages=(400, 409, 503), page=True),
    Operation("/eval", "get", "The saved evaluation runs, side by side", HTML,
              query=params.EVAL, media=("text/html",), pages=(400, 403, 404, 422),
              page=True),
    Operation("/login", "get", "A browser's sign-in with --tokens: an HTTP Basic challenge"
              " (a read token as the password), then back to /", None, pages=(401,),
              media=(), success=303, page=True),
    Operation("/static/{name}", "get", "The page's script, style sheet and icon", HTML,
              statuses=(404,), media=tuple(dict.fromkeys(
                  kind.split(";")[0] for kind in ASSETS.values()))),
    Operation("/healthz", "get", "Up, and which build it serves", _ref("Health")),
    Operation("/openapi.json", "get", "This document", _ref("OpenAPI")),
    Operation("/api/search", "get", "The hits of busca search --json", _ref("SearchResult"),
              query=params.SEARCH, statuses=(409, 503)),
    Operation("/api/compare", "get", "Each method's top k side by side", _ref("Comparison"),
              query=params.COMPARE, statuses=(409, 503)),
    Operation("/api/context", "post", "The cited prompt of busca context (409: nothing"
              " found)", _ref("Context"), body=params.CONTEXT, statuses=(409, 503)),
    Operation("/api/stats", "get", "What busca stats --json prints", _ref("Stats"),
              statuses=(503,)),
    Operation("/api/chunk/{chunk_id}", "get", "One chunk of the live index (409: its"
              " document changed since the build)", _ref("Chunk"), statuses=(404, 409, 503)),
    Operation("/api/documents", "post", "Add or replace documents (with --token)",
              _ref("Added"), body=_DOCUMENTS, statuses=(401, 409, 503, 507), write=True),
    Operation("/api/documents", "delete", "Remove documents by id (with --token); the index"
              " keeps their chunks until POST /api/index", _ref("Removed"), body=_REMOVE,
              statuses=(401, 409, 503, 507), write=True),
    Operation("/api/index", "post", "Rebuild the index and swap it in (with --token)",
              _ref("Built"), body=params.INDEX, statuses=(401, 409, 503, 507), write=True),
)
PATH_PARAMETERS = {
    "name": {"type": "string", "enum": list(ASSETS),
             "description": f"A file of the page ({', '.join(ASSETS)})."},
    "chunk_id": {"type": "integer", "minimum": 0, "description": "The chunk's id (a hit's"
                 " chunk_id)."},
}


OPEN = ("/healthz", "/openapi.json", "/static/{name}", "/login")  # the same for every token
NOT_LISTED = ("A method that a path does not list is answered 405 with the Error body and"
              " an Allow header naming the methods it takes.")
TOKENS = ("Started with --tokens: each request sees only the documents its read token may"
          " see (Authorization: Bearer TOKEN, or HTTP Basic with TOKEN as the password) and"
          " the public ones; without Authorization, only the public ones (none with"
          " --private); an unknown token is a 401; the write token sees everything.")


# relative to this document (OpenAPI 3.1): the server's root, or a reverse proxy's sub-path
# (https://intra.example/busca/), where the default server "/" names the proxy's root
SERVER = {"url": ".", "description": "where this document is served from"}


def document(*, writable: bool = False, tokens: bool = False) -> dict:
    """The OpenAPI 3.1 document of the app (its write endpoints only when `writable`; the
    read tokens' schemes when started with `tokens`)."""
    paths: dict = {}
    for op in OPERATIONS:
        if op.write and not writable:
            continue
        paths.setdefault(op.path, {})[op.method] = _operation(op, tokens)
    components: dict = {"schemas": SCHEMAS}
    if writable or tokens:
        components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    if tokens:
        components["securitySchemes"]["basic"] = {"type": "http", "scheme": "basic"}
    about = ("Search a busca corpus over HTTP (docs/serve.md). " + NOT_LISTED
             + (" " + TOKENS if tokens else ""))
    return {"openapi": "3.1.0",
            "info": {"title": "busca serve", "version": __version__, "description": about},
            "servers": [SERVER], "paths": paths, "components": components}


def _operation(op: Operation, tokens: bool = False) -> dict:
    out: dict = {"summary": op.summary, "operationId": _operation_id(op)}
    parameters = [_parameter(f) for f in op.query]
    parameters += [{"name": name, "in": "path", "required": True,
                    "schema": PATH_PARAMETERS[name]} for name in _path_names(op.path)]
    if parameters:
        out["parameters"] = parameters
    if op.body is not None:
        out["requestBody"] = {"required": op.path != "/api/index",
                              "content": {"application/json": {"schema": _body(op.body)}}}
    read = tokens and not op.write and op.path not in OPEN
    if op.write:
        out["security"] = [{"bearer": []}]
    elif read:  # a read token, or none (the public documents)
        out["security"] = [{"bearer": []}, {"basic": []}, {}]
    out["responses"] = {str(op.success): _success(op)}
    refused = {401} if read else set()  # an unknown token
    if op.page:  # the Guard's refusals stay JSON, the page's own errors are pages
        as_json, shown = set(op.statuses) | set(GUARD) - {500}, set(op.pages) | refused | {500}
    else:
        as_json, shown = set(op.statuses) | set(GUARD) | refused, set(op.pages)
    for status in sorted(as_json | shown):
        out["responses"][str(status)] = _error(status, _error_schema(op, status),
                                               json=status in as_json, page=status in shown)
    if "401" in out["responses"]:
        out["responses"]["401"]["headers"] = _challenge(op)
    return out


def _challenge(op: Operation) -> dict:
    """A 401's WWW-Authenticate: HTTP Basic for /login (a browser's sign-in), else Bearer
    (serve/errors.py CHALLENGE, RFC 6750)."""
    scheme = "Basic" if op.path == "/login" else "Bearer"
    return {"WWW-Authenticate": {"description": f'{scheme} realm="busca": the scheme to send',
                                 "schema": {"type": "string", "pattern": f"^{scheme} "}}}


def _success(op: Operation) -> dict:
    """The answer when all goes well: its content, or (/login) where it redirects."""
    out: dict = {"description": REASONS[op.success]}
    if op.success == 303:
        out["headers"] = {"Location": {"schema": {"type": "string", "const": "./"}}}
    if op.answer is not None:
        out["content"] = {m: {"schema": op.answer} for m in op.media}
    return out


def _error_schema(op: Operation, status: int) -> dict:
    """The JSON body of an error: /api/context's 409 is nothing found, or the index changed
    meanwhile (the error body)."""
    if (op.path, status) == ("/api/context", 409):
        return {"oneOf": [_ref("NothingFound"), _ref("Error")]}
    return _ref("Error")


def _operation_id(op: Operation) -> str:
    words = [w.strip("{}").replace(".", "_") for w in op.path.split("/") if w]
    return "_".join([op.method, *words]) if words else f"{op.method}_home"


def _path_names(path: str) -> list[str]:
    return [w[1:-1] for w in path.split("/") if w.startswith("{")]


def _parameter(field: Field) -> dict:
    return {"name": field.name, "in": "query", "required": field.required,
            "description": field.doc, "schema": _value(field)}


def _value(field: Field) -> dict:
    schema = field.schema()
    schema.pop("description")
    return schema


def _body(fields: tuple[Field, ...] | dict) -> dict:
    if isinstance(fields, dict) and "documents" not in fields["properties"]:
        return fields
    if isinstance(fields, dict):
        items = {**_fields_object(params.DOCUMENT), "additionalProperties": True,
                 "description": "Any other key is kept as metadata, as in a .jsonl line"
                 " of busca add."}
        documents = {**fields["properties"]["documents"], "items": items}
        return {**fields, "properties": {"documents": documents}}
    return _fields_object(fields)


def _fields_object(fields: tuple[Field, ...]) -> dict:
    return {"type": "object", "additionalProperties": False,
            "properties": {f.name: f.body_schema() for f in fields},
            "required": [f.name for f in fields if f.required]}


def _error(status: int, schema: dict, *, json: bool = True, page: bool = False) -> dict:
    """An error answer: the JSON body, and/or the page (HTML) that shows the message."""
    content = {"application/json": {"schema": schema}} if json else {}
    if page:
        content["text/html"] = {"schema": HTML}
    return {"description": REASONS[status], "content": content}
