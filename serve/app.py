"""The ASGI application: routes, the token rule, caps, security headers, JSON errors.

`create_app(engine, token=…, runs=…)` builds it; serve/server.py runs it with uvicorn.
"""

from __future__ import annotations

import functools
import hmac
import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, unquote_to_bytes

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Match, Route

from . import access, api, assets, evalpage, pages
from .engine import Engine
from .errors import CHALLENGE, HttpError, body, error_for_client, shown_path, status_of
from .hosts import HostRule, cors_origin, host_rule
from .html import error_page

log = logging.getLogger(__name__)

MAX_BODY = 1_000_000  # bytes of a request body
MAX_QUERY_STRING = 8192  # bytes of the query string (the question itself: params.MAX_QUERY)
WRITE_PATHS = ("/api/documents", "/api/index")
CORS_MAX_AGE = 600  # seconds a browser may keep a preflight's answer
CORS_HEADERS = ("Authorization", "Content-Type")  # the request headers a preflight allows

HEADERS = [
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
     b" connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


def error_response(status: int, message: str, **extra) -> JSONResponse:
    return JSONResponse(body(status, message, **extra), status_code=status)


def guarded(endpoint: Callable, *, as_page: bool = False) -> Callable:
    """The endpoint with every error turned into a JSON answer, or for a page (`as_page`)
    an HTML page with the message (500s logged, never shown)."""
    def answer(request: Request, error: Exception) -> Response:
        status = status_of(error)
        if status is None:
            log.exception("internal error on %s %s", request.method, request.url.path)
            status, error = 500, "internal error (details are in the server's log)"
        shown = (error_page if as_page else error_response)(
            status, error_for_client(request, error, status))
        shown.headers.update(getattr(error, "headers", {}))  # a 401's challenge
        return shown

    if inspect.iscoroutinefunction(endpoint):
        @functools.wraps(endpoint)
        async def run_async(request: Request) -> Response:
            try:
                return await endpoint(request)
            except Exception as error:  # noqa: BLE001 - every error becomes JSON
                return answer(request, error)
        return run_async

    @functools.wraps(endpoint)
    def run(request: Request) -> Response:
        try:
            return endpoint(request)
        except Exception as error:  # noqa: BLE001
            return answer(request, error)
    return run


def bearer(token: str, endpoint: Callable) -> Callable:
    """`endpoint` behind `Authorization: Bearer <token>` (the scheme in any case, the token
    compared in constant time)."""
    expected = token.encode()

    @functools.wraps(endpoint)
    async def checked(request: Request) -> Response:
        scheme, _, given = request.headers.get("authorization", "").strip().partition(" ")
        given = given.strip().encode("latin-1", "replace")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given, expected):
            return JSONResponse(body(401, "this endpoint needs Authorization: Bearer <token>,"
                                          " the --token busca serve was started with"),
                                status_code=401, headers=CHALLENGE)
        return await endpoint(request)
    return checked


def create_app(engine: Engine, *, token: str | None = None, runs: Path | None = None,
               host: str = "127.0.0.1", allow_hosts: tuple[str, ...] = (),
               tokens: access.Access | None = None, cors: tuple[str, ...] = ()) -> Starlette:
    """The application over `engine`; write endpoints only when `token` is set; what each
    request may read follows `tokens` (serve/access.py; None: everything); the Host headers
    it answers follow serve/hosts.py (`host`: the address it listens on); pages of the
    origins in `cors` may read its answers (Guard)."""
    origins = frozenset(cors_origin(origin) for origin in cors)
    routes = [
        Route("/", guarded(pages.home, as_page=True)),
        Route("/login", guarded(access.login, as_page=True)),
        Route("/eval", guarded(evalpage.eval_page, as_page=True)),
        Route("/static/{name}", guarded(assets.asset)),
        Route("/healthz", guarded(api.healthz)),
        Route("/openapi.json", guarded(api.openapi_document)),
        Route("/api/search", guarded(api.search)),
        Route("/api/compare", guarded(api.compare)),
        Route("/api/context", guarded(api.context), methods=["POST"]),
        Route("/api/stats", guarded(api.stats)),
        Route("/api/chunk/{chunk_id}", guarded(api.chunk)),
    ]
    if token:
        routes += [Route("/api/documents", bearer(token, guarded(api.documents)),
                         methods=["POST", "DELETE"]),
                   Route("/api/index", bearer(token, guarded(api.rebuild)), methods=["POST"])]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error})
    app.router.redirect_slashes = False  # _http_error redirects, relatively (_unslashed)
    app.state.engine = engine
    app.state.runs = Path(runs) if runs else Path(str(engine.location)) / "runs"
    app.state.writable = bool(token)
    app.state.access = tokens
    return Guard(app, hosts=host_rule(host, allow_hosts), cors=origins)


async def _http_error(request: Request, error: HTTPException) -> Response:
    moved = _unslashed(request) if error.status_code == 404 else None
    if moved is not None:
        return RedirectResponse(moved, status_code=307)
    path = shown_path(request.url.path)
    message = {404: f"not found: {path}", 405: f"{request.method} is not allowed on"
               f" {path}"}.get(error.status_code, str(error.detail))
    if error.status_code in (404, 405) and request.url.path in WRITE_PATHS \
            and not request.app.state.writable:
        message += " (write endpoints exist only when busca serve runs with --token)"
    answer = error_response(error.status_code, message)
    if error.headers and "Allow" in error.headers:  # a 405 names the methods that are
        answer.headers["Allow"] = error.headers["Allow"]
    return answer


def _unslashed(request: Request) -> str | None:
    """For a path with one trailing slash too many (`/eval/`) whose route exists without it,
    the URL of that route relative to the request (`../eval?run=…`), so a reverse proxy's name
    and sub-path stay (Starlette's own redirect named http(s)://HOST/eval from the Host the
    server saw); None otherwise."""
    path = request.scope["path"]
    bare = path[:-1]
    if not bare or not path.endswith("/") or bare.endswith("/"):
        return None
    scope = {**request.scope, "path": bare}
    if not any(route.matches(scope)[0] != Match.NONE for route in request.app.routes):
        return None
    query = request.scope.get("query_string", b"").decode("latin-1")
    return "../" + quote(bare.rsplit("/", 1)[1]) + ("?" + query if query else "")


class BodyTooLarge(HttpError):
    def __init__(self):
        super().__init__(413, f"the request body is larger than {MAX_BODY:,} bytes")


SERVE_HOSTS = "127.0.0.1, [::1], localhost or a name given with busca serve --allow-host"


class Guard:
    """ASGI middleware: caps on body and query string (its %-escapes UTF-8), the Host check
    (no DNS-rebinding reads; `hosts` None: every Host) and the Origin check (a browser page
    served from another host cannot make the server answer: a form's POST of a question, busca
    mcp's tools) and its twin for GETs without an Origin (`_fetch_accepted`: another site's
    <img src>), security headers on every answer. `answered`: the hosts the Host check
    accepts, as its refusal names them. `cors`: the origins (hosts.cors_origin) whose pages
    pass the Origin check and may read every answer (Access-Control-Allow-Origin, never with
    credentials) and the response headers of `exposed`, their preflights answered with the
    methods of the path (of `routes`, by default the app's) and the request headers of
    `cors_headers`."""

    def __init__(self, app, *, hosts: HostRule | None, answered: str = SERVE_HOSTS,
                 cors: frozenset[str] = frozenset(), cors_headers: tuple[str, ...] = CORS_HEADERS,
                 exposed: tuple[str, ...] = (), routes=None):
        self.app = app
        self.hosts, self.answered, self.cors = hosts, answered, frozenset(cors)
        self.cors_headers, self.exposed = cors_headers, exposed
        self.routes = getattr(app, "routes", ()) if routes is None else routes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        scope = _single_slash(scope)
        listed = self._listed(scope["headers"])
        send = _with_headers(send, vary=bool(self.cors), origin=listed, exposed=self.exposed)
        refused = self._refusal(scope)
        if refused is None and listed and scope["method"] == "OPTIONS" \
                and b"access-control-request-method" in dict(scope["headers"]):
            refused = self._preflight(scope)
        if refused is not None:
            return await refused(scope, receive, send)
        return await self.app(scope, _capped(receive), send)

    def _listed(self, headers) -> str | None:
        """The request's Origin when it is one --cors origin (and the only Origin)."""
        given = _values(headers, b"origin")
        return given[0] if len(given) == 1 and given[0] in self.cors else None

    def _preflight(self, scope) -> Response | None:
        """The answer to a CORS preflight for a path the app routes (None: the app's 404):
        the methods it answers there and the headers a client may send."""
        methods = {method for route in self.routes
                   if route.matches(scope)[0] != Match.NONE for method in route.methods or ()}
        if not methods:
            return None
        return Response(status_code=204, headers={
            "Access-Control-Allow-Methods": ", ".join(sorted(methods)),
            "Access-Control-Allow-Headers": ", ".join(self.cors_headers),
            "Access-Control-Max-Age": str(CORS_MAX_AGE)})

    def _refusal(self, scope) -> Response | None:
        headers = dict(scope["headers"])
        if len(scope.get("query_string", b"")) > MAX_QUERY_STRING:
            return error_response(414, f"the query string is longer than {MAX_QUERY_STRING}"
                                       " bytes")
        length = headers.get(b"content-length", b"0")
        if not length.isdigit() or int(length) > MAX_BODY:
            return error_response(413, f"the request body is larger than {MAX_BODY:,} bytes")
        if self.hosts is not None and not self._host_accepted(scope["headers"]):
            return error_response(400, "unexpected Host header: this server answers only"
                                       f" requests for {self.answered}")
        if self.hosts is not None and not self._origin_accepted(scope["headers"]):
            return error_response(403, "unexpected Origin header: this server answers only"
                                       f" pages served from {self.answered}, and clients"
                                       " that send no Origin")
        if self.hosts is not None and not _fetch_accepted(headers):
            return error_response(403, "a page of another site made this request (Sec-Fetch-Site:"
                                       " cross-site): this server answers another site only"
                                       " when a link to one of its pages is followed; open"
                                       " the page itself")
        garbled = _not_utf8(scope.get("query_string", b""))
        if garbled is not None:
            return error_response(400, garbled)
        return None

    def _host_accepted(self, headers) -> bool:
        given = _values(headers, b"host")
        return len(given) == 1 and self.hosts.accepts(given[0])

    def _origin_accepted(self, headers) -> bool:
        """No Origin (a program, not a page), or one Origin: a --cors one, or one the Host
        rule accepts."""
        given = _values(headers, b"origin")
        return not given or (len(given) == 1 and (given[0] in self.cors
                                                  or self.hosts.accepts_origin(given[0])))


def _not_utf8(query: bytes) -> str | None:
    """What is wrong with a query string whose %-escapes are not UTF-8 (a client that encoded
    "configuração" in Latin-1, configura%E7%E3o, was answered for "configura��o"), or None."""
    for part in query.split(b"&"):
        name, _, value = part.partition(b"=")
        try:
            unquote_to_bytes(name).decode("utf-8")
            unquote_to_bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            shown = name.decode("ascii", "replace")[:40] or "a parameter"
            return (f"{shown} is not UTF-8 once its %-escapes are decoded: percent-encode the"
                    " UTF-8 bytes of each character (ç is %C3%A7, not %E7)")
    return None


def _values(headers, name: bytes) -> list[str]:
    """Each value of the header `name` a request carries."""
    return [value.decode("latin-1") for key, value in headers if key == name]


def _fetch_accepted(headers: dict) -> bool:
    """Whether the browser's Fetch Metadata allows the request: anything but a request of a
    page of another site that carries no Origin (an <img src>, a <script src>, an iframe: GETs,
    which the Origin check never sees), unless it opens a page (a link followed, top level).
    Programs send no Sec-Fetch-Site and are not affected."""
    if headers.get(b"sec-fetch-site", b"").strip().lower() != b"cross-site" \
            or b"origin" in headers:
        return True
    return headers.get(b"sec-fetch-dest", b"").strip().lower() == b"document"


def _single_slash(scope: dict) -> dict:
    """`//api/search` read as `/api/search`: the URL busca serve prints ends in `/`, so
    "$U/api/…" doubles the slash."""
    path = scope.get("path", "")
    if not path.startswith("//"):
        return scope
    raw = scope.get("raw_path")
    return {**scope, "path": "/" + path.lstrip("/"),
            **({"raw_path": b"/" + raw.lstrip(b"/")} if raw else {})}


def _capped(receive):
    seen = 0

    async def limited():
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > MAX_BODY:
                raise BodyTooLarge()
        return message
    return limited


def _with_headers(send, *, vary: bool = False, origin: str | None = None,
                  exposed: tuple[str, ...] = ()):
    """`send` adding the security headers, `Vary: Origin` (`vary`: a server with --cors) and
    `Access-Control-Allow-Origin: <origin>` (`origin`: the request's, one of --cors), with
    `Access-Control-Expose-Headers` naming the headers of `exposed` its page may read."""
    shown = ", ".join(exposed).encode("latin-1") if origin and exposed else b""
    extra = [*HEADERS, *([(b"vary", b"Origin")] if vary else []),
             *([(b"access-control-allow-origin", origin.encode("latin-1"))] if origin else []),
             *([(b"access-control-expose-headers", shown)] if shown else [])]

    async def sending(message):
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            names = {k.lower() for k, _ in headers}
            headers += [(k, v) for k, v in extra if k not in names]
            message = {**message, "headers": headers}
        await send(message)
    return sending
