"""What the twenty-eighth session's sweep of the evaluation harness and `busca serve` met:
each one bad usage or a clear line, and nothing of the user's overwritten."""

from __future__ import annotations

import json
import re

import numpy as np
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
            (["--run-out", str(home / "run.json")], "whose files it could overwrite"),
            (["--plot", str(home)], "whose files it could overwrite")):
        result = run("eval", str(lexical), "-q", *options)
        assert result.exit_code == 2, result.output
        assert words in result.stderr
    assert store.read_bytes() == before
    assert not list(tmp_path.glob("same*")) and not list(tmp_path.glob("r.*"))
    # a run among the home's runs, where busca serve's /eval lists them, is written
    result = run("eval", str(lexical), "-q", "--run-out", str(home / "runs" / "a.json"))
    assert result.exit_code == 0, result.output
    assert (home / "runs" / "a.trec").exists()


def _beir(folder, queries: list[str], split: str = "test",
          qrels: str = "query-id\tcorpus-id\tscore\nb1\thttps://s/suporte\t1\n"):
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    (folder / "qrels" / f"{split}.tsv").write_text(qrels, encoding="utf-8")
    return folder


def test_golden_sets_that_cannot_be_read_whole_are_one_line(run, lexical, tmp_path):  # noqa: F811
    """A BEIR _id given twice evaluated the second text under the first's labels; a lone
    surrogate was a traceback when the run was saved; U+2028 inside a JSON string cut a
    JSONL line in two; a BEIR folder with only dev.tsv named no way to choose it."""
    twice = _beir(tmp_path / "twice", ['{"_id": "b1", "text": "horário do atendimento"}',
                                       '{"_id": "b1", "text": "outro texto"}'])
    lone = tmp_path / "lone.json"
    lone.write_text('[{"pergunta": "\\ud800", "trecho": "das 9h"}]', encoding="utf-8")
    lone_beir = _beir(tmp_path / "lone", ['{"_id": "b1", "text": "hor\\ud800rio"}'])
    dev = _beir(tmp_path / "dev", ['{"_id": "b1", "text": "horário do atendimento"}'],
                split="dev")
    (dev / "qrels" / "train.tsv").write_text("b1\thttps://s/reembolso\t1\n", encoding="utf-8")
    for golden, words in ((twice, "queries.jsonl:2: the _id 'b1' of line 1 again"),
                          (lone, "lone.json item 1: holds a lone surrogate ('\\ud800')"),
                          (lone_beir, "queries.jsonl:1: holds a lone surrogate"),
                          (dev, "(found: dev.tsv, train.tsv): choose one with --split dev")):
        result = run("eval", str(golden), "-q", "--run-out", str(tmp_path / "r.json"))
        assert result.exit_code == 1 and words in result.stderr, result.output
        assert "Traceback" not in result.output
    assert run("eval", str(dev), "-q", "--split", "dev").exit_code == 0
    separated = tmp_path / "separated.jsonl"  # one line: U+2028 and U+0085 are text in JSON
    separated.write_text('{"id": 1500.0, "pergunta": "Qual o hor\u2028ário do atendimento?",'
                         ' "trecho": "das 9h às 18h", "nota": "a\x85b"}\n', encoding="utf-8")
    result = run("eval", str(separated), "-q", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["questions"][0]["id"] == "1500.0"


def test_compare_refuses_runs_that_judge_different_units(run, lexical, tmp_path):  # noqa: F811
    a, b = tmp_path / "windows.json", tmp_path / "docs.json"
    assert run("eval", str(lexical), "-q", "--run-out", str(a)).exit_code == 0
    assert run("eval", str(lexical), "-q", "--per-doc", "--run-out", str(b)).exit_code == 0
    result = run("eval", str(lexical), "--compare", str(a), str(b))
    assert result.exit_code == 1
    assert "judges windows and" in result.stderr and "documents (--per-doc)" in result.stderr


@pytest.mark.parametrize("damage, words", [
    (lambda d: d["systems"]["bm25"][0].update(ranks="abc"), "damaged run file (ValueError"),
    (lambda d: d.update(index="notadict"), "damaged run file (index is not what busca eval"),
    (lambda d: d.update(questions=[3]), "damaged run file (questions[0] is not what")])
def test_a_damaged_run_is_one_line(run, lexical, tmp_path, damage, words):  # noqa: F811
    good = tmp_path / "good.json"
    assert run("eval", str(lexical), "-q", "--methods", "bm25", "--run-out",
               str(good)).exit_code == 0
    data = json.loads(good.read_text(encoding="utf-8"))
    damage(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    result = run("eval", str(lexical), "--compare", str(good), str(bad))
    assert result.exit_code == 1 and words in result.stderr, result.output
    assert "Traceback" not in result.output


def test_trec_lines_keep_six_fields_and_their_urls(tmp_path):
    """An id with a space made 7 fields; a URL with a real %20 came back as a space."""
    from busca.search.eval.runs import trec_name
    from busca.serve.runview import _trec

    assert trec_name("q 1") == "q%201" and trec_name("https://s/a%20b") == "https://s/a%2520b"
    path = tmp_path / "r.trec"
    path.write_text(f"{trec_name('q 1')} Q0 {trec_name('https://s/a%20b c')} 1 0.5 bm25\n",
                    encoding="utf-8")
    assert _trec(path) == {"bm25": {"q 1": [("https://s/a%20b c", 0.5)]}}


@pytest.mark.parametrize("command, target, words", [
    (["index", "-q"], "busca.corpus.Corpus.index", "interrupted; the index being built is"
                                                   " discarded, the previous one still answers"),
    (["add", "fixtures/site/articles.jsonl"], "busca.corpus.Corpus.add_files",
     "interrupted; the documents read so far are stored, run the same command again"),
    (["stats"], "busca.cli._corpus", "interrupted; what was stored before stays")])
def test_ctrl_c_is_one_line_and_exit_130(run, lexical, monkeypatch, command,  # noqa: F811
                                         target, words):
    """Ctrl-C printed click's "Aborted!" with exit 1 everywhere but busca crawl."""
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    with monkeypatch.context() as patched:
        patched.setattr(target, interrupted)
        result = run(*command)
    assert result.exit_code == 130 and words in result.stderr, result.output
    assert "Aborted" not in result.output
    assert "chunks" in run("stats").stdout  # the index is still there


def test_a_plain_rebuild_keeps_the_bm25_settings_asked_before(run, lexical):  # noqa: F811
    """A plain busca index (after a crawl) reset --analyzer en --k1 2 --b 0.5 to pt, 1.2
    and 0.75 without a word, where it keeps the window, the titles and the dense models."""
    def bm25() -> str:
        return next(line for line in run("stats").stdout.splitlines()
                    if line.startswith("bm25"))
    assert run("index", "-q", "--analyzer", "en", "--k1", "2", "--b", "0.5").exit_code == 0
    asked = bm25()
    assert "analyzer en" in asked and "k1 2.0, b 0.5" in asked
    assert run("index", "-q").exit_code == 0
    assert bm25() == asked
    assert run("index", "-q", "--k1", "1.5").exit_code == 0
    assert "analyzer en" in bm25() and "k1 1.5, b 0.5" in bm25()


def test_a_huge_k_is_one_line_in_the_cli_and_the_shell(run, lexical, home):  # noqa: F811
    """k of 2**66 was an OverflowError traceback when the query log stored it; the shell
    took :k of that size and died at the next question."""
    result = run("search", "prazo do estorno", "-k", "99999999999999999999")
    assert result.exit_code == 2 and "Invalid value for '-k': 99999999999999999999 is larger" \
        " than 1,000,000,000" in result.stderr and "Traceback" not in result.output
    shell = run("shell", input=":k 99999999999999999999\nprazo do estorno\n")
    assert ":k takes a whole number from 1 to 1,000,000,000" in shell.output
    assert "Reembolso" in shell.output and "Traceback" not in shell.output


@pytest.mark.parametrize("emptied, words", [("bm25.scores.npy", "cannot read bm25.scores.npy"),
                                            ("bm25.vocab.txt", "bm25.vocab.txt holds 0 terms")])
def test_an_emptied_index_file_is_the_damaged_index_line(run, lexical, home,  # noqa: F811
                                                         emptied, words):
    """A zero-length .npy printed click's "Aborted!" (an EOFError); an emptied vocabulary
    found nothing, or a truncated one ranked without its lost terms, silently."""
    (home / (home / "CURRENT").read_text().strip() / emptied).write_bytes(b"")
    result = run("search", "prazo do estorno", "--method", "bm25", "--no-log")
    assert result.exit_code == 1 and words in result.stderr and "is damaged" in result.stderr
    assert "Aborted" not in result.output


def test_stdin_questions_refuse_offset_and_values_typed_are_shown_safely(run, lexical,  # noqa: F811
                                                                       tmp_path):
    result = run("search", "--offset", "1", "-k", "1", "--no-log", input="prazo do estorno\n")
    assert result.exit_code == 2 and "--offset pages the hits of one question" in result.stderr
    result = run("search", "prazo", "--no-log", "--filter", "title=\x1b]0;PWN\x07")
    assert "no document matches the filters title=" in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    bad = tmp_path / "bad.jsonl"  # NaN is not JSON; a url on two lines is named on one
    bad.write_text('{"url": "u", "title": "t", "text": "gatos", "n": NaN}\n'
                   '{"url": "a\\nb", "title": "t", "text": "x"}\n', encoding="utf-8")
    result = run("add", str(bad))
    assert result.exit_code == 1 and f"skipped {bad}:1: its meta is not JSON (Out of range" \
        " float" in result.stderr and f"skipped {bad}:2: its url must be a non-empty string" \
        " on one line, not 'a\\nb'\n" in result.stderr  # each line named by its number


def test_the_python_api_takes_a_text_where_a_list_goes_and_refuses_what_the_cli_refuses(
        run, lexical, home):  # noqa: F811
    import busca
    from busca.errors import BuscaError
    from busca.search import render

    corpus = busca.open(home)
    ev = corpus.evaluate(lexical, methods="bm25", by="tipo", ks="1,3")
    assert list(ev.slices) == ["tipo"] and list(ev.summary) == ["bm25"]  # not t, i, p, o
    for options in ({"k": 10 ** 20}, {"method": "hybrid", "rrf_k": float("inf")},
                    {"log": "yes"}):
        with pytest.raises(BuscaError, match="must be"):
            corpus.search("prazo do estorno", **options)
    with pytest.raises(BuscaError, match="-k takes positive integers"):
        corpus.evaluate(lexical, ks=[0, -1])
    found = corpus.context("prazo do estorno \x00context\x00 fim", log=False)
    with pytest.raises(BuscaError, match="unknown language 'xx'"):
        render(found, lang="xx")
    prompt = render(found)  # the question cannot move the passages into its own line
    assert prompt.rstrip().splitlines()[-1].endswith("\x00context\x00 fim")


def test_the_last_slips_of_the_sweep(run, lexical, home, tmp_path):  # noqa: F811
    """An overlap past the windows named no option; an empty question and a template that
    is no text were no BuscaError; TREC scores of 6 decimals tied different scores."""
    import busca
    from busca.errors import BuscaError
    from busca.search import render
    from busca.search.eval.runs import _trec_lines
    from busca.search.eval.metrics import Outcome

    result = run("index", "-q", "--overlap", "300")
    assert result.exit_code == 1 and re.search(
        r"the overlap \(300 words\) must be smaller than the window size \(([0-9]+) words, the"
        r" previous build's\): give --overlap below \1, or --size above 300", result.stderr)
    corpus = busca.open(home)
    with pytest.raises(BuscaError, match="the question is empty"):
        corpus.search("   ")
    with pytest.raises(BuscaError, match="a template is a text"):
        render(corpus.context("prazo do estorno", log=False), template=3)
    outcome = Outcome("q", (), (), (), None, None, ("a", "b"), (0.28570131, 0.28570094), (0, 1))
    lines = list(_trec_lines({"bm25": [outcome]}))
    written = [line.split()[4] for line in lines]  # as trec_eval reads them: float32
    assert written == ["0.285701305", "0.285700947"] and len(set(written)) == 2
    assert [np.float32(w) for w in written] == [np.float32(0.28570131), np.float32(0.28570094)]


def test_the_shell_says_when_no_floor_is_calibrated(run, lexical):  # noqa: F811
    shell = run("shell", "--no-log", input=":settings\n")
    assert "floor none (no floor calibrated: busca eval --calibrate)" in shell.output
    assert "floor None" not in shell.output


def test_a_filtered_search_that_found_nothing_is_no_miss(run, lexical):  # noqa: F811
    """busca misses listed a question that found nothing only because of its --filter."""
    assert run("search", "prazo do estorno", "--filter", "title=Nada").exit_code == 3
    assert run("search", "prazo do estorno", "--min-score", "1e9").exit_code == 3  # a miss
    missed = run("misses", "--json").stdout
    assert missed.count("prazo do estorno") == 1  # the unfiltered one only


def test_ctrl_c_ends_the_process_though_a_worker_thread_is_stuck(tmp_path):
    """A Ctrl-C that lands while numba loads its kernels can leave a lock held that a
    build's worker threads wait on for ever; the process printed "interrupted" and then
    waited for them at exit (a PostgreSQL build's lock held all along). Now it ends."""
    import subprocess
    import sys

    script = """if True:
        import threading
        import busca.cli as cli
        stuck = threading.Lock()
        stuck.acquire()
        threading.Thread(target=stuck.acquire).start()  # a worker that never ends
        def interrupted(ctx):
            raise KeyboardInterrupt
        cli._home = interrupted
        import sys
        sys.argv = ["busca", "--home", sys.argv[1], "stats"]
        cli.main()
    """
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "home")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip() == "Error: interrupted; what was stored before stays"
