"""`busca serve` behind a reverse proxy, as a team deploys it: at the root of a name, and at a
sub-path with the prefix stripped (nginx's `location /busca/ { proxy_pass
http://127.0.0.1:8000/; }`). The proxy is a small one started here on 127.0.0.1 (standard
library), doing what nginx does: strips the prefix, redirects `/busca` to `/busca/`, sends
`X-Forwarded-*`, keeps its own `Host` or sends the upstream's, and rewrites a `Location` that
names the upstream (`proxy_redirect default`). Every link, form, script and style sheet of
the real pages is resolved as a browser does (urljoin against the page's public URL) and
fetched through the proxy."""

from __future__ import annotations

import http.client
import json
import threading
from base64 import b64encode
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote_plus, urljoin, urlsplit

import pytest
from click.testing import CliRunner

from busca.cli import cli
from conftest import FIXTURES
from serving import Server

PUBLIC = "busca.intra.example"  # the name the team's browsers use
TOKEN = "Zk4xq1cJ2mR8vT0uWbN6yHsPaE3dLfGo9iKjQ7rXtV5"
QUESTION = quote_plus("Qual o limite das atividades extracurriculares no curso?")


class Proxy:
    """A reverse proxy on 127.0.0.1 to `upstream` for the paths under `prefix` ("" or
    "/busca"), the prefix stripped; `keep_host`: send the client's Host (nginx's
    `proxy_set_header Host $host`), else the upstream's (nginx's default)."""

    def __init__(self, upstream: str, prefix: str = "", *, keep_host: bool = False):
        target = urlsplit(upstream)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._forward()

            def do_POST(self):
                self._forward()

            def _forward(self):
                if prefix and self.path == prefix:  # nginx: location /busca/ answers /busca
                    return self._answer(301, [("Location", prefix + "/")], b"")
                if not self.path.startswith(prefix + "/"):
                    return self._answer(404, [], b"not proxied")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection")}
                headers.update({"Host": self.headers["Host"] if keep_host else target.netloc,
                                "X-Forwarded-Proto": "https",
                                "X-Forwarded-Host": self.headers["Host"],
                                "X-Forwarded-For": self.client_address[0],
                                **({"X-Forwarded-Prefix": prefix} if prefix else {})})
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                conn.request(self.command, self.path[len(prefix):], body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                conn.close()
                kept = [(k, v) for k, v in answer.getheaders()
                        if k.lower() not in ("transfer-encoding", "connection", "content-length")]
                kept = [(k, v.replace(upstream.rstrip("/") + "/", prefix + "/")
                         if k.lower() == "location" else v) for k, v in kept]
                self._answer(answer.status, kept, data)

            def _answer(self, status, headers, data):
                self.send_response(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.prefix = prefix
        self.thread = threading.Thread(target=proxy.httpd.serve_forever, daemon=True)
        self.thread.start()

    def get(self, path: str, headers: dict | None = None, *, host: str = PUBLIC,
            method: str = "GET", body: bytes | None = None):
        """(status, headers in lower case, body text) of a request of a public path."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request(method, path, body=body, headers={"Host": host, **(headers or {})})
        answer = conn.getresponse()
        data = answer.read().decode()
        conn.close()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, data

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Links(HTMLParser):
    """Every URL a browser would load or follow from a page: href, src, form action."""

    def __init__(self):
        super().__init__()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src", "action") and value is not None:
                self.urls.append((f"<{tag} {name}>", value))


def local_links(page_url: str, html: str) -> list[tuple[str, str]]:
    """(what, public URL) of each link of the page to this server, resolved as a browser
    does (fragments and http(s) links to crawled sites left out)."""
    parser = Links()
    parser.feed(html)
    out = []
    for what, value in parser.urls:
        if value.startswith("#") or urlsplit(value).netloc:
            continue
        out.append((what, urljoin(page_url, value).split("#")[0]))
    return out


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("proxied") / "home"
    runs = home.parent / "runs"
    runs.mkdir()
    for args in (["add", str(FIXTURES / "site" / "articles.jsonl")],
                 ["index", "-q", "--methods", "tfidf,bm25"],
                 ["eval", str(FIXTURES / "golden" / "golden.json"), "-q",
                  "--run-out", str(runs / "fixture.json")]):
        result = CliRunner().invoke(cli, ["--home", str(home), *args], obj={})
        assert result.exit_code == 0, result.output
    return home


@pytest.fixture(scope="module")
def server(home):
    with Server(home, "--no-log", "--quiet", "--runs", str(home.parent / "runs"),
                "--allow-host", PUBLIC) as s:
        yield s


@pytest.fixture(scope="module", params=["", "/busca"], ids=["root", "sub-path"])
def proxy(request, server):
    proxy = Proxy(server.url, request.param)
    yield proxy
    proxy.close()


def _public(proxy: Proxy, path: str) -> str:
    return f"http://127.0.0.1:{proxy.port}{proxy.prefix}{path}"


def _walk(proxy: Proxy, paths: list[str]) -> set[str]:
    """Open each page and every local link, form, script and style sheet it has, through the
    proxy; every one is answered 200 under the prefix. The URLs followed."""
    followed: set[str] = set()
    for path in paths:
        page = _public(proxy, path)
        status, headers, html = proxy.get(urlsplit(page).path + "?" + urlsplit(page).query)
        assert status == 200 and headers["content-type"].startswith("text/html"), (page, html)
        for what, url in local_links(page, html):
            assert urlsplit(url).path.startswith(proxy.prefix + "/"), \
                f"{what} of {path} leaves {proxy.prefix or 'the root'}/: {url}"
            if url in followed:
                continue
            followed.add(url)
            parts = urlsplit(url)
            status, _, body = proxy.get(parts.path + (f"?{parts.query}" if parts.query else ""))
            assert status == 200, (what, url, body[:200])
    return followed


def test_every_link_of_the_pages_works_at_the_root_and_under_a_sub_path(proxy):
    """Before, the pages linked /static/busca.css, /eval and action="/" absolutely: under
    /busca/ the browser asked the proxy's root for them (no style, no script, and the search
    form left busca)."""
    followed = _walk(proxy, ["/", f"/?q={QUESTION}&method=bm25",
                             f"/?q={QUESTION}&method=compare", "/eval", "/eval?run=fixture.json"])
    paths = {urlsplit(url).path for url in followed}
    for asset in ("busca.css", "busca.js", "favicon.svg"):
        assert f"{proxy.prefix}/static/{asset}" in paths
    assert f"{proxy.prefix}/eval" in paths and f"{proxy.prefix}/" in paths
    assert any("run=fixture.json" in url and "q=" in url for url in followed)  # a question's view


def test_the_search_form_submits_under_the_prefix(proxy):
    status, _, html = proxy.get(f"{proxy.prefix}/")
    form = [url for what, url in local_links(_public(proxy, "/"), html) if "form" in what]
    assert len(form) == 1 and urlsplit(form[0]).path == f"{proxy.prefix}/", form
    parts = urlsplit(form[0])
    status, _, html = proxy.get(f"{parts.path}?q=universidade&method=bm25&k=3")
    assert status == 200 and 'class="hits"' in html


def test_the_sub_path_without_its_slash_redirects_to_it(server):
    proxy = Proxy(server.url, "/busca")
    try:
        status, headers, _ = proxy.get("/busca")
        assert status == 301 and headers["location"] == "/busca/"
    finally:
        proxy.close()


def test_signing_in_comes_back_to_the_page_under_the_prefix(home):
    """/login answered `Location: /`: under /busca/ the browser went to the proxy's root."""
    tokens = home.parent / "tokens.txt"
    tokens.write_text(f"{TOKEN} staff\n")
    with Server(home, "--no-log", "--quiet", "--tokens", str(tokens)) as server:
        for prefix in ("", "/busca"):
            proxy = Proxy(server.url, prefix, keep_host=True)
            try:
                basic = "Basic " + b64encode(f"me:{TOKEN}".encode()).decode()
                status, headers, _ = proxy.get(f"{prefix}/login",
                                               {"Authorization": basic}, host="127.0.0.1")
                assert status == 303
                back = urljoin(_public(proxy, "/login"), headers["location"])
                assert back == _public(proxy, "/"), headers["location"]
                status, _, html = proxy.get(urlsplit(back).path, {"Authorization": basic},
                                            host="127.0.0.1")
                assert status == 200 and 'id="search"' in html
            finally:
                proxy.close()


def test_a_client_generated_from_openapi_json_calls_under_the_prefix(proxy):
    """/openapi.json had no `servers`: its default, "/", is the proxy's root, so a client
    generated from https://intra.example/busca/openapi.json called /api/search there."""
    status, _, text = proxy.get(f"{proxy.prefix}/openapi.json")
    document = json.loads(text)
    base = urljoin(_public(proxy, "/openapi.json"), document["servers"][0]["url"])
    assert base == _public(proxy, "/")
    search = urlsplit(base.rstrip("/") + "/api/search")  # the spec's URL + path, joined
    status, _, text = proxy.get(f"{search.path}?q=universidade&method=bm25&k=2")
    assert status == 200 and len(json.loads(text)["hits"]) == 2


@pytest.mark.parametrize("keep_host", [False, True], ids=["upstream-host", "public-host"])
def test_the_teams_own_page_posts_through_the_proxy_with_allow_host(server, keep_host):
    """A page of https://busca.intra.example (the proxy's own name, so the same origin as the
    API under /busca/) POSTs a question: its Origin is the public name, whatever Host the proxy
    sends on; --allow-host of that name lets it in, and a page of another site is still a 403."""
    proxy = Proxy(server.url, "/busca", keep_host=keep_host)
    body = json.dumps({"q": "universidade", "method": "bm25", "k": 2}).encode()
    try:
        for origin, expected in ((f"https://{PUBLIC}", 200), (f"https://{PUBLIC}:8443", 200),
                                 ("https://evil.example", 403)):
            status, _, text = proxy.get("/busca/api/context", {
                "Origin": origin, "Sec-Fetch-Site": "same-origin",
                "Content-Type": "application/json"}, method="POST", body=body)
            assert status == expected, (origin, text)
    finally:
        proxy.close()


@pytest.mark.parametrize("keep_host", [False, True], ids=["upstream-host", "public-host"])
def test_a_trailing_slash_redirects_within_the_proxy(server, keep_host):
    """/eval/ was redirected to an absolute URL built from the Host and X-Forwarded-Proto the
    server saw: https://127.0.0.1:8000/eval (nginx rewrites only http://127.0.0.1:8000/), or
    https://busca.intra.example/eval without the /busca prefix."""
    for prefix in ("", "/busca"):
        proxy = Proxy(server.url, prefix, keep_host=keep_host)
        try:
            for path, query in (("/eval/", "?run=fixture.json"), ("/api/stats/", ""),
                                ("/api/chunk/3/", "")):
                status, headers, _ = proxy.get(f"{prefix}{path}{query}")
                assert status == 307, (prefix, path)
                moved = urljoin(_public(proxy, path + query), headers["location"])
                assert moved == _public(proxy, path.rstrip("/") + query), headers["location"]
                assert proxy.get(urlsplit(moved).path + query)[0] == 200
            status, headers, text = proxy.get(f"{prefix}/nope/")
            assert status == 404 and "not found: /nope/" in json.loads(text)["error"]
        finally:
            proxy.close()
