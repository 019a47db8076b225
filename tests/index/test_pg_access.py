"""`busca serve --tokens` on a PostgreSQL home (issue #26): the requests of
tests/serve/test_serve_access.py, answered alike — each token sees only its groups' documents and
the public ones, through search, compare, context, chunk ids guessed one by one and stats."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from conftest import write_jsonl
from serving import Server
from test_serve_access import (DOCS, ONLY, PUBLIC, SALES, SEES, STAFF, WORD, WRITER, get,
                               search_urls)

from test_pg_filters import busca

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def server(tmp_path_factory, postgres_server_url):
    import random

    folder = tmp_path_factory.mktemp("pgaccess")
    home = f"{postgres_server_url}?corpus=access_{random.getrandbits(32):x}"
    busca(home, "add", str(write_jsonl(folder / "docs.jsonl", DOCS)))
    busca(home, "index", "-q", "--methods", "tfidf,bm25")
    tokens = folder / "tokens.txt"
    tokens.write_text(f"{STAFF} staff\n{SALES} sales,nobody\n", encoding="utf-8")
    with Server(home, "--no-log", "--tokens", str(tokens), "--token", WRITER) as server:
        yield server


@pytest.mark.parametrize("token", [None, STAFF, SALES])
def test_each_token_sees_only_its_documents_on_every_endpoint(server, token):
    assert search_urls(server, token, WORD, "bm25") == SEES[token]
    for url, word in ONLY.items():
        assert search_urls(server, token, word, "tfidf") == ({url} & SEES[token])
        status, text, _ = get(server, "api/context", token, data={"q": word, "min_score": 0})
        assert (status == 200) == (url in SEES[token]) and (url in text) == (url in SEES[token])
    data = json.loads(get(server, "api/compare?" + urlencode({"q": WORD, "k": 10,
                                                              "methods": "bm25"}), token)[1])
    assert {r["url"] for r in data["rows"]} == SEES[token]
    chunks = json.loads(get(server, "api/stats", WRITER)[1])["chunks"]
    seen = {json.loads(text)["url"] for status, text, _ in
            (get(server, f"api/chunk/{i}", token) for i in range(chunks + 3)) if status == 200}
    assert seen == SEES[token]
    stats = json.loads(get(server, "api/stats", token)[1])
    assert (stats["documents"], stats["chunks"]) == (len(SEES[token]), len(SEES[token]))


def test_the_write_token_sees_everything(server):
    assert search_urls(server, WRITER, WORD, "bm25") == {d["url"] for d in DOCS}
    assert PUBLIC < SEES[STAFF]
