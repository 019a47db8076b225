"""`busca mcp`: the corpus as Model Context Protocol tools, over stdio or streamable HTTP.

Tools: `search`, `context` (the cited prompt, or "nothing found"), `compare`, `get_chunk` and
`stats`, each one call of busca serve's engine (serve/engine.py: the library's use cases with
the CLI's defaults and floor); their arguments and results are typed, so the SDK (`mcp` 2.x,
the `mcp` extra) publishes JSON schemas for both. Read-only: no tool writes to the home, and
questions are not logged unless the server is started with --log. One worker thread runs the
calls (its SQLite handles stay in that thread; the loaded build and encoder are shared by
every call), so calls run one at a time without blocking the protocol. A BuscaError is the
tool's error: its one line, never a traceback; a malformed call is the SDK's validation error.

Over HTTP with `--tokens`, what each call may see is serve/access.py's: `access.Gate` reads
the request's Authorization, and each tool runs on `scoped(engine, rule)`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, ToolAnnotations
from pydantic import Field, ValidationError
from typing_extensions import NotRequired, TypedDict  # pydantic needs these before 3.12

from ..version import __version__
from .. import search as searching
from ..corpus import METHOD, ContextSpec, SearchSpec
from ..errors import BuscaError
from ..search.scorers import COMPARE_K
from ..search.hits import Hit
from ..search.context import LANGS, MAX_CHARS as CONTEXT_CHARS, PER_DOC as CONTEXT_PER_DOC
from .access import Access, Gate, Scoped, scoped
from .engine import Engine
from .errors import BadParameter, for_engine, shown_path, told
from .params import (FILTER, MAX_CHARS, MAX_FILTERS, MAX_K, MAX_PER_DOC, MAX_QUERY,
                     MAX_WINDOW, only, schema_types, typed)

T = TypeVar("T")
NAME = "busca"
MCP_PATH = "/mcp"  # where busca mcp --http answers
MCP_HOSTS = "127.0.0.1, [::1], localhost or a name given with busca mcp --allow-host"
# the request headers of a browser's MCP client (streamable HTTP: the session, the protocol
# version, an SSE stream resumed; 2026-07-28's Mcp-Method and Mcp-Name), which a --cors
# preflight allows, and the answer's headers its page must read to go on
MCP_CORS_HEADERS = ("Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version",
                    "Last-Event-ID", "Mcp-Method", "Mcp-Name")
MCP_EXPOSED = ("Mcp-Session-Id", "Mcp-Protocol-Version")
INSTRUCTIONS = ("Search a corpus of documents indexed by busca. Use `context` to get passages"
                " cited as [fonte: URL] with an instruction to answer only from them (or"
                " 'nothing found': then say you do not know); `search` for the ranked hits;"
                " `stats` for the methods this index has.")

Question = Annotated[str, Field(min_length=1, max_length=MAX_QUERY, description="The question.")]
Method = Annotated[str, Field(description="tfidf, bm25, dense, sparse, hybrid, or dense:NAME"
                                          " / hybrid:NAME of a dense model (stats' methods"
                                          " lists those of this index).")]
K = Annotated[int, Field(ge=1, le=MAX_K, description="How many hits (windows).")]
MinScore = Annotated[float | None, Field(allow_inf_nan=False, description=(
    "The floor; default: the method's calibrated floor."))]
Filters = Annotated[Annotated[list[str], Field(max_length=MAX_FILTERS)]
                    | Annotated[str, Field(max_length=MAX_QUERY)] | None,
                    Field(description=FILTER.doc.replace("repeatable, ", "")
                          + " One filter may be given as a text.")]
Methods = Annotated[list[str] | str | None, Field(description=(
    "The methods side by side: a list, or one text such as \"bm25,dense\" (default: tfidf,"
    " bm25, dense, hybrid, those the index has)."))]
# hybrid's options (search, context), as HTTP and the CLI take them (SearchSpec checks them)
Fusion = Annotated[str, Field(description="hybrid: how the scores are fused: "
                              + ", ".join(searching.FUSIONS) + ".")]
Window = Annotated[int, Field(ge=1, le=MAX_WINDOW, description="hybrid: top hits of each method"
                                                               " that are fused.")]
RrfK = Annotated[float, Field(ge=0, allow_inf_nan=False, description="hybrid: the RRF"
                                                                    " constant k.")]
Lang = Annotated[Annotated[str, Field(pattern="^(" + "|".join(LANGS) + ")$")] | None,
                 Field(description="The instruction's language; default: en when the index's"
                       " bm25 analyzer is en, else pt.")]
Weights = Annotated[str | dict[str, float] | None, Field(description=(
    "hybrid: methods and weights, \"bm25=1,dense=0.5\" or {\"bm25\": 1, \"dense\": 0.5}"
    " (default: the index's)."))]
Offset = Annotated[int, Field(ge=0, le=MAX_K, description="Skip the first N hits (the next"
                                                          " page).")]


_TYPES = {"int": int, "float": float, "str": str,
          "dict | None": NotRequired[dict]}  # meta: only when the document has metadata
# a hit as busca search --json gives it (method aside), and a chunk (a hit without rank, score)
HitOut = TypedDict("HitOut", {f.name: _TYPES[str(f.type)] for f in fields(Hit)
                              if f.name != "method"})
ChunkOut = TypedDict("ChunkOut", {f.name: _TYPES[str(f.type)] for f in fields(Hit)
                                  if f.name not in ("method", "rank", "score")})


class SearchOut(TypedDict):
    question: str
    query: str  # the question again, kept for the clients written before `question`
    method: str
    hits: list[HitOut]
    floor: float | None
    build: str
    note: NotRequired[str]  # why no hit was kept, when none was
    best: NotRequired[float]  # the best score ranked, when the floor kept none
    rerank: NotRequired[str]
    left_out: NotRequired[int]  # documents removed or changed since the build, left out


class ContextOut(TypedDict):
    answered: bool
    prompt: str | None  # None when nothing was found
    message: str  # "nothing found: …" when not answered
    question: str
    method: str
    floor: float | None
    lang: str  # the prompt's language: as asked, else the index's (en for bm25's en analyzer)
    passages: list[dict[str, Any]]
    rerank: NotRequired[str]
    left_out: NotRequired[int]  # documents removed or changed since the build, left out


class Tools:
    """The five tools over one engine, run in one worker thread, each on the engine as the
    request may see it (serve/access.py) when the server has `access`."""

    def __init__(self, engine: Engine, access: Access | None = None):
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="busca-mcp")
        self.engine, self.access = engine, access
        self.shown: Callable[[object], str] = str  # a message as the client may read it

    async def run(self, work: Callable[[Any], T]) -> T:
        """`work(engine)` in the worker thread; a BuscaError becomes the tool's error."""
        engine = self.engine if self.access is None else scoped(
            self.engine, self.access.current())  # read here: the request's context
        try:
            return await asyncio.get_running_loop().run_in_executor(self._worker, work, engine)
        except BuscaError as e:
            raise ToolError(" ".join(str(e).split())) from None

    async def search(self, question: Question, method: Method = METHOD, k: K = searching.K,
                     min_score: MinScore = None,
                     per_doc: Annotated[int, Field(ge=0, le=MAX_PER_DOC)] = SearchSpec.per_doc,
                     filter: Filters = None, offset: Offset = 0,  # noqa: A002 - the API's name
                     fusion: Fusion = SearchSpec.fusion, window: Window = SearchSpec.window,
                     rrf_k: RrfK = SearchSpec.rrf_k, weights: Weights = None,
                     ) -> SearchOut:
        """The top k passages for a question (as busca search --json), after the floor."""
        result = await self.run(lambda engine: engine.search(question, SearchSpec(
            method=method, k=k, min_score=min_score, per_doc=per_doc,
            filters=_filters(filter), offset=offset, fusion=fusion, window=window,
            rrf_k=rrf_k, weights=weights)))
        return result.to_json()

    async def context(self, question: Question, method: Method = METHOD, k: K = searching.K,
                      min_score: MinScore = None,
                      max_chars: Annotated[int, Field(ge=1, le=MAX_CHARS)] = CONTEXT_CHARS,
                      per_doc: Annotated[int, Field(ge=0, le=MAX_PER_DOC)] = CONTEXT_PER_DOC,
                      lang: Lang = None,
                      filter: Filters = None,  # noqa: A002 - the API's name
                      fusion: Fusion = ContextSpec.fusion, window: Window = ContextSpec.window,
                      rrf_k: RrfK = ContextSpec.rrf_k, weights: Weights = None,
                      ) -> ContextOut:
        """A prompt for an LLM: an instruction, the passages cited as [fonte: URL] and the
        question (as busca context); when no passage reaches the floor, answered is false and
        message says "nothing found" — then do not answer from memory."""
        found, _ = await self.run(lambda engine: engine.context(question, ContextSpec(
            method=method, k=k, min_score=min_score, max_chars=max_chars, per_doc=per_doc,
            filters=_filters(filter), fusion=fusion, window=window, rrf_k=rrf_k,
            weights=weights)))
        data = searching.context_dict(found, lang=lang)  # its prompt rendered in `lang`
        out = {key: data[key] for key in ("question", "method", "floor", "lang", "passages",
                                          "rerank", "left_out", "answered", "prompt")
               if key in data}
        return {**out,
                "message": "" if found.answered else f"nothing found: {found.why_nothing()}"}

    async def compare(self, question: Question,
                      methods: Methods = None, k: K = COMPARE_K,
                      per_doc: Annotated[int, Field(ge=0, le=MAX_PER_DOC)] = 0,
                      filter: Filters = None,  # noqa: A002 - the API's name
                      ) -> dict[str, Any]:
        """Each method's top k side by side, with every hit's rank under each method."""
        found, _ = await self.run(lambda engine: engine.compare(
            question, methods=methods, k=k, per_doc=per_doc, filters=_filters(filter)))
        out = found.to_json()
        return {**out, "notes": {m: self.shown(note) for m, note in out["notes"].items()}}

    async def get_chunk(self, chunk_id: Annotated[int, Field(ge=0)]) -> ChunkOut:
        """One window of the index by its chunk_id (a hit's), with its URL and text."""
        def chunk(engine) -> ChunkOut:
            hit = engine.chunk(chunk_id)
            if hit is None:
                raise ToolError(_missing(engine, chunk_id))
            found = hit.to_json()
            return {key: found[key] for key in ChunkOut.__annotations__ if key in found}
        return await self.run(chunk)

    async def stats(self) -> dict[str, Any]:
        """The index's figures (as busca stats --json): documents, chunks, methods."""
        return await self.run(lambda engine: engine.stats())


def _missing(engine, chunk_id: int) -> str:
    """The error of a chunk id that names no chunk this request may see: the same for a
    hidden one as for one beyond the index (whose size only an unrestricted caller learns)."""
    if isinstance(engine, Scoped):
        return f"no chunk {chunk_id} in the index (among the documents this request may see)"
    chunks = engine.run(lambda live: live.manifest.chunks)
    return f"no chunk {chunk_id} in the index (it has {chunks}: 0 to {chunks - 1})"


class _Server(MCPServer):
    """The mcp library's server, with arguments that fail the tools' schemas told in one
    line per problem ("k: Input should be less than or equal to 100 (got 1000000)")
    instead of pydantic's multi-line report and its link."""

    access: Access | None = None  # busca mcp --http --tokens: who may read what
    tools: Tools | None = None
    networked = False  # over HTTP (run_http): errors name the home's files relative to it

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        schema = self._tool_input_schema(name)
        if schema is not None:  # an unknown tool is the SDK's to refuse
            _strict(name, arguments or {}, schema.get("properties", {}))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if not isinstance(e.__cause__, ValidationError):
                if self.networked:  # the client is not on this machine (serve/errors.py)
                    shown = self.tools.shown(e)
                    told(e, shown, f"tool {name}")  # the log keeps the whole message
                    raise ToolError(shown) from None
                raise
            problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'arguments'}: {err['msg']}"
                                 f" (got {err['input']!r:.60})" for err in e.__cause__.errors())
            raise ToolError(f"bad arguments for {name}: {problems}") from e.__cause__


    def run_http(self, host: str, port: int, *, cors: tuple[str, ...] = (),
                 allow_hosts: tuple[str, ...] = ()) -> None:
        """Streamable HTTP at /mcp, as MCPServer.run("streamable-http"), each request read by
        busca serve's Guard first (its Host check, and the Origin check, answered in JSON
        before the library's own text; the Host names in `allow_hosts` and the pages of the
        origins in `cors` may call it, as busca serve --allow-host and --cors), then by
        access.Gate when the server has --tokens."""
        import uvicorn
        from starlette.routing import Route

        from .app import Guard
        from .hosts import allowed_name, cors_origin, host_rule
        from .server import uvicorn_config

        self.networked = True
        self.tools.shown = lambda message: for_engine(self.tools.engine, message)
        origins = frozenset(cors_origin(origin) for origin in cors)
        names = tuple(allowed_name(name) for name in allow_hosts)
        app = self.streamable_http_app(streamable_http_path=MCP_PATH, host=host,
                                       transport_security=_library_check())
        if self.access is not None:
            app = Gate(app, self.access)
        app = _OnlyMcp(app, MCP_PATH)
        app = Guard(app, hosts=host_rule(host, names), answered=MCP_HOSTS,
                    cors=origins, cors_headers=MCP_CORS_HEADERS, exposed=MCP_EXPOSED,
                    routes=[Route(MCP_PATH, app, methods=["DELETE", "GET", "POST"])])
        config = uvicorn_config(app, host=host, port=port,
                                log_level=self.settings.log_level.lower())
        anyio.run(uvicorn.Server(config).serve)

    async def run_stdio_async(self) -> None:
        """The SDK's stdio loop (MCPServer.run_stdio_async), each malformed line answered."""
        async with stdio_server() as (read_stream, write_stream):
            server = self._lowlevel_server
            await server.run(_Answering(read_stream, write_stream), write_stream,
                             server.create_initialization_options())


def _library_check():
    """The mcp library's own Host and Origin check, off: busca serve's Guard, which comes
    first, makes it (serve/hosts.py: JSON refusals, --allow-host and --cors). A second copy
    refused only what Guard accepts — a Host in capitals or without its port (its list was
    `127.0.0.1:*`, compared case by case) — in plain text."""
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


class _OnlyMcp:
    """ASGI: the MCP path alone, and a POST there only with a JSON body; anything else
    answered in JSON, as busca serve answers (the library's router and transport answered a
    404 and a wrong Content-Type in plain text)."""

    def __init__(self, app, path: str):
        self.app, self.path = app, path

    async def __call__(self, scope, receive, send):
        refused = self._refusal(scope) if scope["type"] == "http" else None
        if refused is None and scope["type"] == "http" and scope["method"] == "POST":
            receive, refused = await _read_body(receive)
        if refused is not None:
            return await refused(scope, receive, send)
        return await self.app(scope, receive, send)

    def _refusal(self, scope):
        from .app import error_response

        if scope["path"].rstrip("/") != self.path:
            return error_response(404, f"not found: {shown_path(scope['path'])}; busca mcp"
                                       f" answers at {self.path}")
        given = dict(scope["headers"]).get(b"content-type", b"")
        if scope["method"] == "POST" and given.split(b";")[0].strip().lower() \
                != b"application/json":
            return error_response(415, f"a POST to {self.path} carries a JSON-RPC message:"
                                       " send it with Content-Type: application/json")
        return None


async def _read_body(receive):
    """(a receive that gives the whole request body at once, None), or (receive, the 413 in
    JSON) when the body passes Guard's cap while it is read: the library would turn that
    error into a text/plain 500."""
    from .app import BodyTooLarge, error_response

    parts: list[bytes] = []
    try:
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: pass it on
                return _replay([message], receive), None
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
    except BodyTooLarge as e:
        return receive, error_response(413, str(e))
    return _replay([{"type": "http.request", "body": b"".join(parts),
                     "more_body": False}], receive), None


def _replay(messages: list[dict], receive):
    async def replayed():
        return messages.pop(0) if messages else await receive()
    return replayed


class _Answering:
    """The stdio transport's read stream, which hands the SDK a line that is no JSON-RPC
    message as an exception, and the SDK drops it: the client that sent it waited for ever.
    Here each is answered, JSON-RPC error -32700 (not JSON) or -32600 (JSON, but no JSON-RPC
    message), with the message's id when it can be read, else null (JSON-RPC 2.0), and the
    next line is served; a blank line is no message."""

    def __init__(self, inner, write):
        self._inner, self._write = inner, write

    @property
    def last_context(self):  # the sender's context, which the SDK's loop reads
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            answer = _malformed(item)
            if answer is not None:
                await self._write.send(SessionMessage(answer))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Answering:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()


def _malformed(error: Exception) -> JSONRPCError | None:
    """The answer to a line the transport could not read as a JSON-RPC message (None: a
    blank line)."""
    problems = error.errors() if isinstance(error, ValidationError) else []
    if problems and problems[0]["type"] == "json_invalid":
        if not str(problems[0].get("input", "")).strip():
            return None
        detail = " ".join(str(problems[0]["msg"]).split())
        return _rpc_error(PARSE_ERROR, f"Parse error: the line is not JSON ({detail}); send"
                                       " one JSON-RPC message per line")
    return _rpc_error(INVALID_REQUEST, 'Invalid Request: the line is JSON but no JSON-RPC 2.0'
                                       ' message; send {"jsonrpc": "2.0", "id": …, "method":'
                                       ' …} on one line', _request_id(problems))


def _request_id(problems: list) -> int | str | None:
    """The id of a JSON object that is no valid message, when it can be read (a number or a
    text): JSON-RPC 2.0 answers an invalid request with its id, null only when unreadable."""
    for problem in problems:
        given = problem.get("input")
        if isinstance(given, dict) and isinstance(given.get("id"), (int, str)) \
                and not isinstance(given["id"], bool):
            return given["id"]
    return None


def _rpc_error(code: int, message: str, request: int | str | None = None) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request, error=ErrorData(code=code, message=message))


def _filters(given: list[str] | str | None) -> tuple[str, ...]:
    """The `filter` argument as the other front ends take it: a list, or one text (whole,
    never its letters)."""
    return (given,) if isinstance(given, str) else tuple(given or ())


def _strict(name: str, arguments: dict[str, Any], properties: dict[str, Any]) -> None:
    """A misspelt argument (top_k) or a number given as text or true is the call's error, as
    in the HTTP API, not ignored or taken as 1 by pydantic's lax mode."""
    if arguments and not properties:
        raise ToolError(f"bad arguments for {name}: it takes no arguments, got"
                        f" {', '.join(map(repr, sorted(arguments)))}")
    try:
        only(arguments, set(properties), f"the arguments of {name}")
        for key, value in arguments.items():
            typed(key, value, schema_types(properties[key]))
    except BadParameter as e:
        raise ToolError(f"bad arguments for {name}: {e}") from None


def create_server(location, *, log: bool = False, embed: dict | None = None, rerank=None,
                  access: Access | None = None) -> MCPServer:
    """The MCP server of the home at `location` (opened at the first call); with `access`
    (busca mcp --http --tokens), each request sees what its token may."""
    engine = Engine(location, log_queries=log, embed=embed, rerank=rerank, warm=False,
                    create=False)
    tools = Tools(engine, access)
    server = _Server(NAME, version=__version__, instructions=INSTRUCTIONS)
    server.access, server.tools = access, tools
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                idempotent_hint=True, open_world_hint=False)
    for tool in (tools.search, tools.context, tools.compare, tools.get_chunk, tools.stats):
        server.add_tool(tool, name=tool.__name__, annotations=read_only,
                        structured_output=True)
        # _strict refuses any other argument: the published schema says so
        server._tool_input_schema(tool.__name__)["additionalProperties"] = False
    return server
