"""What a new user's slips met (the twenty-seventh session's sweep of ~300 bad inputs): each
one a clear line, the data kept, the same answer whatever the form of the accents."""

from __future__ import annotations

import json
import unicodedata

import pytest

from busca import terminal
from conftest import write_jsonl
from test_cli_eval import DOCS, GOLDEN

NFD = lambda text: unicodedata.normalize("NFD", text)  # noqa: E731  "ç" as c + U+0327


@pytest.fixture
def lexical(run, tmp_path):
    """The three documents of test_cli_eval in 12-word windows (tfidf, bm25), the golden file."""
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", DOCS))).exit_code == 0
    assert run("index", "--size", "12", "--overlap", "3", "-q").exit_code == 0
    path = tmp_path / "golden.json"
    path.write_text(json.dumps(GOLDEN, ensure_ascii=False), encoding="utf-8")
    return path


def test_eval_outputs_never_overwrite_the_golden_set(run, lexical, tmp_path):
    before = lexical.read_bytes()
    qrels_named = lexical.with_name("golden.qrels")  # a golden set named like a run's qrels
    qrels_named.write_bytes(before)
    for option, path, golden in (("--report", lexical, lexical), ("--run-out", lexical, lexical),
                                 ("--run-out", lexical.with_name("golden.json"), qrels_named)):
        result = run("eval", str(golden), "-q", option, str(path))
        assert result.exit_code == 2, result.output
        assert "would overwrite the golden set" in result.stderr
    assert lexical.read_bytes() == before == qrels_named.read_bytes()
    # a run named like its TREC file: its JSON goes to run.json, no suffix doubled ...
    result = run("eval", str(lexical), "-q", "--run-out", str(tmp_path / "run.trec"))
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run.json").read_text())["systems"]
    assert (tmp_path / "run.trec").read_text().startswith("l1 Q0 ")
    assert not (tmp_path / "run.trec.trec").exists()
    # ... and so never over the golden set golden.json
    result = run("eval", str(lexical), "-q", "--run-out", str(lexical.with_suffix(".trec")))
    assert result.exit_code == 2 and "would overwrite the golden set" in result.stderr
    assert lexical.read_bytes() == before


def test_a_pager_that_cannot_be_parsed_prints_the_text(monkeypatch, capsys):
    monkeypatch.setenv("PAGER", 'less "x')
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    terminal.emit("1. hit\n", pager=True)
    out, err = capsys.readouterr()
    assert out == "1. hit\n" and "cannot read $PAGER" in err and len(err.splitlines()) == 1


def test_decomposed_accents_ask_what_composed_ones_ask(run, lexical, tmp_path):
    """Stored text is NFC; a question, a filter value and a golden trecho typed with
    combining marks (macOS file names, some keyboards) find the same."""
    for method in ("tfidf", "bm25"):
        composed = run("search", "Política de pagamentos à vista", "--method", method,
                       "--json", "--no-log")
        decomposed = run("search", NFD("Política de pagamentos à vista"), "--method", method,
                         "--json", "--no-log")
        assert decomposed.exit_code == 0 and decomposed.stdout == composed.stdout
        assert "https://s/pagamentos" in decomposed.stdout.splitlines()[0]
    found = run("search", "nota fiscal", "--filter", NFD("title=Pagamentos"), "--no-log")
    assert found.exit_code == 0  # (no accent there: the value's form must not matter either)
    docs = [{"url": "https://s/acao", "title": "Ação", "text": "A ação de graças é em novembro."}]
    assert run("add", str(write_jsonl(tmp_path / "acao.jsonl", docs))).exit_code == 0
    assert run("index", "--size", "12", "--overlap", "3", "-q").exit_code == 0
    found = run("search", NFD("graças"), "--filter", NFD("title=Ação"), "--no-log", "--json")
    assert found.exit_code == 0 and "https://s/acao" in found.stdout
    golden = tmp_path / "nfd.json"
    golden.write_text(json.dumps([{"pergunta": NFD("Quando é a ação de graças?"),
                                   "trecho": NFD("ação de graças é em novembro")}]),
                      encoding="utf-8")
    result = run("eval", str(golden), "-q", "--json", "--methods", "bm25")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["summary"]["bm25"]["recall@1"]["mean"] == 1.0


def test_line_breaks_in_a_title_cannot_fake_a_hit(run, tmp_path):
    spoof = "Real\n2. 0.9999  Banco Oficial  <https://evil.example/login>"
    docs = [{"url": "https://a.example/x", "title": spoof, "text": "reembolso prazo dias"},
            {"url": "https://b.example/y", "title": "Outro", "text": "reembolso qualquer"}]
    assert run("add", str(write_jsonl(tmp_path / "s.jsonl", docs))).exit_code == 0
    assert run("index", "-q").exit_code == 0
    out = run("search", "reembolso prazo", "-k", "2", "--no-log").stdout
    assert not any(line.startswith("2. 0.9999") for line in out.splitlines())
    assert "Real 2. 0.9999 Banco Oficial" in out
    prompt = run("context", "reembolso prazo", "-k", "2", "--no-log").stdout
    assert "[fonte: https://a.example/x] Real 2. 0.9999 Banco Oficial" in prompt
    table = run("compare", "reembolso prazo", "-k", "2").stdout
    assert not any(line.lstrip().startswith("2. 0.9999") for line in table.splitlines())
    # an id (url) with a line break is not stored at all
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"url": "https://a.example/z\nq", "text": "x"}])
    result = run("add", str(bad))
    assert result.exit_code == 1 and "its url must be a non-empty string on one line" \
        in result.stderr


def test_an_offset_past_the_last_hit_says_so_and_is_no_miss(run, lexical):
    assert run("log", "on").exit_code == 0
    every = run("search", "reembolso", "--method", "bm25", "-k", "50", "--json").stdout
    n = len(every.splitlines())
    result = run("search", "reembolso", "--method", "bm25", "--offset", str(n))
    assert result.exit_code == 3
    assert f"nothing past offset {n}: the question has {n} hits in all" in result.stderr
    assert "floor" not in result.output
    assert "reembolso" not in run("misses").stdout


def test_tune_fusion_without_answerable_questions_or_a_lexical_method(run, lexical, fake,
                                                                       tmp_path):
    assert run("index", "--size", "12", "--overlap", "3", "-q", "--dense", "fake").exit_code == 0
    only = tmp_path / "only.json"
    only.write_text(json.dumps([{"pergunta": "Tem estacionamento?", "trecho": None}]))
    for args in ([], ["--json"]):
        result = run("eval", str(only), "-q", "--tune-fusion", *args)
        assert result.exit_code == 1 and "has no answerable question" in result.stderr
        assert result.stdout == ""  # no NaN, no table
    result = run("eval", str(lexical), "-q", "--tune-fusion", "--methods", "dense,dense")
    assert result.exit_code != 0
    result = run("eval", str(lexical), "-q", "--tune-fusion", "--methods", "dense,tfidf")
    assert result.exit_code == 0, result.output
    from busca.search.fusion import FusionError, default_weights
    with pytest.raises(FusionError, match="name one beside it, e.g. bm25,dense"):
        default_weights(["dense", "sparse"])


def test_showing_the_log_state_of_a_mistyped_home_creates_nothing(run, home):
    result = run("log")
    assert result.exit_code == 1 and "does not exist" in result.stderr
    assert not home.exists()
    assert run("log", "off").exit_code == 0 and (home / "busca.db").exists()


def test_a_url_of_another_database_is_no_folder(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from busca.cli import cli

    monkeypatch.chdir(tmp_path)
    docs = write_jsonl(tmp_path / "d.jsonl", [{"url": "https://s/a", "text": "a"}])
    for home in ("mysql://u@127.0.0.1:1/db", "postgresq://x/y"):
        result = CliRunner().invoke(cli, ["--home", home, "add", str(docs)], obj={})
        assert result.exit_code == 1, result.output
        assert f"busca has no {home.split(':')[0]}:// backend" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl"]


@pytest.mark.parametrize("args, code, message", [
    (["index", "--titles", "bm25,none"], 2, "not none within a list"),
    (["index", "--titles", "all,bm25"], 2, "not all within a list"),
    (["index", "--methods", "dense:foo"], 1, "dense:foo is the model foo of --dense foo=ENCODER"),
    (["search", "qual", "o", "prazo"], 2, 'quote a question of several words: busca search'),
    (["context", "qual", "o", "prazo"], 2, 'busca context "qual o prazo?"'),
    (["search", "--k", "2", "prazo"], 2, "The number of hits is -k N"),
])
def test_common_slips_name_their_fix(run, lexical, args, code, message):
    result = run(*args)
    assert result.exit_code == code, result.output
    assert message in result.stderr and "Traceback" not in result.output
    assert "--rrf-k" not in result.stderr


@pytest.mark.parametrize("args, message", [
    (["search", "prazo", "--home", "elsewhere"], "--home goes before the command: busca --home"),
    (["stats", "--home=elsewhere"], "--home goes before the command: busca --home"),
    (["index", "-v"], "-v goes before the command: busca -v index"),
    (["--json", "search", "prazo"], "--json goes after the command's name: busca search --json"),
    (["-k", "3", "search", "prazo"], "-k goes after the command's name: busca search -k"),
])
def test_an_option_on_the_wrong_side_of_the_command_says_where_it_goes(run, lexical, args,
                                                                        message):
    """`--home` after the command was answered "Did you mean '--help'?", and `--json` before
    it "Did you mean '--version'?": the README's own order, said where the slip is."""
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr, result.stderr
    assert "Did you mean" not in result.stderr and "Traceback" not in result.output


def test_context_says_when_the_filters_match_no_document(run, lexical):
    result = run("context", "qual o prazo", "--filter", "nofield=x", "--no-log")
    assert result.exit_code == 3
    assert "no document matches the filters nofield=x" in result.stderr


def test_add_skips_what_no_backend_could_store_and_keeps_the_rest(run, tmp_path):
    """A \\ud800 escape (a lone surrogate) crashed `busca add` with a traceback after storing
    the lines before it; a NUL broke PostgreSQL homes only."""
    source = tmp_path / "f.jsonl"
    source.write_text('{"url":"https://t.example/1","title":"a","text":"ok"}\n'
                      '{"url":"https://t.example/2","title":"b","text":"a\\ud800b"}\n'
                      '{"url":"https://t.example/3","title":"c\\u0000","text":"x"}\n'
                      '{"url":"https://t.example/4","title":"d","text":"fine"}\n',
                      encoding="utf-8")
    result = run("add", str(source))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"skipped {source}:2: its text holds '\\ud800'" in result.stderr
    assert f"skipped {source}:3: its title holds a NUL character" in result.stderr
    assert "2 added" in result.stdout
    stats = json.loads(run("stats", "--json").stdout)
    assert stats["documents"] == 2


def test_a_question_of_bytes_that_are_not_utf8_gives_utf8_json(lexical, home):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "busca.cli", "--home", str(home), "shell",
                           "--json"], input=b"Qual o prazo do estorno \xff?\n",
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout.decode("utf-8"))  # strict: valid UTF-8
    assert line["question"] == "Qual o prazo do estorno \ufffd?"


def test_why_nothing_names_the_floor_that_refused():
    from busca.search.context import Context

    assert Context("q", "bm25", 2.5, (), top=1.2).why_nothing("--min-score") == (
        "no passage scores 2.5000 or more (best 1.2000); lower --min-score to see weaker"
        " matches")
    assert Context("q", "bm25", None, (), reason="no word").why_nothing() == "no word"
    fused = ("no passage passes the floor of any of the fused methods (give min_score 0 to"
             " see weaker matches)")
    assert Context("q", "hybrid", None, ()).why_nothing() == fused  # (busca demo's last step)
    assert Context("q", "hybrid:use", None, (), top=0.3).why_nothing() == fused
    assert Context("q", "tfidf", None, ()).why_nothing() == "no passage matches the question"


def test_a_search_that_keeps_nothing_says_why_in_every_front_end():
    """The search result's JSON (HTTP, MCP, a CLI that a server answered) names the floor
    that kept nothing, as the command line does; and reads back as the same result."""
    from busca.corpus.specs import Result

    cut = Result("q", "bm25", (), 2.5, best=1.2)
    assert cut.to_json()["note"] == ("no passage scores 2.5000 or more (best 1.2000); lower"
                                     " min_score to see weaker matches")
    assert cut.to_json()["best"] == 1.2
    back = Result.from_json(cut.to_json())
    assert back.note == "" and back.why_nothing("--min-score").endswith(
        "lower --min-score to see weaker matches")
    told = Result("q", "bm25", (), None, note="no word of the question is in the index")
    assert Result.from_json(told.to_json()).note == told.note
    assert Result("q", "hybrid", (), None).to_json()["note"].startswith(
        "no passage passes the floor of any of the fused methods")
