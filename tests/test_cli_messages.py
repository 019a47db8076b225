"""Messages a new user sees (issue 25): --help, warnings, counts."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("command", ["search", "context", "shell"])
def test_an_unbounded_number_shows_no_range_in_help(run, command):
    """Item 13: `--min-score` showed `[x<=None]` (click's range of an unbounded FloatRange)."""
    result = run(command, "--help")
    assert result.exit_code == 0 and "--min-score" in result.stdout
    assert "None" not in result.stdout


def test_a_bounded_number_still_shows_its_range(run):
    assert "0<x<=1" in " ".join(run("eval", "--help").stdout.split())
