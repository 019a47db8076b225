"""Bad input to the bench scripts: a usage error (exit 2) for a bad --sizes, --systems or
--hold-out, one line `error: …` (exit 1) for busca's errors, unreadable files and broken JSON,
and the pip hint of a missing peer package — never a traceback."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import bench_lexical  # noqa: E402
import cli_errors  # noqa: E402

from busca.errors import NothingToIndex  # noqa: E402


def test_sizes_are_positive_whole_numbers():
    assert cli_errors.positive_ints("10000, 100000,") == [10000, 100000]
    assert cli_errors.sizes_or_fixture("fixture,1000") == ["fixture", "1000"]
    for bad in ("abc", "0", "-5", "1.5", ",", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="positive whole number|nothing"):
            cli_errors.positive_ints(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="fixture and/or"):
        cli_errors.sizes_or_fixture("nope")


def test_names_are_checked_against_the_known_ones():
    parse = cli_errors.names(("bm25s", "pisa"), "system", lambda n: n.startswith("x:"))
    assert parse("pisa,x:y") == ["pisa", "x:y"]
    with pytest.raises(argparse.ArgumentTypeError, match="unknown system 'bogus': choose among"
                       " bm25s,pisa"):
        parse("pisa,bogus")


def test_install_hint_names_the_extra():
    assert cli_errors.install_hint("tantivy") == "pip install 'busca[bench]' (or pip install tantivy)"
    assert "pyterrier-pisa" in cli_errors.install_hint("pyterrier_pisa.something")
    assert cli_errors.install_hint("sklearn") == "pip install scikit-learn"


@pytest.mark.parametrize("error, line", [
    (NothingToIndex("the store has no document: add some"),
     "error: the store has no document: add some"),
    (FileNotFoundError(2, "No such file or directory", "/x.json"),
     "error: No such file or directory: /x.json (check the path)"),
    (subprocess.CalledProcessError(1, ["busca", "index"], stderr=b"indexing\nerror: disk full\n"),
     "error: busca index exited with 1: error: disk full (run it alone to see why)"),
    (subprocess.CalledProcessError(3, "pisa build"),
     "error: pisa build exited with 3 (run it alone to see why)")])
def test_guarded_turns_errors_into_one_line(error, line):
    def main():
        raise error
    with pytest.raises(SystemExit) as done:
        cli_errors.guarded(main)
    assert done.value.code == line


def test_no_goal_is_said(capsys):
    bench_lexical.print_goals([])
    assert "none applies to this run" in capsys.readouterr().out


def test_a_missing_kept_index_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match="no kept busca index in .*: run bench_lexical.py with"
                       " --sizes 10 --systems pisa --work"):
        bench_lexical.require_kept(tmp_path, 10, {"busca-10/CURRENT": "busca index",
                                                  "pisa-10": "PISA index"})


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60,
                          cwd=cwd)


@pytest.mark.parametrize("args, code, said", [
    (["bench_lexical.py", "--sizes", "0"], 2, "argument --sizes: '0' is not a positive"),
    (["bench_lexical.py", "--sizes", "10", "--systems", "bogus"], 2, "unknown system 'bogus'"),
    (["faquad_beir.py", "--hold-out", "1"], 2, "N must be a whole number from 2"),
    (["faquad_beir.py", "/nonexistent.json"], 1, "error: No such file or directory"),
    (["faquad_beir.py", str(BENCH.parent / "README.md")], 1, "is not JSON")])
def test_scripts_refuse_bad_input_in_one_line(args, code, said, tmp_path):
    done = _run(tmp_path, str(BENCH / args[0]), *args[1:])
    assert done.returncode == code, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())  # nothing written
