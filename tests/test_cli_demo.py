"""busca demo --keep (found in review: a second run, or a run into an existing home, mixed the
demo's 39 articles into what was there — 78 documents, a new index, new floors)."""

from __future__ import annotations

import json

from conftest import FIXTURES


def test_keep_refuses_a_folder_that_is_not_empty(run, home):
    assert run("add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    before = sorted(p.name for p in home.iterdir())
    result = run("demo", "--keep", str(home))
    assert result.exit_code == 2, result.output
    assert "--keep" in result.stderr and "not empty" in result.stderr
    assert "busca crawl" not in result.stdout  # refused before any work
    assert sorted(p.name for p in home.iterdir()) == before
    assert json.loads(run("stats", "--json").stdout)["documents"] == 39


def test_the_demo_takes_e5_small_then_use_then_no_dense(monkeypatch, capsys):
    """e5-small is the default dense model; with only the `dense` extra the demo shows USE."""
    from busca import cli, index
    from busca.index.encoders import EncoderMissing
    installed = {"e5-small", "use"}

    def get_encoder(name):
        if name not in installed:
            raise EncoderMissing(f"the {name} encoder needs a package — pip install it")
        return object()

    monkeypatch.setattr(index, "get_encoder", get_encoder)
    assert index.DEFAULT_ENCODER == "e5-small"
    assert cli._demo_encoder() == "e5-small"
    installed.discard("e5-small")
    assert cli._demo_encoder() == "use"
    assert "with use: the e5-small encoder needs" in capsys.readouterr().err
    installed.clear()
    assert cli._demo_encoder() is None
    assert "no dense search in this demo: the e5-small encoder needs" in capsys.readouterr().err
