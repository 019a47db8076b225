"""`busca serve`'s guards over real HTTP: the Host check against DNS rebinding (raw Host
headers, byte for byte), the bearer scheme in any case, a body nested too deeply.

The real server runs on 127.0.0.1 (tests/serving.py) over a small lexical corpus.
"""

from __future__ import annotations

import contextlib
import http.client
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from busca.cli import cli
from busca.serve.hosts import host_rule
from conftest import write_jsonl
from serving import Server

TOKEN = "t0ken-for-the-security-tests-42"
DOCS = [{"url": "https://ok.example/ornitorrinco", "title": "Ornitorrinco",
         "text": "O ornitorrinco bota ovos e amamenta os filhotes na Austrália."},
        {"url": "https://ok.example/equidna", "title": "Equidna",
         "text": "A equidna também bota ovos, como o ornitorrinco."}]
REFUSED = ["127.0.0.1.evil.example", "127.0.0.1.evil.example:{port}", "127.0.0.1evil.com",
           "127.0.0.evil", "127.evil", "evil.example", "evil.example:{port}",
           "localhost.evil.example", "evillocalhost", "127.0.0.1:{port}@evil.example",
           "127.0.0.1:{port}.evil.example", "127.0.0.1:abc", "[::1].evil.example",
           "[::1]evil", "[::2]:{port}", "10.0.0.1", "0.0.0.0:{port}", "127.1", "", " ",
           "busca.lan", "busca.lan:{port}"]
ANSWERED = ["127.0.0.1:{port}", "127.0.0.1", "127.9.8.7:{port}", "localhost:{port}",
            "LocalHost", "[::1]:{port}", "[::1]"]


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("security") / "home"
    source = write_jsonl(home.parent / "docs.jsonl", DOCS)
    for args in (["add", str(source)], ["index", "-q"]):
        result = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False,
                                    obj={})
        assert result.exit_code == 0, result.output
    return home


@pytest.fixture(scope="module")
def server(home):
    with Server(home, "--no-log", "--token", TOKEN) as s:
        yield s


def send(server, method: str, path: str, *, hosts: list[str] | None = None,
         headers: dict | None = None, body: bytes | None = None) -> tuple[int, dict]:
    """One request with its Host header(s) exactly as given (none of http.client's own)."""
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for host in [f"127.0.0.1:{parts.port}"] if hosts is None else hosts:
        conn.putheader("Host", host.format(port=parts.port))
    for key, value in (headers or {}).items():
        conn.putheader(key, value)
    if body is not None:
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    assert b"Traceback" not in data
    if not response.getheader("content-type", "").startswith("application/json"):
        return response.status, {"raw": data.decode("latin-1")}  # refused by uvicorn itself
    return response.status, json.loads(data)


@pytest.mark.parametrize("host", REFUSED)
def test_a_host_that_only_starts_like_loopback_is_refused(server, host):
    status, data = send(server, "GET", "/api/stats", hosts=[host])
    assert status == 400 and "documents" not in data
    assert "Host" in data.get("error", "") or data["raw"] == "Invalid HTTP request received."


@pytest.mark.parametrize("host", ANSWERED)
def test_loopback_literals_and_localhost_are_answered(server, host):
    status, data = send(server, "GET", "/api/stats", hosts=[host])
    assert status == 200 and data["documents"] == 2


def test_a_page_of_another_site_cannot_make_the_server_answer(server):
    """A form's POST (text/plain, no CORS preflight) from a page of another site carries its
    Origin: refused before the question is asked (it was answered 200); the server's own page
    and programs without an Origin are answered."""
    body = json.dumps({"q": "ornitorrinco", "method": "bm25"}).encode()
    for origin in ("http://evil.example", "https://127.0.0.1.evil.example", "null",
                   "http://localhost.evil.example:{port}", "file://"):
        for method, path, data in (("POST", "/api/context", body),
                                   ("GET", "/api/search?q=ornitorrinco", None)):
            status, answer = send(server, method, path, body=data,
                                  headers={"Origin": origin.format(port=0)})
            assert status == 403 and "unexpected Origin header" in answer["error"], origin
            assert "passages" not in answer and "hits" not in answer
    port = urlsplit(server.url).port
    for headers in ({"Origin": f"http://127.0.0.1:{port}"}, {"Origin": f"http://localhost:{port}"},
                    {}):
        status, answer = send(server, "POST", "/api/context", body=body, headers=headers)
        assert status == 200 and answer["passages"], headers


CROSS_SITE = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors",
              "Sec-Fetch-Dest": "image"}  # what a browser sends for another site's <img src>


@pytest.mark.parametrize("path", ["/api/search?q={q}&log=1", "/api/compare?q={q}",
                                  "/?q={q}&method=bm25", "/api/chunk/0", "/api/stats"])
def test_another_site_s_image_or_script_cannot_make_the_server_answer(server, home, path):
    """A GET of <img src> or <script src> carries no Origin, but the browser says who asks
    (Fetch Metadata): from a page of another site it is refused before the question is asked
    (it was answered, and with log=1 written to the query log even under --no-log); the
    server's own page, a typed URL and a link followed from another site are answered."""
    question = "xylofonecruzado" + path.split("?")[0].replace("/", "")
    status, answer = send(server, "GET", path.format(q=question), headers=CROSS_SITE)
    text = answer.get("raw", answer.get("error", ""))
    assert status == 403 and "another site" in text, (status, text[:200])
    misses = CliRunner().invoke(cli, ["--home", str(home), "misses", "--json"], obj={})
    assert question not in misses.output
    for headers in ({**CROSS_SITE, "Sec-Fetch-Site": "same-origin"},
                    {**CROSS_SITE, "Sec-Fetch-Site": "none"},
                    {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate",
                     "Sec-Fetch-Dest": "document"}, {}):
        status, answer = send(server, "GET", path.format(q="ornitorrinco"), headers=headers)
        assert status == 200, (headers, answer)


def test_two_host_headers_are_refused(server):
    for hosts in (["127.0.0.1:{port}", "evil.example"], ["evil.example", "127.0.0.1:{port}"],
                  ["127.0.0.1:{port}", "127.0.0.1:{port}"]):
        status, data = send(server, "GET", "/api/stats", hosts=hosts)
        assert status == 400 and "documents" not in data


def test_allow_host_adds_names_and_only_those(home):
    with Server(home, "--no-log", "--allow-host", "busca.lan", "--allow-host",
                "Proxy.Example") as s:
        for host in ("busca.lan:{port}", "BUSCA.LAN", "proxy.example", "127.0.0.1:{port}",
                     "localhost"):
            assert send(s, "GET", "/api/stats", hosts=[host])[0] == 200, host
        for host in ("busca.lan.evil.example", "evil.example", "xbusca.lan",
                     "127.0.0.1.busca.lan"):
            assert send(s, "GET", "/api/stats", hosts=[host])[0] == 400, host


@pytest.mark.parametrize("value", ["http://busca.lan", "busca.lan:8000", "", "a b",
                                   "busca.lan/", "-busca.lan"])
def test_a_bad_allow_host_is_a_usage_error(home, value):
    result = CliRunner().invoke(cli, ["--home", str(home), "serve", "--port", "0",
                                      "--allow-host", value], obj={})
    assert result.exit_code == 2 and "--allow-host" in result.output
    assert "is not a host name" in result.output and "Traceback" not in result.output


def test_a_server_bound_beyond_loopback_keeps_every_host_unless_allow_host():
    assert host_rule("0.0.0.0") is None and host_rule("192.168.1.5") is None  # as before
    rule = host_rule("0.0.0.0", ("busca.lan",))
    assert rule.accepts("192.168.1.5:8000") and rule.accepts("[fe80::1]:8000")  # literals
    assert rule.accepts("busca.lan:8000") and rule.accepts("localhost")
    assert not rule.accepts("evil.example:8000") and not rule.accepts("192.168.1.5.evil.example")
    assert host_rule("::1") == host_rule("127.0.0.1") == host_rule("localhost")


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer", "bEaReR"])
def test_the_bearer_scheme_is_case_insensitive(server, scheme):
    body = json.dumps({"documents": [{"url": 1}]}).encode()
    status, data = send(server, "POST", "/api/documents", body=body,
                        headers={"Authorization": f"{scheme} {TOKEN}"})
    assert status == 400 and "document 1" in data["error"]  # past the token check


@pytest.mark.parametrize("auth", ["bearer wrong-token-0123456789", f"basic {TOKEN}",
                                  f"bearer{TOKEN}", f"{TOKEN}", f"bearer {TOKEN}x", "bearer"])
def test_a_wrong_token_or_scheme_is_still_refused(server, auth):
    body = json.dumps({"documents": [{"url": 1}]}).encode()
    status, data = send(server, "POST", "/api/documents", body=body,
                        headers={"Authorization": auth})
    assert status == 401 and "Bearer" in data["error"]


DEPTH = 100_000


@pytest.mark.parametrize("path,auth", [("/api/context", None), ("/api/documents", TOKEN),
                                       ("/api/index", TOKEN)])
@pytest.mark.parametrize("nested", ["[" * DEPTH + "]" * DEPTH,
                                    '{"a":' * DEPTH + "1" + "}" * DEPTH])
def test_a_body_nested_100000_deep_is_a_400_not_a_500(server, path, auth, nested):
    headers = {"Authorization": f"Bearer {auth}"} if auth else {}
    status, data = send(server, "POST", path, body=nested.encode(), headers=headers)
    assert status == 400 and "nested too deeply" in data["error"]
    status, data = send(server, "GET", "/api/stats")  # and the server goes on
    assert status == 200
    assert not any("RecursionError" in line or "Traceback" in line for line in server.stderr)


@pytest.mark.parametrize("path,auth,body", [
    ("/api/context", None, '{"q": "decreto \\ud800 universidade"}'),
    ("/api/documents", TOKEN, '{"documents": [{"url": "https://lone.example/ok", "title": "ok",'
                              ' "text": "bom"}, {"url": "https://lone.example/bad", "title":'
                              ' "t", "text": "\\ud800"}]}'),
])
def test_a_lone_surrogate_is_a_400_and_writes_nothing(server, path, auth, body):
    """A JSON escape of half a UTF-16 pair (\\ud800) decodes to a string no answer can carry:
    a 400 before any work, and of a batch of documents none is stored."""
    headers = {"Authorization": f"Bearer {auth}"} if auth else {}
    status, data = send(server, "POST", path, body=body.encode(), headers=headers)
    assert status == 400 and "lone surrogate" in data["error"], data
    good = json.dumps({"documents": [{"url": "https://lone.example/ok", "title": "ok",
                                      "text": "bom"}]}).encode()
    if path == "/api/documents":
        status, data = send(server, "POST", path, body=good, headers=headers)
        assert status == 200 and data["added"] == 1, data  # not stored by the refused batch
    assert not any("Traceback" in line for line in server.stderr)


FILTERS = 101  # one more than busca mcp's tools take (MAX_FILTERS)


@pytest.mark.parametrize("method,path,body", [
    ("GET", "/api/search?q=ovos&" + "&".join(["filter=url!%3Dx"] * FILTERS), None),
    ("GET", "/api/compare?q=ovos&" + "&".join(["filter=url!%3Dx"] * FILTERS), None),
    ("GET", "/?q=ovos&" + "&".join(["filter=url!%3Dx"] * FILTERS), None),
    ("POST", "/api/context", json.dumps({"q": "ovos", "filter": ["url!=x"] * 90_000})),
])
def test_a_request_with_too_many_filters_is_a_400(server, method, path, body):
    """Each filter is checked against every document: 90,000 of them in a 1 MB body kept a
    thread busy for minutes (2 ms per filter on 5,000 documents) for any reader; now at most
    as many as busca mcp's tools take, a 400 naming the cap."""
    status, data = send(server, method, path, body=body.encode() if body else None)
    text = data.get("raw", data.get("error", ""))
    assert status == 400 and "at most 100 filters" in text, (status, text[:300])


def test_a_405_names_the_allowed_methods(server):
    """RFC 9110: a 405 carries Allow; on a server with --token the write paths exist, so the
    note about --token is not added there."""
    parts = urlsplit(server.url)
    for method, path, allowed in (("PUT", "/api/search?q=a", "GET"),
                                  ("GET", "/api/documents", "POST"),
                                  ("DELETE", "/api/context", "POST")):
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        conn.request(method, path)
        response = conn.getresponse()
        data = json.loads(response.read())
        conn.close()
        assert response.status == 405 and allowed in response.getheader("Allow", ""), path
        assert "exist only when busca serve runs with --token" not in data["error"]


def test_a_chunk_id_beyond_any_index_is_a_404(server):
    for raw in ("99999999999999999999999", "123456789012345"):
        status, data = send(server, "GET", f"/api/chunk/{raw}")
        assert status == 404 and f"no chunk {raw}" in data["error"], data
    status, data = send(server, "GET", "/api/chunk/12a")
    assert status == 400 and "whole number" in data["error"]


def test_the_server_logs_which_build_it_serves(server, home):
    from busca.index.home.storage import load_index

    build = load_index(home).manifest.build
    assert any(f"INFO busca.corpus.live: serving build {build}" in line
               for line in server.stderr), server.stderr


@pytest.mark.parametrize("path,auth,body,words", [
    ("/api/context", None, {"q": "ornitorrinco", "k": "3"}, "k must be a JSON integer, written"
                                                            " without quotes, got '3'"),
    ("/api/context", None, {"q": "ornitorrinco", "k": True}, "k must be a JSON integer"),
    ("/api/context", None, {"q": "ornitorrinco", "min_score": "0.5"}, "min_score must be a"
                                                                      " JSON number"),
    ("/api/context", None, {"q": "ornitorrinco", "log": "false"}, "log must be a JSON"
                                                                  " boolean"),
    ("/api/index", TOKEN, {"size": 2.5}, "size must be a JSON integer, got 2.5"),
])
def test_a_json_body_is_typed_as_its_schema_says(server, path, auth, body, words):
    """A query string's values are text; a JSON body's are typed, and the OpenAPI document
    says integer, number, boolean: "3" or true for k was taken as 3 or 1 (the 28th session)."""
    headers = {"Authorization": f"Bearer {auth}"} if auth else {}
    status, data = send(server, "POST", path, body=json.dumps(body).encode(), headers=headers)
    assert status == 400 and data["error"].startswith(words), data
    status, data = send(server, "POST", "/api/context",  # null is the default, as absent
                        body=json.dumps({"q": "amamenta filhotes", "k": 1, "min_score": None,
                                         "log": False}).encode())
    assert status == 200 and len(data["passages"]) == 1, data


def test_an_overlap_not_below_the_size_names_the_request_s_fields(server):
    """POST /api/index {"size": 10, "overlap": 10} was refused naming busca index's --overlap
    and --size; the one check (the library's) names the fields sent."""
    status, data = send(server, "POST", "/api/index",
                        headers={"Authorization": f"Bearer {TOKEN}"},
                        body=json.dumps({"size": 10, "overlap": 10}).encode())
    assert status == 400, data
    assert data["error"] == ("the overlap (10 words) must be smaller than the window size (10"
                             " words): give overlap below 10, or size above 10")


@pytest.mark.parametrize("method,sent,path,status", [
    ("GET", "/" + "x" * 60_000, "/" + "x" * 60_000, 404),
    ("GET", "/api/" + "%C3%A9" * 20_000, "/api/" + "é" * 20_000, 404),  # cut as decoded
    ("POST", "/static/" + "y" * 60_000, "/static/" + "y" * 60_000, 405),  # POST on a route
])
def test_a_long_unknown_path_is_echoed_cut_to_80_characters(server, method, sent, path,
                                                             status):
    """A 404 or 405 names the path it did not serve, cut to its first 80 characters and "…":
    a 60 KB path gave a 60 KB error body."""
    status_got, data = send(server, method, sent, body=b"{}" if method == "POST" else None)
    assert status_got == status, data
    echoed = data["error"].split(": ", 1)[1] if status == 404 else data["error"].split(
        " on ", 1)[1]
    assert echoed == path[:80] + "…", data
    assert len(json.dumps(data)) < 600, len(json.dumps(data))


def test_a_short_unknown_path_is_echoed_whole(server):
    status, data = send(server, "GET", "/" + "x" * 79)
    assert status == 404 and data["error"] == "not found: /" + "x" * 79, data


def _raw(server, request: bytes) -> tuple[str, dict[str, str], bytes]:
    """`request` sent byte for byte on a socket; (status line, headers, body) of the answer
    the server sends before it closes the connection."""
    import socket

    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    return status, {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines)}, body


@pytest.mark.parametrize("request_bytes", [
    b"this is not HTTP\r\n\r\n",  # a bad request line
    b"GET /api/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nNoColonHere\r\n\r\n",  # a header line
    b"POST /api/context HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n{}",
])
def test_a_malformed_http_request_is_a_json_400(server, request_bytes):
    """uvicorn refuses it before the app sees it; it answered text/plain "Invalid HTTP request
    received." where every other error of busca serve is JSON."""
    status, headers, body = _raw(server, request_bytes)
    assert status.startswith("HTTP/1.1 400 "), status
    assert headers["content-type"] == "application/json", headers
    assert headers["x-content-type-options"] == "nosniff" and headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body)
    data = json.loads(body)
    assert data["status"] == 400 and "\n" not in data["error"], data
    assert data["error"].startswith("malformed HTTP request"), data


@contextlib.contextmanager
def _served(app, request_timeout: float):
    """`app` served in this process by busca's uvicorn settings with this request timeout
    (busca serve's is REQUEST_TIMEOUT), in a thread; its port."""
    import threading
    import time

    import uvicorn

    from busca.serve.server import bind, uvicorn_config

    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn_config(app, request_timeout=request_timeout,
                                           lifespan="off", log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def timed(home):
    """The real app of `home` with a 1-second request timeout; its port."""
    from busca.serve.app import create_app
    from busca.serve.engine import Engine

    with _served(create_app(Engine(home, log_queries=False)), 1.0) as port:
        yield port


def _closed_within(port: int, sent: bytes, seconds: float, *, trickle: bytes = b"") -> bool:
    """Whether the server closes a connection that sent `sent` (then one byte of `trickle`
    every 0.2 s) within `seconds`."""
    import socket
    import time

    with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
        sock.sendall(sent)
        ends = time.monotonic() + seconds
        rest = trickle
        while time.monotonic() < ends:
            try:
                if sock.recv(65536) == b"":
                    return True
            except TimeoutError:
                pass
            except ConnectionError:
                return True
            if rest:
                try:
                    sock.sendall(rest[:1])
                except ConnectionError:
                    return True
                rest = rest[1:]
    return False


@pytest.mark.parametrize("sent, trickle", [
    (b"", b""),  # a connection that never sends a byte
    (b"GET /api/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X-Slow: " + b"a" * 100),  # slow loris
    (b"POST /api/context HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
     b"Content-Length: 200\r\n\r\n", b'{"q": "' + b"o" * 150),  # a body a byte at a time
])
def test_a_request_that_does_not_arrive_whole_in_time_is_cut(timed, sent, trickle):
    """A client that opened connections and sent their requests a byte now and then (or
    nothing) kept each open for ever, until the server ran out of file descriptors (uvicorn
    times out only idle keep-alive connections): each now has REQUEST_TIMEOUT seconds to send
    its whole request."""
    assert _closed_within(timed, sent, 6.0, trickle=trickle)


def test_a_request_sent_in_time_is_answered_after_the_timeout(timed):
    """The timeout counts until a request has arrived whole, and again after each answer:
    a keep-alive client asking twice, slower than the timeout, is answered both times."""
    import time

    conn = http.client.HTTPConnection("127.0.0.1", timed, timeout=30)
    for _ in range(2):
        conn.request("GET", "/api/stats", headers={"Host": f"127.0.0.1:{timed}"})
        answer = conn.getresponse()
        assert answer.status == 200 and json.loads(answer.read())["documents"] == len(DOCS)
        time.sleep(0.5)
    conn.close()


def test_an_answer_slower_than_the_timeout_is_not_cut():
    """A request that arrived whole is answered however long the app takes (a POST
    /api/index rebuilding for minutes): the timeout is the client's, not the app's."""
    import asyncio

    async def slow(scope, receive, send):  # an app that answers after 2 s
        await asyncio.sleep(2.0)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})

    with _served(slow, 0.5) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/")
        answer = conn.getresponse()
        assert (answer.status, answer.read()) == (200, b"done")
