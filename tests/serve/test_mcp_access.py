"""`busca mcp --http --tokens FILE` over real HTTP, driven by the MCP SDK's own client: the
server process on 127.0.0.1, a home with public documents and documents of groups; a session
without Authorization sees the public ones only, a staff token its group's too, through every
tool (search, context, compare, get_chunk, stats); the rule follows each request, not the
session; an unknown token is a 401 with serve's JSON body; no token is ever in the server's
log. The same file and rule as busca serve --tokens (serve/access.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402 - the mcp SDK's HTTP client
from click.testing import CliRunner  # noqa: E402
from conftest import lexical_home_of  # noqa: E402
from embed_servers import free_port  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from busca.cli import cli  # noqa: E402

from test_serve_access import ALL, DOCS, PUBLIC, SALES, SEES, STAFF, WORD  # noqa: E402

UNKNOWN = "nobody-token-0123456789abcdef"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return lexical_home_of(tmp_path_factory.mktemp("mcp-access") / "home", DOCS)


@pytest.fixture(scope="module")
def chunk_ids(home) -> dict[str, int]:
    """URL -> its chunk id, from busca search on the home itself (which sees everything)."""
    result = CliRunner().invoke(cli, ["--home", str(home), "search", WORD, "--method", "bm25",
                                      "-k", "10", "--json", "--no-log"], obj={})
    hits = [json.loads(line) for line in result.stdout.splitlines()]
    assert {h["url"] for h in hits} == ALL, result.output
    return {h["url"]: h["chunk_id"] for h in hits}


@pytest.fixture(scope="module")
def server(home):
    """(the /mcp URL, the path of the server's stderr) of a running busca mcp --http
    --tokens."""
    tokens = home.parent / "tokens.txt"
    tokens.write_text(f"# who reads what\n{STAFF} staff\n{SALES} sales\n", encoding="utf-8")
    log = home.parent / "stderr.txt"
    port = free_port()
    with log.open("w", encoding="utf-8") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "busca.cli", "--home", str(home), "mcp", "--http",
             "--tokens", str(tokens), "--port", str(port)], stdout=subprocess.DEVNULL,
            stderr=err, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        _wait_for(port, process)
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        process.terminate()
        process.wait(30)


@contextlib.contextmanager
def mcp_http(home, *options: str, log=None):
    """The port of a `busca mcp --http` of `home` with `options`, started here, stopped after;
    its stderr into the file `log` (None: dropped)."""
    port = free_port()
    with contextlib.ExitStack() as files:
        err = files.enter_context(open(log, "w", encoding="utf-8")) if log else subprocess.DEVNULL
        process = subprocess.Popen(
            [sys.executable, "-m", "busca.cli", "--home", str(home), "mcp", "--http",
             "--port", str(port), *options], stdout=subprocess.DEVNULL, stderr=err)
    try:
        _wait_for(port, process)
        yield port
    finally:
        process.terminate()
        process.wait(30)


def _wait_for(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"busca mcp --http did not listen on {port} (exit {process.poll()})")


def _calls(url: str, token: str | None, calls, *, then=None, later=()):
    """Call the tools in one session with `Authorization: Bearer token` (None: without it);
    with `then`, the same session's later calls go with that token instead ("": none)."""
    async def drive():
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as client, \
                streamable_http_client(url, http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            results = [await session.call_tool(name, args) for name, args in calls]
            if then is not None:
                client.headers.pop("Authorization", None)
                if then:
                    client.headers["Authorization"] = f"Bearer {then}"
                results += [await session.call_tool(name, args) for name, args in later]
            return results
    return asyncio.run(drive())


def _urls(result) -> set[str]:
    assert not result.is_error, result.content
    return {hit["url"] for hit in result.structured_content["hits"]}


TOOLS = [("search", {"question": WORD, "method": "bm25", "k": 10}),
         ("context", {"question": WORD, "method": "bm25", "k": 10, "min_score": 0}),
         ("compare", {"question": WORD, "methods": ["tfidf", "bm25"], "k": 10}),
         ("stats", {})]


@pytest.mark.parametrize("token", [None, STAFF], ids=["no-token", "staff"])
def test_every_tool_sees_the_public_documents_and_the_tokens_groups(server, token):
    url, _ = server
    search, context, compare, stats = _calls(url, token, TOOLS)
    assert _urls(search) == SEES[token]
    assert not context.is_error and context.structured_content["answered"]
    assert {p["url"] for p in context.structured_content["passages"]} == SEES[token]
    prompt = context.structured_content["prompt"]
    assert all((u in prompt) == (u in SEES[token]) for u in ALL)
    rows = compare.structured_content["rows"]
    assert {row["url"] for row in rows} == SEES[token]
    figures = stats.structured_content
    assert figures["documents"] == len(SEES[token]) and figures["restricted"] is True
    assert figures["chunks"] == len(SEES[token])  # one window each


def test_a_hidden_chunk_answers_as_a_missing_one(server, chunk_ids):
    url, _ = server
    hidden, public = chunk_ids["https://s.example/salarios"], chunk_ids["https://s.example/horario"]
    shown, refused, beyond = _calls(url, None, [
        ("get_chunk", {"chunk_id": public}), ("get_chunk", {"chunk_id": hidden}),
        ("get_chunk", {"chunk_id": 1000})])
    assert not shown.is_error and shown.structured_content["url"] == "https://s.example/horario"
    assert refused.is_error and beyond.is_error
    missing = " in the index (among the documents this request may see)"
    assert refused.content[0].text.endswith(f": no chunk {hidden}{missing}")
    # the same words as for an id beyond the index
    assert beyond.content[0].text == refused.content[0].text.replace(f" {hidden} ", " 1000 ")
    assert "salarios" not in refused.content[0].text
    (seen,) = _calls(url, STAFF, [("get_chunk", {"chunk_id": hidden})])
    assert not seen.is_error and seen.structured_content["url"] == "https://s.example/salarios"


def test_the_rule_is_each_requests_not_the_sessions(server):
    """A session opened with the staff token, then used without one (or with the sales
    token), sees what each request's Authorization may: a session id grants nothing."""
    url, _ = server
    search = ("search", {"question": WORD, "method": "bm25", "k": 10})
    staff, public = _calls(url, STAFF, [search], then="", later=[search])
    assert _urls(staff) == SEES[STAFF] and _urls(public) == PUBLIC
    anonymous, sales = _calls(url, None, [search], then=SALES, later=[search])
    assert _urls(anonymous) == PUBLIC
    assert _urls(sales) == SEES[SALES]


def test_an_unknown_token_is_a_401_in_json_before_the_mcp_session(server):
    url, _ = server
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}}
    for authorization in (f"Bearer {UNKNOWN}", f"Bearer {STAFF}x", "Token abc"):
        request = Request(url, data=json.dumps(initialize).encode(), headers={
            "Authorization": authorization, "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"})
        with pytest.raises(HTTPError) as refused:
            urlopen(request, timeout=30)
        assert refused.value.code == 401
        assert refused.value.headers["Content-Type"] == "application/json"
        assert refused.value.headers["WWW-Authenticate"] == 'Bearer realm="busca"'  # as serve
        body = json.loads(refused.value.read())
        assert body["status"] == 401 and body["error"].startswith("unknown token: send"
                                                                  " Authorization: Bearer")
        assert UNKNOWN not in json.dumps(body) and STAFF not in json.dumps(body)
        assert "mcp-session-id" not in {k.lower() for k in refused.value.headers}


def test_the_start_names_the_tokens_loaded_and_no_token_is_ever_logged(server):
    url, log = server
    _calls(url, STAFF, [("search", {"question": WORD, "k": 2})])
    text = log.read_text(encoding="utf-8")
    assert "2 read tokens loaded" in text
    assert "warning: this home has documents with groups" not in text
    assert all(token not in text for token in (STAFF, SALES, UNKNOWN))
    assert "token-0123456789" not in text
