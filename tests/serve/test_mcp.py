"""`busca mcp` driven by the MCP SDK's own client over stdio: the real server process, the
fixture corpus, the tools' schemas, the same hits and prompt as the CLI, and errors that are
MCP errors (a tool result with isError, or a protocol error), never a crash."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

pytest.importorskip("mcp")

from click.testing import CliRunner  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from busca.cli import cli  # noqa: E402

QUESTION = "Qual o limite das atividades extracurriculares no curso?"
TOOLS = {"search", "context", "compare", "get_chunk", "stats"}


def _session(home, *args: str):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "busca.cli", "--home", str(home), "mcp", *args],
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    return stdio_client(params)


async def _drive(home, calls):
    """Open a session, list the tools, then make each call; (tools, results)."""
    async with _session(home) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def cli_json(home, *args):
    result = CliRunner().invoke(cli, ["--home", str(home), *args], obj={})
    return result


def test_a_client_lists_the_tools_and_gets_the_clis_hits_and_prompt(lexical_home):
    calls = [("search", {"question": QUESTION, "method": "bm25", "k": 4}),
             ("context", {"question": QUESTION, "method": "bm25"}),
             ("context", {"question": QUESTION, "min_score": 1e6}),
             ("stats", {}),
             ("get_chunk", {"chunk_id": 0}),
             ("compare", {"question": QUESTION, "methods": ["tfidf", "bm25"], "k": 2}),
             # the methods as one text, as HTTP, Python and --methods take them (refused)
             ("compare", {"question": QUESTION, "methods": "tfidf, bm25", "k": 2})]
    tools, results = asyncio.run(_drive(lexical_home, calls))
    by_name = {t.name: t for t in tools}
    assert set(by_name) == TOOLS
    search_schema = by_name["search"].input_schema
    assert search_schema["required"] == ["question"]
    assert search_schema["properties"]["k"]["maximum"] == 100
    assert by_name["search"].output_schema["properties"]["hits"]["type"] == "array"
    assert all(t.annotations.read_only_hint for t in tools)
    assert not any(r.is_error for r in results), [r.content for r in results]
    search, context, nothing, stats, chunk, compare, texts = (r.structured_content
                                                               for r in results)
    assert texts == compare

    cli_hits = [json.loads(line) for line in cli_json(
        lexical_home, "search", QUESTION, "--method", "bm25", "-k", "4", "--json",
        "--no-log").stdout.splitlines()]
    assert [{k: v for k, v in h.items() if k != "method"} for h in cli_hits] == search["hits"]
    cli_prompt = cli_json(lexical_home, "context", QUESTION, "--method", "bm25", "--no-log")
    assert context["answered"] and context["prompt"] == cli_prompt.stdout
    assert "[fonte: " in context["prompt"]
    assert not nothing["answered"] and nothing["prompt"] is None
    assert nothing["message"].startswith("nothing found: no passage scores")
    assert stats["chunks"] == json.loads(cli_json(lexical_home, "stats", "--json").stdout)[
        "chunks"]
    assert chunk["chunk_id"] == 0 and chunk["text"]
    assert compare["methods"] == ["tfidf", "bm25"] and len(compare["columns"]["bm25"]) == 2
    # the question as context names it, and as `query` for the clients written before
    assert search["question"] == search["query"] == compare["question"] == QUESTION
    assert compare == json.loads(cli_json(lexical_home, "compare", QUESTION, "--methods",
                                          "tfidf,bm25", "-k", "2", "--json").stdout)


def test_malformed_calls_are_mcp_errors_and_the_server_keeps_answering(lexical_home):
    calls = [("search", {"method": "bm25"}),  # no question
             ("search", {"question": QUESTION, "k": 0}),  # out of range
             ("search", {"question": QUESTION, "method": "nope"}),  # a BuscaError
             ("get_chunk", {"chunk_id": 10**9}),
             # pydantic's lax mode took these as k=1, k=3 and no limit (the 28th session)
             ("search", {"question": QUESTION, "k": True}),
             ("search", {"question": QUESTION, "k": "3"}),
             ("search", {"question": QUESTION, "top_k": 3}),
             ("search", {"question": QUESTION, "min_score": None, "k": 2})]  # still answers
    _, results = asyncio.run(_drive(lexical_home, calls))
    assert [r.is_error for r in results] == [True] * 7 + [False]
    assert len(results[7].structured_content["hits"]) <= 2
    text = [r.content[0].text for r in results[:4]]
    assert "question" in text[0] and "k" in text[1]
    # one line per problem, not pydantic's report with its link (the twenty-seventh sweep)
    assert text[1].startswith("bad arguments for search: k: Input should be greater than")
    assert all("\n" not in t and "pydantic.dev" not in t for t in text[:2])
    assert "nope" in text[2] and "Traceback" not in text[2] and "\n" not in text[2]
    assert "no chunk 1000000000" in text[3]
    strict = [r.content[0].text for r in results[4:7]]
    assert strict[0] == "bad arguments for search: k must be a JSON integer, got True"
    assert strict[1] == ("bad arguments for search: k must be a JSON integer, written without"
                         " quotes, got '3'")
    assert strict[2].startswith("bad arguments for search: unknown field 'top_k' in the"
                                " arguments of search; known fields: filter, fusion, k, method")

    async def unknown_tool():
        async with _session(lexical_home) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("delete_everything", {})
    result = asyncio.run(unknown_tool())
    assert result.is_error and "delete_everything" in result.content[0].text


def test_a_folder_without_a_corpus_is_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "none"), "mcp"], obj={})
    assert result.exit_code == 1 and "no corpus in" in result.output.lower()
    assert not (tmp_path / "none").exists()


def test_a_busy_port_is_one_line_and_exit_1(lexical_home):
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        result = CliRunner().invoke(cli, ["--home", str(lexical_home), "mcp", "--http",
                                          "--port", str(port)], obj={})
    assert result.exit_code == 1, result.output
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_streamable_http_answers_the_same_tools(lexical_home):
    import subprocess
    import time

    import requests
    from mcp.client.streamable_http import streamable_http_client

    from embed_servers import free_port

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "busca.cli", "--home", str(lexical_home), "mcp", "--http",
         "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                requests.get(url, timeout=1)
                break
            except requests.RequestException:
                time.sleep(0.2)

        async def drive():
            async with streamable_http_client(url) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                names = {t.name for t in (await session.list_tools()).tools}
                found = await session.call_tool("search", {"question": QUESTION, "k": 2})
                return names, found
        names, found = asyncio.run(drive())
        refusals = _refusals(url, port)
    finally:
        process.terminate()
        process.wait(30)
    assert names == TOOLS and not found.is_error
    assert len(found.structured_content["hits"]) == 2
    for answer, (status, message) in zip(refusals, [
            (400, "unexpected Host header: this server answers only requests for 127.0.0.1,"
                  " [::1], localhost or a name given with busca mcp --allow-host"),
            (403, "unexpected Origin header: this server answers only pages served from"
                  " 127.0.0.1, [::1], localhost or a name given with busca mcp --allow-host,"
                  " and clients that send no Origin"),
            (403, "unexpected Origin header"), (404, "not found: /nope; busca mcp answers"
                                                     " at /mcp"),
            (415, "send it with Content-Type: application/json"),
            (400, "malformed HTTP request"),
            (413, "the request body is larger than 1,000,000 bytes"),  # was a text/plain 500
            (403, "a page of another site made this request")]):
        assert answer.status_code == status, answer.text  # the library said text/plain
        assert answer.json()["status"] == status and message in answer.json()["error"]
        assert "uvicorn" not in answer.headers.get("server", "")
        assert answer.headers["x-content-type-options"] == "nosniff"


def _refusals(url: str, port: int) -> list:
    """A rebinding page's request (another Host), a page of another site (its Origin), a
    sandboxed page (Origin null), a path other than /mcp, a POST that is not JSON, and a
    request line uvicorn cannot parse."""
    import socket

    import requests

    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "t", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    answers = [requests.post(url, json=initialize, headers={**accept, **extra}, timeout=10)
               for extra in ({"Host": "evil.example"}, {"Origin": "http://evil.example"},
                             {"Origin": "null"})]
    answers.append(requests.get(url.replace("/mcp", "/nope"), timeout=10))
    answers.append(requests.post(url, data=json.dumps(initialize), timeout=10,
                                 headers={**accept, "Content-Type": "text/plain"}))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nbad header\r\n\r\n")
        reply = b""
        while chunk := raw.recv(65536):
            reply += chunk
    head, _, content = reply.partition(b"\r\n\r\n")
    answers.append(requests.models.Response())
    answers[-1].status_code = int(head.split()[1])
    answers[-1]._content = content
    answers[-1].headers.update(dict(line.decode().split(": ", 1)
                                    for line in head.split(b"\r\n")[1:]))
    # a body over the cap sent in chunks (no Content-Length to refuse it by)
    big = json.dumps({**initialize, "params": {**initialize["params"], "x": "a" * 1_100_000}})
    big = big.encode()
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part)
                      for part in (big[i:i + 65536] for i in range(0, len(big), 65536)))
    answers.append(_socket_answer(port, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  b"Content-Type: application/json\r\nAccept: application/json,"
                                  b" text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                                  b"Connection: close\r\n\r\n" + chunks + b"0\r\n\r\n"))
    # another site's <script src>: a GET without Origin, Fetch Metadata says cross-site
    answers.append(requests.get(url, timeout=10, headers={
        **accept, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors",
        "Sec-Fetch-Dest": "script"}))
    return answers


def _socket_answer(port: int, request: bytes):
    """The answer to raw request bytes, as a requests Response."""
    import socket

    import requests

    reply = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        try:
            raw.sendall(request)
        except OSError:  # the server may answer and close before reading the whole body
            pass
        try:
            while chunk := raw.recv(65536):
                reply += chunk
        except OSError:
            pass
    head, _, content = reply.partition(b"\r\n\r\n")
    answer = requests.models.Response()
    answer.status_code = int(head.split()[1])
    answer._content = content
    answer.headers.update(dict(line.decode().split(": ", 1)
                               for line in head.split(b"\r\n")[1:]))
    return answer


def test_http_over_a_home_with_private_documents_warns_it_shows_them_all(tmp_path):
    """busca mcp --http without --tokens shows every document to whoever reaches it, the
    private ones too; it says so when the home has groups, naming --tokens (stdio, the local
    user's, does not; with --tokens: tests/serve/test_mcp_access.py)."""
    import socket

    from conftest import write_jsonl

    home = tmp_path / "home"
    docs = write_jsonl(tmp_path / "d.jsonl", [
        {"url": "https://a.example/1", "text": "salários", "groups": ["staff"]},
        {"url": "https://a.example/2", "text": "horário"}])
    for args in (["add", str(docs)], ["index", "-q", "--methods", "bm25"]):
        assert CliRunner().invoke(cli, ["--home", str(home), *args], obj={}).exit_code == 0
    with socket.socket() as held:  # the command stops at the busy port, after its warning
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = str(held.getsockname()[1])
        result = CliRunner().invoke(cli, ["--home", str(home), "mcp", "--http", "--port", port],
                                    obj={})
    assert result.exit_code == 1
    assert "warning: this home has documents with groups" in result.stderr
    assert "busca mcp --http --tokens FILE" in result.stderr


def test_schemas_refuse_extra_arguments_and_compare_uses_the_librarys_k(lexical_home):
    from busca.search.scorers import COMPARE_K

    calls = [("stats", {"verbose": True}), ("compare", {"question": QUESTION})]
    tools, (stats, compare) = asyncio.run(_drive(lexical_home, calls))
    # the published schemas say what _strict enforces: no argument beyond those listed
    assert all(t.input_schema.get("additionalProperties") is False for t in tools)
    method = {t.name: t for t in tools}["search"].input_schema["properties"]["method"]
    assert all(name in method["description"] for name in ("sparse", "hybrid", "dense:NAME"))
    assert stats.is_error
    assert stats.content[0].text == ("bad arguments for stats: it takes no arguments, got"
                                     " 'verbose'")
    assert not compare.is_error and compare.structured_content["k"] == COMPARE_K == 5


def test_search_context_and_compare_take_filters_and_search_pages_as_the_cli(lexical_home):
    """filter and offset, as `busca search --filter --offset`, `busca context --filter` and
    `busca compare --filter` give them (where the tools had none)."""
    def cli_lines(*args):
        out = cli_json(lexical_home, *args, "--json", "--no-log").stdout.splitlines()
        return [{k: v for k, v in json.loads(line).items() if k != "method"} for line in out]

    every = cli_lines("search", QUESTION, "--method", "bm25", "-k", "5")
    second = every[1]["url"]
    only = f"url={second}"
    calls = [("search", {"question": QUESTION, "method": "bm25", "k": 5, "filter": [only]}),
             ("search", {"question": QUESTION, "method": "bm25", "k": 2, "offset": 1}),
             ("context", {"question": QUESTION, "method": "bm25", "filter": [only]}),
             ("compare", {"question": QUESTION, "methods": ["bm25"], "filter": [only]}),
             ("search", {"question": QUESTION, "filter": ["nonsense"]}),
             # one filter as a text, as HTTP and Python take it (it was refused: not a list)
             ("search", {"question": QUESTION, "method": "bm25", "k": 5, "filter": only})]
    _, results = asyncio.run(_drive(lexical_home, calls))
    assert not any(r.is_error for r in results[:4]), [r.content for r in results]
    assert not results[5].is_error, results[5].content
    assert results[5].structured_content["hits"] == results[0].structured_content["hits"]
    filtered, paged, context, compare = (r.structured_content for r in results[:4])
    bad = results[4]  # the library's one line, not "Error executing tool" alone
    assert bad.is_error and "bad filter 'nonsense': write FIELD=VALUE" in bad.content[0].text
    expected = cli_lines("search", QUESTION, "--method", "bm25", "-k", "5", "--filter", only)
    assert filtered["hits"] == expected and {h["url"] for h in expected} == {second}
    assert paged["hits"] == cli_lines("search", QUESTION, "--method", "bm25", "-k", "2",
                                      "--offset", "1") == every[1:3]
    cli_context = cli_json(lexical_home, "context", QUESTION, "--method", "bm25", "--filter",
                           only, "--no-log")
    assert context["prompt"] == cli_context.stdout and second in context["prompt"]
    cli_compare = json.loads(cli_json(lexical_home, "compare", QUESTION, "--methods", "bm25",
                                      "--filter", only, "--json").stdout)
    assert compare["columns"] == cli_compare["columns"] and compare["columns"]["bm25"]
    assert compare["columns"]["bm25"] != json.loads(cli_json(
        lexical_home, "compare", QUESTION, "--methods", "bm25", "--json").stdout)["columns"][
        "bm25"]


class _Lines:
    """`busca mcp` over stdio as a client sees it: JSON lines in, JSON lines out."""

    def __init__(self, home):
        import queue
        import subprocess
        import threading

        self.process = subprocess.Popen(
            [sys.executable, "-m", "busca.cli", "--home", str(home), "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.answers: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.answers.put(json.loads(line))

    def send(self, line: bytes) -> None:
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = 60) -> dict:
        import queue

        try:
            return self.answers.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer in {timeout} s: the line was dropped") from None

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(30)


def _request(id_: int, method: str, params: dict | None = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": method,
                       **({"params": params} if params is not None else {})}).encode()


def test_a_malformed_line_is_a_json_rpc_error_and_the_next_lines_are_served(lexical_home):
    """Not JSON: -32700; JSON that is no JSON-RPC message: -32600; with the message's id
    when it can be read, else null (the SDK dropped them, and the client waited for ever;
    then the readable id was lost); a blank line is no message."""
    server = _Lines(lexical_home)
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}
        malformed = [(b"this is not json", -32700, None),
                     (b'{"jsonrpc": "2.0", "id": 1', -32700, None),
                     (b'{"jsonrpc": "2.0", "id": 7, "method": 5}', -32600, 7),
                     (b"[]", -32600, None), (b"42", -32600, None),
                     (b'{"id": 3, "method": "ping"}', -32600, 3),
                     (b'{"jsonrpc": "2.0", "id": "x1", "method": "tools/call", "params": "x"}',
                      -32600, "x1"), (b'{"jsonrpc": "2.0", "id": true, "method": 5}', -32600,
                                      None)]
        for line, code, request in malformed[:3]:  # before the session is initialised
            server.send(line)
            got = server.answer()
            assert got["id"] == request and got["error"]["code"] == code, (line, got)
            assert got["jsonrpc"] == "2.0" and "\n" not in got["error"]["message"]
        server.send(b"")
        server.send(_request(1, "initialize", init))
        assert server.answer()["id"] == 1
        server.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
                    .encode())
        for line, code, request in malformed[3:]:  # and while it runs
            server.send(line)
            got = server.answer()
            assert got["id"] == request and got["error"]["code"] == code, (line, got)
        server.send(_request(2, "tools/list"))
        tools = server.answer()
        assert tools["id"] == 2 and {t["name"] for t in tools["result"]["tools"]} == TOOLS
    finally:
        server.close()


def test_a_home_removed_while_the_server_runs_is_one_line_and_stays_removed(lexical_home,
                                                                           tmp_path):
    """busca mcp only reads: a home that disappears after the start is an error naming it,
    never a new empty home made by the next call (it opened homes with create=True)."""
    import shutil
    home = tmp_path / "home"
    shutil.copytree(lexical_home, home)

    async def drive():
        async with _session(home) as (read, write), ClientSession(read, write) as session:
            await session.initialize()  # the start checked the home; no call opened it yet
            shutil.rmtree(home)
            return await session.call_tool("search", {"question": QUESTION})

    gone = asyncio.run(drive())
    assert gone.is_error
    text = gone.content[0].text
    assert "\n" not in text.strip() and str(home) in text, text
    assert not home.exists()


def _hybrid_tools(tmp_path, tool: str):
    """A home of the fixture site with a fake dense model, and the tools over it; `tool`'s
    schema lists hybrid's options."""
    from busca.serve.engine import Engine
    from busca.serve.mcp_server import Tools, create_server
    from conftest import FIXTURES

    home = tmp_path / "home"
    for args in (["add", str(FIXTURES / "site" / "articles.jsonl")],
                 ["index", "-q", "--dense", "fake"]):
        assert cli_json(home, *args).exit_code == 0
    schema = create_server(home)._tool_input_schema(tool)["properties"]
    assert {"fusion", "window", "rrf_k", "weights"} <= set(schema)
    return home, Tools(Engine(home, log_queries=False, warm=False))


def test_search_takes_hybrids_options_as_http_and_the_cli(tmp_path, fake):
    """fusion, window, rrf_k and weights, as GET /api/search and busca search take them
    (the tool refused them as unknown arguments), with the library's rule for another
    method."""
    from mcp.server.mcpserver.exceptions import ToolError

    home, tools = _hybrid_tools(tmp_path, "search")
    options = {"method": "hybrid", "fusion": "rrf", "window": 20, "rrf_k": 10.0,
               "weights": "bm25=1,dense=0.5", "k": 4}
    found = asyncio.run(tools.search(QUESTION, **options))
    cli = [json.loads(line) for line in cli_json(
        home, "search", QUESTION, "--method", "hybrid", "--fusion", "rrf", "--window", "20",
        "--rrf-k", "10", "--weights", "bm25=1,dense=0.5", "-k", "4", "--json", "--no-log",
        "--no-serve").stdout.splitlines()]
    assert found["hits"] == [{k: v for k, v in h.items() if k not in ("method", "fusion")}
                             for h in cli] and len(cli) == 4
    with pytest.raises(ToolError, match="fusion only applies to method='hybrid'"):
        asyncio.run(tools.search(QUESTION, method="bm25", fusion="rrf"))


def test_context_takes_hybrids_options_as_search_does(tmp_path, fake):
    """The context tool takes fusion, window, rrf_k and weights, as the search tool, POST
    /api/context and busca context do (it refused them as unknown arguments): the passages
    and prompt of busca context --json with them; the library's rule for another method."""
    from mcp.server.mcpserver.exceptions import ToolError

    home, tools = _hybrid_tools(tmp_path, "context")
    options = {"fusion": "rrf", "window": 20, "rrf_k": 10.0, "weights": {"bm25": 1, "dense": 0.5}}
    found = asyncio.run(tools.context(QUESTION, method="hybrid", min_score=0, **options))
    plain = asyncio.run(tools.context(QUESTION, method="hybrid", min_score=0))
    cli = json.loads(cli_json(
        home, "context", QUESTION, "--method", "hybrid", "--fusion", "rrf", "--window", "20",
        "--rrf-k", "10", "--weights", "bm25=1,dense=0.5", "--min-score", "0", "--json",
        "--no-log", "--no-serve").stdout)
    assert found["answered"] and (found["passages"], found["prompt"]) == (
        cli["passages"], cli["prompt"])
    assert found["passages"] != plain["passages"]
    with pytest.raises(ToolError, match="fusion only applies to method='hybrid'"):
        asyncio.run(tools.context(QUESTION, method="bm25", fusion="rrf"))


def test_the_context_tool_speaks_the_index_language(tmp_path):
    """On an index built with bm25's en analyzer the context tool gave the Portuguese
    instruction unless each call said lang "en": now the index's language (its `lang` says
    which), and an explicit lang still chooses."""
    from conftest import ENGLISH_DOCS, write_jsonl

    home = tmp_path / "home"
    docs = write_jsonl(tmp_path / "en.jsonl", ENGLISH_DOCS)
    for args in (["add", str(docs)], ["index", "-q", "--analyzer", "en"]):
        assert cli_json(home, *args).exit_code == 0
    asked = {"question": "How long do refunds take?", "method": "bm25", "min_score": 0}
    _, results = asyncio.run(_drive(home, [("context", asked),
                                           ("context", {**asked, "lang": "pt"}),
                                           ("context", {**asked, "lang": "fr"})]))
    default, chosen, bad = results
    assert not default.is_error and not chosen.is_error, [r.content for r in results]
    assert default.structured_content["prompt"].startswith("Answer using only the passages")
    assert default.structured_content["lang"] == "en"
    assert chosen.structured_content["prompt"].startswith("Responda usando apenas")
    assert chosen.structured_content["lang"] == "pt"
    assert bad.is_error


def test_search_and_context_tools_count_the_documents_they_left_out(tmp_path):
    """A document removed since the build is left out of the tools' answers, which say how
    many (`left_out`, as /api/search and /api/context do), in their structured content."""
    from conftest import ENGLISH_DOCS, write_jsonl

    home = tmp_path / "home"
    docs = write_jsonl(tmp_path / "en.jsonl", ENGLISH_DOCS)
    for args in (["add", str(docs)], ["index", "-q", "--analyzer", "en"],
                 ["remove", ENGLISH_DOCS[0]["url"]]):
        assert cli_json(home, *args).exit_code == 0
    asked = {"question": "refunds warehouse", "method": "bm25", "min_score": 0}
    _, (search, context) = asyncio.run(_drive(home, [("search", asked), ("context", asked)]))
    assert not search.is_error and not context.is_error, [search.content, context.content]
    assert search.structured_content["left_out"] == context.structured_content["left_out"] == 1
    assert [h["url"] for h in search.structured_content["hits"]] == [ENGLISH_DOCS[1]["url"]]
    assert [p["url"] for p in context.structured_content["passages"]] == [ENGLISH_DOCS[1]["url"]]
