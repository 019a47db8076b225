"""busca demo --keep (found in review: a second run, or a run into an existing home, mixed the
demo's 39 articles into what was there — 78 documents, a new index, new floors)."""

from __future__ import annotations

import json

from conftest import FIXTURES


def test_keep_refuses_a_folder_that_is_not_empty(run, home):
    assert run("add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    before = sorted(p.name for p in home.iterdir())
    result = run("demo", "--keep", str(home))
    assert result.exit_code == 2, result.output
    assert "--keep" in result.stderr and "not empty" in result.stderr
    assert "busca crawl" not in result.stdout  # refused before any work
    assert sorted(p.name for p in home.iterdir()) == before
    assert json.loads(run("stats", "--json").stdout)["documents"] == 39
