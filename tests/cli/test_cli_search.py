"""busca search and context on homes that are damaged or read-only, their bad options, the
"nothing found" rule (exit 3 for both) and what the help says (issue 10, items 4–6, 10, 14, 16)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from busca.cli import NOT_FOUND_EXIT, cli
from busca.index import METHODS
from conftest import FIXTURES

QUESTION = "Qual a universidade pioneira no Brasil em engenharia de software?"


def invoke(home: Path, *args):
    return CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False, obj={})


@pytest.fixture
def indexed(run):
    """A home holding the fixture site's 39 articles, indexed (tfidf, bm25)."""
    assert run("add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    assert run("index", "-q").exit_code == 0
    return run


def damage(db: Path) -> None:
    """Overwrite the pages after the schema with garbage, as a bad disk sector would."""
    size = db.stat().st_size
    assert size > 16 * 4096, "the store is too small to damage its pages"
    with db.open("r+b") as f:
        f.seek(3 * 4096)
        f.write(b"\xa5" * (size - 6 * 4096))


# --- item 4: a damaged store ---------------------------------------------------------------


def test_the_default_method_missing_from_the_index_names_the_fix(indexed, run):
    """An index built with --methods bm25 lacks search's default, tfidf: the line names the
    option that asks for what it has (it named the methods only)."""
    assert run("index", "-q", "--methods", "bm25").exit_code == 0
    result = run("search", QUESTION)
    assert result.exit_code == 1 and result.stderr == (
        "Error: this index has no method 'tfidf'; it has: bm25 — ask for one of those"
        " (method bm25), or build tfidf with busca index\n")
    assert run("search", QUESTION, "--method", "bm25").exit_code == 0


@pytest.mark.parametrize("args, fix", [
    (["search", QUESTION, "--method", "sparse"], "build it with busca index --dense e5-small"),
    (["compare", QUESTION, "--methods", "bm25,hybrid3"], "build it with busca index --dense"
                                                          " e5-small"),
    (["eval", str(FIXTURES / "golden" / "golden.json"), "-q", "--methods", "dense"],
     "build it with busca index --dense e5-small"),
    (["eval", str(FIXTURES / "golden" / "golden.json"), "-q", "--methods", "dense:bge"],
     "build it with busca index --dense e5-small,bge=ENCODER"),
    (["search", QUESTION, "--method", "bm52"], "it has: tfidf, bm25 — ask for one of those"
                                               " (method tfidf); busca has no method 'bm52'\n"),
])
def test_a_method_the_index_lacks_names_the_command_that_builds_it(indexed, args, fix):
    """`busca index` alone builds tfidf and bm25 only: a newcomer told "build sparse with busca
    index" ran it and met the same line again; a misspelt method was to be "built" too."""
    result = indexed(*args)
    assert result.exit_code == 1, result.output
    assert fix in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    assert "Traceback" not in result.output


def test_a_damaged_store_is_one_line_naming_the_fix_in_search_and_index(indexed, home):
    damage(home / "busca.db")
    for args in (("search", QUESTION), ("context", QUESTION), ("index",)):
        result = indexed(*args)
        assert result.exit_code == 1, (args, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines[-1:]) == 1 and "Traceback" not in result.stderr
        message = lines[-1]
        assert "is damaged" in message and "busca.db" in message, message
        assert "--home NEW" in message and ".dump | sqlite3 NEW/busca.db" in message, message


# --- item 5: a live index with a file missing ----------------------------------------------


def live_build(home: Path) -> Path:
    return home / (home / "CURRENT").read_text().strip()


def test_a_missing_vocabulary_says_run_busca_index_which_then_rebuilds(indexed, home):
    (live_build(home) / "tfidf.vocab.txt").unlink()
    result = indexed("search", QUESTION)
    assert result.exit_code == 1
    assert "the index in" in result.stderr and "is damaged" in result.stderr
    assert "tfidf.vocab.txt is missing" in result.stderr and "busca index" in result.stderr
    assert indexed("index", "-q").exit_code == 0
    assert "engenharia-de-software" in indexed("search", QUESTION).stdout


def test_a_missing_chunk_table_is_rebuilt_by_busca_index_without_help(indexed, home):
    (live_build(home) / "chunks.db").unlink()
    result = indexed("search", QUESTION)
    assert result.exit_code == 1 and "is damaged" in result.stderr
    assert "busca index" in result.stderr
    rebuilt = indexed("index", "-q")  # the damaged build cannot be reused: chunk everything
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "(39 documents re-chunked)" in rebuilt.stdout
    assert "engenharia-de-software" in indexed("search", QUESTION).stdout


# --- item 6: a home on a read-only medium --------------------------------------------------


@pytest.fixture
def read_only_view(indexed, home, tmp_path):
    """The indexed home seen through a read-only mount (as root, who can write through any
    permission) or with its write permissions removed (as anyone else)."""
    view = tmp_path / "share"
    view.mkdir()
    if os.geteuid() == 0:
        done = subprocess.run(["mount", "--bind", "-o", "ro", str(home), str(view)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a read-only folder here: {done.stderr.strip()}")
        undo = ["umount", "--lazy", str(view)]  # numpy maps may still hold its files
    else:
        view.rmdir()
        view.symlink_to(home)
        subprocess.run(["chmod", "-R", "a-w", str(home)], check=True)
        undo = ["chmod", "-R", "u+w", str(home)]
    try:
        try:
            (view / "probe").write_text("x")
            pytest.skip("this machine lets the test write into its read-only folder")
        except OSError:
            pass
        yield view
    finally:
        subprocess.run(undo, check=True)


def test_a_read_only_home_still_answers_search_and_context(read_only_view):
    before = sorted(p.name for p in read_only_view.iterdir())
    found = invoke(read_only_view, "search", QUESTION, "-k", "1")
    assert found.exit_code == 0, found.output
    assert "engenharia-de-software" in found.stdout
    assert "did not log this question: the home is read-only" in found.stderr
    prompt = invoke(read_only_view, "context", QUESTION, "-k", "1")
    assert prompt.exit_code == 0, prompt.output
    assert "[fonte: https://faquad.example/engenharia-de-software/]" in prompt.stdout
    assert "the home is read-only" in prompt.stderr
    stats = invoke(read_only_view, "stats")
    assert stats.exit_code == 0 and "documents" in stats.stdout
    assert sorted(p.name for p in read_only_view.iterdir()) == before


def test_writing_to_a_read_only_home_is_one_line(read_only_view):
    result = invoke(read_only_view, "index")
    assert result.exit_code == 1
    assert "is read-only" in result.stderr and "Traceback" not in result.stderr
    assert "chunking" not in result.stderr  # refused before any work


# --- item 10: bad options are refused or explained ------------------------------------------


@pytest.mark.parametrize("command", ["search", "context"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_floor_that_is_not_a_finite_number_is_refused(indexed, command, value):
    result = indexed(command, QUESTION, f"--min-score={value}")
    assert result.exit_code == 2, result.output
    assert "--min-score" in result.stderr and "finite number" in result.stderr


def test_the_library_refuses_a_nan_floor_too(indexed, home):
    from busca import index, search
    with index.open_home(home) as store:
        with pytest.raises(search.BadFloor, match="finite"):
            search.search(store.current(), store, QUESTION, min_score=float("nan"))
        with pytest.raises(search.BadFloor, match="finite"):
            search.build_context(store.current(), store, QUESTION, min_score=float("inf"))


@pytest.mark.parametrize("option", [("--weights", "bm25=1,tfidf=1"), ("--fusion", "rrf"),
                                    ("--window", "10"), ("--rrf-k", "10")])
def test_hybrid_options_with_another_method_are_refused(indexed, option):
    result = indexed("search", QUESTION, "--method", "bm25", *option)
    assert result.exit_code == 2, result.output
    assert f"{option[0]} only applies to --method hybrid (this search uses bm25): drop it" \
        in result.stderr
    two = indexed("search", QUESTION, "--method", "bm25", "--fusion", "rrf", "--window", "9")
    assert "--fusion, --window only apply to --method hybrid (this search uses bm25): drop" \
        " them" in two.stderr


@pytest.mark.parametrize("command", ["search", "context"])
def test_method_help_lists_the_methods_and_the_faster_path(run, command):
    text = " ".join(run(command, "--help").stdout.split())
    assert f"Ranking method: {', '.join(METHODS)}" in text
    assert "dense:NAME, hybrid:NAME" in text  # the named models of --dense a,b (review)
    assert "load the encoder on every call" in text  # item 16
    assert "busca shell" in text and "busca serve" in text


# --- item 14: one rule for "nothing found": exit 3 in search and context --------------------


def test_nothing_above_the_floor_exits_3_in_search_and_context(indexed):
    assert indexed("search", QUESTION).exit_code == 0
    assert indexed("context", QUESTION).exit_code == 0
    for command in ("search", "context"):
        result = indexed(command, QUESTION, "--min-score", "100")
        assert result.exit_code == NOT_FOUND_EXIT == 3, (command, result.output)
        none = indexed(command, "xilofone")  # no word of the question is indexed
        assert none.exit_code == 3, (command, none.output)
    as_json = indexed("search", QUESTION, "--min-score", "100", "--json")
    assert as_json.stdout == "" and "nothing found: no passage scores 100" in as_json.stderr


@pytest.mark.parametrize("command", [["search", "pergunta"], ["context", "pergunta"], ["stats"],
                                     ["misses"], ["compare", "pergunta"]])
def test_a_mistyped_home_is_one_line_and_creates_nothing(tmp_path, command):
    missing = tmp_path / "nao-existe"
    result = invoke(missing, *command)
    assert result.exit_code == 1
    assert f"no corpus in {missing} — the folder does not exist" in result.output
    assert "Traceback" not in result.output and not missing.exists()


def test_hybrid_options_go_with_hybrid_of_a_named_model(run, fake):
    """--method hybrid:NAME fuses as hybrid does: --fusion and the others apply to it, as in
    GET /api/search and Corpus.search (the command line alone refused them)."""
    import json

    assert run("add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    assert run("index", "-q", "--dense", "fake").exit_code == 0
    result = run("search", QUESTION, "--method", "hybrid:fake", "--fusion", "rrf", "--no-serve",
                 "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[0])["fusion"]["fusion"] == "rrf"
    refused = run("search", QUESTION, "--method", "dense:fake", "--fusion", "rrf")
    assert refused.exit_code == 2
    assert "--fusion only applies to --method hybrid (this search uses dense:fake)" \
        in refused.stderr


@pytest.mark.parametrize("command", ["search", "context", "compare"])
def test_an_empty_question_is_worded_as_the_library_words_it(lexical_home, command):
    """The CLI said "the question is empty", GET /api/search "q is empty: give the question",
    MCP and Python the library's line with an example: one check (corpus `asked`), each front
    end naming its argument."""
    import busca

    with pytest.raises(busca.errors.BadSpec) as library:
        busca.corpus.asked("  ")
    result = CliRunner().invoke(cli, ["--home", str(lexical_home), command, "  "], obj={})
    assert result.exit_code == 2 and result.stdout == ""
    assert f": {library.value}\n" in result.stderr and "Traceback" not in result.output
