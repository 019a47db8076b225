"""The re-ranking stage (--rerank KIND:MODEL --rerank-url URL) in every front end.

No re-ranking model can run here: the servers (tests/rerank_servers.py) are real HTTP servers
on 127.0.0.1 that implement each API's exact request and response shape (TEI, llama.cpp,
the hosted openai-style one) and score with a deterministic function of the texts
(`relevance`), so each test knows the scores and order a re-ranked answer must have.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from dataclasses import replace

from busca import corpus as api
from busca.cli import cli
from busca.index.dense.embedding_api import AuthFailed, ServerUnreachable
from busca.index.dense.rerank_api import RerankClient, RerankError, parse_rerank

from conftest import FIXTURES
from embed_servers import free_port
from rerank_servers import RerankServer, relevance

QUESTION = "Qual o limite das atividades extracurriculares no curso?"
GOLDEN = str(FIXTURES / "golden" / "golden.json")


def busca(home, *args, env=None):
    return CliRunner().invoke(cli, ["--home", str(home), *args], obj={}, env=env)


@pytest.mark.parametrize("kind", ["tei", "llamacpp", "openai"])
def test_each_shape_scores_every_text_in_order(kind):
    texts = ["nada a ver", "o limite das atividades do curso", "curso"]
    with RerankServer(kind, model="m") as server:
        client = RerankClient(parse_rerank(f"{kind}:m", server.url))
        assert client.scores(QUESTION, texts) == [relevance(QUESTION, t) for t in texts]
    sent = server.requests[0]
    if kind == "tei":
        assert sent["path"] == "/rerank"
        assert sent["body"] == {"query": QUESTION, "texts": texts, "truncate": True}
    else:
        assert sent["path"] == "/v1/rerank"
        assert sent["body"] == {"model": "m", "query": QUESTION, "documents": texts,
                                "top_n": 3}


def test_bad_settings_are_one_line_naming_the_fix():
    for value, url, words in (("cohere:m", "http://x:1", "KIND one of openai, tei, llamacpp"),
                              ("tei:", "http://x:1", "KIND:MODEL"),
                              ("tei:m", None, "--rerank-url"),
                              ("tei:m", "ftp://x", "http://HOST:PORT")):
        with pytest.raises(RerankError, match=re.escape(words)):
            parse_rerank(value, url)


def test_search_reranks_the_top_n_of_the_method(lexical_home):
    plain = busca(lexical_home, "search", QUESTION, "--method", "bm25", "-k", "30", "--json",
                  "--no-log")
    candidates = [json.loads(line) for line in plain.stdout.splitlines()]
    with RerankServer("tei") as server:
        result = busca(lexical_home, "search", QUESTION, "--method", "bm25", "-k", "3",
                       "--json", "--no-log", "--rerank", "tei:bge-reranker",
                       "--rerank-url", server.url)
    assert result.exit_code == 0, result.output
    hits = [json.loads(line) for line in result.stdout.splitlines()]
    # the server saw bm25's top 30, in bm25's order, and the answer is its best 3
    assert server.requests[0]["body"]["texts"] == [h["text"] for h in candidates]
    expected = sorted(candidates, key=lambda h: -relevance(QUESTION, h["text"]))[:3]
    assert [h["chunk_id"] for h in hits] == [h["chunk_id"] for h in expected]
    assert [h["score"] for h in hits] == [relevance(QUESTION, h["text"]) for h in expected]
    assert [h["rank"] for h in hits] == [1, 2, 3]
    # each line names the re-ranker whose scores it carries (they read as bm25's before)
    assert {h.get("rerank") for h in hits} == {"tei:bge-reranker"}
    assert all("rerank" not in h for h in candidates)


def test_the_python_api_and_rerank_top(lexical_home):
    with RerankServer("llamacpp") as server, api.open(lexical_home, create=False) as corpus:
        settings = parse_rerank("llamacpp:qwen3-reranker", server.url, top=5)
        result = corpus.search(QUESTION, method="tfidf", k=2, rerank=settings, log=False)
        plain = corpus.search(QUESTION, method="tfidf", k=5, log=False)
    assert len(server.requests[0]["body"]["documents"]) == 5
    assert result.rerank == "llamacpp:qwen3-reranker" and len(result.hits) == 2
    assert {h.chunk_id for h in result.hits} <= {h.chunk_id for h in plain.hits}
    assert result.to_json()["rerank"] == "llamacpp:qwen3-reranker"


def test_an_unreachable_server_is_one_line_and_no_answer(lexical_home):
    url = f"http://127.0.0.1:{free_port()}"
    result = busca(lexical_home, "search", QUESTION, "--method", "bm25", "--no-log",
                   "--rerank", "tei:m", "--rerank-url", url)
    assert result.exit_code == 1 and result.stdout == ""
    assert "Traceback" not in result.output
    message = result.stderr.strip()
    assert "\n" not in message and f"the re-ranking server at {url} did not answer" in message
    assert "--rerank-url / BUSCA_RERANK_URL" in message


def test_retries_then_answers_and_a_stall_times_out(lexical_home):
    with RerankServer("openai", model="jina") as server:
        settings = parse_rerank("openai:jina", server.url)
        server.faults = [("500",)]
        client = RerankClient(settings, sleep=lambda s: None)
        assert client.scores("curso", ["curso", "x"])[0] > 0.5
        assert len(server.requests) == 2  # the 500 was retried
        server.faults = [("stall", 1.0)] * 3
        slow = RerankClient(replace(settings, timeout=0.2, retries=2), sleep=lambda s: None)
        with pytest.raises(ServerUnreachable, match="after 3 attempts \\(timed out\\)"):
            slow.scores("curso", ["curso"])


def test_the_key_comes_from_the_environment_and_never_shows(lexical_home):
    secret = "sk-rerank-secret-123"
    with RerankServer("tei", key=secret) as server:
        args = ("search", QUESTION, "--no-log", "--rerank", "tei:m", "--rerank-url",
                server.url)
        refused = busca(lexical_home, *args)
        assert refused.exit_code == 1 and "set BUSCA_RERANK_KEY" in refused.stderr
        ok = busca(lexical_home, *args, "--json", env={"BUSCA_RERANK_KEY": secret})
        assert ok.exit_code == 0, ok.output
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {secret}"
    assert secret not in refused.output + ok.output
    with pytest.raises(AuthFailed, match="BUSCA_RERANK_KEY holds spaces"):
        RerankClient(parse_rerank("tei:m", "http://127.0.0.1:1", key="a b"))


def test_context_compare_and_shell_rerank(lexical_home):
    with RerankServer("tei") as server:
        flags = ("--rerank", "tei:m", "--rerank-url", server.url)
        context = busca(lexical_home, "context", QUESTION, "--method", "bm25", "--json",
                        "--no-log", *flags)
        compare = busca(lexical_home, "compare", QUESTION, "--methods", "bm25", "-k", "3",
                        "--json", *flags)
        shell = CliRunner().invoke(cli, ["--home", str(lexical_home), "shell", "--json",
                                         "--method", "bm25", "--no-log", *flags],
                                   input=QUESTION + "\n", obj={})
    assert context.exit_code == 0, context.output
    data = json.loads(context.stdout)
    assert data["rerank"] == "tei:m"
    best = data["passages"][0]
    assert best["score"] == max(p["score"] for p in data["passages"])
    assert compare.exit_code == 0, compare.output
    columns = json.loads(compare.stdout)["columns"]
    assert list(columns) == ["bm25", "bm25+rerank"] and len(columns["bm25+rerank"]) == 3
    assert shell.exit_code == 0, shell.output
    answer = json.loads(shell.stdout.splitlines()[0])
    assert answer["rerank"] == "tei:m"
    scores = [h["score"] for h in answer["hits"]]
    assert scores == [relevance(QUESTION, h["text"]) for h in answer["hits"]]


def test_eval_prints_reranked_rows_beside_the_plain_ones(lexical_home):
    with RerankServer("llamacpp") as server:
        result = busca(lexical_home, "eval", GOLDEN, "-q", "--rerank", "llamacpp:m",
                       "--rerank-url", server.url)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("method "))
    assert header.split()[-1] == "ms/question"
    rows = {line.split()[0]: line for line in lines[lines.index(header):]
            if line.split() and line.split()[0] in
            ("tfidf", "bm25", "tfidf+rerank", "bm25+rerank")}
    assert set(rows) == {"tfidf", "bm25", "tfidf+rerank", "bm25+rerank"}
    for row in rows.values():
        assert float(row.split()[-1]) >= 0
    questions = len(json.loads((FIXTURES / "golden" / "golden.json").read_text()))
    assert len(server.requests) == 2 * questions  # each question, for each method
    refused = busca(lexical_home, "eval", GOLDEN, "--calibrate", "--rerank", "tei:m",
                    "--rerank-url", server.url)
    assert refused.exit_code == 2 and "cannot be combined with --calibrate" in refused.output


def test_serve_reranks_when_started_with_it(lexical_home):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from busca.serve.app import create_app
    from busca.serve.engine import Engine

    with RerankServer("tei") as server:
        engine = Engine(lexical_home, log_queries=False,
                        rerank=parse_rerank("tei:m", server.url))
        client = TestClient(create_app(engine), base_url="http://127.0.0.1")
        found = client.get("/api/search", params={"q": QUESTION, "method": "bm25"}).json()
        plain = client.get("/api/search", params={"q": QUESTION, "method": "bm25",
                                                  "rerank": "0"}).json()
        context = client.post("/api/context", json={"q": QUESTION, "method": "bm25"}).json()
    assert found["rerank"] == "tei:m" and "rerank" not in plain
    assert [h["score"] for h in found["hits"]] == [relevance(QUESTION, h["text"])
                                                   for h in found["hits"]]
    assert context["rerank"] == "tei:m"
    bare = TestClient(create_app(Engine(lexical_home, log_queries=False)),
                      base_url="http://127.0.0.1")
    refused = bare.get("/api/search", params={"q": QUESTION, "rerank": "1"})
    assert refused.status_code == 400 and "start it with --rerank" in refused.json()["error"]


@pytest.mark.parametrize("answer, words", [
    ([{"index": 0, "score": 10 ** 400}], "answered a list of 1, the first an object with index,"
                                          ' score, not a tei re-ranking (a list of {"index",'),
    ([{"index": 1e999, "score": 1.0}], "not a tei re-ranking"),  # a traceback before
    (["a", "b"], "answered a list of 2, the first a str, not a tei re-ranking"),  # TypeError
    ({"results": []}, "answered an object with results, not a tei re-ranking"),
    ([{"index": 5, "score": 1.0}], "scored passage 5, beyond those it was sent and scored no"
                                   " passage 0 (it was sent 1, 0 to 0"),
    ([{"index": 0, "score": float("nan")}], "a score that is NaN or infinite"),
])
def test_a_reranking_answer_that_cannot_be_read_names_what_is_wrong(answer, words):
    from busca.index.dense.embedding_api import BadResponse

    client = RerankClient(parse_rerank("tei:m", "http://127.0.0.1:1"))
    with pytest.raises(BadResponse, match=re.escape(words)):
        client._read(answer, 1)
