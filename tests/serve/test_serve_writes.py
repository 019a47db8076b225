"""Writes of `busca serve --token` sent at the same time by several clients (an ingestion
pipeline with workers), over real HTTP: each is stored, none refused as if a build ran."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("starlette")
requests = pytest.importorskip("requests")

from conftest import lexical_home_of  # noqa: E402
from serving import Server  # noqa: E402

TOKEN = "writes-write-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DOCS = [{"url": "https://w.example/um", "title": "Um", "text": "O ornitorrinco bota ovos."},
        {"url": "https://w.example/dois", "title": "Dois", "text": "A equidna também bota."}]


def _batch(worker: int, round_: int) -> dict:
    return {"documents": [{"url": f"https://w.example/{worker}/{round_}/{n}", "title": f"Nº {n}",
                           "text": f"Ação {worker} {round_} {n}: o ornitorrinco nada."}
                          for n in range(40)]}


def test_concurrent_adds_are_all_stored(tmp_path):
    """Three workers POSTing documents at once got 409 "an index build is running" for most
    requests (53 of 60) though no build ran: the adds refused each other."""
    home = lexical_home_of(tmp_path / "home", DOCS)
    workers, rounds = 3, 5
    statuses: list[tuple[int, str]] = []
    start = threading.Barrier(workers)

    def post(worker: int) -> None:
        with requests.Session() as session:
            start.wait()
            for round_ in range(rounds):
                answer = session.post(server.url + "api/documents", json=_batch(worker, round_),
                                      headers=AUTH, timeout=120)
                statuses.append((answer.status_code, answer.text))

    with Server(home, "--no-log", "--quiet", "--token", TOKEN) as server:
        threads = [threading.Thread(target=post, args=(w,)) for w in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        refused = [text for status, text in statuses if status != 200]
        assert not refused, f"{len(refused)} of {len(statuses)} adds refused: {refused[0]}"
        rebuilt = requests.post(server.url + "api/index", json={}, headers=AUTH, timeout=300)
        assert rebuilt.status_code == 200, rebuilt.text
        assert rebuilt.json()["documents"] == len(DOCS) + workers * rounds * 40
