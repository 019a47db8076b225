"""Request parameters of `busca serve`: caps and one-line errors naming the fix."""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("starlette")

from busca.errors import BuscaError  # noqa: E402
from busca.serve import params  # noqa: E402
from busca.serve.errors import BadParameter, status_of  # noqa: E402
from busca.serve.server import bind, url_of  # noqa: E402


def test_question_caps_and_messages():
    assert params.question("prazo do reembolso") == "prazo do reembolso"
    assert params.question("x" * params.MAX_QUERY) == "x" * params.MAX_QUERY
    for raw, words in ((None, "missing q"), ("   ", "empty"), (3, "string"),
                       ("x" * (params.MAX_QUERY + 1), "1001 characters")):
        with pytest.raises(BadParameter, match=words):
            params.question(raw)


def test_an_empty_question_is_worded_as_the_library_words_it():
    """GET /api/search said "q is empty: give the question", MCP and Python the library's
    line: one check (corpus `asked`), the parameter named."""
    from busca.corpus import asked
    from busca.corpus.specs import BadSpec

    with pytest.raises(BadSpec) as library:
        asked(" \t")
    with pytest.raises(BadParameter) as http:
        params.question(" \t")
    assert str(http.value) == f"q: {library.value}"


def test_integers_numbers_and_methods():
    assert params.integer(None, "k", default=3, low=1, high=100) == 3
    assert params.integer("7", "k", default=3, low=1, high=100) == 7
    for raw in ("0", "101", "2.5", "x", True, 1.0):
        with pytest.raises(BadParameter, match="k must"):
            params.integer(raw, "k", default=3, low=1, high=100)
    assert params.number("0.25", "min_score") == 0.25 and params.number("", "m") is None
    for raw in ("nan", "inf", "-inf", "abc", True):
        with pytest.raises(BadParameter, match="finite"):
            params.number(raw, "min_score")
    # a method name is the library's to check (it resolves dense:NAME): here, only its type
    assert params.method(None) == "tfidf" and params.method("dense:e5-small") == "dense:e5-small"
    with pytest.raises(BadParameter, match="method must be a method name"):
        params.method(3)
    assert params.methods("bm25, tfidf,bm25") == ["bm25", "tfidf"]
    with pytest.raises(BadParameter, match="methods is empty: name at least one"):
        params.methods(" , ")  # the words of Corpus.compare and busca compare --methods


def test_every_error_has_a_status_and_unknown_ones_none():
    assert status_of(BadParameter("x")) == 400
    assert status_of(BuscaError("x")) == 400
    assert status_of(RuntimeError("boom")) is None  # a 500 whose details stay in the log
    from busca.index.home.storage import IndexNotFound
    assert status_of(IndexNotFound("no index")) == 503
    # the user's embedding or re-ranking server away or answering garbage: the server's
    # side, as docs/serve.md and the OpenAPI document say (it was a 400)
    from busca.index.dense.embedding_api import BadResponse, ServerUnreachable
    from busca.index.dense.rerank_api import RerankError
    assert status_of(ServerUnreachable("down")) == status_of(BadResponse("NaN")) == 503
    assert status_of(RerankError("--rerank x: write KIND:MODEL")) == 400


def test_bind_asks_for_tcp_so_answers_are_not_delayed_by_nagle():
    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert url_of(sock).startswith("http://127.0.0.1:") and url_of(sock).endswith("/")
        assert int(url_of(sock).rsplit(":", 1)[1].rstrip("/")) > 0
    finally:
        sock.close()


def test_search_options_are_those_of_busca_search():
    from busca.corpus import SearchSpec

    assert params.search_spec({}) == SearchSpec(per_doc=0)
    spec = params.search_spec({"method": "hybrid", "k": "5", "fusion": "rrf", "window": "20",
                               "rrf_k": "10", "weights": "bm25=1,dense=0.5"})
    assert spec == SearchSpec(method="hybrid", k=5, fusion="rrf", window=20, rrf_k=10.0,
                              weights={"bm25": 1.0, "dense": 0.5})
    for args, words in (({"method": "bm25", "fusion": "rrf"}, "only applies to method=hybrid"),
                        ({"method": "hybrid", "fusion": "sum"}, "fusion must be one of"),
                        ({"method": "hybrid", "window": "0"}, "window must be between"),
                        ({"method": "hybrid", "weights": "bm25"}, "weights:"),
                        ({"method": "hybrid", "rrf_k": "nan"}, "rrf_k must be a finite")):
        with pytest.raises(BadParameter, match=words):
            params.search_spec(args)
