"""--offset (the next page of hits): one field of SearchSpec and one step of the search use
case, so Python, `busca search`, the HTTP API and `busca search` answered by a running
`busca serve` give the same page."""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pytest
from click.testing import CliRunner

import busca
from busca.cli import cli

QUESTION = "Qual a universidade pioneira no Brasil em engenharia de software?"


@pytest.fixture(scope="module")
def home(lexical_home, tmp_path_factory) -> Path:
    """A private copy (a running server leaves its record in the home)."""
    copy = tmp_path_factory.mktemp("offset") / "home"
    shutil.copytree(lexical_home, copy)
    return copy


def cli_lines(home: Path, *args: str) -> list[dict]:
    result = CliRunner().invoke(cli, ["--home", str(home), "search", QUESTION, "--method",
                                      "bm25", "--json", "--no-log", *args], obj={})
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_offset_skips_the_hits_of_the_pages_before(home):
    with busca.open(home, create=False) as corpus:
        first = corpus.search(QUESTION, method="bm25", k=6, log=False).hits
        page = corpus.search(QUESTION, method="bm25", k=3, offset=3, log=False).hits
    assert len(first) == 6 and page == first[3:]
    assert [h.rank for h in page] == [4, 5, 6]  # ranks go on from the page before
    assert cli_lines(home, "-k", "3", "--offset", "3", "--no-serve") == \
        [h.to_json() for h in page]


def test_the_http_api_and_a_served_busca_search_give_the_same_page(home, monkeypatch):
    from serving import Server

    monkeypatch.delenv("BUSCA_NO_SERVE", raising=False)
    with busca.open(home, create=False) as corpus:
        page = corpus.search(QUESTION, method="bm25", k=3, offset=3, log=False)
    with Server(home, "--no-log") as server:
        query = urlencode({"q": QUESTION, "method": "bm25", "k": 3, "offset": 3})
        with urllib.request.urlopen(f"{server.url}api/search?{query}", timeout=30) as answer:
            served = json.load(answer)
        asked = cli_lines(home, "-k", "3", "--offset", "3")
        deadline = time.monotonic() + 10  # the access log's lines come just after the answers
        while sum("/api/search" in line for line in server.stderr) < 2:
            assert time.monotonic() < deadline, "busca search did not ask the server"
            time.sleep(0.02)
    assert served["hits"] == page.to_json()["hits"]
    assert asked == page.lines()
