"""`busca serve --cors ORIGIN`: a web app of another origin reads the API through the
browser's CORS rules, over real HTTP against the real server on 127.0.0.1 (tests/serving.py).
The browser itself: tests/serve/test_serve_pages.py."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from busca.cli import cli
from busca.serve.hosts import BadOrigin, cors_origin
from conftest import lexical_home_of
from serving import Server

VITE = "http://localhost:5173"  # a front end on loopback, another port
APP = "https://app.example.com"  # a front end elsewhere: neither loopback nor --allow-host
CONTEXT = json.dumps({"q": "ornitorrinco", "method": "bm25"}).encode()
TOKEN = "t0ken-for-the-cors-tests-4242"
DOCS = [{"url": "https://ok.example/ornitorrinco", "title": "Ornitorrinco",
         "text": "O ornitorrinco bota ovos e amamenta os filhotes na Austrália."},
        {"url": "https://ok.example/equidna", "title": "Equidna",
         "text": "A equidna também bota ovos, como o ornitorrinco."}]
PREFLIGHT = {"Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization,content-type"}


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return lexical_home_of(tmp_path_factory.mktemp("cors") / "home", DOCS)


@pytest.fixture(scope="module")
def server(home):
    with Server(home, "--no-log", "--token", TOKEN, "--cors", VITE, "--cors",
                "HTTPS://App.Example.com:443") as s:
        yield s


def answer(server, method: str, path: str, origin: str | None, **kwargs):
    """(status, headers, body) of one request carrying `origin` as its Origin header."""
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    headers = {**kwargs.get("headers", {}), **({"Origin": origin} if origin else {})}
    body = kwargs.get("body")
    if body is not None:
        headers.setdefault("Content-Type", "application/json")
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


@pytest.mark.parametrize("origin", [VITE, APP])
@pytest.mark.parametrize("method,path,body,status", [
    ("GET", "/api/search?q=ornitorrinco&method=bm25", None, 200),
    ("POST", "/api/context", CONTEXT, 200),
    ("GET", "/api/search?q=ornitorrinco&k=abc", None, 400),  # errors too
    ("GET", "/api/search?q=" + "a" * 9000, None, 414),  # the Guard's own refusals too
    ("POST", "/api/documents", b'{"documents": []}', 401),  # no token: still refused
])
def test_a_listed_origin_may_read_the_answer(server, origin, method, path, body, status):
    got, headers, data = answer(server, method, path, origin, body=body)
    assert got == status, data
    assert headers.get("access-control-allow-origin") == origin, headers
    assert "origin" in headers.get("vary", "").lower()
    assert "access-control-allow-credentials" not in headers
    assert json.loads(data)["status" if status != 200 else "build"]


@pytest.mark.parametrize("origin", [VITE, APP])
@pytest.mark.parametrize("path,methods", [("/api/context", "POST"),
                                          ("/api/search?q=x", "GET, HEAD"),
                                          ("/api/chunk/0", "GET, HEAD"),
                                          ("/api/documents", "DELETE, POST"),
                                          ("/healthz", "GET, HEAD")])
def test_a_preflight_of_a_listed_origin_is_answered(server, origin, path, methods):
    """A JSON POST or an Authorization header makes the browser ask first with OPTIONS; it
    was a 405 `OPTIONS is not allowed`, so the browser never sent the request."""
    status, headers, data = answer(server, "OPTIONS", path, origin, headers=PREFLIGHT)
    assert status == 204 and data == b"", (status, data)
    assert headers["access-control-allow-origin"] == origin
    assert headers["access-control-allow-methods"] == methods
    assert headers["access-control-allow-headers"] == "Authorization, Content-Type"
    assert int(headers["access-control-max-age"]) > 0
    assert "origin" in headers["vary"].lower()
    assert "access-control-allow-credentials" not in headers


def test_a_listed_origin_writes_only_with_the_token(server):
    bad = json.dumps({"documents": [{"url": 1}]}).encode()
    status, headers, data = answer(server, "POST", "/api/documents", VITE, body=bad)
    assert status == 401 and headers["access-control-allow-origin"] == VITE
    status, headers, data = answer(server, "POST", "/api/documents", VITE, body=bad,
                                   headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 400 and "document 1" in json.loads(data)["error"]  # past the token


@pytest.mark.parametrize("origin,status", [
    ("http://localhost:5174", 200),  # loopback, not listed: answered, as before, unreadable
    ("http://evil.example", 403),
    ("https://app.example.com:8443", 403),  # another port is another origin
    ("http://app.example.com", 403),  # another scheme too
    ("http://localhost:5173/", 403), ("null", 403),
])
def test_an_origin_not_listed_is_answered_as_before(server, origin, status):
    got, headers, data = answer(server, "GET", "/api/search?q=ornitorrinco", origin)
    assert got == status, data
    assert "access-control-allow-origin" not in headers
    got, headers, data = answer(server, "OPTIONS", "/api/context", origin, headers=PREFLIGHT)
    assert got == {200: 405, 403: 403}[status], data  # no preflight answer: the browser stops
    assert not any(k.startswith("access-control-") for k in headers), headers


def test_a_listed_origin_does_not_lift_the_host_check(server):
    parts = urlsplit(server.url)
    for hosts, origins, status in ((["evil.example"], [VITE], 400),
                                   ([f"127.0.0.1:{parts.port}"], [VITE, APP], 403)):
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        conn.putrequest("GET", "/api/stats", skip_host=True)
        for name, values in (("Host", hosts), ("Origin", origins)):
            for value in values:
                conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        data = json.loads(response.read())
        conn.close()
        assert response.status == status and "documents" not in data, data


def test_only_cors_makes_an_answer_readable(home, server):
    """The same requests to a server without --cors: answered as before, nothing readable."""
    with Server(home, "--no-log") as plain:
        for origin, before, after in ((VITE, 200, 200), (APP, 403, 200)):
            status, headers, _ = answer(plain, "GET", "/api/search?q=ornitorrinco", origin)
            assert status == before and "access-control-allow-origin" not in headers
            assert "vary" not in headers
            status, headers, _ = answer(server, "GET", "/api/search?q=ornitorrinco", origin)
            assert status == after and headers["access-control-allow-origin"] == origin


@pytest.mark.parametrize("value,words", [
    ("*", "would let every web page"),
    ("null", "sandboxed"),
    ("http://localhost:5173/app", "no path"),
    ("http://localhost:5173//", "no path"),
    ("localhost:5173", "is not an origin"),
    ("ftp://files.example", "is not an origin"),
    ("http://user@app.example", "is not an origin"),
    ("http://app.example:99999", "is not an origin"),
    ("http://app.example?x=1", "is not an origin"),
    ("", "is not an origin"),
])
def test_a_bad_cors_value_is_a_one_line_usage_error(home, value, words):
    result = CliRunner().invoke(cli, ["--home", str(home), "serve", "--port", "0",
                                      "--cors", value], obj={})
    assert result.exit_code == 2, result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and "--cors" in error[0] and words in error[0], result.output
    assert "e.g. --cors http://localhost:5173" in error[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize("value,origin", [
    ("HTTP://LocalHost:5173", "http://localhost:5173"),
    ("http://localhost:80", "http://localhost"),
    ("https://app.example.com:443", "https://app.example.com"),
    ("https://app.example.com:80", "https://app.example.com:80"),
    ("http://[0:0::1]:5173", "http://[::1]:5173"),
    ("http://127.0.0.1:3000", "http://127.0.0.1:3000"),
    ("http://localhost:5173/", "http://localhost:5173"),  # as the address bar shows it
])
def test_an_origin_is_kept_as_the_browser_sends_it(value, origin):
    assert cors_origin(value) == origin


def test_a_bad_origin_from_python_is_refused_too():
    from busca.serve.app import create_app

    with pytest.raises(BadOrigin, match="is not an origin"):
        create_app(None, runs=Path("."), cors=("localhost:5173",))
