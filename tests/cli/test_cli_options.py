"""Numbers and weights given on the command line: nan, inf and malformed values are bad usage
(exit 2, one line naming the option), never silently accepted (found in review)."""

from __future__ import annotations

import pytest

from conftest import FIXTURES

QUESTION = "Qual a universidade pioneira no Brasil em engenharia de software?"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    from click.testing import CliRunner

    from busca.cli import cli
    home = tmp_path_factory.mktemp("options") / "home"

    def run(*args, input=None):
        return CliRunner().invoke(cli, ["--home", str(home), *args], input=input, obj={},
                                  catch_exceptions=False)
    assert run("add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    assert run("index", "-q").exit_code == 0
    return run


@pytest.mark.parametrize("value", ["nan", "inf"])
@pytest.mark.parametrize("args", [
    ("shell", "--min-score"),           # the session took nan and then found nothing
    ("search", "--min-score"),          # ... also when search opens a session (no question)
    ("misses", "--below"),
    ("index", "--k1"),
    ("index", "--b"),
    ("search", QUESTION, "--method", "hybrid", "--rrf-k"),
    ("crawl", "http://127.0.0.1:9/", "--rate"),     # nan crawled with no delay at all
    ("crawl", "http://127.0.0.1:9/", "--timeout"),
])
def test_a_number_that_is_not_finite_is_bad_usage(indexed, args, value):
    result = indexed(*args, value, input=QUESTION + "\n")
    assert result.exit_code == 2, result.output
    assert args[-1] in result.stderr and "finite number" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("weights, says", [
    ("bm25=nan,tfidf=1", "bad weight"),
    ("bm25=x,tfidf=1", "bad weight"),
    ("bm25=0,tfidf=0", "not all 0"),
    ("bm25=1", "two or more"),
    ("bm25=1,bm25=2,tfidf=1", "twice"),  # was accepted, the last value silently winning
])
def test_malformed_weights_are_bad_usage(indexed, weights, says):
    result = indexed("search", QUESTION, "--method", "hybrid", "--weights", weights)
    assert result.exit_code == 2, result.output
    assert "--weights" in result.stderr and says in result.stderr


def test_weights_the_index_cannot_use_are_an_error_not_usage(indexed):
    result = indexed("search", QUESTION, "--method", "hybrid", "--weights", "bm25=1,tfidf=1")
    assert result.exit_code == 1 and "dense vectors" in result.stderr
