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


@pytest.mark.parametrize("args, said", [
    (["bench_build_paired.py", "--work", ".", "--size", "5", "--rounds", "0"],
     "argument --rounds: '0' is not a positive whole number"),
    (["bench_build_paired.py", "--work", ".", "--size", "5", "--methods", "bm52"],
     "argument --methods: unknown method 'bm52'"),
    (["bench_cli.py", "--runs", "0"], "argument --runs: '0' is not a positive whole number"),
    (["bench_serve.py", "--requests", "-1"], "argument --requests: '-1' is not a positive"),
    (["bench_session.py", "--questions", "0"], "argument --questions: '0' is not a positive"),
    (["bench_query_parts.py", "--work", ".", "--size", "5", "--rounds", "0"],
     "argument --rounds: '0' is not a positive"),
    (["bench_passes.py", "--work", ".", "--size", "5", "--processes", "0"],
     "argument --processes: '0' is not a positive"),
    (["bench_filters.py", "--methods", "bm25,bogus"], "unknown method 'bogus'"),
    (["bench_main_text.py", "--bogus"], "unrecognized arguments: --bogus"),
    (["soak_serve.py", "--clients", "0"], "argument --clients: '0' is not a positive"),
    (["soak_serve.py", "--minutes", "-1"], "argument --minutes: '-1' is not a positive")])
def test_counts_and_options_are_usage_errors(args, said, tmp_path):
    done = _run(tmp_path, str(BENCH / args[0]), *args[1:])
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())


def test_help_describes_and_does_not_run(tmp_path):
    done = _run(tmp_path, str(BENCH / "bench_main_text.py"), "--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: bench_main_text.py")
    assert "F1 mean" not in done.stdout


def test_cpu_is_named_with_its_flags():
    import machine
    x86 = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 sse avx512_vnni\n"
    assert machine.cpu(x86) == "AMD EPYC (avx2 avx512_vnni)"
    arm = "processor\t: 0\nFeatures\t: fp asimd asimddp\nCPU part\t: 0xd0c\n"
    assert machine.cpu(arm) == "CPU model unknown (asimddp)"
    assert machine.cpu("model name : Old\nflags : sse2\n") == "Old (neither avx2 nor avx512_vnni)"


def _run_in(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """A bench run whose temporary folders go under tmp_path/tmp."""
    (tmp_path / "tmp").mkdir()
    import os
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})


@pytest.mark.parametrize("args", [
    ["bench_cli.py", "--runs", "1", "--dense", "none", "--sizes", "fixture"],
    ["bench_session.py", "--sizes", "50", "--questions", "2"]])
def test_a_bench_names_the_cpu_and_removes_its_temporary_folder(args, tmp_path):
    done = _run_in(tmp_path, str(BENCH / args[0]), *args[1:])
    assert done.returncode == 0, done.stderr
    assert "CPU: " in done.stdout and "cores" in done.stdout
    assert not list((tmp_path / "tmp").iterdir())  # its corpora and homes removed


def test_passes_ask_the_kept_corpus_questions(tmp_path):
    work = tmp_path / "w"
    kept = _run_in(tmp_path, str(BENCH / "bench_lexical.py"), "--sizes", "300", "--systems", "",
                   "--most", "20", "--budget", "1", "--work", str(work), "--keep")
    assert kept.returncode == 0, kept.stderr
    assert "CPU: " in kept.stdout
    done = _run(tmp_path, str(BENCH / "bench_passes.py"), "--work", str(work), "--size", "300",
                "--processes", "1", "--passes", "1", "--queries", "20")
    assert done.returncode == 0, done.stderr
    assert "installed:" in done.stdout and "µs" in done.stdout and "CPU: " in done.stdout
