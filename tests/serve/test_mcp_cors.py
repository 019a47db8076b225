"""`busca mcp --http --cors ORIGIN`: a browser-based MCP client of another origin (the MCP
Inspector at http://localhost:6274, a web app's agent) drives the tools through the browser's
CORS rules, over real HTTP against the real server on 127.0.0.1 — the same option and rule as
busca serve --cors (tests/serve/test_serve_cors.py)."""

from __future__ import annotations

import http.client
import json

import pytest

pytest.importorskip("mcp")

from click.testing import CliRunner  # noqa: E402
from test_mcp_access import mcp_http  # noqa: E402

from busca.cli import cli  # noqa: E402

INSPECTOR = "http://localhost:6274"  # the MCP Inspector's page
APP = "https://app.example.com"  # a web app's agent: neither loopback nor the mcp library's
OTHER = "http://localhost:6275"  # loopback, not listed
QUESTION = "Qual o limite das atividades extracurriculares no curso?"
ACCEPT = "application/json, text/event-stream"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "inspector", "version": "1"}}}
# what a browser MCP client sends after initialize, and asks the preflight for (lower case)
ASKED = "authorization,content-type,last-event-id,mcp-protocol-version,mcp-session-id"


@pytest.fixture(scope="module")
def port(lexical_home):
    with mcp_http(lexical_home, "--cors", INSPECTOR, "--cors", APP) as port:
        yield port


def answer(port: int, method: str, origin: str | None, body: dict | None = None,
           headers: dict | None = None):
    """(status, headers in lower case, body bytes) of one request to /mcp."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    sent = {**(headers or {}), **({"Origin": origin} if origin else {})}
    if body is not None:
        sent.update({"Content-Type": "application/json", "Accept": ACCEPT})
    conn.request(method, "/mcp", body=json.dumps(body) if body is not None else None,
                 headers=sent)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def _names(value: str) -> set[str]:
    return {part.strip().lower() for part in value.split(",") if part.strip()}


def _message(data: bytes) -> dict:
    """The JSON-RPC message of an answer, as JSON or as the data of its SSE event."""
    text = data.decode()
    lines = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return json.loads(lines[-1] if lines else text)


def test_a_listed_origins_preflight_allows_what_an_mcp_client_sends(port):
    """The preflight was the mcp library's 405, so the browser never sent initialize."""
    for method in ("POST", "GET", "DELETE"):
        status, headers, data = answer(port, "OPTIONS", INSPECTOR, headers={
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": ASKED})
        assert status == 204 and data == b"", (status, data)
        assert headers["access-control-allow-origin"] == INSPECTOR
        assert {"POST", "GET", "DELETE"} <= {m.strip() for m in
                                            headers["access-control-allow-methods"].split(",")}
        assert _names(ASKED) <= _names(headers["access-control-allow-headers"])
        assert int(headers["access-control-max-age"]) > 0
        assert "access-control-allow-credentials" not in headers


@pytest.mark.parametrize("origin", [INSPECTOR, APP])
def test_a_listed_origin_initializes_reads_its_session_and_calls_a_tool(port, origin):
    """APP passed busca's Origin check, then the mcp library's own refused it in plain text
    (403 Invalid Origin header): it allows only loopback origins with a port."""
    status, headers, data = answer(port, "POST", origin, INITIALIZE)
    assert status == 200, data
    assert headers["access-control-allow-origin"] == origin
    assert "origin" in headers["vary"].lower()
    # without it the browser hides Mcp-Session-Id and the client cannot go on
    assert "mcp-session-id" in _names(headers["access-control-expose-headers"])
    session = {"Mcp-Session-Id": headers["mcp-session-id"],
               "Mcp-Protocol-Version": "2025-06-18"}
    assert answer(port, "POST", origin, {"jsonrpc": "2.0", "method":
                                         "notifications/initialized"}, session)[0] == 202
    status, headers, data = answer(port, "POST", origin, {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search", "arguments": {"question": QUESTION, "k": 2}}}, session)
    assert status == 200 and headers["access-control-allow-origin"] == origin
    result = _message(data)["result"]
    assert not result["isError"] and len(result["structuredContent"]["hits"]) == 2
    status, headers, _ = answer(port, "DELETE", origin, headers=session)
    assert status == 200 and headers["access-control-allow-origin"] == origin


def test_an_origin_not_listed_is_answered_as_before(port):
    status, headers, _ = answer(port, "POST", OTHER, INITIALIZE)
    assert status == 200 and "access-control-allow-origin" not in headers
    status, headers, _ = answer(port, "OPTIONS", OTHER, headers={
        "Access-Control-Request-Method": "POST"})
    assert status != 204 and not any(k.startswith("access-control-") for k in headers)
    status, headers, _ = answer(port, "POST", "http://evil.example", INITIALIZE)
    assert status == 403 and "access-control-allow-origin" not in headers


@pytest.mark.parametrize("args,words", [
    (["--http", "--cors", "*"], "would let every web page"),
    (["--http", "--cors", "http://localhost:6274/app"], "no path"),
    (["--cors", INSPECTOR], "only with --http"),
])
def test_a_bad_cors_value_is_a_one_line_usage_error(lexical_home, args, words):
    result = CliRunner().invoke(cli, ["--home", str(lexical_home), "mcp", *args], obj={})
    assert result.exit_code == 2, result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and "--cors" in error[0] and words in error[0], result.output
    assert "Traceback" not in result.output
