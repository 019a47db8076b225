"""Answerability features worked by hand, the stored model, and its cross-validated figures."""

import json
import math

import numpy as np
import pytest

from busca.index.home import storage
from busca.search.answerable import Lexicon, Model, features, overlap
from busca.search.eval import answerability as measured
from conftest import write_jsonl


def test_features_of_one_ranking_worked_by_hand():
    ranked = {"bm25": (np.array([3, 1, 2]), np.array([4.0, 2.0, 0.0])),
              "dense": (np.array([1, 5, 6]), np.array([0.9, 0.8, 0.7]))}
    out = features("q", ranked, "bm25", agreement=("bm25", "dense"))
    sd = math.sqrt(8 / 3)  # window 4, 2, 0: mean 2
    assert out == pytest.approx({"top": 4.0, "z_top": 2 / sd, "margin": 2 / sd,
                                 "agreement": 1 / 3})
    assert features("q", {"bm25": (np.array([]), np.array([]))}, "bm25") == {}
    assert features("q", {"x": (np.array([7]), np.array([1.5]))}, "x") == {
        "top": 1.5, "z_top": 0.0, "margin": 0.0}  # one hit: no spread to normalise by


def test_idf_coverage_worked_by_hand():
    # 4 chunks; "a" in chunks 0 and 1 (df 2), "b" in chunk 1 (df 1), "c" in none (df 0)
    lex = Lexicon(str.split, {"a": 0, "b": 1}, np.array([0, 2, 3]), np.array([0, 1, 1]), 4)
    idf_a, idf_b, idf_c = math.log(2), math.log(10 / 3), math.log(10)  # ln(1+(4-df+.5)/(df+.5))
    total = idf_a + idf_b + idf_c
    assert lex.coverage("a b c a", 0) == pytest.approx(idf_a / total)
    assert lex.coverage("a b c", 1) == pytest.approx((idf_a + idf_b) / total)
    assert lex.coverage("c", 1) == 0.0 and lex.coverage("", 1) == 0.0
    ranked = {"m": (np.array([1, 0]), np.array([2.0, 1.0]))}
    assert features("a b c", ranked, "m", lexicon=lex)["idf_coverage"] == pytest.approx(
        (idf_a + idf_b) / total)


def test_overlap_reads_the_first_k_only():
    assert overlap([1, 2, 3], [3, 2, 9], k=2) == 0.5  # {1, 2} against {3, 2}
    assert overlap([], [1]) == 0.0


def test_model_probability_and_plain_json():
    model = Model(("x", "y"), (1.0, 0.0), (2.0, 1.0), (3.0, 0.0), -1.0, 0.5, 0.9)
    assert model.probability({"x": 3.0, "y": 5.0}) == pytest.approx(1 / (1 + math.exp(-2)))
    assert Model.from_json(json.loads(json.dumps(model.to_json()))) == model


def _memoriser(x, y):
    """A model that remembers its training questions: 1 on the nearest answerable one."""
    def predict(z):
        nearest = np.argmin(((z[:, None, :] - x[None, :, :]) ** 2).sum(axis=2), axis=1)
        return y[nearest].astype(float)
    return predict


def test_the_reported_figure_is_held_out_not_the_training_figure():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(80, 3))
    y = rng.random(80) < 0.75  # labels unrelated to the features
    trained = measured.in_sample(x, y, _memoriser, (0.9,))[0]
    assert (trained.kept, trained.refused.value) == (1.0, 1.0)  # it memorised them
    held, _ = measured.cross_validated(x, y, _memoriser, (0.9,), folds=5, seed=0)
    assert held[0].refused.value < 0.6  # on unseen questions: chance, not 100%
    again, _ = measured.cross_validated(x, y, _memoriser, (0.9,), folds=5, seed=0)
    assert again == held  # deterministic


def test_measure_separable_and_unseparable_features():
    rows = [{"top": 1.0 + i % 5, "z_top": 0.3 * (i % 3), "margin": 1.0} for i in range(40)]
    rows += [{"top": -1.0 - i % 4, "z_top": 0.3 * (i % 3), "margin": 1.0} for i in range(12)]
    rows.append({})  # found nothing: always refused
    answerable = [True] * 40 + [False] * 13
    found = measured.measure(rows, answerable, keep=0.9)
    by = {s.name: s for s in found.signals}
    assert found.features == ("top", "z_top", "margin") and found.folds == 5
    assert by["top"].auc == 1.0 and by["top"].refusals[0].refused.value == 1.0
    # ties count half; the empty row is below every answerable one: (12 * 40 / 2 + 40) / 520
    assert by["margin"].auc == pytest.approx(7 / 13) and by["margin"].refusals[0].refused.value == 1 / 13
    assert by["logistic"].refusals[0].refused.value == 1.0
    assert found.model.features == ("top", "z_top", "margin") and found.model.keep == 0.9
    assert measured.measure(rows[:40], answerable[:40], keep=0.9) is None  # no unanswerable


# --- search and context refuse by a stored model ----------------------------------------------

DOCS = [{"url": "https://s/reembolso", "title": "Reembolso",
         "text": "O prazo para o estorno aparecer na fatura é de até 7 dias úteis."},
        {"url": "https://s/boleto", "title": "Boleto",
         "text": "Pagamentos por boleto compensam em até três dias úteis."}]


@pytest.fixture
def indexed(run, tmp_path):
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", DOCS))).exit_code == 0
    assert run("index", "--methods", "tfidf,bm25", "-q").exit_code == 0
    return run


def _store(home, threshold):
    model = Model(("top", "idf_coverage"), (0.0, 0.0), (1.0, 1.0), (1.0, 1.0), 0.0,
                  threshold, 0.9)
    storage.update_manifest(storage.load_index(home),
                            {"methods": {"bm25": {"answerable": model.to_json()}}})


def test_a_stored_model_refuses_search_and_context(indexed, home):
    _store(home, 0.9999)
    result = indexed("search", "prazo do estorno", "--method", "bm25", "--no-serve")
    assert (result.exit_code, result.stdout) == (3, "")
    assert "no hits: the answerability model" in result.stderr
    assert indexed("search", "prazo do estorno", "--method", "bm25", "--no-serve",
                   "--json").stdout == ""
    found = indexed("context", "prazo do estorno", "--method", "bm25", "--no-serve")
    assert (found.exit_code, found.stdout) == (3, "")
    assert "não encontrei" in found.stderr and "answerability model" in found.stderr
    given = indexed("search", "prazo do estorno", "--method", "bm25", "--no-serve",
                    "--min-score", "0")
    assert given.exit_code == 0 and given.stdout.startswith("1. ")
    other = indexed("search", "prazo do estorno", "--method", "tfidf", "--no-serve")
    assert other.exit_code == 0  # the model is bm25's


def test_a_stored_model_that_accepts_answers(indexed, home):
    _store(home, 0.5)  # top > 0 and coverage 1: p > 0.5
    result = indexed("search", "prazo do estorno", "--method", "bm25", "--no-serve")
    assert result.exit_code == 0 and result.stdout.startswith("1. ")


def test_context_refuses_by_the_model_when_a_floor_is_stored_too(indexed, home):
    _store(home, 0.9999)
    storage.update_manifest(storage.load_index(home), {"methods": {"bm25": {"floor": 0.01}}})
    found = indexed("context", "prazo do estorno", "--method", "bm25", "--no-serve")
    assert found.exit_code == 3 and "answerability model" in found.stderr
