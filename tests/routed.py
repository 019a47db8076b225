"""A web server on 127.0.0.1 whose answers a test sets path by path (`Site`), and a crawl of
it into a store (`crawled`): the misbehaving sites of the crawler's sweeps; and the home page
and robots.txt of a WordPress site mocked with `responses` (`wordpress_home`)."""

from __future__ import annotations

import http.server
import json
import threading
from urllib.parse import parse_qs, urlsplit

import pytest

from busca.crawler.crawl import crawl
from busca.crawler.options import CrawlOptions
from busca.index.home.documents import Store

FAST = {"rate": 1000.0, "backoff": 0.01, "timeout": 5.0}
ALLOW_ALL = (200, {}, b"User-agent: *\nAllow: /\n")


def wordpress_home(rsps, site: str, robots: str = "User-agent: *\n") -> None:
    """A mocked WordPress site's robots.txt and home page, whose Link names its REST API
    (what discovery reads); each test registers the API's answers."""
    rsps.get(f"{site}/robots.txt", body=robots)
    rsps.get(f"{site}/", body="<html><p>home</p></html>", content_type="text/html",
             headers={"Link": f'<{site}/wp-json/>; rel="https://api.w.org/"'})


def page(title: str, text: str) -> bytes:
    return f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>" \
           f"<p>{text}</p></article></body></html>".encode()


class Site:
    """A server on 127.0.0.1: `routes[path]` (the path with its query, else without) is
    (status, headers, body) or a function of the query ({name: value}) giving one; a body
    that is not bytes is sent as JSON; `asked` keeps every request's path and query."""

    def __init__(self, robots: tuple = ALLOW_ALL, missing: tuple = (404, {}, b"not here")):
        self.routes: dict = {"/robots.txt": robots}
        self.asked: list[str] = []
        routes, asked = self.routes, self.asked

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                asked.append(self.path)
                parts = urlsplit(self.path)
                route = routes.get(self.path) or routes.get(parts.path, missing)
                if callable(route):
                    route = route({k: v[0] for k, v in parse_qs(parts.query).items()})
                status, headers, body = route
                if not isinstance(body, bytes):
                    body = json.dumps(body, ensure_ascii=False).encode()
                self.send_response(status)
                for name, value in {"Content-Length": str(len(body)), **headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self, path: str) -> int:
        return sum(1 for p in self.asked if urlsplit(p).path == path)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def crawled(url: str, store, fast: dict = FAST, **options):
    """(the report, every event) of a crawl of `url` into `store`."""
    events = list(crawl(url, store, options=CrawlOptions(**{**fast, **options})))
    return events[-1].report, events


@pytest.fixture(name="site")
def site_fixture():
    """A Site whose robots.txt allows all and whose other paths are 404 until set."""
    s = Site()
    yield s
    s.close()


@pytest.fixture(name="store")
def store_fixture(tmp_path):
    """A local store the crawls of a test write to."""
    with Store(tmp_path / "home") as s:
        yield s
