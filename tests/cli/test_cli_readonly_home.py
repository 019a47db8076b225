"""Issue 25 item 8: the commands that only read never create storage. On a folder that holds no
corpus they say so in one line and leave it as it was; `--home ''` is bad usage."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from busca.cli import cli

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden" / "golden.json"
READERS = [["stats"], ["search", "pergunta"], ["context", "pergunta"], ["compare", "pergunta"],
           ["misses"], ["shell"], ["eval", str(GOLDEN)]]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), input="", catch_exceptions=False, obj={})


@pytest.mark.parametrize("command", READERS, ids=lambda c: c[0])
def test_a_reader_on_a_folder_without_a_corpus_says_so_and_creates_nothing(tmp_path, command):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke("--home", str(empty), *command)
    assert result.exit_code == 1, result.output
    assert result.output == f'Error: no corpus in {empty} — run "busca add" or "busca crawl"' \
                            " first\n"
    assert list(empty.iterdir()) == []


def test_serve_without_a_token_on_a_folder_without_a_corpus_exits_creating_nothing(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run([sys.executable, "-m", "busca.cli", "--home", str(empty), "serve",
                           "--port", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f'Error: no corpus in {empty} — run "busca add" or "busca crawl"' \
                          " first\n"
    assert list(empty.iterdir()) == []


@pytest.mark.parametrize("command", [["search", "x"], ["stats"], ["add", "docs.jsonl"]],
                         ids=lambda c: c[0])
def test_an_empty_home_is_bad_usage(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    result = invoke("--home", "", *command)
    assert result.exit_code == 2
    assert "Invalid value for '--home': is empty" in result.output
    assert "--home ." in result.output and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_the_working_folder_is_still_a_home_when_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs.jsonl").write_text('{"url": "https://x.example/1", "title": "Um",'
                                         ' "text": "O ornitorrinco bota ovos."}\n',
                                         encoding="utf-8")
    assert invoke("--home", ".", "add", "docs.jsonl").exit_code == 0
    assert (tmp_path / "busca.db").is_file()
    assert invoke("--home", ".", "stats").exit_code == 0
