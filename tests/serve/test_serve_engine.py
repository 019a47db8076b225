"""The server's engine: the live build follows `CURRENT`, a request that ran on a build
swapped out meanwhile is run again on the new one, and one rebuild runs at a time."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from busca.crawler.store import Document  # noqa: E402
from busca.index import build_index, open_home  # noqa: E402
from busca.serve.engine import Engine  # noqa: E402
from busca.serve.errors import BuildRunning, status_of  # noqa: E402

DOCS = [("https://a.example/1", "Um", "O ornitorrinco bota ovos e vive na Austrália."),
        ("https://a.example/2", "Dois", "A equidna também bota ovos. " * 30),
        ("https://a.example/3", "Três", "Cangurus carregam filhotes na bolsa.")]


@pytest.fixture
def home(tmp_path):
    with open_home(tmp_path) as home:
        for url, title, text in DOCS:
            home.put(Document(url, title, text))
        build_index(home, size=20, overlap=5)
    return tmp_path


def rebuild(home, size: int) -> str:
    with open_home(home) as opened:
        return build_index(opened, size=size, overlap=5).build


def test_the_next_request_uses_a_new_build(home):
    engine = Engine(home, log_queries=False)
    first = engine.search("ornitorrinco", method="bm25", k=3)
    new = rebuild(home, 10)
    second = engine.search("ornitorrinco", method="bm25", k=3)
    assert first.build != second.build == new
    assert engine.stats()["build"] == new


def test_a_request_caught_by_a_swap_runs_again_on_the_new_build(home):
    engine = Engine(home, log_queries=False)
    seen = []

    def work(live):
        seen.append(live.build)
        if len(seen) == 1:
            rebuild(home, 12)  # published while this request runs: its rows are dropped
        return live.build

    assert engine.run(work) == seen[-1] != seen[0]
    assert len(seen) == 2


def test_one_rebuild_at_a_time_and_no_write_during_it(home):
    engine = Engine(home, log_queries=False)
    engine._building = True  # a rebuild runs
    for call in (engine.rebuild, lambda: engine.add([{"url": "https://a.example/4",
                                                      "text": "Novo."}]),
                 lambda: engine.remove(["https://a.example/1"])):
        with pytest.raises(BuildRunning) as caught:
            call()
        assert status_of(caught.value) == 409
    engine._building = False
    assert engine.rebuild(size=15).chunker["size"] == 15


def test_a_rebuild_waits_for_a_write_in_flight(home):
    """POST /api/index sent while another request's documents were being stored was a 409
    "an index build is running" (no build ran): it waits for that write, then builds."""
    import threading

    engine = Engine(home, log_queries=False)
    outcome: list = []

    def rebuild_now():
        try:
            outcome.append(engine.rebuild(size=15))
        except Exception as e:  # noqa: BLE001 - the test reports it
            outcome.append(e)

    with engine._writing:  # an add of another request is being stored
        worker = threading.Thread(target=rebuild_now)
        worker.start()
        worker.join(0.5)
    worker.join(120)
    assert len(outcome) == 1 and not isinstance(outcome[0], Exception), outcome
    assert outcome[0].chunker["size"] == 15


def test_a_build_read_while_it_was_removed_is_read_again(home, monkeypatch):
    from busca.index import IndexFormatError

    engine = Engine(home, log_queries=False)
    opened = engine.home()
    real, calls = opened.current, []

    def flaky():
        calls.append(1)
        if len(calls) == 1:  # CURRENT named the old build, deleted before its manifest was read
            raise IndexFormatError("the index in … is damaged")
        return real()

    monkeypatch.setattr(opened, "current", flaky)
    assert engine.search("ornitorrinco", method="bm25", k=1).hits
    assert len(calls) >= 2


def test_an_embedding_server_away_fails_only_the_methods_that_need_it(home):
    """busca serve warms every ranker when it loads a build; an openai:MODEL server that was
    down then left the build unloaded, so every request — bm25 too — was a 503 naming it."""
    from busca.index.dense.embedding_api import EmbeddingServerError
    from embed_servers import FaultyServer

    import busca

    with FaultyServer() as server:
        with busca.open(home, embed={"url": server.url}) as corpus:
            corpus.index(dense="openai:fake-model", size=20, overlap=5)
    engine = Engine(home, log_queries=False)  # warms, as busca serve does
    assert engine.search("ornitorrinco", method="bm25", k=1).hits
    with pytest.raises(EmbeddingServerError, match=f"at {server.url} did not answer"):
        engine.search("ornitorrinco", method="dense", k=1)
    with FaultyServer() as again:  # back, at another address the user now gives
        engine = Engine(home, log_queries=False, embed={"url": again.url})
        assert engine.search("ornitorrinco", method="dense", k=1).hits


def test_compare_with_an_embedding_server_away_shows_the_other_methods(home):
    """busca compare (and /api/compare, the MCP tool) failed as a whole, a 503, when only the
    dense model's server was away: its column (and hybrid's, which fuses it) is empty with
    the reason in `notes`; the lexical ones answer."""
    from embed_servers import FaultyServer

    import busca

    with FaultyServer() as server:
        with busca.open(home, embed={"url": server.url}) as corpus:
            corpus.index(dense="openai:fake-model", size=20, overlap=5)
    with busca.open(home, embed={"url": server.url}) as corpus:  # the server has stopped
        found = corpus.compare("ornitorrinco", methods=["bm25", "dense", "hybrid"], k=2)
    assert found.columns["bm25"] and not found.columns["dense"] and not found.columns["hybrid"]
    assert f"at {server.url} did not answer" in found.notes["dense"]
    assert found.notes["hybrid"].startswith("it fuses dense, which cannot answer")
    assert "bm25" not in found.notes


def test_a_rebuild_over_http_answers_what_it_could_not_keep(home):
    """POST /api/index after an upgrade: a rebuild that could not read the previous index
    (format version 1) took the defaults; busca index says so on stderr, the HTTP answer said
    nothing, so an operator rebuilding through the server lost the windows without a word."""
    import json

    from starlette.testclient import TestClient

    from busca.serve.app import create_app

    with open_home(home) as opened:
        manifest = opened.current().path / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    manifest.write_text(json.dumps({**data, "format_version": 1}), encoding="utf-8")
    token = "rebuild-write-token-0123456789"
    client = TestClient(create_app(Engine(home, log_queries=False), token=token),
                        base_url="http://127.0.0.1")
    answer = client.post("/api/index", json={}, headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    notes = answer.json()["notes"]
    assert len(notes) == 1 and "busca index --size 20 --overlap 5" in notes[0], notes
    again = client.post("/api/index", json={}, headers={"Authorization": f"Bearer {token}"})
    assert again.status_code == 200 and again.json()["notes"] == []
