import json
from dataclasses import replace

from pathlib import Path

import numpy as np
import pytest

from busca.crawler.store import Document
from busca.search.eval.judge import chunk_documents, judge, rank_questions
from busca.search.eval.golden import Golden, Question
from busca.search.eval import runs
from busca.search.eval.metrics import ndcg
from busca.search.eval.runs import RunError, align, fingerprint, load_run, run_pairs, save_run

DOCS = [Document("https://s/a", "A", "Um dois três quatro. Cinco seis sete oito."),
        Document("https://s/b", "B", "Nove dez onze doze.")]
GOLDEN = Golden("g.json", "json", (Question("q1", "três?", trecho="três quatro"),
                                   Question("q2", "dez?", url="https://s/b"),
                                   Question("n1", "nada?")))


def make_run(tmp_path, name, docs=DOCS):
    table, _ = chunk_documents(docs, {"kind": "words", "size": 4, "overlap": 1})
    judgement = judge(GOLDEN, table)
    ranker = lambda q: (np.arange(len(table.urls))[::-1], np.linspace(1, 0.1, len(table.urls)))
    outcomes = rank_questions(judgement, table, {"tfidf": ranker})
    corpus = fingerprint({d.url: d.text for d in docs})
    return save_run(tmp_path / name, GOLDEN, outcomes, {table.label: (judgement, table)},
                    corpus=corpus, info={"date": "hoje"}), outcomes


def test_a_run_round_trips_with_trec_files(tmp_path):
    paths, outcomes = make_run(tmp_path, "a.json")
    assert [p.name for p in paths] == ["a.json", "a.trec", "a.qrels"]
    run = load_run(paths[0])
    assert run.outcomes["tfidf"]["q1"] == outcomes["tfidf"][0]
    assert run.corpus["documents"] == 2 and run.info["date"] == "hoje"
    # the golden set as a whole path: busca serve, started elsewhere, reads its tags
    assert run.info["golden"] == str(Path("g.json").resolve())
    first = paths[1].read_text().splitlines()[0].split()
    assert first[:2] == ["q1", "Q0"] and first[3] == "1" and first[5] == "tfidf"
    assert "q2 0 https://s/b#0 1" in paths[2].read_text()


def test_align_and_refusals(tmp_path):
    (a, *_), _ = make_run(tmp_path, "a.json")
    (b, *_), _ = make_run(tmp_path, "b.json")
    systems = align(GOLDEN, load_run(a), load_run(b))
    assert list(systems) == ["A:tfidf", "B:tfidf"]
    assert run_pairs(list(systems)) == [("A:tfidf", "B:tfidf")]
    (c, *_), _ = make_run(tmp_path, "c.json", DOCS[:1])
    with pytest.raises(RunError, match="another corpus"):
        align(GOLDEN, load_run(a), load_run(c))
    other = Golden("h.json", "json", GOLDEN.questions + (Question("q9", "novo?"),))
    with pytest.raises(RunError, match="lacks 1 questions of h.json"):
        align(other, load_run(a), load_run(b))


def test_a_run_of_as_many_documents_with_another_text_says_what_differs(tmp_path):
    """The same documents stored again with other texts (a .md file an older busca stored as
    raw Markdown, added again): the refusal read 'another corpus (2 documents) than a.json
    (2 documents)', two counts that agree."""
    (a, *_), _ = make_run(tmp_path, "a.json")
    changed = [DOCS[0], Document("https://s/b", "B", "Nove dez onze doze treze.")]
    (c, *_), _ = make_run(tmp_path, "c.json", changed)
    with pytest.raises(RunError) as e:
        align(GOLDEN, load_run(a), load_run(c))
    message = str(e.value)
    assert "as many documents (2)" in message and "other URLs or texts" in message, message
    assert "2 documents) than" not in message, message


def test_a_label_fixed_between_two_runs_is_not_credited_to_the_change(tmp_path):
    """Run A saved with a misspelt trecho, the label fixed, run B saved: --compare listed the
    question as fixed by the change, on the same index. Each run keeps what it judged by."""
    (a, *_), _ = make_run(tmp_path, "a.json")
    (b, *_), _ = make_run(tmp_path, "b.json")
    fixed = Golden("g.json", "json", (replace(GOLDEN.questions[0], trecho="três  quatro."),
                                      *GOLDEN.questions[1:]))
    with pytest.raises(RunError, match=r"a.json judged 1 question\(s\) by another label than"
                                       r" g.json has \(first: q1: 'três\?'\).*save the run"
                                       r" again with this golden set"):
        align(fixed, load_run(a), load_run(b))
    answered = Golden("g.json", "json", (*GOLDEN.questions[:2],
                                         replace(GOLDEN.questions[2], trecho="Nove")))
    with pytest.raises(RunError, match="first: n1"):  # unanswerable, then labelled
        align(answered, load_run(a), load_run(b))
    data = json.loads(a.read_text(encoding="utf-8"))  # a run saved before labels were kept
    for q in data["questions"]:
        del q["label"]
    a.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RunError, match="b.json judged 1 question"):
        align(fixed, load_run(a), load_run(b))
    assert list(align(GOLDEN, load_run(a), load_run(b))) == ["A:tfidf", "B:tfidf"]


@pytest.mark.parametrize("content, message", [
    ("{", "invalid JSON"), ('{"format": "x"}', "not a busca run file"),
    ('{"format": "busca-run", "version": 9}', "version 9"),
    ('{"format": "busca-run", "version": 1, "systems": {"m": [{"id": "q"}]}}', "damaged"),
])
def test_bad_run_files(tmp_path, content, message):
    path = tmp_path / "r.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(RunError, match=message):
        load_run(path)
    with pytest.raises(RunError, match="no such run file"):
        load_run(tmp_path / "nada.json")


def test_equal_scores_are_written_apart_in_busca_order(tmp_path):
    """trec_eval orders equal scores by document name, descending; busca by chunk id: a run
    file whose scores tie would be ranked otherwise by trec_eval than busca measured it."""
    table, _ = chunk_documents(DOCS, {"kind": "words", "size": 4, "overlap": 1})
    judgement = judge(GOLDEN, table)
    n = len(table.urls)
    outcomes = rank_questions(judgement, table,
                              {"tied": lambda q: (np.arange(n), np.full(n, 0.5))})
    paths = save_run(tmp_path / "t.json", GOLDEN, outcomes, {table.label: (judgement, table)},
                     corpus=fingerprint({d.url: d.text for d in DOCS}), info={})
    lines = [line.split() for line in paths[1].read_text().splitlines()]
    for qid in ("q1", "q2", "n1"):
        rows = [line for line in lines if line[0] == qid]
        scores = [float(line[4]) for line in rows]
        as_read = np.float32(scores)  # as trec_eval reads them: floats
        assert as_read[0] == 0.5 and all(a > b for a, b in zip(as_read, as_read[1:]))
        assert scores[-1] > 0.5 - 1e-6  # a float32's width apart, not another score
        assert [line[2] for line in rows] == [table.name(i) for i in range(n)]
    assert [line[2] for line in lines[:2]] == ["https://s/a#0", "https://s/a#1"]
    pytrec_eval = pytest.importorskip("pytrec_eval")  # trec_eval's own code (the dev extra)
    qrels, run = {}, {}
    for qid, _, name, gain in (line.split() for line in paths[2].read_text().splitlines()):
        qrels.setdefault(qid, {})[name] = int(gain)
    for qid, _, name, _, score, _ in lines:
        run.setdefault(qid, {})[name] = float(score)
    got = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recip_rank"}).evaluate(run)
    for o in outcomes["tied"]:
        if o.question_id in got:
            assert got[o.question_id]["ndcg_cut_10"] == pytest.approx(ndcg(o, 10))
            assert got[o.question_id]["recip_rank"] == pytest.approx(1 / o.first_rank)


@pytest.mark.parametrize("name, names", [
    ("r.trec", ["r.json", "r.trec", "r.qrels"]), ("r.qrels", ["r.json", "r.trec", "r.qrels"]),
    ("r.TREC", ["r.json", "r.trec", "r.qrels"]), ("r", ["r", "r.trec", "r.qrels"]),
])
def test_a_run_named_like_its_trec_files_never_doubles_a_suffix(tmp_path, name, names):
    """--run-out r2.trec wrote the JSON run to r2.trec and the TREC run to r2.trec.trec."""
    paths, outcomes = make_run(tmp_path, name)
    assert [p.name for p in paths] == names
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    assert load_run(paths[0]).outcomes["tfidf"]["q1"] == outcomes["tfidf"][0]
    assert paths[1].read_text().startswith("q1 Q0 ")
    assert paths[2].read_text().startswith("q1 0 ")
    assert runs.run_files(tmp_path / name) == paths


@pytest.mark.parametrize("name, names", [
    ("antes 2026.12.05", ["antes 2026.12.05", "antes 2026.12.05.trec", "antes 2026.12.05.qrels"]),
    ("avaliação v1.2.json", ["avaliação v1.2.json", "avaliação v1.2.trec", "avaliação v1.2.qrels"]),
])
def test_a_run_named_with_a_dot_keeps_its_name_beside_it(tmp_path, name, names):
    """--run-out "antes 2026.12.05" wrote "antes 2026.12.trec": the next day's run wrote the
    same .trec and .qrels, over the first run's."""
    paths, _ = make_run(tmp_path, name)
    assert [p.name for p in paths] == names
    other, _ = make_run(tmp_path, name.replace("1", "2"))
    assert not set(paths) & set(other) and all(p.is_file() for p in paths + other)
    assert runs.run_files(tmp_path / name) == paths


def test_a_trec_file_given_as_a_run_names_the_json_run_beside_it(tmp_path):
    paths, _ = make_run(tmp_path, "r.trec")
    with pytest.raises(RunError, match=r"r.trec: a TREC file, not a busca run: give the JSON"
                                       r" run saved beside it, .*r\.json$"):
        load_run(paths[1])


def test_a_run_is_never_written_into_a_folder_that_does_not_exist(tmp_path):
    """--run-out /nonexistent/r.json made the folders (as root, anywhere): like busca misses
    --golden, it says the folder does not exist and writes nothing."""
    with pytest.raises(FileNotFoundError) as e:
        make_run(tmp_path, "nope/deeper/r.json")
    assert e.value.filename == str(tmp_path / "nope/deeper/r.json")
    assert e.value.strerror == f"the folder {tmp_path / 'nope/deeper'} does not exist"
    assert list(tmp_path.iterdir()) == []


def test_a_run_named_like_the_golden_sets_trec_file_spares_the_golden_set(tmp_path):
    """The JSON run of --run-out g.trec goes to g.json: never over the golden set g.json."""
    source = tmp_path / "g.json"
    source.write_text("[]", encoding="utf-8")
    golden = replace(GOLDEN, path=str(source))
    table, _ = chunk_documents(DOCS, {"kind": "words", "size": 4, "overlap": 1})
    judgement = judge(golden, table)
    n = len(table.urls)
    outcomes = rank_questions(judgement, table, {"tfidf": lambda q: (np.arange(n), np.ones(n))})
    with pytest.raises(RunError, match=r"the run .*g\.trec would overwrite the golden set .*g\.json with g\.json"):
        save_run(tmp_path / "g.trec", golden, outcomes, {table.label: (judgement, table)},
                 corpus={}, info={})
    assert [p.name for p in tmp_path.iterdir()] == ["g.json"]
    assert source.read_text(encoding="utf-8") == "[]"


def test_a_homes_runs_folder_is_made_and_no_other(tmp_path):
    """busca serve's /eval lists HOME/runs: a run saved there makes it, as before; a runs/
    folder of a folder that is no home is not made."""
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "busca.db").write_bytes(b"")
    paths, _ = make_run(tmp_path, "home/runs/a.json")
    assert sorted(p.name for p in (tmp_path / "home" / "runs").iterdir()) == [
        "a.json", "a.qrels", "a.trec"]
    assert paths[0] == tmp_path / "home" / "runs" / "a.json" and load_run(paths[0])
    with pytest.raises(FileNotFoundError, match="the folder .*elsewhere/runs does not exist"):
        make_run(tmp_path, "elsewhere/runs/a.json")
    assert not (tmp_path / "elsewhere").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileNotFoundError, match="the folder .*file is a file, not a folder"):
        make_run(tmp_path, "file/a.json")


def test_runs_are_not_compared_beyond_the_depth_they_ranked(tmp_path):
    """recall@200 of runs ranked 100 deep counted every hit below 100 as a miss: equal to
    recall@100, silently."""
    from busca.corpus import EvalSpec, compare_runs
    from busca.search.eval.metrics import parse_metric

    paths = []
    for name, depth in (("a.json", 3), ("b.json", 5)):
        (path, *_), _ = make_run(tmp_path, name)
        data = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps({**data, "depth": depth}), encoding="utf-8")
        paths.append(str(path))
    first, second = load_run(paths[0]), load_run(paths[1])
    systems = align(GOLDEN, first, second, deepest=parse_metric("mrr@3"))
    assert list(systems) == ["A:tfidf", "B:tfidf"]
    with pytest.raises(RunError, match=r"a.json ranked 3 hits per question: recall@4 would count"
                                       r" .* compare at cutoffs up to 3 .* -k 4"):
        align(GOLDEN, first, second, deepest=parse_metric("recall@4"))
    spec = EvalSpec(metrics=(parse_metric("recall@1"), parse_metric("ndcg@4")))
    with pytest.raises(RunError, match="ranked 3 hits per question: ndcg@4"):
        compare_runs(GOLDEN, paths, spec)
    spec = EvalSpec(metrics=(parse_metric("recall@1"),), key=parse_metric("recall@1"))
    assert compare_runs(GOLDEN, paths, spec).summary["A:tfidf"]["recall@1"].n == 2


def test_a_labelled_question_no_chunk_answers_counts_in_the_qrels_too(tmp_path):
    """busca scores such a question 0 and averages over it; its qrels had no line, so ranx
    and trec_eval left it out and reported higher means than busca on the same run."""
    ranx = pytest.importorskip("ranx")
    from busca.search.eval.metrics import default_metrics, values

    golden = Golden("g.json", "json", GOLDEN.questions + (
        Question("q3", "onze?", trecho="não está em parte alguma"),
        Question("q4", "doze?", url="https://s/fora-do-indice")))
    table, _ = chunk_documents(DOCS, {"kind": "words", "size": 4, "overlap": 1})
    judgement = judge(golden, table)
    n = len(table.urls)
    outcomes = rank_questions(judgement, table,
                              {"bm25": lambda q: (np.arange(n), np.linspace(1, 0.1, n))})
    paths = save_run(tmp_path / "r.json", golden, outcomes, {table.label: (judgement, table)},
                     corpus=fingerprint({d.url: d.text for d in DOCS}), info={})
    qrels = ranx.Qrels.from_file(str(paths[2]), kind="trec")
    run = ranx.Run.from_file(str(paths[1]), kind="trec")
    assert set(qrels.keys()) == {q.id for q in golden.answerable}
    answerable = [o for o, q in zip(outcomes["bm25"], golden.questions) if q.answerable]
    for metric in default_metrics((1, 3)):
        name = str(metric).replace("recall@", "hit_rate@")
        expected = values(metric, answerable).mean()
        assert ranx.evaluate(qrels, run, name, make_comparable=True) == pytest.approx(
            expected, abs=1e-15), metric


def test_a_run_that_cannot_be_written_leaves_the_previous_files_whole(tmp_path, monkeypatch):
    """A full disk while writing the .qrels had already replaced the JSON run and the .trec:
    the run's three files no longer belonged together, and the last good run was lost."""
    import errno

    paths, _ = make_run(tmp_path, "r.json")
    before = [p.read_bytes() for p in paths]
    real = Path.write_text

    def full_disk(self, text, *args, **kwargs):  # the .qrels: truncated, then no space left
        if ".qrels" in self.name:
            real(self, "", *args, **kwargs)
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(OSError):
        make_run(tmp_path, "r.json", DOCS[:1])
    assert [p.read_bytes() for p in paths] == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.qrels", "r.trec"]
