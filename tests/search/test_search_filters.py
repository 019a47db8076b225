"""Filters (issue #26): parsed once, applied before ranking on every method."""

import json
import random

import numpy as np
import pytest
from conftest import FIXTURES

from busca import corpus as api
from busca.crawler.store import Document
from busca.index import LocalHome
from busca.index.build import build_index
from busca.index.dense.vectors import DenseScorer
from busca.index.home.storage import load_index
from busca.search import filters as f
from busca.search.fusion import FusionSettings, HybridScorer, fuse
from busca.search.scorers import scorer

METHODS = ("tfidf", "bm25", "dense", "hybrid")
QUERIES = ("análise de sistemas", "matrícula no curso", "história da faculdade",
           "regulamento de estágio", "prazo", "biblioteca e laboratório")


# --- parsing -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("category=Python", ("category", "=", ("Python",))),
    ("category=Python, Go", ("category", "=", ("Python", "Go"))),
    ("tags!=a,b", ("tags", "!=", ("a", "b"))),
    ("date>=2015-01-01", ("date", ">=", ("2015-01-01",))),
    ("date<=2015-01-01T10:00:00", ("date", "<=", ("2015-01-01T10:00:00",))),
    ("url^=https://site/blog/?a=b", ("url", "^=", ("https://site/blog/?a=b",))),
])
def test_parse(text, expected):
    assert f.parse_filter(text) == f.Filter(*expected)


@pytest.mark.parametrize("text", ["category", "=Python", "category=", "a b=c", "tags=a,,b",
                                  "date>=", "nivel>=nan", "nota<=-inf", "x>=Infinity"])
def test_bad_filters_are_one_line_errors(text):
    with pytest.raises(f.BadFilter) as e:
        f.parse_filter(text)
    assert "\n" not in str(e.value) and text in str(e.value)


def test_matching():
    record = ("https://s/blog/x", "X", "", None, {"categories": ["Cursos", "História"],
                                                   "date": "2022-03-07T09:00:00", "n": 12})
    yes = ["categories=História", "category=Cursos", "categories=Go,Cursos", "categories!=Go", "url^=https://s/blog/",
           "date>=2022-03-07", "date<=2022-03-08", "n>=9", "n<=12", "title=X", "tags!=a"]
    no = ["categories=Go", "categories!=Cursos", "url^=https://s/news/", "date>=2022-03-08",
          "n>=100", "tags=a"]
    assert all(f.passes(record, [f.parse_filter(t)]) for t in yes)
    assert not any(f.passes(record, [f.parse_filter(t)]) for t in no)
    assert not f.passes(record, f.parse_filters(["categories=Cursos", "n>=100"]))  # AND


def test_a_url_filter_matches_every_spelling_of_the_url():
    """A crawl stores /educação/ as /educa%C3%A7%C3%A3o/, a JSONL line as it was typed:
    `url=https://s/educação/` (as a browser's bar shows it) matched neither the escaped URL
    nor a lower-case escape, and `url^=` missed a prefix typed with accents."""
    import unicodedata

    escaped = ("https://s/educa%C3%A7%C3%A3o/aula", "", "", None, None)
    typed = ("https://s/educação/aula", "", "", None, None)
    nfd = unicodedata.normalize("NFD", "educação")
    for record in (escaped, typed):
        for text in ("url=https://s/educação/aula", "url=https://s/educa%c3%a7%c3%a3o/aula",
                     f"url=https://s/{nfd}/aula", "url^=https://s/educação/",
                     "url^=https://s/educa%C3%A7%C3%A3o", f"url^=https://s/{nfd}"):
            assert f.passes(record, [f.parse_filter(text)]), (record[0], text)
        for text in ("url!=https://s/educação/aula", "url^=https://s/educação/prova",
                     "url=https://s/educa%C3%A7%C3%A3o/"):
            assert not f.passes(record, [f.parse_filter(text)]), (record[0], text)
    assert str(f.parse_filter("url=https://s/educação/")) == "url=https://s/educação/"


# --- restricted ranking equals the unfiltered ranking restricted ---------------------------------

def _fixture_documents() -> list[Document]:
    """The fixture site's articles with their categories, author and dates as metadata."""
    articles = json.loads((FIXTURES / "site" / "articles.json").read_text(encoding="utf-8"))
    names = {c["id"]: c["name"] for c in
             json.loads((FIXTURES / "site" / "categories.json").read_text(encoding="utf-8"))}
    by_title = {a["title"]: a for a in articles}
    docs = []
    for line in (FIXTURES / "site" / "articles.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        a = by_title[item["title"]]
        meta = {"categories": [names[i] for i in a["categories"] if i in names],
                "author": f"Autor {a['author']}", "date": a["date"], "modified": a["modified"]}
        docs.append(Document(item["url"], item["title"], item["text"], meta=meta))
    return docs


@pytest.fixture
def built(tmp_path, fake):
    home = LocalHome(tmp_path / "home")
    docs = _fixture_documents()
    for doc in docs:
        home.put(doc)
    build_index(home, size=40, overlap=10, methods=("tfidf", "bm25", "dense", "hybrid"),
                options={"dense": "fake"})
    return load_index(tmp_path / "home"), home, docs


def _random_filters(rng: random.Random, docs: list[Document]) -> list[str]:
    values = {"categories": sorted({c for d in docs for c in d.meta["categories"]}),
              "author": sorted({d.meta["author"] for d in docs}),
              "date": sorted(d.meta["date"][:10] for d in docs),
              "url": sorted(d.url[:rng.randint(24, 34)] for d in docs)}
    out = []
    for _ in range(rng.randint(1, 2)):
        field = rng.choice(sorted(values))
        value = rng.choice(values[field])
        op = {"date": rng.choice([">=", "<="]), "url": "^="}.get(field, rng.choice(["=", "!="]))
        if op in ("=", "!=") and rng.random() < 0.3:
            value += "," + rng.choice(values[field])
        out.append(f"{field}{op}{value}")
    return out


def _reference(index, method: str, query: str, mask: np.ndarray, k: int):
    """The unfiltered full ranking (every chunk scored) restricted to the allowed chunks."""
    ranker = scorer(index, method, FusionSettings() if method == "hybrid" else None)
    if isinstance(ranker, HybridScorer):  # each component's window among the allowed chunks
        ranked = {m: _sorted(*_full(r, query, mask.size), mask)
                  for m, r in ranker.rankers.items()}
        ids, scores = fuse(ranked, ranker.weights, ranker.settings)
        ids, scores = _sorted(ids, scores, np.ones(mask.size, dtype=bool))
    else:
        ids, scores = _sorted(*_full(ranker, query, mask.size), mask)
    return ids[:k].tolist(), scores[:k]


def _full(ranker, query: str, n: int):
    """Every chunk as an unfiltered search ranks it: dense's `top` rescores in float64 (its
    `score` is the float32 product), a lexical `score` is its `top`, bit for bit."""
    return ranker.top(query, n) if isinstance(ranker, DenseScorer) else ranker.score(query)


def _sorted(ids, scores, mask):
    keep = mask[ids]
    ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))
    return ids[order], scores[order]


def test_filtered_top_k_is_the_restricted_ranking_on_every_method(built):
    index, home, docs = built
    rng = random.Random(26)
    checked = {m: 0 for m in METHODS}
    for _ in range(40):
        texts = _random_filters(rng, docs)
        mask = f.allowed(index, home, f.parse_filters(texts))
        query = rng.choice(QUERIES)
        for method in METHODS:
            spec = api.SearchSpec(method=method, k=10, min_score=None,
                                  filters=texts, log=False)
            result = api.search_build(index, home, query, spec)
            expected, scores = _reference(index, method, query, mask, 10)
            assert [h.chunk_id for h in result.hits] == expected, (method, texts, query)
            assert [h.score for h in result.hits] == pytest.approx(scores.tolist())
            assert all(mask[h.chunk_id] for h in result.hits)
            checked[method] += bool(expected)
    assert min(checked.values()) >= 20  # most random filters leave hits to compare


def test_mask_follows_the_metadata(built):
    index, home, docs = built
    mask = f.allowed(index, home, f.parse_filters(["categories=Cursos"]))
    urls = {r.url for r in index.chunks(np.flatnonzero(mask))}
    assert urls == {d.url for d in docs if "Cursos" in d.meta["categories"]}
    assert 0 < len(urls) < len(docs)


def test_no_matching_document_is_a_note(built):
    index, home, _ = built
    result = api.search_build(index, home, "curso", api.SearchSpec(
        filters=["author=Nobody"], log=False))
    assert result.hits == () and "no document matches the filters author=Nobody" in result.note


def test_hits_carry_the_documents_metadata(built):
    index, home, docs = built
    result = api.search_build(index, home, "curso", api.SearchSpec(k=3, log=False))
    metas = {d.url: d.meta for d in docs}
    assert result.hits and all(h.to_json()["meta"] == metas[h.url] for h in result.hits)
    assert all(hit["meta"] == metas[hit["url"]] for hit in result.to_json()["hits"])


def test_visible_to_takes_names_or_a_comma_string_and_refuses_the_rest():
    """visible_to("staff") was the groups s, t, a and f; None a TypeError."""
    from busca.search import visible_to
    from busca.search.filters import BadFilter

    assert visible_to("staff, hr").groups == visible_to(["staff", "hr"]).groups == {"staff", "hr"}
    assert not visible_to("staff").admits({"groups": ["a"]})
    assert visible_to("staff").admits({"groups": ["hr", "staff"]})
    for bad in (None, 5, [1], {"staff": 1}):
        with pytest.raises(BadFilter, match="group names"):
            visible_to(bad)


def test_filters_that_are_not_texts_are_one_line():
    """A number or a dict where filter texts go (from Python, LangChain) is a BadFilter
    naming the form, where it was a bare TypeError; one text is a list of one."""
    for odd in (5, {"category": "Python"}, 2.5):
        with pytest.raises(f.BadFilter, match=r"filters are texts such as 'category=Python'"):
            f.parse_filters(odd)
    assert f.parse_filters("category=Cursos") == f.parse_filters(["category=Cursos"])
    # a reader's rule given alone, not in a list (was: "filters are texts …, not Visible(…)")
    rule = f.visible_to("staff")
    assert f.parse_filters(rule) == (rule,) == f.parse_filters([rule])
    [parsed] = f.parse_filters("category=Cursos")
    assert f.parse_filters(parsed) == (parsed,)


def test_chunk_documents_number_each_chunks_document_and_mask_a_set_of_urls():
    """The chunks' documents as numbers (a mask without an array of URL texts), worked by
    hand: chunks 0-1 of a, 2 of b, 3-5 of c."""
    from busca.search.filters import ChunkDocuments

    docs = ChunkDocuments.of_urls(["a", "a", "b", "c", "c", "c"])
    assert docs.of.tolist() == [0, 0, 1, 2, 2, 2] and docs.number == {"a": 0, "b": 1, "c": 2}
    assert docs.mask(["c", "a"]).tolist() == [True, True, False, True, True, True]
    assert docs.mask(["nowhere"]).tolist() == [False] * 6 and not docs.mask([]).any()
    assert ChunkDocuments.of_urls([]).mask(["a"]).size == 0
