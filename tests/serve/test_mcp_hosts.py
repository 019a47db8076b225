"""`busca mcp --http --allow-host NAME` behind a reverse proxy that keeps its own `Host` name:
the same option and rule as busca serve --allow-host (serve/hosts.py), over real HTTP against
the real server on 127.0.0.1, with that Host header byte for byte."""

from __future__ import annotations

import http.client
import json

import pytest

pytest.importorskip("mcp")

from click.testing import CliRunner  # noqa: E402
from test_mcp_access import mcp_http  # noqa: E402

from busca.cli import cli  # noqa: E402

NAME = "busca.intra.example"  # the proxy's public name, sent on as the Host
QUESTION = "Qual o limite das atividades extracurriculares no curso?"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "proxied", "version": "1"}}}


@pytest.fixture(scope="module")
def port(lexical_home):
    with mcp_http(lexical_home, "--allow-host", NAME) as port:
        yield port


def post(port: int, host: str, body: dict, headers: dict | None = None):
    """(status, headers in lower case, body bytes) of one POST to /mcp with `Host: host`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    data = json.dumps(body).encode()
    conn.putrequest("POST", "/mcp", skip_host=True, skip_accept_encoding=True)
    for key, value in {"Host": host, "Content-Type": "application/json",
                       "Accept": "application/json, text/event-stream",
                       "Content-Length": str(len(data)), **(headers or {})}.items():
        conn.putheader(key, value)
    conn.endheaders(data)
    response = conn.getresponse()
    answer = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, answer


def _message(data: bytes) -> dict:
    text = data.decode()
    lines = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return json.loads(lines[-1] if lines else text)


@pytest.mark.parametrize("host,origin", [(NAME, None), (f"{NAME}:443", None),
                                         (NAME, f"https://{NAME}"), (NAME.upper(), None),
                                         ("localhost", None), ("LocalHost:8000", None)])
def test_an_allowed_host_initializes_and_calls_a_tool(port, host, origin):
    """Before: no --allow-host (a usage error); the mcp library's own check, once busca's
    Guard let the name through, answered `421 Invalid Host header` in plain text — and did
    still for a Host in capitals or without its port, which Guard accepts (host names are
    not case-sensitive): the library's check is off, Guard's is the one."""
    extra = {"Origin": origin} if origin else {}
    status, headers, data = post(port, host, INITIALIZE, extra)
    assert status == 200, data
    session = {**extra, "Mcp-Session-Id": headers["mcp-session-id"],
               "Mcp-Protocol-Version": "2025-06-18"}
    assert post(port, host, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                session)[0] == 202
    status, _, data = post(port, host, {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search", "arguments": {"question": QUESTION, "k": 2}}}, session)
    assert status == 200, data
    result = _message(data)["result"]
    assert not result["isError"] and len(result["structuredContent"]["hits"]) == 2


@pytest.mark.parametrize("host", ["evil.example", f"{NAME}.evil.example", f"x{NAME}"])
def test_other_names_are_still_refused_in_json_naming_the_option(port, host):
    status, headers, data = post(port, host, INITIALIZE)
    assert status == 400 and headers["content-type"].startswith("application/json")
    error = json.loads(data)["error"]
    assert "unexpected Host header" in error and "--allow-host" in error, error


def test_a_page_of_another_host_is_still_refused(port):
    status, _, data = post(port, NAME, INITIALIZE, {"Origin": "https://evil.example"})
    assert status == 403 and "unexpected Origin header" in json.loads(data)["error"]


@pytest.mark.parametrize("args,words", [
    (["--http", "--allow-host", "http://busca.lan"], "is not a host name"),
    (["--http", "--allow-host", "busca.lan:8000"], "is not a host name"),
    (["--allow-host", "busca.lan"], "only with --http"),
])
def test_a_bad_allow_host_is_a_one_line_usage_error(lexical_home, args, words):
    result = CliRunner().invoke(cli, ["--home", str(lexical_home), "mcp", *args], obj={})
    assert result.exit_code == 2, result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and "--allow-host" in error[0] and words in error[0], result.output
    assert "Traceback" not in result.output
