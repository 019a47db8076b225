import dataclasses
import json

import pytest
from conftest import write_jsonl
from dense_fakes import DOCS, FakeEncoder

from busca.crawler.store import Document
from busca.index.dense import encoders
from busca.index.build import build_index
from busca.index.home.storage import load_index
from busca.search import fusion
from busca import search as core
from busca.search.eval import tuning
from busca.search.eval.bootstrap import Difference, estimate
from busca.search.eval.judge import chunk_table, judge, outcome_of
from busca.search.fusion import FusionError
from busca.search.eval.golden import load_golden
from busca.search.eval.metrics import parse_metric, value
from busca.search.scorers import dense_share
from busca.index import LocalHome

GOLDEN = [
    {"id": "l1", "tipo": "lexical", "pergunta": "o que é o código de erro ERR_504?",
     "trecho": "O código de erro ERR_504 aparece"},
    {"id": "l2", "tipo": "lexical", "pergunta": "onde guardar a senha do banco de dados?",
     "trecho": "Guarde a senha do banco de dados"},
    {"id": "p1", "tipo": "parafrase", "pergunta": "o robô mentiu e citou um pacote inexistente",
     "trecho": "Alucinação é quando o modelo inventa"},
    {"id": "p2", "tipo": "parafrase", "pergunta": "como pedir acesso à câmera no celular",
     "trecho": "peça permissão de câmera ao usuário"},
    {"id": "n1", "tipo": "sem_resposta", "pergunta": "qual o preço do plano?", "trecho": None},
]
SYNONYMS = {"mentiu": "falsa", "inexistente": "existe", "pacote": "biblioteca",
            "celular": "native", "acesso": "permissão"}


def _built(tmp_path, monkeypatch, methods):
    """DOCS indexed with `methods` (dense: the fake encoder): index, store, golden set."""
    encoder = FakeEncoder(synonyms=SYNONYMS)
    monkeypatch.setitem(encoders.ENCODERS, "fake", lambda *, threads=1: encoder)
    store = LocalHome(tmp_path / "home")
    for url, title, text in DOCS:
        store.put(Document(url, title, text))
    build_index(store, methods=methods, options={"dense": "fake"})
    path = tmp_path / "golden.json"
    path.write_text(json.dumps(GOLDEN, ensure_ascii=False), encoding="utf-8")
    return load_index(store.home), store, load_golden(path)


@pytest.fixture
def setup(tmp_path, monkeypatch):
    index, store, golden = _built(tmp_path, monkeypatch, ("tfidf", "dense", "hybrid"))
    yield index, store, golden
    store.close()


def test_grid_has_rrf_zscore_and_minmax_settings_and_the_defaults():
    settings = tuning.grid(["bm25", "dense"])
    rrf, sums = len(tuning.RRF_KS) * len(tuning.DENSE_WEIGHTS), 2 * len(tuning.DENSE_SHARES)
    assert len(settings) == rrf + sums
    for share in (0.3, 0.5, 0.7):  # the default for use, other encoders, e5-small
        weights = {"bm25": round(1 - share, 2), "dense": share}
        assert fusion.FusionSettings(weights=weights) in settings
    assert {s.fusion for s in settings} == {"rrf", "minmax", "zscore"}


def test_a_pairs_grid_beside_sparse_keeps_sparse_at_its_share():
    """A hybrid that fuses sparse: the pair's settings fuse it too, at the share the hybrid
    gives it, so the dense share of a min-max setting is the proportion of the pair."""
    alone, beside = tuning.grid(["bm25", "dense"]), tuning.grid(["bm25", "dense"], sparse="sparse")
    assert len(alone) == len(beside)
    for a, b in zip(alone, beside):
        assert {m: w for m, w in b.weights.items() if m != "sparse"} == pytest.approx(
            a.weights if a.fusion == "rrf" else {m: w * 0.7 for m, w in a.weights.items()})
        assert b.weights["sparse"] == (1.0 if a.fusion == "rrf" else fusion.SPARSE_SHARE)
        if a.fusion == "minmax":
            assert tuning._share(b.weights, "bm25", "dense") == a.weights["dense"]


def test_tuning_scores_each_setting_like_the_hybrid_scorer(setup):
    index, store, golden = setup
    metric = parse_metric("recall@1")
    result = tuning.tune_fusion(golden, index, store, metric=metric, by=["tipo"])
    assert result.questions == 4 and result.components == ("tfidf", "dense")
    assert [t.name for t in result.singles] == ["tfidf", "dense"]
    assert result.best.estimate.mean == max(t.estimate.mean for t in result.trials)
    assert result.default.settings == fusion.FusionSettings(weights={"tfidf": 0.5, "dense": 0.5})
    # independent path: the live hybrid scorer, configured to each of three settings
    table = chunk_table(index, store)
    judged = [j for j in judge(golden, table).items if j.question.answerable]
    fixed = [t for t in result.trials if not t.name.endswith(" lifted")]  # lifted: below
    assert len(fixed) < len(result.trials)  # dense shares 0.7-0.9 leave tfidf under 0.4
    for trial in (result.default, fixed[-1], fixed[5]):
        settings = fusion.FusionSettings(**{k: getattr(trial.settings, k)
                                            for k in ("fusion", "rrf_k", "window", "weights")})
        expected = [value(metric, outcome_of(j, table, *core.rank(index, j.question.text,
                                                                  method="hybrid", k=100,
                                                                  fusion=settings)))
                    for j in judged]
        assert trial.values.tolist() == expected
    assert set(result.default.slices) == {"tipo=lexical", "tipo=parafrase"}
    assert 0 <= result.cross_validated.mean <= 1
    assert "the same 4 questions" in result.warning
    d = result.best_vs_default
    assert (result.keep_default is None) == (d.low > 0)
    better = dataclasses.replace(result, best_vs_default=Difference(0.2, 0.1, 0.3, 0.01, 4))
    assert better.keep_default is None
    level = dataclasses.replace(result, best_vs_default=Difference(0.05, -0.02, 0.1, 0.3, 4))
    assert "not better than the default beyond its 95% interval" in level.keep_default
    assert "+0.050, -0.020 to +0.100" in level.keep_default
    assert "not better than the default" in tuning.render(level)


def test_a_setting_every_question_passes_has_the_wilson_interval_not_certainty(setup):
    """eval prints 4 of 4 questions found as 1.000 (0.51–1.00), the Wilson interval; the
    tuning table printed the same figure as 1.000 (1.00–1.00), certainty from 4 questions."""
    index, store, golden = setup
    result = tuning.tune_fusion(golden, index, store, metric=parse_metric("recall@100"))
    perfect = [t for t in (*result.trials, *result.singles) if t.values.min() == 1]
    assert perfect  # every question is in the top 100 of a few documents
    for trial in (*result.trials, *result.singles):
        assert trial.estimate == estimate(trial.values)
    assert perfect[0].estimate.low == pytest.approx(0.510, abs=0.001)
    assert result.cross_validated.low < 1
    assert "1.000 (0.51–1.00)" in tuning.render(result)


def test_tuning_needs_one_lexical_method_and_dense(setup):
    index, store, golden = setup
    with pytest.raises(FusionError, match="--methods bm25,dense"):
        tuning.tune_fusion(golden, index, store, metric=parse_metric("recall@3"),
                           components=["tfidf", "hybrid", "dense"])


def test_a_key_deeper_than_the_fused_lists_is_refused(setup, run, tmp_path, monkeypatch):
    """recall@200 was judged on the top 100 fused hits (every setting's figure the same as
    at recall@100, silently): one line naming the depth, from Python and the CLI (exit 1)."""
    index, store, golden = setup
    with pytest.raises(FusionError, match="judges the top 100 fused hits: choose a --key at"
                                          " k <= 100 .*not recall@200"):
        tuning.tune_fusion(golden, index, store, metric=parse_metric("recall@200"))
    assert tuning.tune_fusion(golden, index, store, metric=parse_metric("recall@100")).trials
    result = run("eval", str(_cli_home(run, tmp_path, monkeypatch)), "--tune-fusion", "-q",
                 "--key", "ndcg@150")
    assert result.exit_code == 1 and "not ndcg@150" in result.output


def _cli_home(run, tmp_path, monkeypatch):
    """A CLI home of DOCS indexed with tfidf and the fake encoder; the golden file."""
    monkeypatch.setitem(encoders.ENCODERS, "fake",
                        lambda *, threads=1: FakeEncoder(synonyms=SYNONYMS))
    docs = [{"url": u, "title": t, "text": x} for u, t, x in DOCS]
    run("add", str(write_jsonl(tmp_path / "docs.jsonl", docs)))
    run("index", "-q", "--methods", "tfidf", "--dense", "fake")
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(GOLDEN, ensure_ascii=False), encoding="utf-8")
    return golden


def test_cli_tune_fusion_reports_best_default_and_warning(run, tmp_path, monkeypatch):
    golden = _cli_home(run, tmp_path, monkeypatch)
    result = run("eval", str(golden), "--tune-fusion", "-q")
    assert result.exit_code == 0
    assert "default" in result.stdout and "tipo=parafrase" in result.stdout
    assert "cross-validated (5 folds)" in result.stdout
    assert "warning: tuned and reported on the same 4 questions" in result.stdout
    data = json.loads(run("eval", str(golden), "--tune-fusion", "-q", "--json").stdout)
    assert data["default"]["settings"] == {"fusion": "minmax", "window": 100,
                                           "weights": {"tfidf": 0.5, "dense": 0.5}}
    assert len(data["trials"]) == 81  # the default is one of the grid's settings
    assert (data["keep_default"] is None) == (data["best_minus_default"]["low"] > 0)


def test_every_setting_is_named_by_its_own_fusion(setup):
    index, store, golden = setup
    result = tuning.tune_fusion(golden, index, store, metric=parse_metric("recall@1"))
    names = [t.name for t in result.trials]
    assert len(names) == len(set(names))  # no two rows of the table share a name
    for trial in result.trials:
        assert trial.name.startswith(trial.settings.fusion)
    assert "zscore (tfidf=0.5, dense=0.5)" in names


def test_the_chosen_share_is_stored_only_when_it_wins_and_search_uses_it(setup):
    index, store, golden = setup
    result = tuning.tune_fusion(golden, index, store, metric=parse_metric("recall@1"))
    choice = tuning.choose_share(result)
    minmax = [t for t in result.trials if t.settings.fusion == "minmax"]
    assert choice.share == minmax[0].settings.weights["dense"]
    assert choice.share in tuning.DENSE_SHARES + (0.5,)
    assert choice.default is result.default.estimate and choice.default_share == 0.5
    same = dataclasses.replace(choice, share=0.5, cross_validated=choice.default)
    assert not same.wins and "nothing to store" in tuning.describe_choice(same, saving=True)
    losing = dataclasses.replace(choice, share=0.9, cross_validated=dataclasses.replace(
        choice.default, mean=choice.default.mean - 0.1))
    assert not tuning.save_share(store, losing)
    assert dense_share(store.current()) == 0.5  # the fake encoder's default
    assert "would keep the default" in tuning.describe_choice(losing, saving=False)
    winning = dataclasses.replace(choice, share=0.8, cross_validated=choice.default)
    assert tuning.save_share(store, winning)
    live = store.current()
    assert live.manifest.entry("dense")["share"] == 0.8
    assert dense_share(live) == 0.8
    assert fusion.components(fusion.FusionSettings(), ["tfidf", "dense"],
                             dense_share=dense_share(live)) == {"tfidf": 0.2, "dense": 0.8}
    # a rebuild with the same settings keeps it (like a floor); new dense settings drop it
    build_index(store, methods=("tfidf", "dense", "hybrid"), options={"dense": "fake"})
    assert dense_share(store.current()) == 0.8
    build_index(store, methods=("tfidf", "dense", "hybrid"),
                options={"dense": "fake", "dense_groups": 3})
    assert "share" not in store.current().manifest.entry("dense")


def test_cli_save_stores_the_share_busca_search_then_fuses_with(run, tmp_path, monkeypatch):
    golden = _cli_home(run, tmp_path, monkeypatch)
    refused = run("eval", str(golden), "--save")
    assert refused.exit_code == 2 and "add --tune-fusion" in refused.output
    result = run("eval", str(golden), "--tune-fusion", "--save", "-q", "--key", "recall@1")
    assert result.exit_code == 0
    line = next(x for x in result.stderr.splitlines() if x.startswith("min-max dense share"))
    share = float(line.split(": ")[1].split(" ")[0])
    hit = json.loads(run("search", "câmera no celular", "--method", "hybrid", "--json",
                         "--min-score", "0", "--no-serve").stdout.splitlines()[0])
    stored = "— stored:" in line
    assert stored or "— not stored:" in line or "nothing to store" in line
    want = share if stored else 0.5
    assert hit["fusion"]["weights"] == {"tfidf": round(1 - want, 6), "dense": want}


def test_splits_are_every_weighting_in_tenths():
    for components, count in ((["a", "b", "c"], 66 - 3), (["a", "b", "c", "d"], 286 - 4)):
        found = tuning.splits(components)  # C(10+n-1, n-1) splits of ten tenths, minus n
        assert len(found) == count       # that give everything to one component
        assert len({tuple(sorted(w.items())) for w in found}) == count
        assert all(len(w) >= 2 and sum(w.values()) == pytest.approx(1) for w in found)
        assert all(round(x * 10, 6) == int(round(x * 10)) for w in found for x in w.values())
    assert tuning.splits(["a", "b"], step=0.5) == [{"a": 0.5, "b": 0.5}]
    settings = tuning.grid(["a", "b", "c"])
    assert len(settings) == len(tuning.RRF_KS) + 2 * 63
    assert {s.fusion for s in settings} == {"rrf", "minmax", "zscore"}


@pytest.fixture
def three(tmp_path, monkeypatch):
    index, store, golden = _built(tmp_path, monkeypatch, ("tfidf", "bm25", "dense", "hybrid"))
    yield index, store, golden
    store.close()


def test_three_components_are_tuned_over_every_split_like_the_hybrid_scorer(three):
    index, store, golden = three
    metric = parse_metric("recall@1")
    result = tuning.tune_fusion(golden, index, store, metric=metric,
                                components=["tfidf", "bm25", "dense"])
    assert result.components == ("tfidf", "bm25", "dense")
    third = round(1 / 3, 6)
    assert result.default.settings.weights == {"tfidf": third, "bm25": third, "dense": third}
    assert len(result.trials) == len(tuning.RRF_KS) + 2 * 63 + 1  # + the equal-weight baseline
    table = chunk_table(index, store)
    judged = [j for j in judge(golden, table).items if j.question.answerable]
    for trial in (result.best, result.default, result.trials[-1]):
        expected = [value(metric, outcome_of(j, table, *core.rank(
            index, j.question.text, method="hybrid", k=100, fusion=trial.settings)))
            for j in judged]
        assert trial.values.tolist() == expected
    assert "baseline: minmax (tfidf=0.333333" in tuning.render(result)
    line = tuning.describe_best(result)
    assert f"--fusion {result.best.settings.fusion}" in line and "--weights " in line
    with pytest.raises(FusionError, match="three or more of the index's methods"):
        tuning.tune_fusion(golden, index, store, metric=metric, components=["tfidf", "bm25"])
    with pytest.raises(FusionError, match="three or more"):
        tuning.tune_fusion(golden, index, store, metric=metric,
                           components=["tfidf", "bm25", "sparse"])


def test_cli_tunes_three_methods_and_eval_weights_reproduces_the_best(run, tmp_path,
                                                                      monkeypatch):
    golden = _cli_home(run, tmp_path, monkeypatch)
    run("index", "-q", "--methods", "tfidf,bm25", "--dense", "fake")
    args = ("eval", str(golden), "-q", "--key", "recall@3")
    tuned = run(*args, "--tune-fusion", "--methods", "tfidf,bm25,dense", "--json")
    assert tuned.exit_code == 0, tuned.output
    data = json.loads(tuned.stdout)
    best = data["best"]["settings"]
    line = next(x for x in tuned.stderr.splitlines() if x.startswith("best on this golden set"))
    options = line.split("best on this golden set: ")[1].split(" (cross-validated")[0].split()
    weights = options[options.index("--weights") + 1]
    assert {m: float(w) for m, w in (p.split("=") for p in weights.split(","))} == best["weights"]
    assert options[options.index("--fusion") + 1] == best["fusion"]
    # the printed options are eval's too: it judges the best setting the same
    again = run(*args, "--json", "--methods", "hybrid", *options)
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)["summary"]["hybrid"]["recall@3"]
    assert summary["mean"] == pytest.approx(data["best"]["mean"])
    refused = run(*args, "--tune-fusion", "--save", "--methods", "tfidf,bm25,dense")
    assert refused.exit_code == 1 and "--save stores the dense share of a pair" in refused.output


def test_a_lifting_builds_pair_settings_fuse_as_its_hybrid(tmp_path, monkeypatch):
    """On a build whose hybrid lifts the lexical share (search/fusion.py `lifted`), the pair
    grid's min-max settings rank each question as the hybrid with that share (and its
    coordination bonus: the last question) does, and the default row is the hybrid's own
    ranking; other settings stay fixed."""
    monkeypatch.setitem(encoders.DENSE_SHARES, "fake", 0.8)  # tfidf 0.2: lifted
    index, store, golden = _built(tmp_path, monkeypatch, ("tfidf", "dense", "hybrid"))
    questions = [q.text for q in golden.questions] + ["erro de permissão de câmera",
                                                      "modelo inventa biblioteca"]
    ranked = [tuning._ranked(index, ("tfidf", "dense"), q, 100, lambda *a: None, 0, 0)
              for q in questions]
    lift = tuning._lift(index, "tfidf", questions, ranked)
    default = fusion.FusionSettings(weights=tuning._baseline(index, ("tfidf", "dense")))
    assert default.weights == {"tfidf": 0.2, "dense": 0.8}
    fixed = [tuning._fused(r, default)[0].tolist() for r in ranked]
    got = [ids.tolist() for ids, _ in lift.fused(default)]
    assert got == [core.rank(index, q, method="hybrid", k=tuning.DEPTH)[0].tolist()
                   for q in questions]
    assert got != fixed  # the last question tells them apart
    assert fusion.liftable(default, default.weights)
    assert not fusion.liftable(dataclasses.replace(default, fusion="rrf"), default.weights)
    store.close()
