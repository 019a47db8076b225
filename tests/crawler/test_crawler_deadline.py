"""Issue 25 item 5: a slow-drip server is cut at the request's deadline, not waited on forever."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest

from busca.crawler.crawl import crawl
from busca.crawler.errors import CrawlError
from busca.crawler.options import CrawlOptions
from busca.index.home.documents import Store

DRIP = 0.2  # seconds between the bytes of a body


class SlowDrip:
    """An HTTP server on 127.0.0.1 that announces 100,000 bytes for any path and then sends
    one byte every DRIP seconds, each read well within any --timeout."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/"
        self.stopped = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                             b"Content-Length: 100000\r\n\r\n")
                while not self.stopped.wait(DRIP):
                    conn.sendall(b"x")
            except OSError:  # the client gave up
                return

    def __enter__(self) -> SlowDrip:
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.listener.close()


def test_the_cli_ends_a_slow_drip_crawl_at_the_deadline_naming_the_url(tmp_path):
    with SlowDrip() as server:
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "busca.cli", "--home", str(tmp_path / "home"), "crawl",
             server.url, "--timeout", "5", "--retries", "1", "--deadline", "1.5"],
            capture_output=True, text=True, timeout=60)
        elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Error: cannot fetch {server.url}: {server.url}robots.txt: no"
                           " complete answer within the 1.5 s deadline (")
    assert last.endswith(" of 100,000 bytes received); raise --deadline for a slow site")
    # two attempts of 1.5 s, the backoff between them, and Python's start-up
    assert elapsed < 20, elapsed


def test_each_attempt_has_its_own_deadline(tmp_path):
    with SlowDrip() as server, Store(tmp_path / "home") as store:
        started = time.monotonic()
        options = CrawlOptions(rate=500.0, backoff=0.01, timeout=5.0, deadline=0.6, retries=2)
        with pytest.raises(CrawlError, match=r"within the 0\.6 s deadline"):
            list(crawl(server.url, store, options=options))
        elapsed = time.monotonic() - started
    assert 3 * 0.6 <= elapsed < 3 * 0.6 + 3 * DRIP + 2, elapsed


def test_a_deadline_of_zero_is_refused(tmp_path):
    with Store(tmp_path / "home") as store, pytest.raises(CrawlError, match="--deadline"):
        list(crawl("http://127.0.0.1:9/", store, options=CrawlOptions(deadline=0)))
