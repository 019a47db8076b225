"""index/dense/dense_groups.py: windows scored by their best sentence group (max-sim), exactly."""

import json

import numpy as np
import pytest
from conftest import write_jsonl
from dense_fakes import FakeEncoder

from busca import search as core
from busca.crawler.store import Document
from busca.index import LocalHome
from busca.index.build import build_index
from busca.index.text.chunking import chunk_text
from busca.index.dense.dense_groups import group_texts
from busca.index.home.storage import load_index

SENTENCES = [
    "O dpkg instala pacotes locais.", "Ele não resolve dependências sozinho.",
    "O apt baixa pacotes dos repositórios.", "A senha do banco fica em variáveis de ambiente.",
    "Nunca guarde segredos no código.", "O servidor responde ERR_504 quando demora.",
    "Reinicie o serviço depois de mudar a configuração.", "Os registros ficam em /var/log.",
]


def test_groups_keep_sentences_whole_and_join_a_short_tail():
    text = " ".join(SENTENCES[:5])  # 5 + 5 + 6 + 8 + 5 words
    assert group_texts(text, 10) == [" ".join(SENTENCES[:2]), " ".join(SENTENCES[2:4]),
                                     SENTENCES[4]]
    assert group_texts(text, 12) == [" ".join(SENTENCES[:3]), " ".join(SENTENCES[3:5])]
    # a tail of fewer than half the words goes to the group before
    assert group_texts(text, 16) == [" ".join(SENTENCES[:3]), " ".join(SENTENCES[3:5])]
    assert group_texts(text, 20) == [text]
    assert group_texts("uma frase só", 5) == ["uma frase só"]
    assert group_texts("", 5) == [""]


@pytest.fixture
def store(tmp_path):
    s = LocalHome(tmp_path / "home")
    rng = np.random.default_rng(3)
    for n in range(12):
        picked = rng.choice(len(SENTENCES), size=int(rng.integers(1, 7)), replace=True)
        s.put(Document(f"https://blog.example/{n}", f"Doc {n}",
                       " ".join(SENTENCES[i] for i in picked)))
    yield s
    s.close()


def _texts(store, index) -> list[str]:
    """Each window's text, as the build encoded it."""
    docs = {d.url: d.text for d in store.documents()}
    return [chunk_text(docs[r.url], r.start, r.end) for r in index.chunks()]


def _oracle(texts, query, words, blend):
    """blend * cos(window) + (1 - blend) * max cos(group), in float64, brute force."""
    fake = FakeEncoder()

    def cos(a, b):
        a, b = fake.vector(a).astype(np.float64), fake.vector(b).astype(np.float64)
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        return float(a @ b / (na * nb)) if na and nb else 0.0

    return np.array([blend * cos(t, query) + (1 - blend) * max(
        cos(g, query) for g in group_texts(t, words)) for t in texts])


@pytest.mark.parametrize("blend", [0.0, 0.5])
def test_top_k_is_the_brute_force_max_sim_oracle(store, fake, blend):
    build_index(store, size=30, overlap=5, methods=("tfidf", "dense"),
                options={"dense": "fake", "dense_groups": 6, "dense_blend": blend})
    index = load_index(store.home)
    entry = index.manifest.entry("dense")
    texts = _texts(store, index)
    assert entry["groups"]["words"] == 6 and entry["groups"]["blend"] == blend
    assert entry["group_vectors"] > len(texts)  # several vectors per window
    for query in ["senha do banco de dados", "pacotes com dpkg e apt", "erro do servidor"]:
        oracle = _oracle(texts, query, 6, blend)
        for k in (1, 3, 10):
            ids, scores = core.rank(index, query, method="dense", k=k)
            want = np.lexsort((np.arange(oracle.size), -np.round(oracle, 12)))[:k]
            assert scores == pytest.approx(oracle[want], abs=1e-6)
            assert ids.tolist() == want.tolist()
        all_ids, all_scores = index.ranker("dense").score(query)
        assert all_scores == pytest.approx(oracle, abs=1e-5)


def test_a_window_of_one_group_reuses_its_vector_and_a_rebuild_reuses_groups(store, fake):
    build_index(store, size=30, overlap=5, methods=("dense",),
                options={"dense": "fake", "dense_groups": 6})
    first = load_index(store.home).manifest.entry("dense")
    windows = len(_texts(store, load_index(store.home)))
    assert first["groups_encoded"] < first["group_vectors"]  # one-group windows took theirs
    assert len(fake.encoded) == windows + first["groups_encoded"]
    fake.encoded.clear()
    build_index(store, size=30, overlap=5, methods=("dense",), options={"dense": "fake"})
    again = load_index(store.home).manifest.entry("dense")  # kept: not asked
    assert again["groups"] == {"words": 6, "blend": 0.5}
    assert again["groups_encoded"] == 0 and fake.encoded == []
    build_index(store, size=30, overlap=5, methods=("dense",),
                options={"dense": "fake", "dense_groups": 0})
    assert load_index(store.home).manifest.entry("dense")["groups"] is None
    build_index(store, size=30, overlap=5, methods=("dense",), options={"dense": "fake"})
    assert load_index(store.home).manifest.entry("dense")["groups"] is None  # 0 is kept


def test_cli_options_set_the_groups_and_refuse_bad_values(run, tmp_path, fake):
    docs = [{"url": f"https://blog.example/{n}", "title": f"Doc {n}",
             "text": " ".join(SENTENCES[n:n + 4])} for n in range(4)]
    run("add", str(write_jsonl(tmp_path / "docs.jsonl", docs)))
    assert run("index", "-q", "--dense", "fake", "--dense-groups", "-1").exit_code == 2
    assert run("index", "-q", "--dense", "fake", "--dense-blend", "2").exit_code == 2
    result = run("index", "-q", "--dense", "fake", "--dense-groups", "8", "--dense-blend", "0.25")
    assert result.exit_code == 0
    stats = json.loads(run("stats", "--json").stdout)
    assert stats["methods"]["dense"]["groups"] == {"words": 8, "blend": 0.25}
    run("index", "-q")  # a rebuild without the options keeps them
    assert json.loads(run("stats", "--json").stdout)["methods"]["dense"]["groups"] == {
        "words": 8, "blend": 0.25}


def test_groups_are_opt_in(store, fake):
    """Without --dense-groups a build stores window vectors only, as a PostgreSQL home does,
    so both backends rank a corpus the same way by default."""
    build_index(store, size=30, overlap=5, methods=("dense",), options={"dense": "fake"})
    assert not load_index(store.home).manifest.entry("dense").get("groups")
