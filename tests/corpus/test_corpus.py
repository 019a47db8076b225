"""corpus.py: the use cases as one Python object (`busca.open`), the same answers as the
command line, and docs/python.md's example run as written."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import busca
from busca.cli import cli
from busca.search.context import render
from conftest import FIXTURES, REPO

QUESTIONS = ("Qual a universidade pioneira no Brasil em engenharia de software?",
             "Como o PC consegue rodar vários aplicativos juntos se o processador só faz uma"
             " coisa por vez?")


def invoke(home: str | Path, *args: str):
    result = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False,
                                obj={})
    return result


@pytest.fixture
def fake_home(tmp_path, fake) -> Path:
    """The fixture corpus indexed with tfidf, bm25 and the fake encoder (dense, hybrid)."""
    home = tmp_path / "home"
    for args in (["add", str(FIXTURES / "site" / "articles.jsonl")],
                 ["index", "-q", "--dense", "fake"]):
        assert invoke(home, *args).exit_code == 0
    return home


def cli_lines(home: str | Path, question: str, *args: str) -> list[dict]:
    result = invoke(home, "search", question, "--json", "--no-log", *args)
    assert result.exit_code in (0, 3), result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


OPTIONS = {"tfidf": [{}, {"k": 5, "per_doc": 1}],
           "bm25": [{}, {"k": 7, "per_doc": 1}, {"min_score": 5.0}],
           "dense": [{}, {"k": 5, "per_doc": 2}],
           "hybrid": [{}, {"fusion": "rrf", "k": 5}, {"weights": {"bm25": 1, "dense": 0.5}},
                      {"fusion": "zscore", "window": 10, "per_doc": 1}]}


def as_args(options: dict) -> list[str]:
    args = []
    for name, value in options.items():
        if name == "weights":
            value = ",".join(f"{m}={w}" for m, w in value.items())
        args += ["-k" if name == "k" else f"--{name.replace('_', '-')}", str(value)]
    return args


@pytest.mark.parametrize("method", list(OPTIONS))
def test_python_gives_the_hits_and_scores_of_busca_search_json(fake_home, method):
    corpus = busca.open(fake_home)
    for question in QUESTIONS:
        for options in OPTIONS[method]:
            expected = cli_lines(fake_home, question, "--method", method, *as_args(options))
            result = corpus.search(question, method=method, log=False, **options)
            assert result.lines() == expected, (question, options)
            assert [h.to_json() for h in result.hits] == [
                {k: v for k, v in line.items() if k != "fusion"} for line in expected]
    corpus.close()


@pytest.mark.parametrize("method", ["dense", "hybrid"])
def test_with_the_real_encoder_too(served_home, method):
    with busca.open(served_home, create=False) as corpus:
        for question in QUESTIONS:
            assert corpus.search(question, method=method, log=False).lines() == \
                cli_lines(served_home, question, "--method", method)


def test_with_e5_small_too(tmp_path):
    from busca.index import EncoderError, get_encoder

    try:
        get_encoder("e5-small")
    except EncoderError as e:
        pytest.skip(str(e))
    home = tmp_path / "home"
    for args in (["add", str(FIXTURES / "site" / "articles.jsonl")],
                 ["index", "-q", "--dense", "e5-small"]):
        assert invoke(home, *args).exit_code == 0
    with busca.open(home, create=False) as corpus:
        for method in ("dense", "hybrid"):
            for question in QUESTIONS:
                assert corpus.search(question, method=method, log=False).lines() == \
                    cli_lines(home, question, "--method", method)


def test_search_applies_the_calibrated_floor_and_logs_as_the_cli(fake_home):
    golden = str(FIXTURES / "golden" / "golden.json")
    with busca.open(fake_home) as corpus:
        floors = corpus.calibrate(golden, methods=["bm25"])
        result = corpus.search(QUESTIONS[1], method="bm25")
        assert result.floor == floors["bm25"] and result.calibrated
        assert all(h.score >= result.floor for h in result.hits)
        logged = corpus.home.logged_queries()
    assert [q["query"] for q in logged] == [QUESTIONS[1]]
    assert logged[0]["floor"] == pytest.approx(floors["bm25"])
    expected = cli_lines(fake_home, QUESTIONS[1], "--method", "bm25")
    assert [h.to_json() for h in result.hits] == expected


def test_a_log_write_that_fails_leaves_the_answer_and_warns(lexical_home, tmp_path, caplog):
    """busca serve and Python callers (no notify): a full disk under the query log is a
    warning in the log (the server's stderr) and `Result.unlogged`, never a failed search."""
    import shutil
    import sqlite3

    home = tmp_path / "home"
    shutil.copytree(lexical_home, home)
    db = sqlite3.connect(home / "busca.db")
    db.execute("CREATE TRIGGER full BEFORE INSERT ON queries"
               " BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END")
    db.commit()
    db.close()
    with busca.open(home) as corpus:
        result = corpus.search(QUESTIONS[0], method="bm25")
        found = corpus.context(QUESTIONS[0], method="bm25")
    assert result.hits and found.hits
    assert result.unlogged.endswith("database or disk is full")
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert [w.split(":")[0] for w in warned] == ["search did not log a question",
                                                "context did not log a question"]


def test_context_is_the_one_of_busca_context(fake_home):
    with busca.open(fake_home) as corpus:
        found = corpus.context(QUESTIONS[0], method="bm25", max_chars=900, log=False)
    result = invoke(fake_home, "context", QUESTIONS[0], "--method", "bm25", "--json",
                    "--max-chars", "900", "--no-log")
    assert json.loads(result.stdout) == found.to_json(prompt=found.prompt())
    assert busca.Context.from_json(found.to_json()).to_json() == found.to_json()


def test_context_to_json_carries_its_prompt(fake_home):
    """python.md: a Context's to_json() is `busca context --json`'s; it said answered true
    with "prompt": null unless the caller rendered the prompt and passed it in."""
    with busca.open(fake_home) as corpus:
        found = corpus.context(QUESTIONS[0], method="bm25", max_chars=900, log=False)
        nothing = corpus.context("xyzzy plugh", method="bm25", log=False)
    result = invoke(fake_home, "context", QUESTIONS[0], "--method", "bm25", "--json",
                    "--max-chars", "900", "--no-log")
    assert found.answered and found.to_json() == json.loads(result.stdout)
    assert found.to_json()["prompt"] == found.prompt()
    assert busca.Context.from_json(json.loads(result.stdout)).to_json() == found.to_json()
    assert found.to_json(lang="en")["prompt"] == found.prompt(lang="en")
    assert not nothing.answered and nothing.to_json()["prompt"] is None


ENGLISH = [
    busca.Document("https://help.example/refunds/", "Refund policy",
                   "Refunds are paid within ten business days after the returned item arrives"
                   " at our warehouse. The refund goes back to the original payment method."),
    busca.Document("https://help.example/shipping/", "Shipping",
                   "Orders ship within two days. Tracking numbers are emailed when the parcel"
                   " leaves the warehouse."),
]


@pytest.mark.parametrize("analyzer, lang", [("en", "en"), ("pt", "pt"), ("simple", "pt")])
def test_context_prompt_is_in_the_index_language(tmp_path, analyzer, lang):
    """Corpus.context on an index built with bm25's en analyzer rendered the Portuguese
    instruction unless every prompt() said lang="en"; now its prompt is in the index's
    language, and an explicit lang still chooses."""
    with busca.open(tmp_path / "home") as corpus:
        corpus.add(ENGLISH)
        corpus.index(bm25_analyzer=analyzer)
        found = corpus.context("How long do refunds take?", method="bm25", min_score=0,
                               log=False)
        tfidf = corpus.context("How long do refunds take?", method="tfidf", min_score=0,
                               log=False)
    opening = {"en": "Answer using only the passages below.",
               "pt": "Responda usando apenas os trechos abaixo."}
    assert found.answered and found.prompt().startswith(opening[lang])
    assert found.lang == tfidf.lang == lang
    assert render(found).startswith(opening[lang])
    assert found.to_json(prompt=found.prompt())["lang"] == lang
    other = "pt" if lang == "en" else "en"
    assert found.prompt(lang=other).startswith(opening[other])
    assert found.to_json(lang=other)["lang"] == other
    assert busca.Context.from_json(found.to_json()).lang == lang


def test_result_and_hit_round_trip_through_json(fake_home):
    with busca.open(fake_home) as corpus:
        result = corpus.search(QUESTIONS[0], method="tfidf", k=3, log=False)
        build = corpus.build.manifest.build
    data = json.loads(json.dumps(result.to_json(took_ms=1.0)))
    again = busca.Result.from_json(data)
    assert again.hits == result.hits and again.floor == result.floor
    assert again.build == result.build == build
    assert busca.Hit.from_json(result.hits[0].to_json()) == result.hits[0]


def test_a_search_spec_is_a_value(fake_home):
    spec = busca.SearchSpec(method="bm25", k=2)
    with busca.open(fake_home) as corpus:
        assert corpus.search(QUESTIONS[0], spec, log=False).hits == \
            corpus.search(QUESTIONS[0], method="bm25", k=2, log=False).hits
        with pytest.raises(busca.errors.UnknownOption, match="unknown option 'methd'"):
            corpus.search(QUESTIONS[0], methd="bm25")  # a BuscaError, and a TypeError still
        assert issubclass(busca.errors.UnknownOption, TypeError)
        # compare's too (a plain TypeError, outside busca's errors, before)
        with pytest.raises(busca.errors.UnknownOption, match="'fusion'.* methods, k, per_doc"):
            corpus.compare(QUESTIONS[0], fusion="rrf")
    with pytest.raises(AttributeError):
        spec.k = 3


def test_errors_are_the_library_errors(tmp_path):
    with busca.open(tmp_path / "empty") as corpus:
        with pytest.raises(busca.errors.IndexNotFound, match="busca index"):
            corpus.search("pergunta")
        assert corpus.stats() == {"documents": 0, "index": None}
    with pytest.raises(busca.errors.BuscaError):
        busca.open(tmp_path / "missing", create=False)


def test_embed_settings_are_checked_when_the_corpus_is_opened(tmp_path):
    """embed={"timeout_s": 5} opened, then every dense question was a TypeError traceback
    (ServerSettings.__init__() got an unexpected keyword argument)."""
    with pytest.raises(busca.errors.UnknownOption, match="'timeout_s'.* url, key, batch,"
                                                         " timeout") as refused:
        busca.open(tmp_path / "h", embed={"timeout_s": 5, "key": "sk-secret"})
    assert "sk-secret" not in str(refused.value) and not (tmp_path / "h").exists()
    with pytest.raises(busca.errors.BadSpec, match="embed is a dict"):
        busca.open(tmp_path / "h", embed="http://127.0.0.1:8000")
    busca.open(tmp_path / "h", embed={"url": "http://127.0.0.1:8000", "timeout": 5}).close()


def python_example() -> str:
    text = (REPO / "docs" / "python.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return code


def test_docs_python_md_runs_as_written(tmp_path, monkeypatch, capsys):
    (tmp_path / "fixtures").symlink_to(FIXTURES, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    exec(compile(python_example(), "docs/python.md", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert out.startswith("40 documents,")
    assert "1. " in out and "<https://faquad.example/" in out
    assert "[fonte: https://exemplo.org/reembolso]" in out
    assert re.search(r"^bm25 recall@3 0\.\d+$", out, flags=re.M)
    assert out.rstrip().endswith("True")
    assert os.path.isdir(tmp_path / "casa")


def test_a_long_lived_corpus_keeps_its_build_and_picks_up_a_new_one(fake_home):
    with busca.open(fake_home) as corpus:
        corpus.warm()
        first = corpus.build
        ranker = first.ranker("dense")
        assert corpus.build is first and corpus.build.ranker("dense") is ranker
        before = corpus.search(QUESTIONS[0], method="hybrid", log=False)
        assert invoke(fake_home, "index", "-q", "--size", "120", "--overlap", "20").exit_code == 0
        after = corpus.search(QUESTIONS[0], method="hybrid", log=False)
        assert corpus.build is not first and after.build != before.build
        assert after.lines() == cli_lines(fake_home, QUESTIONS[0], "--method", "hybrid")


@pytest.mark.postgres
def test_a_postgresql_url_is_a_corpus_too(pg_home):
    with busca.open(pg_home) as corpus:
        corpus.add_files([FIXTURES / "site" / "articles.jsonl"])
        manifest = corpus.index(methods=["tfidf", "bm25"])
        assert manifest.documents == 39
        result = corpus.search(QUESTIONS[0], method="bm25", k=3, log=False)
        assert result.hits and result.hits[0].url.startswith("https://faquad.example/")
        assert result.lines() == cli_lines(pg_home, QUESTIONS[0], "--method", "bm25", "-k", "3")


def test_a_failed_log_write_on_postgresql_leaves_the_answer(pg_home):
    """The same on a PostgreSQL home: an INSERT the database refuses is a note, not a 500."""
    with busca.open(pg_home) as corpus:
        corpus.add_files([FIXTURES / "site" / "articles.jsonl"])
        corpus.index(methods=["bm25"])
        schema = corpus.home.schema
        corpus.home.conn().execute(
            f"CREATE FUNCTION \"{schema}\".disk_full() RETURNS trigger LANGUAGE plpgsql AS"
            " $$BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'"
            " USING ERRCODE = 'disk_full'; END$$;"
            f" CREATE TRIGGER disk_full BEFORE INSERT ON \"{schema}\".queries"
            f" FOR EACH ROW EXECUTE FUNCTION \"{schema}\".disk_full()")
        result = corpus.search(QUESTIONS[0], method="bm25")
        assert result.hits and "No space left on device" in result.unlogged
        assert corpus.search(QUESTIONS[0], method="bm25").hits  # the connection still works


def test_a_corpus_call_caught_by_a_new_build_runs_again_on_it(fake_home):
    """The long-lived mode busca serve shares (corpus/live.py): a call that ran on a build
    published away meanwhile is run again on the new one."""
    with busca.open(fake_home) as corpus:
        seen = []

        def work(live):
            seen.append(live.build)
            if len(seen) == 1:
                assert invoke(fake_home, "index", "-q", "--size", "120").exit_code == 0
            return live.build

        assert corpus.run(work) == seen[-1] != seen[0]
        assert len(seen) == 2 and corpus.live.last() == seen[-1]


@pytest.mark.parametrize("ask", [
    lambda c: c.search(QUESTIONS[0], method="bm25", log=False).build,
    lambda c: c.context(QUESTIONS[0], method="bm25", min_score=0, log=False),
    lambda c: c.compare(QUESTIONS[0], methods="bm25,tfidf", k=2)])
def test_a_question_caught_by_a_new_build_runs_again_on_it(fake_home, monkeypatch, ask):
    """search, context and compare through the live build's `run`, as busca serve's: a
    build published (and the loaded one removed) while a question reads its hits is asked
    again on the new build. (Threads sharing a Corpus while one of them rebuilt got
    IndexFormatError, "tfidf.indptr.npy is missing", from calls that read the build directly.)"""
    with busca.open(fake_home) as corpus:
        live = corpus.live.current(corpus.home)
        builds, real = [], live.index.chunks

        def chunks(ids):
            if not builds:  # the first read of hits: two builds published meanwhile
                builds.extend(invoke(fake_home, "index", "-q", "--size", str(size))
                              .exit_code for size in (120, 140))
            return real(ids)

        monkeypatch.setattr(live.index, "chunks", chunks)
        ask(corpus)
        newest = corpus.home.current().manifest.build
        assert builds == [0, 0] and newest != live.build
        assert corpus.live.last() == newest  # the question was asked on it
        assert not (Path(fake_home) / live.build).exists()  # the one it began on is gone


def test_stats_caught_by_a_new_build_are_the_new_builds(tmp_path, monkeypatch):
    """A dashboard's `corpus.stats()` while a cron job rebuilds in another process: read on
    a build published away meanwhile, they are read again on the new one. (They said "the
    index in … is damaged (chunks.db: unable to open database file) — run busca index" of a
    sound index.)"""
    import subprocess
    import sys

    home = tmp_path / "home"
    for args in (["add", str(FIXTURES / "site" / "articles.jsonl")],
                 ["index", "-q", "--methods", "tfidf,bm25"]):
        assert invoke(home, *args).exit_code == 0
    with busca.open(home) as corpus:
        live = corpus.live.current(corpus.home)
        rebuilt, real = [], live.index.documents

        def documents():
            if not rebuilt:  # two builds published (the loaded one removed) meanwhile
                rebuilt.extend(subprocess.run(
                    [sys.executable, "-m", "busca.cli", "--home", str(home), "index", "-q",
                     "--size", str(size)], capture_output=True).returncode
                    for size in (120, 140))
            return real()

        monkeypatch.setattr(live.index, "documents", documents)
        figures = corpus.stats()
        newest = corpus.home.current().manifest
        assert rebuilt == [0, 0] and not (home / live.build).exists()
        assert figures["build"] == newest.build and figures["chunks"] == newest.chunks
        assert figures["pending"] == {"changed": 0, "removed": 0}


def test_groups_given_as_one_text_are_names_not_letters(tmp_path):
    """add_files(…, groups="staff") and crawl options stamped s, t, a, f (one text taken
    letter by letter): staff lost the documents, a token of group "s" gained them."""
    from busca.crawler import CrawlOptions

    with busca.open(tmp_path / "home") as corpus:
        corpus.add_files(str(FIXTURES / "site" / "articles.jsonl"), groups="staff,hr")
        stored = {tuple(d.meta["groups"]) for d in corpus.home.documents()}
    assert stored == {("staff", "hr")}
    assert CrawlOptions(groups="staff").groups == ("staff",)


def test_add_and_stats_are_values_the_cli_renders(tmp_path):
    """`busca add`'s report and `busca stats`' figures come from the library as values."""
    notes = tmp_path / "nota.md"
    notes.write_text("# Nota\n\nO reembolso é pago em sete dias.", encoding="utf-8")
    told = []
    with busca.open(tmp_path / "home") as corpus:
        added = corpus.add_files([notes, notes, tmp_path / "missing.txt"],
                                 notify=lambda what, value: told.append(what))
        assert added.to_json() == {"added": 1, "updated": 0, "metadata_updated": 0,
                                   "unchanged": 0, "duplicate": 1, "skipped": 1,
                                   "skipped_inputs": [{
                                       "input": str(tmp_path / "missing.txt"),
                                       "reason": "cannot read it (No such file or directory)"}],
                                   "left_out": [], "documents": 1}
        assert told == ["repeated", "skipped"]  # in the order of the input
        corpus.index(methods=["bm25"])
        corpus.add([busca.Document("https://a.example/x", "X", "Outra nota.")])
        figures = corpus.statistics(detail=True)
        assert figures.pending == (1, 0) and "bm25" in figures.settings
        with pytest.raises(busca.errors.BadSpec, match="this build has no dense model"):
            corpus.index(methods=["bm25"], dense_groups=40)  # it was ignored
        assert figures.to_json() == corpus.stats()
    assert json.loads(invoke(tmp_path / "home", "stats", "--json").stdout) == figures.to_json()


def test_calibrate_from_python_stores_what_busca_eval_calibrate_stores(tmp_path):
    """One calibration use case: the floors and answerability models of `busca eval
    --calibrate` (corpus/evaluate.py), from Python as from the command line."""
    golden = str(FIXTURES / "golden" / "golden.json")
    homes = [tmp_path / "cli", tmp_path / "python"]
    for home in homes:
        for args in (["add", str(FIXTURES / "site" / "articles.jsonl")],
                     ["index", "-q", "--methods", "tfidf,bm25"]):
            assert invoke(home, *args).exit_code == 0
    assert invoke(homes[0], "eval", golden, "-q", "--calibrate").exit_code == 0
    with busca.open(homes[1]) as corpus:
        floors = corpus.calibrate(golden)
    stored = [busca.open(home).build.manifest.methods for home in homes]
    assert set(floors) == {"tfidf", "bm25"}
    for method, floor in floors.items():
        assert stored[0][method]["floor"] == stored[1][method]["floor"] == floor
        assert stored[0][method]["answerable"] == stored[1][method]["answerable"]


@pytest.mark.parametrize("backend", ["local", "postgres"])
def test_floors_of_a_build_a_rebuild_replaced_are_not_stored_in_the_new_one(
        tmp_path, request, backend):
    """An evaluation stores its floors only in the build it evaluated: after a rebuild (another
    process, or a `read=` standby still serving the previous build) they were written into
    the new build, whose scores they do not fit."""
    home = str(tmp_path / "home") if backend == "local" else request.getfixturevalue("pg_home")
    for args in (["add", str(FIXTURES / "site" / "articles.jsonl")],
                 ["index", "-q", "--methods", "tfidf,bm25"]):
        assert invoke(home, *args).exit_code == 0
    with busca.open(home) as corpus:
        evaluated = corpus.evaluate(str(FIXTURES / "golden" / "golden.json"), methods=["bm25"])
        assert invoke(home, "index", "-q", "--size", "80", "--overlap", "10").exit_code == 0
        with pytest.raises(busca.errors.NoFloorToStore, match="rebuilt since"):
            corpus.store_calibration(evaluated)
    assert busca.open(home).build.manifest.floor("bm25") is None


def test_an_index_spec_builds_what_busca_index_builds(tmp_path):
    """`busca index`'s options as one value (IndexSpec), the build options' keys written once."""
    articles = str(FIXTURES / "site" / "articles.jsonl")
    assert invoke(tmp_path / "cli", "add", articles).exit_code == 0
    assert invoke(tmp_path / "cli", "index", "-q", "--methods", "bm25", "--size", "120",
                  "--overlap", "20", "--k1", "0.9", "--b", "0.4", "--analyzer",
                  "simple").exit_code == 0
    spec = busca.IndexSpec(methods=("bm25",), size=120, overlap=20, bm25_k1=0.9, bm25_b=0.4,
                           bm25_analyzer="simple")
    with busca.open(tmp_path / "python") as corpus:
        corpus.add_files([articles])
        built = corpus.index(spec)
    entry = built.methods["bm25"]
    cli_entry = busca.open(tmp_path / "cli").build.manifest.methods["bm25"]
    assert (entry["k1"], entry["b"], entry["analyzer"]) == (0.9, 0.4, "simple")
    assert entry == cli_entry
    assert built.chunker == {"kind": "words", "size": 120, "overlap": 20}


def test_a_rebuild_keeps_the_windows_the_user_chose(tmp_path):
    """`busca index` and `corpus.index()` without a window take the previous build's (as
    `busca serve`'s POST /api/index did), say so, and refuse an overlap that no longer fits."""
    home = tmp_path / "home"
    assert invoke(home, "add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    assert invoke(home, "index", "-q", "--size", "120", "--overlap", "20").exit_code == 0
    again = invoke(home, "index", "-q")
    assert again.exit_code == 0 and "(0 documents re-chunked)" in again.stdout
    assert "kept the previous build's windows: 120 words, overlap 20" in again.stderr
    with busca.open(home) as corpus:
        assert corpus.index().chunker == {"kind": "words", "size": 120, "overlap": 20}
        assert corpus.index(size=300).chunker == {"kind": "words", "size": 300, "overlap": 20}
    refused = invoke(home, "index", "-q", "--size", "15")
    assert refused.exit_code == 1 and refused.stdout == ""
    assert "the overlap (20 words, the previous build's) must be smaller than the window" \
           " size (15 words): give --overlap below 15, or --size above 20" in refused.stderr
    fresh = tmp_path / "fresh"
    assert invoke(fresh, "add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    first = invoke(fresh, "index", "-q")
    assert first.exit_code == 0 and "windows" not in first.stderr
    with busca.open(fresh) as opened:
        assert opened.build.manifest.chunker["size"] == 200


def test_an_overlap_not_below_the_size_is_one_check_each_caller_naming_its_options(tmp_path):
    """overlap >= size was checked twice: the CLI's own "must be smaller than --size (10)", and
    the library's, naming the CLI's --overlap and --size to Python (and POST /api/index)."""
    home = tmp_path / "home"
    assert invoke(home, "add", str(FIXTURES / "site" / "articles.jsonl")).exit_code == 0
    with pytest.raises(busca.errors.BuscaError) as spec:
        busca.IndexSpec(size=10, overlap=10)  # refused when made, before any work
    with busca.open(home) as corpus, pytest.raises(busca.errors.BuscaError) as python:
        corpus.index(size=10, overlap=10)
    assert str(python.value) == str(spec.value) == (
        "the overlap (10 words) must be smaller than the window size (10 words): give overlap"
        " below 10, or size above 10")
    refused = invoke(home, "index", "-q", "--size", "10", "--overlap", "10")
    assert refused.exit_code == 2 and refused.stdout == ""
    assert ("Invalid value for --overlap: the overlap (10 words) must be smaller than the"
            " window size (10 words): give --overlap below 10, or --size above 10\n") \
        in refused.stderr


@pytest.mark.parametrize("options, words", [
    ({"fusion": "nope"}, "unknown fusion 'nope'; choose one of: "),
    ({"weights": "foo=1"}, "weights: hybrid fuses two or more methods, got only foo"),
    ({"weights": {"bm25": 0, "dense": 0}}, "weights: weights must be 0 or more and not all 0"),
])
def test_hybrid_settings_are_checked_when_the_spec_is_made(lexical_home, options, words):
    """--fusion and --weights were checked by the CLI and the HTTP API each, not by SearchSpec:
    from Python (and MCP) a fusion or weights no hybrid can fuse by failed only when the
    search ran (here: no vectors to fuse), or not at all."""
    with pytest.raises(busca.errors.BadSpec) as made:
        busca.SearchSpec(method="hybrid", **options)
    assert str(made.value).startswith(words)
    with busca.open(lexical_home) as corpus, pytest.raises(busca.errors.BadSpec) as asked:
        corpus.search("prazo do reembolso", method="hybrid", log=False, **options)
    assert str(asked.value) == str(made.value)


def test_documents_are_checked_before_any_is_stored(tmp_path):
    """Corpus.add stores all or nothing: a document it cannot store (no url, a url on two
    lines, a lone surrogate, a date that is not ISO 8601, not a Document or a document
    dict) is a BadDocument naming it, and the documents before it are not stored either."""
    good = busca.Document("https://s/ok", "Ok", "texto bom")
    with busca.open(tmp_path / "h") as corpus:
        for bad, message in ((busca.Document(None, "t", "x"), "url must be a non-empty"),
                             (busca.Document("", "t", "x"), "url must be a non-empty"),
                             (busca.Document("https://s/a\nb", "t", "x"), "on one line"),
                             (busca.Document("https://s/b", "t", "x\ud800"), "lone surrogate"),
                             (busca.Document("https://s/c", None, "x"), "title must be a str"),
                             (busca.Document("https://s/d", "t", "x", modified="2024-13-45"),
                              "ISO 8601"),
                             ({"url": "https://s/e"}, 'needs a string "text"'),
                             (busca.Document("https://s/g", "t", "a\x00b"), "NUL character"),
                             (busca.Document("https://s/h", "t", "x", meta={"k": object()}),
                              "its meta is not JSON"),
                             (busca.Document("https://s/i", "t", "x", meta={"k": "\udc80"}),
                              "its meta holds"),
                             ("https://s/f", "give busca.Document")):
            with pytest.raises(busca.errors.BadDocument, match=message):
                corpus.add([good, bad])
            assert corpus.home.count() == 0
        for not_a_list in (None, good, "texto"):
            with pytest.raises(busca.errors.BadDocument, match="takes a list"):
                corpus.add(not_a_list)
        assert corpus.add([good, busca.Document("https://s/d", "t", "x",
                                                modified="2024-05-01T10:00:00Z")]).counts["added"] == 2
        corpus.index(methods="bm25")  # a comma list, as the command line writes it
        assert corpus.search("texto", method="bm25").hits[0].url == "https://s/ok"


@pytest.mark.parametrize("call, message", [
    (lambda c: c.search(None), "the question must be a string"),
    (lambda c: c.search(123), "the question must be a string"),
    (lambda c: c.search("q", k=0), "k must be a whole number from 1 to 1,000,000,000"),
    (lambda c: c.search("q", k="3"), "k must be a whole number"),
    (lambda c: c.search("q", k=1.5), "k must be a whole number"),
    (lambda c: c.search("q", offset=-5), "offset must be a whole number from 0 to"),
    (lambda c: c.search("q", method=None), "method must be a method name"),
    (lambda c: c.search("q", min_score="x"), "min_score must be a finite number"),
    (lambda c: c.search("q", filters=[1]), "a filter is a text such as"),
    (lambda c: c.search("q", "bm25"), "not str 'bm25': e.g. search(question, method='bm25')"),
    (lambda c: c.context("q", busca.SearchSpec()), "the second argument is a ContextSpec, not"
                                                   " SearchSpec"),  # it advised search(…)
    (lambda c: c.search("q", method="bm25", fusion="rrf"), "only applies to method='hybrid'"),
    (lambda c: c.context("q", max_chars="x"), "max_chars must be a whole number"),
    (lambda c: c.compare("q", k=0), "k must be a whole number"),
    (lambda c: c.index(size="200"), "size must be a whole number"),
    (lambda c: c.index(size=0), "size must be a whole number from 1 to"),
    (lambda c: c.evaluate({"a": 1}), "give the golden set as a path"),
    (lambda c: busca.open(None), "open takes a folder"),
    (lambda c: busca.open(""), "open takes a folder"),
    # a keyword the call does not take, or a value of another type (a TypeError and an
    # AttributeError of Python's before; offset was silently ignored by context)
    (lambda c: c.search("q", top_k=3), "unknown option 'top_k': this call takes method, k,"),
    (lambda c: c.context("q", lang="en"), "unknown option 'lang'"),
    (lambda c: c.index(bogus=1), "unknown option 'bogus': this call takes size, overlap"),
    (lambda c: c.crawl("http://127.0.0.1:9/", bogus=1), "unknown option 'bogus'"),
    (lambda c: c.calibrate(str(FIXTURES / "golden" / "golden.json"), bogus=1),
     "calibrate takes evaluate's options"),
    (lambda c: c.context("q", offset=3), "offset is a search option"),
    (lambda c: c.search("q", method="hybrid", weights={"bm25": "1", "dense": 1}),
     "weights must map method names to numbers of 0 or more"),
    (lambda c: c.search("q", method="hybrid", weights={"bm25": True, "dense": 1}),
     "weights must map method names to numbers"),
    (lambda c: c.search("q", rerank="tei:x"), "rerank takes busca.index.parse_rerank("),
    (lambda c: c.compare("q", rerank="tei:x"), "rerank takes busca.index.parse_rerank("),
    (lambda c: c.compare("q", per_doc="x"), "per_doc must be a whole number"),
    (lambda c: c.compare("q", methods=[None]), "methods are names such as bm25 or dense"),
    (lambda c: c.compare("q", include=["x"]), "include takes chunk ids"),
    (lambda c: c.compare("q", include="12"), "include takes chunk ids"),
    (lambda c: c.search("q", filters=["category=x", None]), "a filter is a text such as"),
    (lambda c: c.add_files(str(FIXTURES / "site" / "articles.jsonl"), groups=["a b"]),
     "bad group name 'a b'"),  # stored as such before
    (lambda c: c.add_files(str(FIXTURES / "site" / "articles.jsonl"), groups=["x,y"]),
     "bad group name 'x,y'"),  # read back as two groups before
    (lambda c: c.add([busca.Document("https://g/1", "t", "x", meta={"groups": "a b"})]),
     "document 1: its meta's groups: bad group name 'a b'"),
    (lambda c: c.crawl("http://127.0.0.1:9/", groups=[3]), "groups are names"),
    (lambda c: busca.Hit.from_json({"x": 1}), "not the JSON form of a busca Hit (no 'rank')"),
    (lambda c: busca.Result.from_json("x"), "not the JSON form of a busca Result"),
    (lambda c: busca.Context.from_json({}), "not the JSON form of a busca Context (no"),
])
def test_a_wrong_argument_is_a_busca_error_naming_the_fix(fake_home, call, message):
    with busca.open(fake_home) as corpus:
        with pytest.raises(busca.errors.BuscaError, match=re.escape(message)):
            call(corpus)


def test_strings_where_lists_go_and_odd_questions(fake_home):
    with busca.open(fake_home) as corpus:
        one = corpus.search("Ministério da Educação", method="bm25", filters="url^=https://",
                            log=False)
        assert one.hits  # one filter text, not its letters
        table = corpus.compare("Ministério da Educação", methods="bm25,tfidf")
        assert set(table.methods) == {"bm25", "tfidf"}
        golden = str(FIXTURES / "golden" / "golden.json")  # evaluate reads the same text
        assert set(corpus.evaluate(golden, methods="tfidf, bm25", ks=3).summary) == {
            "tfidf", "bm25"}  # it was one method named 'tfidf,bm25'
        # a byte that was not UTF-8 on a command line (a lone surrogate) asks as U+FFFD
        assert corpus.search("universidade \udcff", method="bm25", log=False).hits
    added = busca.open(fake_home).add_files(str(FIXTURES / "site" / "articles.jsonl"))
    assert added.counts["unchanged"] == 39


def test_compare_takes_filters_as_search_does(fake_home):
    with busca.open(fake_home) as corpus:
        every = corpus.compare("Ministério da Educação", methods=["bm25"])
        url = every.rows[0].url
        kept = corpus.compare("Ministério da Educação", methods=["bm25"],
                              filters=[f"url={url}"])
        assert kept.rows and {r.url for r in kept.rows} == {url}
        assert len({r.url for r in every.rows}) > 1


def test_threads_share_one_corpus_and_its_loaded_build(fake_home):
    """A Corpus made in one thread answers in others (each opens its own store handle) with
    the same hits, loading the build once; a closed one says how to open it again."""
    import threading

    corpus = busca.open(fake_home, create=False)
    alone = corpus.search(QUESTIONS[0], method="bm25", log=False)
    answers, errors = [], []

    def ask():
        try:
            answers.append(corpus.search(QUESTIONS[0], method="bm25", log=False))
        except Exception as e:  # noqa: BLE001 - the assertion below shows it
            errors.append(e)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(answers) == 4
    assert all(a.hits == alone.hits for a in answers)
    assert corpus.live.last() == alone.build  # one build loaded, shared
    corpus.close()
    with pytest.raises(busca.errors.BuscaError, match=r"was closed .*open the home again"):
        corpus.search(QUESTIONS[0], method="bm25", log=False)
    threads = [threading.Thread(target=ask) for _ in range(2)]  # closed for them as well
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 4 and len(errors) == 2
    assert all("was closed" in str(e) and "open the home again" in str(e) for e in errors)


def test_a_thread_that_ends_closes_its_handle_of_the_home(fake_home):
    """A web server that makes a thread per request shares one Corpus: each thread's handle
    of the home is closed when the thread ends. (Before, its SQLite connection was closed only
    by the garbage collector, and while the Corpus's own connection held busca.db, SQLite
    kept each one's file open: 20 threads at a time ran out of file descriptors after some
    hundreds of requests, "unable to open database file".)"""
    import gc
    import threading

    def open_stores() -> int:
        return sum(name.endswith("busca.db") for name in _descriptors())

    corpus = busca.open(fake_home, create=False)
    alone = corpus.search(QUESTIONS[0], method="bm25", log=False)
    answers = []
    before = open_stores()
    gc.disable()  # what a thread leaves must not wait for a collection
    try:
        for _ in range(30):
            thread = threading.Thread(target=lambda: answers.append(
                corpus.search(QUESTIONS[0], method="bm25", log=True)))
            thread.start()
            thread.join()
        left = open_stores() - before
    finally:
        gc.enable()
    assert len(answers) == 30 and all(a.hits == alone.hits for a in answers)
    assert left <= 1, f"{left} handles of busca.db left open by 30 threads that ended"
    corpus.close()


def test_a_file_where_the_home_goes_is_one_line_naming_the_fix(tmp_path):
    file = tmp_path / "notes.txt"
    file.write_text("x", encoding="utf-8")
    for where in (file, file / "home"):
        with pytest.raises(busca.errors.BuscaError, match="a file is there, or on its path, where a"
                                                   " folder should be; give a folder"):
            busca.open(where)


def test_weights_as_text_are_read_as_busca_search_weights_reads_them(fake_home):
    with busca.open(fake_home, create=False) as corpus:
        as_text = corpus.search(QUESTIONS[1], method="hybrid", weights="bm25=1,dense=0.5",
                                log=False)
        as_map = corpus.search(QUESTIONS[1], method="hybrid",
                               weights={"bm25": 1.0, "dense": 0.5}, log=False)
        assert as_text.hits == as_map.hits and as_text.hits
        assert as_text.hits != corpus.search(QUESTIONS[1], method="hybrid", log=False,
                                             weights={"bm25": 0.1, "dense": 1.0}).hits
        with pytest.raises(busca.errors.BadSpec, match="bad weight 'bm25=x'"):
            corpus.search(QUESTIONS[1], method="hybrid", weights="bm25=x")


def test_compare_with_no_method_named_is_one_line(fake_home):
    """methods=[] compared every method, as if none had been given."""
    with busca.open(fake_home, create=False) as corpus:
        with pytest.raises(busca.errors.BadSpec, match="methods is empty: name at least one"):
            corpus.compare(QUESTIONS[0], methods=[])
        assert list(corpus.compare(QUESTIONS[0], methods=["bm25"]).methods) == ["bm25"]


def test_a_rebuild_says_what_calibration_and_settings_it_could_not_keep(tmp_path):
    """A rebuild whose bm25 analyzer changed dropped bm25's floor and every answerability
    model reading bm25 without a word (an upgrade changed the analyzer's version); one whose
    previous build it cannot read took the default windows and methods without a word."""
    golden = str(FIXTURES / "golden" / "golden.json")
    home = tmp_path / "home"
    with busca.open(home) as corpus:
        corpus.add_files([FIXTURES / "site" / "articles.jsonl"])
        corpus.index(methods=("tfidf", "bm25"), size=120, overlap=20)
        corpus.calibrate(golden)
        notes: list[str] = []
        corpus.index(on_note=notes.append)
        assert not [n for n in notes if "dropped" in n or "could not be read" in n], notes
        corpus.index(bm25_analyzer="simple", on_note=notes.append)
        dropped = [n for n in notes if n.startswith("dropped ")]
        assert len(dropped) == 1 and "the calibrated floors of bm25" in dropped[0]
        assert "tfidf" not in dropped[0].split(":")[0].split("models of")[0]
        assert "busca eval GOLDEN --calibrate" in dropped[0]
        assert corpus.build.manifest.methods["tfidf"].get("floor") is not None  # kept
    manifest = home / (home / "CURRENT").read_text(encoding="utf-8").strip() / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    manifest.write_text(json.dumps({**data, "format_version": 1}), encoding="utf-8")
    with busca.open(home) as corpus:
        notes = []
        corpus.index(on_note=notes.append)
    unread = [n for n in notes if n.startswith("the previous index could not be read")]
    assert len(unread) == 1 and "windows of 200 words, overlap 40" in unread[0], notes


def test_a_rebuild_of_an_older_format_names_the_settings_it_could_not_keep(tmp_path):
    """An index of format version 1 (busca of 2026-11-30) is rebuilt with the defaults: the
    note named only the defaults taken, so the windows, analyzer, k1 and dense model the
    user chose then were lost unless remembered; it names them and the command keeping them."""
    home = tmp_path / "home"
    with busca.open(home) as corpus:
        corpus.add_files([FIXTURES / "site" / "articles.jsonl"])
        corpus.index(methods=("tfidf", "bm25"))
    manifest = home / (home / "CURRENT").read_text(encoding="utf-8").strip() / "manifest.json"
    manifest.write_text(json.dumps({  # as busca index --size 120 --overlap 20 --analyzer
        "format_version": 1, "busca_version": "0.1.0",  # simple --k1 1.5 --dense e5-small
        "chunker": {"kind": "words", "size": 120, "overlap": 20},  # wrote it then
        "documents": 39, "words": 30337, "chunks": 315, "rechunked_documents": 39,
        "methods": {
            "tfidf": {"analyzer": "java", "vocabulary": 4799, "floor": None},
            "bm25": {"analyzer": "simple", "analyzer_version": "", "k1": 1.5, "b": 0.75,
                     "vocabulary": 4768, "avgdl": 115.1, "floor": None},
            "dense": {"encoder": "e5-small", "dimension": 384, "max_length": 512,
                      "encoded": 315, "reused": 0, "floor": None},
            "hybrid": {"fusion": {}, "floor": None}},
        "build": "index-20261130T120000-0123abcd"}), encoding="utf-8")
    with busca.open(home) as corpus:
        notes: list[str] = []
        corpus.index(methods=("tfidf", "bm25"), on_note=notes.append)
    unread = [n for n in notes if n.startswith("the previous index could not be read")]
    assert len(unread) == 1 and "\n" not in unread[0], notes
    assert ("busca index --size 120 --overlap 20 --analyzer simple --k1 1.5 --dense e5-small"
            in unread[0]), unread[0]


def test_a_share_tuned_on_a_build_a_rebuild_replaced_is_not_saved_in_the_new_one(
        tmp_path, monkeypatch):
    """--tune-fusion --save stores the dense share only in the build it tuned on: a rebuild
    published while it ranks (another process) made it write the share into the new build."""
    from dense_fakes import register

    register(monkeypatch)
    home = tmp_path / "home"
    for args in (["add", str(FIXTURES / "site" / "articles.jsonl")],
                 ["index", "-q", "--methods", "tfidf,bm25", "--dense", "fake",
                  "--no-sparse"]):
        assert invoke(home, *args).exit_code == 0
    rebuilt = []

    def rebuild_once(stage, done, total):
        if not rebuilt:
            rebuilt.append(invoke(home, "index", "-q", "--size", "80", "--overlap", "10")
                           .exit_code)

    with busca.open(home) as corpus:
        tuned_on = corpus.build.manifest.build
        with pytest.raises(busca.errors.NoFloorToStore, match="dense share does not fit"):
            corpus.tune_fusion(str(FIXTURES / "golden" / "golden.json"),
                               busca.EvalSpec(methods=("bm25", "dense")), save=True,
                               on_progress=rebuild_once)
    live = busca.open(home).build.manifest
    assert rebuilt == [0] and live.build != tuned_on
    assert all("share" not in entry for entry in live.methods.values())


def test_a_filtered_question_that_finds_nothing_says_the_filters_left_it_out(tmp_path):
    """With filters that allow some documents but none holding the question's words, search
    and context said "no passage matches the question", sending the user to rephrase what
    the filters had left out; an unknown word and filters matching no document keep their
    own reasons."""
    with busca.open(tmp_path / "h") as corpus:
        corpus.add([busca.Document("https://a.example/1", "Um", "O ornitorrinco bota ovos.",
                             meta={"category": "bichos"}),
                    busca.Document("https://a.example/2", "Dois", "Receitas de bolo de cenoura.",
                             meta={"category": "receitas"})])
        corpus.index(methods=["tfidf", "bm25"])
        left_out = ("no passage of the documents that match the filters category=receitas"
                    " matches the question")
        for method in ("tfidf", "bm25"):
            found = corpus.search("ornitorrinco", method=method, filters=["category=receitas"],
                                  log=False)
            assert not found.hits and found.note == left_out
        assert corpus.context("ornitorrinco", method="bm25",
                              filters=["category=receitas"]).to_json()["reason"] == left_out
        assert "xyzzy" in corpus.search("xyzzy", method="bm25", filters=["category=receitas"],
                                        log=False).note
        assert corpus.search("ornitorrinco", method="bm25", filters=["category=nada"],
                             log=False).note == "no document matches the filters category=nada"
        assert corpus.search("ornitorrinco", method="bm25", filters=["category=bichos"],
                             log=False).hits


HYPHENATED = ("Como trata\u00admos os \u200bdados.\n\ufeffPrazos de infor\u00admação\n"
              "A infor\u00admação pessoal é apa\u2060gada em trinta dias.")


def test_corpus_add_stores_the_text_without_invisible_characters(tmp_path):
    """Corpus.add kept a CMS's soft hyphens and zero-width characters ("infor\\u00admação"),
    which a crawled page and a .txt file lose: a search for "informação" found nothing. Now
    every way in stores the same text, and a heading's offset still points at it."""
    heading = HYPHENATED.index("\ufeffPrazos")
    doc = busca.Document("https://cms.example/p/1", "Infor\u00admação pessoal", HYPHENATED,
                         meta={"headings": [[heading, 2, "Prazos de infor\u00admação", "p"]]})
    with busca.open(tmp_path / "h") as corpus:
        corpus.add([doc, busca.Document("https://cms.example/p/2", "Frete", "Frete grátis.")])
        stored = corpus.home.get(doc.url)
        corpus.index(methods=["tfidf", "bm25"])
        for method in ("tfidf", "bm25"):
            found = corpus.search("informação", method=method, log=False)
            assert [h.url for h in found.hits] == [doc.url], method
    assert stored.title == "Informação pessoal"
    assert not set(stored.text) & set("\u00ad\u200b\u2060\ufeff")
    offset, _, text, _ = stored.meta["headings"][0]
    assert text == "Prazos de informação"
    assert stored.text[offset:].startswith("Prazos de informação\n")


def _descriptors() -> list[str]:
    """What this process's open file descriptors name."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the listing's own descriptor, closed meanwhile
            pass
    return names


def _open_files(folder: Path) -> list[str]:
    """The files under `folder` this process holds open (descriptors and memory maps)."""
    names = _descriptors()
    with open("/proc/self/maps", encoding="utf-8") as maps:
        names += [line.split()[-1] for line in maps if len(line.split()) > 5]
    return sorted({n for n in names if n.startswith(str(folder))})


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="lists /proc/self")
def test_a_closed_corpus_refuses_every_call_and_lets_go_of_its_build(tmp_path):
    """After close() (the end of a with block) the thread that made the Corpus went on
    answering from the build it had loaded: a question that found nothing, or whose hits
    it did not look up, was answered (its log write failing aside), `warm()` and `build`
    worked, and the build's arrays and chunks.db stayed open until the object was dropped.
    Now every call says it was closed, and close() lets go of the build (twice is fine)."""
    import gc

    home = tmp_path / "h"
    with busca.open(home) as corpus:
        corpus.add([busca.Document("https://a.example/1", "Um", "O ornitorrinco bota ovos.")])
        corpus.index(methods=["tfidf", "bm25"])
        assert corpus.search("ornitorrinco", method="bm25", log=False).hits
        corpus.warm()
        assert _open_files(home) and repr(corpus) == f"Corpus({str(home)!r})"
    assert repr(corpus) == f"Corpus({str(home)!r}, closed)"
    gc.collect()
    assert _open_files(home) == []
    for call in (lambda: corpus.search("xyzzy", method="bm25"),
                 lambda: corpus.context("xyzzy", method="bm25", log=False),
                 lambda: corpus.warm(), lambda: corpus.build, lambda: corpus.stats()):
        with pytest.raises(busca.errors.StoreError, match="was closed .*open the home again"):
            call()
    corpus.close()
    with busca.open(home) as again:
        assert again.search("ornitorrinco", method="bm25", log=False).hits


def test_a_pickled_or_copied_corpus_opens_the_same_home_again(tmp_path):
    """A Corpus sent to a worker process (pickle) or copied was a TypeError from deep inside,
    "cannot pickle 'sqlite3.Connection' object", and copy.copy shared its handle (closing the
    copy closed the original). Now each is the same home opened again, with its own handle."""
    import copy
    import pickle
    import subprocess
    import sys

    home = tmp_path / "h"
    with busca.open(home) as corpus:
        corpus.add([busca.Document("https://a.example/1", "Um", "O ornitorrinco bota ovos.")])
        corpus.index(methods=["bm25"])
        expected = corpus.search("ornitorrinco", method="bm25", log=False).hits
        for again in (pickle.loads(pickle.dumps(corpus)), copy.copy(corpus),
                      copy.deepcopy(corpus)):
            assert again is not corpus and again.location == corpus.location
            assert again.search("ornitorrinco", method="bm25", log=False).hits == expected
            again.close()
        assert corpus.search("ornitorrinco", method="bm25", log=False).hits == expected
        code = ("import pickle, sys; corpus = pickle.loads(sys.stdin.buffer.read());"
                " print(corpus.search('ornitorrinco', method='bm25', log=False).hits[0].url)")
        done = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(corpus),
                              capture_output=True, check=False, timeout=120)
        assert done.stdout.decode().strip() == "https://a.example/1", done.stderr.decode()
