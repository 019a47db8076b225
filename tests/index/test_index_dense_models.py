"""Named dense models: --dense lists, method names, aliases, stored server settings."""

from __future__ import annotations

import pytest

from busca.index.methods import with_dense
from busca.index.dense.dense_models import (BadModelList, DenseModel, array_key, default_name,
                                      label, method_names, parse_models, resolve,
                                      server_settings)
from busca.index.dense.encoders import UnknownEncoder


def test_a_list_of_models_with_and_without_names():
    models = parse_models("use, e5-small ,bge=openai:bge-m3,openai:intfloat/Multilingual-E5-Large")
    assert models == [DenseModel("use", "use"), DenseModel("e5-small", "e5-small"),
                      DenseModel("bge", "openai:bge-m3"),
                      DenseModel("multilingual-e5-large", "openai:intfloat/Multilingual-E5-Large")]
    assert method_names(models) == ["dense", "dense:e5-small", "dense:bge",
                                    "dense:multilingual-e5-large"]


@pytest.mark.parametrize("encoder, name", [
    ("use", "use"), ("openai:nomic-embed-text:v1.5", "nomic-embed-text-v1.5"),
    ("sentence-transformers:/models/all-MiniLM-L6-v2/", "all-minilm-l6-v2"),
    ("openai:bge-m3", "bge-m3"),
])
def test_default_names(encoder, name):
    assert default_name(encoder) == name


def test_bad_lists_are_refused_with_the_fix():
    with pytest.raises(BadModelList, match="two dense models named 'use'.*use-2=ENCODER"):
        parse_models("use,use")
    with pytest.raises(BadModelList, match="bad dense model name 'Big Model'"):
        parse_models("Big Model=openai:x")
    with pytest.raises(UnknownEncoder, match="unknown encoder 'bert'"):
        parse_models("use,b=bert")
    # --dense "$DENSE" with DENSE unset dropped every dense model (the 28th session's sweep)
    for empty in ("", " , "):
        with pytest.raises(BadModelList, match="--dense is empty: name an encoder"):
            parse_models(empty)
        with pytest.raises(BadModelList, match="or say none"):
            with_dense(["tfidf", "bm25"], empty, previous="e5-small")
    assert with_dense(["tfidf", "bm25"], "none", previous="e5-small")[1] == []


def test_the_first_model_answers_by_its_name_too():
    methods = {"tfidf": {}, "dense": {"name": "use", "encoder": "use"},
               "dense:e5-small": {"name": "e5-small"}, "hybrid": {}}
    assert resolve(methods, "dense:use") == "dense"
    assert resolve(methods, "hybrid:use") == "hybrid"
    assert resolve(methods, "dense:e5-small") == "dense:e5-small"
    assert resolve(methods, "hybrid:e5-small") == "hybrid:e5-small"
    assert resolve(methods, "dense:nope") == "dense:nope"
    old = {"dense": {"encoder": "use"}}  # an index from before names: the encoder's name
    assert resolve(old, "dense:use") == "dense" and label(old, "dense") == "dense:use"
    assert array_key("dense") == "dense" and array_key("dense:e5-small") == "dense.e5-small"


def test_server_settings_come_from_the_manifest_with_the_users_url_and_key_on_top():
    entry = {"server": {"url": "http://127.0.0.1:8080", "batch": 8, "query_prefix": "query: ",
                        "passage_prefix": "passage: ", "input_type": False,
                        "served_model": "x"}}
    stored = server_settings(entry)
    assert stored.url == "http://127.0.0.1:8080" and stored.batch == 8 and stored.key is None
    assert stored.query_prefix == "query: "
    mine = server_settings(entry, url="http://127.0.0.1:9", key="k", batch=None)
    assert (mine.url, mine.key, mine.batch) == ("http://127.0.0.1:9", "k", 8)
    assert server_settings({}) is None
