"""What the twenty-eighth session's sweep of the evaluation harness and `busca serve` met:
each one bad usage or a clear line, and nothing of the user's overwritten."""

from __future__ import annotations

import pytest

from test_cli_slips import lexical  # noqa: F401  the fixture: a home indexed, its golden set


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--http"]])
@pytest.mark.parametrize("host", ["", "  "])
def test_an_empty_host_is_bad_usage_not_every_interface(run, command, host):
    """--host "$HOST" with HOST unset listened on 0.0.0.0 (and without the Host check)."""
    result = run(*command, "--host", host)
    assert result.exit_code == 2
    assert "'--host': is empty; give an address: 127.0.0.1" in result.stderr
    assert "Traceback" not in result.output


def test_eval_outputs_never_overwrite_each_other_or_the_home(run, lexical, home,  # noqa: F811
                                                             tmp_path):
    store = home / "busca.db"
    before = store.read_bytes()
    for options, words in (
            (["--report", str(tmp_path / "same.json"), "--run-out", str(tmp_path / "same.json")],
             "which --report writes"),
            (["--report", str(tmp_path / "r.trec"), "--run-out", str(tmp_path / "r.json")],
             "would overwrite r.trec, which --report writes"),
            (["--report", str(store)], "whose files it could overwrite"),
            (["--run-out", str(home / "run.json")], "whose files it could overwrite")):
        result = run("eval", str(lexical), "-q", *options)
        assert result.exit_code == 2, result.output
        assert words in result.stderr
    assert store.read_bytes() == before
    assert not list(tmp_path.glob("same*")) and not list(tmp_path.glob("r.*"))
    # a run among the home's runs, where busca serve's /eval lists them, is written
    result = run("eval", str(lexical), "-q", "--run-out", str(home / "runs" / "a.json"))
    assert result.exit_code == 0, result.output
    assert (home / "runs" / "a.trec").exists()
