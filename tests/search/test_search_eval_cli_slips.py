"""busca eval's slips from a user audit: each one a single clear line, with the fix it names
right, and nothing written where it was not asked for."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from busca.cli import cli
from conftest import FIXTURES

GOLDEN = str(FIXTURES / "golden" / "golden.json")


@pytest.fixture
def busca(lexical_home):
    def invoke(*args):
        return CliRunner().invoke(cli, ["--home", str(lexical_home), *args], obj={})

    return invoke


def _one_line(result, code: int, words: str) -> None:
    assert result.exit_code == code, result.output
    assert words in result.stderr and "Traceback" not in result.output, result.stderr
    assert len([line for line in result.stderr.splitlines() if "Error" in line]) == 1


def test_calibrating_without_answerable_questions_asks_for_answerable_ones(busca, tmp_path):
    golden = tmp_path / "g.json"
    golden.write_text('[{"pergunta": "Qual?", "trecho": null, "id": 7}]', encoding="utf-8")
    result = busca("eval", str(golden), "--calibrate", "-q", "--methods", "bm25")
    _one_line(result, 1, "this set has no answerable question: add answerable ones")
    assert '"trecho": null' not in result.stderr


def test_outputs_are_never_written_into_folders_that_do_not_exist(busca, tmp_path):
    for option, path in (("--run-out", tmp_path / "nope" / "r.json"),
                         ("--plot", tmp_path / "nope" / "x" / "y")):
        result = busca("eval", GOLDEN, "-q", "--methods", "bm25", option, str(path))
        _one_line(result, 1, f"cannot write {path}: the folder {path.parent} does not exist")
    assert list(tmp_path.iterdir()) == []


def test_a_split_on_a_json_golden_set_is_refused(busca):
    result = busca("eval", GOLDEN, "-q", "--split", "foo")
    _one_line(result, 1, "--split foo chooses a BEIR folder's qrels, and this golden set is"
                         " a file: leave --split out")


def test_the_report_says_relevance_was_judged_per_document(busca):
    said = "relevance judged per document (--per-doc)"
    per_doc = busca("eval", GOLDEN, "-q", "--methods", "bm25", "--per-doc")
    windows = busca("eval", GOLDEN, "-q", "--methods", "bm25")
    assert per_doc.exit_code == windows.exit_code == 0, per_doc.output + windows.output
    header = per_doc.stdout.split("\n\n")[0]
    assert said in header and said not in windows.stdout
    as_json = busca("eval", GOLDEN, "-q", "--methods", "bm25", "--per-doc", "--json")
    assert json.loads(as_json.stdout)["info"]["per_doc"] is True

def test_outputs_into_missing_folders_are_refused_before_any_work(lexical_home, tmp_path,
                                                                  monkeypatch):
    monkeypatch.setattr("busca.corpus.Corpus.run_eval",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    for option, path in (("--report", tmp_path / "nope" / "r.md"),
                         ("--run-out", tmp_path / "nope" / "r.json"),
                         ("--plot", tmp_path / "nope" / "x" / "y")):
        result = CliRunner().invoke(cli, ["--home", str(lexical_home), "eval", GOLDEN, "-q",
                                          option, str(path)], obj={})
        assert result.exit_code == 1, result.output
        assert result.stderr == (f"Error: cannot write {path}: the folder {path.parent} does"
                                 " not exist\n")
    assert list(tmp_path.iterdir()) == []


def test_methods_given_empty_is_bad_usage(lexical_home):
    for given in ("", ",", " , "):
        result = CliRunner().invoke(cli, ["--home", str(lexical_home), "eval", GOLDEN, "-q",
                                          "--methods", given], obj={})
        assert result.exit_code == 2, result.output
        assert "Invalid value for --methods: methods is empty: name at least one" \
            in result.stderr
