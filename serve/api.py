"""The JSON API: one function per endpoint, each a few parameter reads and one engine call.

Sync functions: Starlette runs them in its thread pool, so a slow query never blocks others.
"""

from __future__ import annotations

import json
import time

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from .. import index as indexing
from .. import search as searching
from . import access, openapi, params
from .engine import Engine
from .errors import BadParameter, HttpError, for_client, public_methods


def _engine(request: Request) -> Engine:
    """The engine as this request may see it (serve/access.py: its token's documents)."""
    return access.engine_for(request)


def _query(request: Request, fields: tuple[params.Field, ...] = ()):
    """The query string, its unknown or repeated parameters refused."""
    params.query_string(request.query_params, fields, request.url.path)
    return request.query_params


def search(request: Request) -> JSONResponse:
    """GET /api/search?q=&method=&k=&min_score=&per_doc=&log=&fusion=&window=&rrf_k=&weights=
    &filter= (repeatable)"""
    args = _query(request, params.SEARCH)
    engine = _engine(request)
    query = params.Q.read(args.get("q"))
    spec = params.search_spec(args)
    log_query = params.LOG.read(args.get("log"))
    rerank = params.RERANK.read(args.get("rerank"))
    started = time.perf_counter()
    result = engine.search(query, spec, log_query=log_query, rerank=rerank)
    return JSONResponse(result.to_json(took_ms=_ms(started)))


def compare(request: Request) -> JSONResponse:
    """GET /api/compare?q=&methods=tfidf,bm25,dense,hybrid&k=&per_doc=&filter="""
    args = _query(request, params.COMPARE)
    engine = _engine(request)
    values = params.read(params.COMPARE, args)
    started = time.perf_counter()
    comparison, build = engine.compare(values["q"], methods=values["methods"], k=values["k"],
                                       per_doc=values["per_doc"], rerank=values["rerank"],
                                       filters=values["filter"])
    out = comparison.to_json(hits=True, build=build, took_ms=_ms(started))
    out["notes"] = {m: for_client(request, note) for m, note in out.get("notes", {}).items()}
    return JSONResponse(out)


async def context(request: Request) -> JSONResponse:
    """POST /api/context {"q", "k", "lang", "max_chars", "method", "min_score", "per_doc",
    "fusion", "window", "rrf_k", "weights", "log", "filter": ["category=Python", …]}"""
    data = await _json_object(request)
    params.json_body(data, params.CONTEXT, "the context request")
    params.hybrid_only(data)
    engine = _engine(request)
    values = params.read(params.CONTEXT, data)
    question, method, lang = values.pop("q"), values["method"], values.pop("lang")
    log_query, rerank = values.pop("log"), values.pop("rerank")
    filters = values.pop("filter")
    found, build = await _threaded(lambda: engine.context(question, log_query=log_query,
                                                          rerank=rerank, filters=filters,
                                                          **values))
    if not found.answered:
        # best and note: what `busca context` says when it reuses this server
        return JSONResponse({"answer": None, "reason": found.why_nothing(), "question": question,
                             "method": method, "floor": found.floor,
                             "best": found.best,
                             "note": found.reason, "build": build,
                             **({"left_out": found.left_out} if found.left_out else {}),
                             "status": 409}, status_code=409)
    return JSONResponse({**searching.context_dict(found, lang=lang), "build": build})


def stats(request: Request) -> JSONResponse:
    """GET /api/stats: what `busca stats --json` prints."""
    _query(request)
    return JSONResponse(_engine(request).stats())


def chunk(request: Request) -> JSONResponse:
    """GET /api/chunk/{id}"""
    _query(request)
    raw = request.path_params["chunk_id"]
    if not raw.isascii() or not raw.isdigit():
        raise BadParameter(f"the chunk id must be a whole number, got {raw[:40]!r}")
    if len(raw) > 12:  # beyond any index: not worth a look-up
        raise HttpError(404, f"no chunk {raw[:40]} in the live index")
    hit = _engine(request).chunk(int(raw))
    if hit is None:
        raise HttpError(404, f"no chunk {int(raw)} in the live index")
    out = hit.to_json(method=False)
    del out["rank"], out["score"]
    return JSONResponse(out)


def healthz(request: Request) -> JSONResponse:
    """GET /healthz: up, and which build it serves (null before the first index); while its
    database is away (a PostgreSQL home) or the build lost a file or table, still 200: status
    "degraded" and the problem (the message a search meets); no token needed (with --tokens,
    no chunk count)."""
    _query(request)
    engine: Engine = request.app.state.engine
    try:
        live = engine.live()
    except (indexing.IndexNotFound, indexing.IndexFormatError) as e:  # still up without one
        return JSONResponse({"status": "ok", "build": None, "problem": for_client(request, e)})
    except indexing.PostgresError as e:  # the process is up; the database is not (yet)
        return _degraded(engine.last_build(), for_client(request, e))
    problem = engine.damage(live)
    if problem is not None:
        return _degraded(live.build, for_client(request, problem))
    chunks = {} if request.app.state.access else {"chunks": live.manifest.chunks}
    return JSONResponse({"status": "ok", "build": live.build, **chunks,
                         "methods": searching.available_methods(live.index)})


def _degraded(build: str | None, problem: object) -> JSONResponse:
    return JSONResponse({"status": "degraded", "build": build, "problem": str(problem)})


def openapi_document(request: Request) -> JSONResponse:
    """GET /openapi.json: the OpenAPI 3.1 document of this server's routes."""
    _query(request)
    return JSONResponse(openapi.document(writable=request.app.state.writable,
                                         tokens=request.app.state.access is not None))


async def documents(request: Request) -> JSONResponse:
    """/api/documents (token only): POST adds documents, DELETE removes them."""
    if request.method == "DELETE":
        return await remove_documents(request)
    return await add_documents(request)


async def add_documents(request: Request) -> JSONResponse:
    """POST /api/documents {"documents": [{"url", "title", "text", …}, …]} (token only):
    each document an object as a .jsonl line of `busca add` is (crawler/fields.py reads both,
    through `Corpus.add`)."""
    data = await _documents_body(request)
    params.only(data, {"documents"}, "the request")
    items = data.get("documents")
    if not isinstance(items, list) or not items:
        raise BadParameter(f"give {DOCUMENTS_BODY}")
    if len(items) > params.MAX_DOCUMENTS:
        raise HttpError(413, f"{len(items)} documents in one request; at most"
                             f" {params.MAX_DOCUMENTS}")
    engine = _engine(request)
    return JSONResponse(await _threaded(lambda: engine.add(items)))


DOCUMENTS_BODY = '{"documents": [{"url": …, "title": …, "text": …}, …]}'


async def _documents_body(request: Request) -> dict:
    """POST /api/documents' JSON object; a body of JSON Lines (a .jsonl file sent as it is),
    a list or one document is a 400 saying how to wrap them."""
    try:
        data = await _json_object(request)
    except BadParameter:
        shape = _shape(await request.body())
        if shape:
            raise BadParameter(f"the body is {shape}: send one JSON object,"
                               f" {DOCUMENTS_BODY} (busca add FILE.jsonl reads a file of"
                               " JSON Lines)") from None
        raise
    if "documents" not in data and {"url", "_id", "text"} & set(data):
        raise BadParameter(f"the body is one document: send one JSON object,"
                           f" {DOCUMENTS_BODY}")
    return data


def _shape(raw: bytes) -> str:
    """"JSON Lines" or "a JSON list" when `raw` is one, else ""."""
    lines = [line for line in raw.splitlines() if line.strip()]
    try:
        if len(lines) > 1 and isinstance(json.loads(lines[0]), dict):
            return "JSON Lines (one document a line)"
        return "a JSON list" if isinstance(json.loads(raw), list) else ""
    except (ValueError, UnicodeDecodeError, RecursionError):
        return ""


async def remove_documents(request: Request) -> JSONResponse:
    """DELETE /api/documents {"urls": [id, …], "prefix": false} (token only)."""
    data = await _json_object(request)
    params.only(data, {"urls", "prefix"}, "the request")
    urls, prefix = data.get("urls"), data.get("prefix")
    if not isinstance(urls, list) or not urls:
        raise BadParameter('give {"urls": [a document id, …]}: the ids search answers give'
                           ' as "url"')
    if len(urls) > params.MAX_DOCUMENTS:
        raise HttpError(413, f"{len(urls)} ids in one request; at most {params.MAX_DOCUMENTS}")
    if not all(isinstance(u, str) for u in urls):
        raise BadParameter("urls must be a list of strings (document ids)")
    if prefix is not None and not isinstance(prefix, bool):
        raise BadParameter("prefix must be true or false")
    engine = _engine(request)
    return JSONResponse(await _threaded(lambda: engine.remove(urls, prefix=bool(prefix))))


async def rebuild(request: Request) -> JSONResponse:
    """POST /api/index {"size", "overlap"} (token only): rebuild and swap in the index."""
    data = await _json_object(request, empty_ok=True)
    params.json_body(data, params.INDEX, "the index request")
    values = params.read(params.INDEX, data)
    engine = _engine(request)
    started = time.perf_counter()
    notes: list[str] = []
    manifest = await _threaded(lambda: engine.rebuild(**values, on_note=notes.append))
    out = manifest.summary(notes=[for_client(request, note) for note in notes],
                           took_ms=_ms(started))
    return JSONResponse({**out, "dense": public_methods(out["dense"])})


async def _json_object(request: Request, *, empty_ok: bool = False) -> dict:
    """The request's JSON object (its query string refused: a POST's fields are its body's,
    none is read from the URL)."""
    if request.url.query:
        raise BadParameter(f"{request.method} {request.url.path} reads its fields from the"
                           " JSON body, not the query string: send them in the body and"
                           " drop the ?…")
    raw = await request.body()
    if not raw.strip() and empty_ok:
        return {}
    try:
        huge: list[_Huge] = []
        data = json.loads(raw, parse_int=lambda text: _integer(text, huge),
                          object_pairs_hook=_unique_keys)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadParameter(f"the body is not valid JSON ({e})") from None
    except RecursionError:  # json's parser recurses once per level of nesting
        raise BadParameter("the JSON body is nested too deeply; send a flat JSON object"
                           " as the documentation shows") from None
    if not isinstance(data, dict):
        raise BadParameter("the body must be a JSON object")
    if huge:
        _no_huge_integer(data)
    lone = indexing.lone_surrogate(data)  # a \ud800 escape alone: no answer can carry it
    if lone is not None:
        raise BadParameter(f"the body holds a lone surrogate ({lone!r}): escape"
                           " characters as valid UTF-16 pairs, or send UTF-8")
    return data


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object whose keys are all different (json.loads keeps a repeated key's last
    value silently, where a repeated query parameter is refused)."""
    data = dict(pairs)
    if len(data) < len(pairs):
        seen: set[str] = set()
        repeated = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise BadParameter(f"the key {repeated[:40]!r} is given twice in the body: give each"
                           " field once")
    return data


class _Huge:
    """An integer literal too long for int() (Python refuses more than 4300 digits)."""

    def __init__(self, digits: int):
        self.digits = digits


def _integer(text: str, huge: list) -> int | _Huge:
    """An integer literal of the body: its int, or a _Huge (also added to `huge`)."""
    try:
        return int(text)
    except ValueError:
        huge.append(_Huge(len(text.lstrip("-"))))
        return huge[-1]


def _no_huge_integer(data: dict) -> None:
    """BadParameter naming the field that holds an integer too long to read."""
    stack: list[tuple[str, object]] = list(data.items())
    while stack:
        where, value = stack.pop()
        if isinstance(value, _Huge):
            raise BadParameter(f"{where[:80]} is a number of {value.digits} digits; no field"
                               " takes one that long: send a number within its range")
        if isinstance(value, dict):
            stack += [(f"{where}.{key}", item) for key, item in value.items()]
        elif isinstance(value, list):
            stack += [(f"{where}[{n}]", item) for n, item in enumerate(value)]


async def _threaded(work):
    return await run_in_threadpool(work)


def _ms(started: float) -> float:
    return round(1000 * (time.perf_counter() - started), 2)
