"""`busca eval --filter` and `--by meta.FIELD` (issue #26), end to end through the CLI."""

import json

import pytest

from conftest import write_jsonl
from test_cli_eval import DOCS, GOLDEN

AREAS = {"https://s/reembolso": "financeiro", "https://s/pagamentos": "financeiro",
         "https://s/suporte": "atendimento"}


@pytest.fixture
def corpus(run, tmp_path):
    """The three documents of test_cli_eval with an `area` each, and its golden set."""
    source = write_jsonl(tmp_path / "docs.jsonl",
                         [{**d, "area": AREAS[d["url"]]} for d in DOCS])
    for args in (["add", str(source)],
                 ["index", "--size", "12", "--overlap", "3", "--methods", "tfidf,bm25", "-q"]):
        assert run(*args).exit_code == 0
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(GOLDEN, ensure_ascii=False), encoding="utf-8")
    return golden


def _trec(path) -> dict[tuple[str, str], list[str]]:
    """(method, question id) -> the ranked documents of a saved run's .trec file."""
    ranked: dict[tuple[str, str], list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, item, _, _, tag = line.split()
        ranked.setdefault((tag, qid), []).append(item.split("#")[0])
    return ranked


def test_eval_filter_ranks_within_the_filter_and_drops_questions_outside(run, corpus,
                                                                          tmp_path):
    out = tmp_path / "run.json"
    result = run("eval", str(corpus), "--filter", "area=financeiro", "--json", "-q",
                 "--run-out", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["info"]["filter"]["filters"] == ["area=financeiro"]
    assert data["info"]["filter"]["dropped"] == 1  # l3: its answer is in "Suporte" only
    assert [q["id"] for q in data["questions"]] == ["l1", "l2", "p1", "p2", "n1", "n2"]
    assert data["info"]["answerable"] == 4 and data["info"]["unanswerable"] == 2
    ranked = _trec(out.with_suffix(".trec"))
    assert ranked and all(AREAS[u] == "financeiro" for urls in ranked.values() for u in urls)
    for method in ("tfidf", "bm25"):  # the same ranking as busca search --filter
        search = run("search", GOLDEN[0]["pergunta"], "--filter", "area=financeiro", "--json",
                     "--no-log", "--no-serve", "--method", method, "--min-score", "0",
                     "-k", "5")
        urls = [json.loads(line)["url"] for line in search.stdout.splitlines()]
        assert urls and urls == ranked[(method, "l1")][:len(urls)]
    text = run("eval", str(corpus), "--filter", "area=financeiro", "-q")
    assert "filter: area=financeiro" in text.stdout and "1 labelled question dropped" in text.stdout


def test_eval_by_a_metadata_field_of_the_relevant_documents(run, corpus):
    result = run("eval", str(corpus), "--by", "meta.area", "--json", "-q")
    assert result.exit_code == 0, result.output
    slices = json.loads(result.stdout)["slices"]["meta.area"]
    assert sorted(slices) == ["atendimento", "financeiro"]
    sizes = {v: slices[v]["tfidf"]["recall@1"]["n"] for v in slices}
    assert sizes == {"financeiro": 4, "atendimento": 1}
    assert "By meta.area" in run("eval", str(corpus), "--by", "meta.area,tipo", "-q").stdout


@pytest.mark.parametrize("args, code, message", [
    (["--by", "meta.nada"], 1, "no indexed document has the field 'nada'"),
    (["--filter", "area=nenhuma"], 1, "among the documents the filters allow"),
    (["--filter", "area"], 2, "bad filter"),
    (["--filter", "area=financeiro", "--chunkers", "words:20:5"], 2, "live index"),
    (["--by", "meta.area", "--calibrate"], 2, "cannot be combined with --calibrate"),
])
def test_bad_filters_and_fields_are_one_line(run, corpus, args, code, message):
    result = run("eval", str(corpus), "-q", *args)
    assert result.exit_code == code and message in result.output, result.output
    assert "Traceback" not in result.output


def test_runs_made_within_a_filter_compare_only_within_the_same_filter(run, corpus, tmp_path):
    a, b, whole = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "whole.json"
    for out, extra in ((a, ["--methods", "tfidf"]), (b, ["--methods", "tfidf"])):
        assert run("eval", str(corpus), "--filter", "area=financeiro", "-q", "--run-out",
                   str(out), *extra).exit_code == 0
    assert run("eval", str(corpus), "-q", "--run-out", str(whole)).exit_code == 0
    result = run("eval", str(corpus), "--compare", str(a), str(b), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [q["id"] for q in data["questions"]] == ["l1", "l2", "p1", "p2", "n1", "n2"]
    result = run("eval", str(corpus), "--compare", str(whole), str(a))
    assert result.exit_code == 1 and "different --filter" in result.output
    assert "Traceback" not in result.output
