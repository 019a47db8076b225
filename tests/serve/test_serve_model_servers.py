"""What a network client of busca serve and busca mcp --http learns of the user's model
servers and models (serve/errors.py): `/api/stats` and a model server's errors named its
internal URL (a key in its query string too) and a sentence-transformers model's folder;
`busca stats` and the log on stderr, which are local, keep them."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

import busca
from busca.serve.app import create_app
from busca.serve.engine import Engine
from busca.serve.errors import public, public_methods

DOCS = [{"url": "https://ex.org/a", "title": "Configuração",
         "text": "Como configurar a conexão com o banco de dados de produção."},
        {"url": "https://ex.org/b", "title": "Instalação",
         "text": "Instale o pacote e rode a indexação para começar."}]
INTERNAL = "/interno/v1?api_key=SEGREDO42"  # the path and key busca is told to ask


@pytest.fixture
def built(tmp_path):
    """A home with an openai:MODEL index built through a real server on 127.0.0.1 whose URL
    holds a user, a password and a key; (home, the server's URL as the user gave it, the
    server, stopped when the test ends)."""
    from embed_servers import FaultyServer

    with FaultyServer() as server:
        url = server.url.replace("://", "://ops:hunter2@") + INTERNAL
        home = tmp_path / "home"
        with busca.open(home, embed={"url": url}) as corpus:
            corpus.add(DOCS)
            corpus.index(methods=["bm25"], dense="openai:fake-model")
        yield home, url, server


def _leaks(text: str, url: str) -> list[str]:
    """What of the model server's URL `text` names: its address, path, key or password."""
    address = url.split("@", 1)[1].split("/", 1)[0]
    return [part for part in (address, "interno", "SEGREDO42", "hunter2") if part in text]


def test_stats_over_http_name_the_model_but_not_its_server(built):
    home, url, server = built
    with busca.open(home) as corpus:  # busca stats, local: everything
        assert "SEGREDO42" in json.dumps(corpus.stats())
    with TestClient(create_app(Engine(home, log_queries=False, embed={"url": url})),
                    base_url="http://127.0.0.1") as client:
        answer = client.get("/api/stats")
    assert answer.status_code == 200
    dense = answer.json()["methods"]["dense"]
    assert (dense["encoder"], dense["dimension"]) == ("openai:fake-model", server.dimension)
    assert dense["server"]["served_model"] == "fake-model"
    assert _leaks(answer.text, url) == []


def test_an_embedding_server_away_is_a_503_without_its_url(built):
    home, url, server = built
    server.__exit__()  # the user's embedding server stops
    engine = Engine(home, log_queries=False, warm=False, embed={"url": url})
    with TestClient(create_app(engine), base_url="http://127.0.0.1") as client:
        answers = [client.get("/api/search", params={"q": "banco", "method": "dense"}),
                   client.get("/?q=banco&method=dense"),
                   client.get("/api/compare", params={"q": "banco"}),
                   client.get("/?q=banco&method=compare")]
    error = answers[0].json()["error"]
    assert answers[0].status_code == 503 and "the embedding server did not answer" in error
    assert "--embed-url" in error  # the fix, for the server's operator
    notes = answers[2].json()["notes"]
    assert answers[2].status_code == 200 and "did not answer" in notes["dense"]
    assert "bm25" not in notes
    assert answers[3].status_code == 200 and "did not answer" in answers[3].text  # the page's
    for answer in answers:
        assert _leaks(answer.text, url) == [], answer.text


def test_public_names_no_model_server_in_any_form():
    url = "http://ops:hunter2@Embed.Internal:8080/v1?api_key=SEGREDO42"
    said = ("the embedding server at http://embed.internal:8080/v1?api_key=SEGREDO42 serves"
            " 'm' but has no http://ops:hunter2@Embed.Internal:8080/v1/embeddings (HTTP 404)")
    shown = public(said, "/srv/busca", servers=[url])
    assert shown == ("the embedding server serves 'm' but has no the model server (HTTP 404)")
    # a document on another host keeps its URL; the server's port is not a prefix of another
    kept = "cannot read http://embed.internal:80800/doc nor https://ex.org/a"
    assert public(kept, "/srv/busca", servers=[url]) == kept


def test_a_local_model_is_named_by_its_folder_not_its_path():
    methods = {"dense": {"name": "minilm", "encoder": "sentence-transformers:/home/ana/models"
                         "/minilm-pt/", "dimension": 384, "floor": None},
               "bm25": {"k1": 1.2, "b": 0.75}}
    shown = public_methods(methods)
    assert shown["dense"] == {**methods["dense"], "encoder": "sentence-transformers:minilm-pt"}
    assert shown["bm25"] == methods["bm25"]
    assert "/home/ana" in methods["dense"]["encoder"]  # the manifest's own entry is kept


def test_mcp_over_http_names_no_model_server(built):
    """busca mcp --http: its stats, a tool's error and compare's notes, as /api's."""
    import asyncio

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from test_mcp_access import mcp_http

    home, url, server = built
    server.__exit__()  # the user's embedding server stops

    async def drive(mcp_url):
        async with streamable_http_client(mcp_url) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            return [await session.call_tool(name, arguments) for name, arguments in (
                ("stats", {}), ("search", {"question": "banco", "method": "dense"}),
                ("compare", {"question": "banco", "methods": ["bm25", "dense"]}))]

    with mcp_http(home, "--embed-url", url) as port:
        stats, search, compare = asyncio.run(drive(f"http://127.0.0.1:{port}/mcp"))
    assert stats.structured_content["methods"]["dense"]["dimension"] == server.dimension
    assert search.is_error and "the embedding server did not answer" in search.content[0].text
    assert "did not answer" in compare.structured_content["notes"]["dense"]
    for answer in (stats, search, compare):
        assert _leaks(json.dumps(answer.model_dump(), ensure_ascii=False), url) == []


def test_the_log_line_of_a_shortened_error_hides_passwords_and_stays_one_line(caplog):
    """`told`: what the log keeps of an error a client was told less of names the server,
    without the password of a URL in the message, and a client's control characters cannot
    start a line of their own."""
    from busca.serve.errors import told

    url = "http://ops:hunter2@127.0.0.1:9"
    error = busca.errors.EmbeddingServerError(f"the embedding server at {url}/v1 did not answer")
    shown = public(error, "/srv/home", servers=[url])
    assert "127.0.0.1" not in shown
    with caplog.at_level("WARNING", logger="busca.serve"):
        told(error, shown, "503 GET /api/search\nforged: line")
        told("nothing to hide", "nothing to hide", "400 GET /api/search")
    assert [r.getMessage() for r in caplog.records] == [
        "503 GET /api/search\\nforged: line: the embedding server at"
        " http://ops:***@127.0.0.1:9/v1 did not answer"]
