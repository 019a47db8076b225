"""Run the application with uvicorn: bind first (so `--port 0` has a port to announce),
print the URL as the first line on stdout, log on stderr, stop gracefully on SIGTERM/SIGINT
(requests in flight finish; the exit code is 0)."""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from .. import index as indexing
from ..version import __version__
from . import discovery
from .app import HEADERS, create_app
from .engine import Engine
from .errors import body

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
PORT = 8000
GRACE = 10  # seconds requests in flight get to finish after a stop signal
REQUEST_TIMEOUT = 60  # seconds a client has to send a whole request (headers and body)

LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain",
                            "stream": "ext://sys.stderr"}},
    "loggers": {"uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
                "uvicorn.access": {"handlers": ["stderr"], "level": "INFO",
                                   "propagate": False},
                "busca.serve": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
                # which build is served (corpus/live.py): at start and after each rebuild
                "busca.corpus": {"handlers": ["stderr"], "level": "INFO", "propagate": False}},
}


MALFORMED = ("malformed HTTP request: its request line or a header could not be parsed; send"
             " HTTP/1.1, a request line such as \"GET /api/stats HTTP/1.1\" and \"Name: value\""
             " headers")


class _JsonErrors(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
    """uvicorn's HTTP protocol (h11, or httptools when installed: uvicorn's "auto"), but a
    request it cannot parse, which never reaches the app, is answered as every other error
    of busca serve is: a JSON body and the app's security headers (uvicorn's own answer is
    text/plain "Invalid HTTP request received.")."""

    request_timeout: float = REQUEST_TIMEOUT  # uvicorn_config sets it
    _deadline = None  # the timer of `_late`

    def send_400_response(self, msg: str) -> None:  # uvicorn's hook for that answer
        self.transport.write(_bad_request(self.server_state.default_headers))
        self.transport.close()

    # A client has `request_timeout` seconds from connecting, and from each answer on a
    # keep-alive connection, to send its whole request: uvicorn times out only connections
    # idle after an answer, so one that sent nothing, or its headers or body a byte now and
    # then (slow loris), was kept for ever, and enough of them took every file descriptor.
    # A request that arrived whole is never cut, however long the app takes to answer.
    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self._deadline = self.loop.call_later(self.request_timeout, self._late)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _late(self) -> None:
        """Close the connection unless a request arrived whole and is being answered."""
        self._deadline = None
        cycle = self.cycle
        if cycle is None or cycle.response_complete or cycle.more_body:
            self.transport.close()


def _bad_request(default_headers: list[tuple[bytes, bytes]]) -> bytes:
    content = json.dumps(body(400, MALFORMED), separators=(",", ":")).encode()  # as Starlette
    headers = [*default_headers, (b"content-type", b"application/json"),
               (b"content-length", str(len(content)).encode()), (b"connection", b"close"),
               *HEADERS]
    lines = [b"HTTP/1.1 400 Bad Request", *(name + b": " + value for name, value in headers)]
    return b"\r\n".join(lines) + b"\r\n\r\n" + content


def uvicorn_config(app, *, request_timeout: float = REQUEST_TIMEOUT,
                   **options) -> uvicorn.Config:
    """uvicorn's settings for a busca server (busca serve, busca mcp --http): no `server`
    header, a request uvicorn cannot parse answered in JSON, and a connection whose request
    has not arrived whole within `request_timeout` seconds closed (`_JsonErrors`)."""
    protocol = type("_JsonErrors", (_JsonErrors,), {"request_timeout": request_timeout})
    return uvicorn.Config(app, server_header=False, http=protocol, **options)


class _Server(uvicorn.Server):
    """uvicorn's server, but a stop signal ends the process normally (exit 0) instead of
    being raised again once the server has shut down."""

    @contextlib.contextmanager
    def capture_signals(self):
        previous = {sig: signal.signal(sig, self.handle_exit)
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free port); OSError names the problem."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, so asyncio sets TCP_NODELAY on every accepted connection (it checks
    # the protocol number); with 0 here, Nagle's algorithm held each keep-alive answer ~40 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(home: str | Path, *, host: str = HOST, port: int = PORT, token: str | None = None,
          runs: str | Path | None = None, log_queries: bool = True, access_log: bool = True,
          embed: dict | None = None, allow_hosts: tuple[str, ...] = (),
          announce: Callable[[str], None] = print, rerank=None, tokens=None,
          cors: tuple[str, ...] = ()) -> None:
    """Serve `home` until SIGTERM or SIGINT (`embed`: openai:MODEL server settings;
    `allow_hosts`: Host names answered besides loopback's; `cors`: origins whose pages may
    read the answers (`http://localhost:5173`); `rerank`: the re-ranking stage of
    every search and context; `tokens`: who may read what, serve/access.py). While it runs,
    `<home>/serve.json` tells `busca search` and `busca context` where to ask (not with
    `tokens`: they would see only the public documents)."""
    with indexing.builds_by("busca serve"):  # a `busca index` its POST /api/index refuses
        _serve(home, host=host, port=port, token=token, runs=runs,  # names the server
               log_queries=log_queries, access_log=access_log, embed=embed,
               allow_hosts=allow_hosts, announce=announce, rerank=rerank, tokens=tokens,
               cors=cors)


def _serve(home, *, host, port, token, runs, log_queries, access_log, embed, allow_hosts,
           announce, rerank, tokens, cors) -> None:
    engine = Engine(home, log_queries=log_queries, embed=embed, rerank=rerank)
    app = create_app(engine, token=token, runs=Path(runs) if runs else None, host=host,
                     allow_hosts=allow_hosts, tokens=tokens, cors=cors)
    sock = bind(host, port)
    config = uvicorn_config(app, log_config=LOG_CONFIG, access_log=access_log,
                            timeout_graceful_shutdown=GRACE, lifespan="off")
    server = _Server(config)
    build = None
    try:
        build = engine.live().build  # load the index and the encoder now, not on a request
    except Exception as e:  # noqa: BLE001 - no index yet is fine: the API says 503
        log.warning("%s", e)
    record = None if tokens else discovery.publish(
        home, url=url_of(sock), build=build, writable=bool(token),
        version=__version__)  # before the URL line: it is there then
    try:
        if record is not None:
            log.info("busca search and busca context on this home ask this server (%s)",
                     record)
        announce(url_of(sock))
        sys.stdout.flush()
        server.run(sockets=[sock])
    finally:
        discovery.withdraw(home)
