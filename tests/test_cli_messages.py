"""Messages a new user sees (issue 25): --help, warnings, counts."""

from __future__ import annotations

import json

import pytest

from conftest import write_jsonl


@pytest.mark.parametrize("command", ["search", "context", "shell"])
def test_an_unbounded_number_shows_no_range_in_help(run, command):
    """Item 13: `--min-score` showed `[x<=None]` (click's range of an unbounded FloatRange)."""
    result = run(command, "--help")
    assert result.exit_code == 0 and "--min-score" in result.stdout
    assert "None" not in result.stdout


def test_a_bounded_number_still_shows_its_range(run):
    assert "0<x<=1" in " ".join(run("eval", "--help").stdout.split())


# --- busca add, busca stats (item 17) --------------------------------------------------------

@pytest.mark.parametrize("encoding, name", [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16LE"),
                                            ("utf-16-be", "UTF-16BE")])
def test_utf16_text_is_named_with_how_to_convert_it(run, tmp_path, encoding, name):
    """It was called "a binary file"."""
    path = tmp_path / "notas.txt"
    path.write_text("O reembolso demora sete dias.", encoding=encoding)
    result = run("add", str(path))
    assert result.exit_code == 1
    assert f"is {name} text" in result.stderr and "binary" not in result.stderr
    assert f"iconv -f {name} -t UTF-8 {path}" in result.stderr


def test_an_empty_jsonl_is_reported_as_an_empty_txt_is(run, tmp_path):
    """It added 0 documents without a word."""
    (tmp_path / "vazio.jsonl").write_text("\n", encoding="utf-8")
    (tmp_path / "vazio.txt").write_text("", encoding="utf-8")
    for name in ("vazio.txt", "vazio.jsonl"):
        result = run("add", str(tmp_path / name))
        assert result.exit_code == 1 and f"skipped {tmp_path / name}: no " in result.stderr
    assert "an empty file" in result.stderr


def test_a_duplicate_url_in_one_jsonl_is_counted_as_a_duplicate(run, tmp_path):
    """It reported "1 added, 1 updated" for one new document."""
    docs = [{"url": "https://a.example/1", "title": "Um", "text": "primeiro"},
            {"url": "https://a.example/1", "title": "Um", "text": "segundo"}]
    result = run("add", str(write_jsonl(tmp_path / "d.jsonl", docs)))
    assert result.exit_code == 0, result.output
    assert "1 added, 0 updated, 0 unchanged, 1 duplicate (last kept); 1 documents" in (
        result.stdout)


def test_stats_says_which_documents_wait_for_busca_index(run, tmp_path):
    """After an add, stats showed the old figures with no word of the new documents."""
    docs = [{"url": f"https://a.example/{i}", "title": str(i), "text": f"texto número {i}"}
            for i in range(3)]
    assert run("add", str(write_jsonl(tmp_path / "a.jsonl", docs))).exit_code == 0
    assert run("index", "-q", "--methods", "tfidf").exit_code == 0
    clean = run("stats")
    assert "busca index" not in clean.stderr
    changed = [{**docs[0], "text": "outro texto"},
               {"url": "https://a.example/new", "title": "n", "text": "novo"},
               {"url": "https://a.example/empty", "title": "e", "text": ""}]
    assert run("add", str(write_jsonl(tmp_path / "b.jsonl", changed))).exit_code == 0
    result = run("stats")
    assert result.stdout.startswith("documents            3")  # the index's own figures
    assert ('2 document(s) added or changed since this index — run "busca index"'
            in result.stderr)
    assert json.loads(run("stats", "--json").stdout)["not_indexed"] == {
        "added_or_changed": 2, "removed": 0}
