"""Re-ranking servers on 127.0.0.1 for tests, in the three request shapes busca speaks.

No cross-encoder can run here, so each server implements its API's exact request and
response shape (docs/rerank.md gives the source of each) and scores a passage with a
deterministic function of the texts: `relevance(query, text)`, the share of the question's
words of 4+ letters that occur in the passage, plus a small length term so ties are rare.
- `tei`: Hugging Face text-embeddings-inference, POST /rerank {"query", "texts", ...} →
  [{"index", "score"}] best first; a 422 {"error", "error_type": "Validation"} for a body
  without them or with a field TEI does not know.
- `llamacpp`: llama.cpp's llama-server --rerank, POST /v1/rerank (and /rerank, /v1/reranking)
  {"model", "query", "documents" (or "texts"), "top_n"} → {"model", "object": "list",
  "usage", "results": [{"index", "relevance_score"}]} best first, top_n of them.
- `openai`: the hosted shape (Jina, Cohere v1), POST /v1/rerank {"model" (required), "query",
  "documents", "top_n", "return_documents"} → {"model", "usage", "results"}.
Faults can be scripted for the next requests: ("500",), ("401",), ("stall", seconds).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PATHS = {"tei": ("/rerank",), "llamacpp": ("/v1/rerank", "/rerank", "/v1/reranking"),
         "openai": ("/v1/rerank",)}
TEI_FIELDS = {"query", "texts", "raw_scores", "return_text", "truncate", "truncation_direction"}


def relevance(query: str, text: str) -> float:
    """The deterministic stand-in for a cross-encoder's score."""
    words = set(re.findall(r"[^\W\d_]{4,}", query.lower()))
    found = set(re.findall(r"[^\W\d_]{4,}", text.lower()))
    share = len(words & found) / len(words) if words else 0.0
    return round(share + 1.0 / (10 + len(text)), 6)


class RerankServer:
    """One re-ranking server of `kind`; `with` starts and stops it."""

    def __init__(self, kind: str, *, key: str | None = None, model: str = "fake-reranker"):
        self.kind, self.key, self.model = kind, key, model
        self.requests: list[dict] = []  # {"path", "body", "headers"} of every POST
        self.faults: list[tuple] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> RerankServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, body: dict) -> tuple[int, object]:
        """The status and JSON body this API gives to a well-formed `body`."""
        if self.kind == "tei":
            unknown = set(body) - TEI_FIELDS
            if unknown or not isinstance(body.get("query"), str) or not isinstance(
                    body.get("texts"), list):
                return 422, {"error": f"Failed to deserialize the JSON body: {sorted(unknown)}",
                             "error_type": "Validation"}
            ranked = self._ranked(body["query"], body["texts"])
            return 200, [{"index": i, "score": s} for i, s in ranked]
        documents = body.get("documents", body.get("texts") if self.kind == "llamacpp" else None)
        if not isinstance(body.get("query"), str) or not isinstance(documents, list):
            return 400, {"error": {"code": 400, "message": '"query" and "documents" are required',
                                  "type": "invalid_request_error"}}
        if self.kind == "openai" and body.get("model") != self.model:
            return 404, {"detail": f"model {body.get('model')!r} not found"}
        ranked = self._ranked(body["query"], documents)[:body.get("top_n") or len(documents)]
        results = [{"index": i, "relevance_score": s} for i, s in ranked]
        if body.get("return_documents"):
            for item in results:
                item["document"] = {"text": documents[item["index"]]}
        tokens = sum(len(t.split()) for t in documents)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        if self.kind == "llamacpp":
            return 200, {"model": body.get("model") or self.model, "object": "list",
                         "usage": usage, "results": results}
        return 200, {"model": self.model, "usage": {"total_tokens": tokens}, "results": results}

    @staticmethod
    def _ranked(query: str, texts: list[str]) -> list[tuple[int, float]]:
        scored = [(i, relevance(query, t)) for i, t in enumerate(texts)]
        return sorted(scored, key=lambda item: -item[1])


def _handler(server: RerankServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status: int, body) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with server.lock:
                fault = server.faults.pop(0) if server.faults else ("ok",)
                server.requests.append({"path": self.path, "body": body,
                                        "headers": dict(self.headers)})
            if self.path not in PATHS[server.kind]:
                return self._send(404, {"error": f"no route {self.path}"})
            if fault[0] == "500":
                return self._send(500, {"error": "the GPU caught fire"})
            if fault[0] == "stall":
                time.sleep(fault[1])
            given = self.headers.get("Authorization")
            if fault[0] == "401" or (server.key and given != f"Bearer {server.key}"):
                return self._send(401, {"error": {"message": "invalid api key"}})
            self._send(*server.answer(body))

    return Handler
