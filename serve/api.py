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
from ..crawler import Document
from . import params
from .engine import Engine
from .errors import BadParameter, HttpError


def _engine(request: Request) -> Engine:
    return request.app.state.engine


def hit_json(hit: searching.Hit) -> dict:
    """A hit with the fields of `busca search --json` (method aside)."""
    return {"rank": hit.rank, "score": hit.score, "url": hit.url, "title": hit.title,
            "chunk_id": hit.chunk_id, "start": hit.start, "end": hit.end, "text": hit.text}


def search(request: Request) -> JSONResponse:
    """GET /api/search?q=&method=&k=&min_score=&per_doc=&log="""
    engine, args = _engine(request), request.query_params
    query = params.question(args.get("q"))
    method = params.method(args.get("method"), engine.methods())
    k = params.integer(args.get("k"), "k", default=params.K, low=1, high=params.MAX_K)
    min_score = params.number(args.get("min_score"), "min_score")
    per_doc = params.integer(args.get("per_doc"), "per_doc", default=0, low=0,
                             high=params.MAX_PER_DOC)
    log_query = params.flag(args.get("log"), "log")
    started = time.perf_counter()
    found = engine.search(query, method=method, k=k, min_score=min_score, per_doc=per_doc,
                          log_query=log_query)
    out = {"query": query, "method": method, "hits": [hit_json(h) for h in found.hits],
           "floor": found.floor, "build": found.build, "took_ms": _ms(started)}
    if found.note:
        out["note"] = found.note
    return JSONResponse(out)


def compare(request: Request) -> JSONResponse:
    """GET /api/compare?q=&methods=tfidf,bm25,dense,hybrid&k=&per_doc="""
    engine, args = _engine(request), request.query_params
    query = params.question(args.get("q"))
    methods = params.methods(args.get("methods"), engine.methods())
    k = params.integer(args.get("k"), "k", default=params.K, low=1, high=params.MAX_K)
    per_doc = params.integer(args.get("per_doc"), "per_doc", default=0, low=0,
                             high=params.MAX_PER_DOC)
    started = time.perf_counter()
    comparison, build = engine.compare(query, methods=methods, k=k, per_doc=per_doc)
    data = searching.comparison_dict(comparison)
    by_id = {row["chunk_id"]: row for row in data["rows"]}
    data["columns"] = {m: [{**hit_json(h), "ranks": by_id[h.chunk_id]["ranks"],
                            "scores": by_id[h.chunk_id]["scores"]} for h in hits]
                       for m, hits in comparison.columns.items()}
    return JSONResponse({**data, "build": build, "took_ms": _ms(started)})


CONTEXT_FIELDS = {"q", "k", "lang", "max_chars", "method", "min_score", "per_doc", "log"}


async def context(request: Request) -> JSONResponse:
    """POST /api/context {"q", "k", "lang", "max_chars", "method", "min_score", "per_doc",
    "log"}"""
    data = await _json_object(request)
    params.only(data, CONTEXT_FIELDS, "the context request")
    engine = _engine(request)
    question = params.question(data.get("q"))
    method = params.method(data.get("method"), await _threaded(engine.methods))
    k = params.integer(data.get("k"), "k", default=params.K, low=1, high=params.MAX_K)
    lang = params.choice(data.get("lang"), "lang", searching.LANGS, "pt")
    max_chars = params.integer(data.get("max_chars"), "max_chars",
                               default=searching.MAX_CHARS, low=1, high=params.MAX_CHARS)
    min_score = params.number(data.get("min_score"), "min_score")
    per_doc = params.integer(data.get("per_doc"), "per_doc", default=searching.CONTEXT_PER_DOC,
                             low=0, high=params.MAX_PER_DOC)
    log_query = params.flag(data.get("log"), "log")
    found, build = await _threaded(lambda: engine.context(
        question, method=method, k=k, max_chars=max_chars, min_score=min_score,
        per_doc=per_doc, log_query=log_query))
    if not found.answered:
        # best and note: what `busca context` says when it reuses this server
        return JSONResponse({"answer": None, "reason": _not_found(found), "question": question,
                             "method": method, "floor": found.floor,
                             "best": max(found.scores) if found.hits else None,
                             "note": found.reason, "build": build,
                             "status": 409}, status_code=409)
    prompt = searching.render(found, lang=lang)
    return JSONResponse({**searching.context_dict(found, prompt=prompt), "build": build})


def _not_found(found: searching.Context) -> str:
    if found.reason:
        return found.reason
    if found.hits and found.floor is not None:
        return (f"no passage scores {found.floor:.4f} or more (best {max(found.scores):.4f});"
                " lower min_score to see weaker matches")
    return "no passage passes the floor of any of the fused methods"


def stats(request: Request) -> JSONResponse:
    """GET /api/stats: what `busca stats --json` prints."""
    return JSONResponse(_engine(request).stats())


def chunk(request: Request) -> JSONResponse:
    """GET /api/chunk/{id}"""
    raw = request.path_params["chunk_id"]
    if not raw.isascii() or not raw.isdigit() or len(raw) > 12:
        raise BadParameter(f"the chunk id must be a whole number, got {raw[:40]!r}")
    hit = _engine(request).chunk(int(raw))
    if hit is None:
        raise HttpError(404, f"no chunk {int(raw)} in the live index")
    out = hit_json(hit)
    del out["rank"], out["score"]
    return JSONResponse(out)


def healthz(request: Request) -> JSONResponse:
    """GET /healthz: up, and which build it serves (null before the first index); while its
    database is away (a PostgreSQL home), still 200: status "degraded" and the problem."""
    engine = _engine(request)
    try:
        live = engine.live()
    except (indexing.IndexNotFound, indexing.IndexFormatError) as e:  # still up without one
        return JSONResponse({"status": "ok", "build": None, "problem": str(e)})
    except indexing.PostgresError as e:  # the process is up; the database is not (yet)
        return JSONResponse({"status": "degraded", "build": engine.last_build(),
                             "problem": str(e)})
    return JSONResponse({"status": "ok", "build": live.build, "chunks": live.manifest.chunks,
                         "methods": searching.available_methods(live.index)})


DOCUMENT_FIELDS = {"url", "title", "text", "modified"}


async def add_documents(request: Request) -> JSONResponse:
    """POST /api/documents {"documents": [{"url", "title", "text"}, …]} (token only)."""
    data = await _json_object(request)
    params.only(data, {"documents"}, "the request")
    items = data.get("documents")
    if not isinstance(items, list) or not items:
        raise BadParameter('give {"documents": [{"url": …, "title": …, "text": …}, …]}')
    if len(items) > params.MAX_DOCUMENTS:
        raise HttpError(413, f"{len(items)} documents in one request; at most"
                             f" {params.MAX_DOCUMENTS}")
    docs = [_document(item, n) for n, item in enumerate(items, start=1)]
    engine = _engine(request)
    return JSONResponse(await _threaded(lambda: engine.add(docs)))


def _document(item: object, n: int) -> Document:
    where = f"document {n}"
    if not isinstance(item, dict):
        raise BadParameter(f"{where} must be an object with url, title and text")
    params.only(item, DOCUMENT_FIELDS, where)
    for key in ("url", "text"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise BadParameter(f"{where}: {key} must be a non-empty string")
    title = item.get("title") or item["url"]
    if not isinstance(title, str):
        raise BadParameter(f"{where}: title must be a string")
    modified = item.get("modified")
    if modified is not None and not isinstance(modified, str):
        raise BadParameter(f"{where}: modified must be a string (ISO 8601) or absent")
    return Document(item["url"].strip(), title, item["text"], source="api", modified=modified)


async def rebuild(request: Request) -> JSONResponse:
    """POST /api/index {"size", "overlap"} (token only): rebuild and swap in the index."""
    data = await _json_object(request, empty_ok=True)
    params.only(data, {"size", "overlap"}, "the index request")
    size = params.integer(data.get("size"), "size", default=0, low=1, high=100_000) or None
    overlap = data.get("overlap")
    if overlap is not None:
        overlap = params.integer(overlap, "overlap", default=0, low=0, high=99_999)
    engine = _engine(request)
    started = time.perf_counter()
    manifest = await _threaded(lambda: engine.rebuild(size=size, overlap=overlap))
    return JSONResponse({key: manifest[key] for key in
                         ("build", "documents", "words", "chunks", "rechunked_documents",
                          "chunker")} | {"methods": list(manifest["methods"]),
                                         "took_ms": _ms(started)})


async def _json_object(request: Request, *, empty_ok: bool = False) -> dict:
    raw = await request.body()
    if not raw.strip() and empty_ok:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadParameter(f"the body is not valid JSON ({e})") from None
    except RecursionError:  # json's parser recurses once per level of nesting
        raise BadParameter("the JSON body is nested too deeply; send a flat JSON object"
                           " as the documentation shows") from None
    if not isinstance(data, dict):
        raise BadParameter("the body must be a JSON object")
    return data


async def _threaded(work):
    return await run_in_threadpool(work)


def _ms(started: float) -> float:
    return round(1000 * (time.perf_counter() - started), 2)
