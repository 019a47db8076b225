"""`busca mcp --tokens FILE`: bad usage without --http (stdio runs as the local user), and a
tokens file busca serve would refuse is refused the same way, one line and exit 1, before
the server listens (the file's checks: serve/access.py's `load`; the server over HTTP:
tests/serve/test_mcp_access.py)."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner

from busca.cli import cli

STAFF = "staff-token-0123456789abcdef"


def _mcp(home, *args: str):
    return CliRunner().invoke(cli, ["--home", str(home), "mcp", *args], obj={})


def test_tokens_without_http_is_bad_usage(lexical_home, tmp_path):
    path = tmp_path / "tokens.txt"
    path.write_text(f"{STAFF} staff\n", encoding="utf-8")
    result = _mcp(lexical_home, "--tokens", str(path))
    assert result.exit_code == 2, result.output
    [error] = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert "--tokens" in error and "only with --http: over stdio busca mcp runs as the local" \
                                   " user" in error
    assert STAFF not in result.stderr


@pytest.mark.parametrize("content, message", [
    ("short-12345 staff\n", "tokens.txt line 1: the token is shorter than 16 characters"),
    (f"# a\n{STAFF} staff\n{STAFF} sales\n", "tokens.txt line 3: the same token as line 2"),
    (f"{STAFF} staff,<b>\n", "tokens.txt line 1: bad group name '<b>'"),
    ("# only a comment\n", "no tokens in it"),
    (None, "cannot read the tokens file"),
])
def test_a_bad_tokens_file_is_one_line_and_exit_1(lexical_home, tmp_path, content, message):
    pytest.importorskip("mcp")
    path = tmp_path / "tokens.txt"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with socket.socket() as held:  # a file that passed would stop at the busy port
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = str(held.getsockname()[1])
        result = _mcp(lexical_home, "--http", "--port", port, "--tokens", str(path))
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert "Traceback" not in result.output and STAFF not in result.stderr
