"""Messages a new user sees (issue 25): --help, warnings, counts."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import REPO, write_jsonl


@pytest.mark.parametrize("command", ["search", "context", "shell"])
def test_an_unbounded_number_shows_no_range_in_help(run, command):
    """Item 13: `--min-score` showed `[x<=None]` (click's range of an unbounded FloatRange)."""
    result = run(command, "--help")
    assert result.exit_code == 0 and "--min-score" in result.stdout
    assert "None" not in result.stdout


def test_a_bounded_number_still_shows_its_range(run):
    assert "0<x<=1" in " ".join(run("eval", "--help").stdout.split())


def test_a_share_typed_as_a_percentage_is_told_the_share(run, tmp_path):
    result = run("eval", str(tmp_path / "g.json"), "--keep", "90")
    assert result.exit_code == 2 and "90 is not a share from 0 to 1: for 90% give 0.9" in \
        result.stderr


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
    assert "1 added, 0 updated, 0 unchanged, 1 duplicate (last kept); 1 document" in (
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
    assert json.loads(run("stats", "--json").stdout)["documents"] == 3  # as /api/stats


# --- busca serve --runs, a PostgreSQL home that is not there (item 17) ----------------------

def test_serve_refuses_a_runs_folder_that_does_not_exist(tmp_path):
    """It started silently, and /eval then showed no runs (a typo in the folder's name)."""
    pytest.importorskip("uvicorn")
    missing = tmp_path / "no-such-folder"
    done = subprocess.run([sys.executable, "-m", "busca.cli", "--home", str(tmp_path / "home"),
                           "serve", "--port", "0", "--runs", str(missing)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and done.stdout == ""  # no URL: nothing was started
    assert "--runs" in done.stderr and "does not exist" in done.stderr


def test_a_postgres_server_that_is_not_running_is_one_clean_line(run):
    """libpq's first line was lost and its second began with a tab."""
    pytest.importorskip("psycopg")
    result = run("--home", "postgresql://busca:pw@127.0.0.1:1/nothing", "stats")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "\t" not in lines[0] and "pw@" not in lines[0]
    assert 'connection to server at "127.0.0.1", port 1 failed: Connection refused;' in lines[0]
    assert "Is the server running on that host" in lines[0]


# --- what the README promises (item 16) -----------------------------------------------------

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_readme_names_exactly_the_commands_that_take_json():
    """It said every command takes --json; the crawl's progress does not (add and index took
    none either, until a program needed their counts and build)."""
    from busca.cli import cli
    taking = {name for name, command in cli.commands.items()
              if any(p.name == "as_json" for p in command.params)}
    sentence = " ".join(README.split("Progress goes to stderr, results to stdout.")[1]
                        .split("Every\ncommand takes `--home")[0].split())
    named = set(re.findall(r"`(\w+)`", sentence.split("take `--json`")[0]))
    assert named == taking and {"add", "index"} <= taking
    without = set(re.findall(r"`(\w+)`", sentence.split("have none")[0].split(";")[-1]))
    assert without == set(cli.commands) - taking  # `mcp` was left out of both lists
    assert "every command takes `--json`" not in README


def test_the_readme_says_what_ci_installs_besides_the_test_command():
    """It said the test command runs "exactly as CI does"; CI also installs chromium."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "chromium-driver" in ci and "exactly as CI does" not in README
    assert "chromium chromium-driver" in README


def test_the_readme_gives_the_demos_time_with_its_conditions():
    """It said the demo takes ~25 s; it took 129 s at load 5 (issue 25 item 16)."""
    assert "`busca demo` takes ~25 s" not in README
    assert "quiet 2-core machine with AVX-512 VNNI (load average 1.5" in README
