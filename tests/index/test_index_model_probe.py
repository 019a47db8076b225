"""A model replaced under the name an index was built with (openai:MODEL on a real server,
the same dimension): the first question of a process checks the server still gives the
index's probe, on both backends' paths (index/dense/vectors.py `check_encoder`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from busca.crawler.store import Document
from busca.index.build import build_index
from busca.index.dense.embedding_api import ServerSettings
from busca.index.dense.openai_encoder import ModelChanged, fingerprint, same_print
from busca.index.home.storage import LocalHome, load_index
from busca import search as core
from dense_fakes import DOCS
from embed_servers import FaultyServer


@pytest.fixture
def built(tmp_path):
    """A home built with openai:fake-model on a server, and that server (still running)."""
    with FaultyServer() as server, LocalHome(tmp_path / "home") as store:
        for url, title, text in DOCS:
            store.put(Document(url, title, text))
        build_index(store, methods=("dense",), options={
            "dense": "openai:fake-model", "server": ServerSettings(server.url)})
        yield tmp_path / "home", server


def _search(home, server):
    index = load_index(home, embed={"url": server.url})
    return core.rank(index, "senha do banco", method="dense", k=2)


def test_the_same_model_answers_and_is_checked_once(built):
    home, server = built
    entry = load_index(home).manifest.entry("dense")
    assert entry["probe"]["text"] == min((t for _, _, t in DOCS), key=len)
    before = len(server.texts)
    ids, _ = _search(home, server)
    assert len(ids) == 2
    assert server.texts[before:] == [entry["probe"]["text"], "senha do banco"]


def test_a_model_replaced_under_the_name_is_an_error_naming_the_rebuild(built):
    """Before, the question's vector (another model's space, the same dimension) was ranked
    against the index's vectors without a word: results at random."""
    home, server = built
    plain = server.vector
    server.vector = lambda text, dimension=None: plain(text, dimension)[::-1]
    with pytest.raises(ModelChanged, match=r"answers 'fake-model' with another model than the"
                                           r" one this index was built with — rebuild with"
                                           r" busca index --dense openai:fake-model"):
        _search(home, server)


def test_a_build_made_before_probes_is_not_checked(built):
    home, server = built
    manifest = load_index(home).path / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    del data["methods"]["dense"]["probe"]
    manifest.write_text(json.dumps(data), encoding="utf-8")
    before = len(server.texts)
    _search(home, server)
    assert server.texts[before:] == ["senha do banco"]


def test_fingerprints_tell_models_apart_and_survive_rounding():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(384), rng.standard_normal(384)
    assert same_print(fingerprint(a), fingerprint(a * 3 + 1e-4 * b))
    assert not same_print(fingerprint(a), fingerprint(b))
    assert not same_print(fingerprint(a), fingerprint(a[::-1]))
    assert not same_print(fingerprint(a), fingerprint(np.concatenate([a, a])))
