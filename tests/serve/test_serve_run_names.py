"""/eval: a saved run asked by the name `busca eval --run-out` was given without
`.json`, and a name that is no run answered with the runs there (serve/runview.py)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from busca.cli import cli
from busca.serve import runview
from busca.serve.errors import HttpError


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    home = tmp_path_factory.mktemp("runs") / "home"
    runs = home.parent / "runs"
    runs.mkdir()
    for args in (["add", str(FIXTURES / "site" / "articles.jsonl")],
                 ["index", "-q", "--methods", "bm25"],
                 ["eval", str(FIXTURES / "golden" / "golden.json"), "-q",
                  "--run-out", str(runs / "semana-1.json")]):
        result = CliRunner().invoke(cli, ["--home", str(home), *args], obj={})
        assert result.exit_code == 0, result.output
    return runs


def test_a_run_is_found_without_its_json_suffix(runs):
    """/eval?run=semana-1 was a 404 page ("no saved run named 'semana-1'") where the page's
    own links say run=semana-1.json."""
    assert runview.load(runs, "semana-1") is runview.load(runs, "semana-1.json")


def test_a_name_that_is_no_run_lists_the_runs(runs):
    with pytest.raises(HttpError) as refused:
        runview.load(runs, "semana-2")
    assert refused.value.status == 404
    assert str(refused.value).endswith("(its runs: semana-1.json)"), str(refused.value)
    with pytest.raises(HttpError, match=r"\(its runs: none\)$"):
        runview.load(runs / "..", "x")


def test_the_chart_has_its_figures_as_a_table(runs):
    """The recall@k chart was an SVG whose figures a screen reader could not read (its bars'
    tooltips are no text alternative): a table after it carries each method's values."""
    import re

    from busca.serve import evalpage

    view = runview.load(runs, "semana-1.json")
    html = evalpage._chart(view)
    table = html.split('<details class="figures">', 1)[1]
    rows = re.findall(r"<tr><td>(.*?)</td>(.*?)</tr>", table)
    assert [system for system, _ in rows] == list(view.systems)
    for system, cells in rows:
        shown = re.findall(r"<td>([0-9.]+) <small>\(", cells)
        summary = view.evaluation.summary[system]
        wanted = [f"{summary[m.name].mean:.3f}" for m in view.evaluation.metrics
                  if m.kind == "recall"]
        assert shown == wanted and len(wanted) >= 3, (system, cells)
