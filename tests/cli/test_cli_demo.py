"""busca demo --keep (found in review: a second run, or a run into an existing home, mixed the
demo's 39 articles into what was there — 78 documents, a new index, new floors)."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from busca import cli as cli_module
from busca.cli import cli
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
    from busca.index.dense.encoders import EncoderMissing
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


# --- one whole run of the demo (issue 25 items 11 and 12): slow with e5-small --------------

@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """`busca demo --keep HOME` run once; its output split into the demo's numbered steps."""
    home = tmp_path_factory.mktemp("demo") / "home"
    result = CliRunner().invoke(cli, ["demo", "--keep", str(home)], catch_exceptions=False,
                                obj={})
    assert result.exit_code == 0, result.output
    steps = dict(re.findall(r"^== (\d+b?)\. (.*?)(?=^== \d|\Z)", result.stdout, re.S | re.M))
    return result, steps


def test_the_demo_ends_on_the_labelled_answer(demo_run):
    """Item 11: the answer-ready prompt of step 6 cites the passage the golden set labels for
    the demo's paraphrase question (a J-maximising dense floor refused it); step 7 still
    refuses the question the site cannot answer."""
    _, steps = demo_run
    golden = json.loads((FIXTURES / "golden" / "golden.json").read_text(encoding="utf-8"))
    label = next(q for q in golden if q["pergunta"] == cli_module.DEMO_PARAPHRASE)
    prompt = " ".join(steps["6"].split())
    assert "Trechos:" in prompt and " ".join(label["trecho"].split()) in prompt
    assert "Trechos:" not in steps["7"] and "exit code 3" in steps["7"]
    result, _ = demo_run  # and says why: the fused methods' floors or the answerability
    if "hybrid" in steps["7"]:  # model --calibrate chose for hybrid (not "no passage matches")
        assert ("no passage passes the floor of any of the fused methods" in result.stderr
                or "the answerability model judges the answer is not here" in result.stderr)
        assert "no passage matches the question" not in result.stderr


def test_the_demo_shows_the_encoding_progress(demo_run):
    """Item 12: the dense encoding (the demo's longest step) prints progress, as busca index."""
    result, steps = demo_run
    if "dense" not in steps["2"]:
        pytest.skip("no dense encoder installed: the demo encodes nothing")
    assert re.search(r"^encoding with \S+…$", result.stderr, re.M), result.stderr
