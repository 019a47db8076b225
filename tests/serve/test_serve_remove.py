"""DELETE /api/documents: `busca remove` over HTTP, behind the write token like POST."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")
jsonschema = pytest.importorskip("jsonschema")

from click.testing import CliRunner  # noqa: E402
from conftest import write_jsonl  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from busca.cli import cli  # noqa: E402
from busca.serve.app import create_app  # noqa: E402
from busca.serve.engine import Engine  # noqa: E402

TOKEN = "remove-write-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DOCS = [{"url": "https://r.example/notícias/ação", "title": "Ação",
         "text": "O ornitorrinco bota ovos e amamenta os filhotes."},
        {"url": "https://r.example/prazo", "title": "Prazo",
         "text": "O prazo de reembolso do curso é de sete dias."}]


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    for args in (["add", str(write_jsonl(tmp_path / "docs.jsonl", DOCS))],
                 ["index", "-q", "--methods", "bm25"]):
        assert CliRunner().invoke(cli, ["--home", str(home), *args], obj={}).exit_code == 0
    return home


def _client(home, token=None) -> TestClient:
    return TestClient(create_app(Engine(home, log_queries=False), token=token),
                      base_url="http://127.0.0.1")


def _delete(client, body, headers=None):
    return client.request("DELETE", "/api/documents", json=body, headers=headers or {})


def test_delete_removes_then_the_rebuild_drops_the_chunks(home):
    client = _client(home, TOKEN)
    spelled = "https://r.example/not%C3%ADcias/a%C3%A7%C3%A3o"  # another spelling
    answer = _delete(client, {"urls": [spelled, "https://r.example/nunca"]}, AUTH)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"deleted": 1, "removed": [DOCS[0]["url"]],
                             "missing": ["https://r.example/nunca"], "documents": 1}
    document = client.get("/openapi.json").json()
    schema = document["paths"]["/api/documents"]["delete"]["responses"]["200"]["content"][
        "application/json"]["schema"]
    jsonschema.validate(answer.json(), {**schema, "components": document["components"]})
    assert client.get("/api/stats").json()["pending"] == {"changed": 0, "removed": 1}
    assert client.post("/api/index", json={}, headers=AUTH).status_code == 200
    hits = client.get("/api/search", params={"q": "ornitorrinco ovos", "method": "bm25"})
    assert hits.status_code == 200 and hits.json()["hits"] == []
    assert client.get("/api/stats").json()["documents"] == 1


def test_delete_needs_the_write_token(home):
    reading = _delete(_client(home), {"urls": [DOCS[1]["url"]]})
    assert reading.status_code in (404, 405) and "--token" in reading.json()["error"]
    wrong = _delete(_client(home, TOKEN), {"urls": [DOCS[1]["url"]]},
                    {"Authorization": "Bearer not-the-token-0123456789"})
    assert wrong.status_code == 401 and "Bearer" in wrong.json()["error"]
    allowed = _client(home, TOKEN).put("/api/documents", json={}, headers=AUTH)
    assert allowed.status_code == 405 and set(allowed.headers["allow"].split(", ")) == {"POST", "DELETE"}
    assert _client(home).get("/api/stats").json()["documents"] == 2  # nothing removed


@pytest.mark.parametrize("body,said", [
    ({}, '{"urls": [a document id'), ({"urls": "https://r.example/prazo"}, '{"urls": ['),
    ({"urls": [1]}, "list of strings"), ({"urls": [""]}, "non-empty strings"),
    ({"urls": ["x"], "prefix": "yes"}, "prefix must be true or false"),
    ({"urls": ["https://"], "prefix": True}, "names every document"),
    ({"ids": ["x"]}, "unknown field 'ids'")])
def test_a_bad_body_is_a_400_naming_the_fix(home, body, said):
    answer = _delete(_client(home, TOKEN), body, AUTH)
    assert answer.status_code == 400 and said in answer.json()["error"], answer.text
    assert answer.json()["status"] == 400


def test_prefix_over_http(home):
    answer = _delete(_client(home, TOKEN), {"urls": ["https://r.example/"], "prefix": True},
                     AUTH)
    assert answer.status_code == 200 and answer.json()["deleted"] == 2
