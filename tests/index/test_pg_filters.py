"""Metadata, filters and facets on a PostgreSQL home (issue #26): the same `meta`, the same
filtered top 10 for every method, the same facets as a local home of the same corpus."""

from __future__ import annotations

import json
import random
from urllib.request import urlopen

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, write_jsonl

from busca import corpus as api
from busca.cli import cli
from busca.crawler.store import Document
from busca.fixtures.server import FixtureSite
from busca.index import open_home
from busca.index.postgres import schema as pg_schema
from busca.index.postgres.home import PostgresHome
from busca.search import filters as f

pytestmark = pytest.mark.postgres

METHODS = ("tfidf", "bm25", "dense", "hybrid")
QUERIES = ("análise de sistemas", "matrícula no curso", "história da faculdade",
           "regulamento de estágio", "prazo", "biblioteca e laboratório")
TAGS = ("Ensino", "Pesquisa", "Extensão", "Eventos")


def busca(home, *args) -> str:
    result = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False,
                                obj={})
    assert result.exit_code == 0, result.output
    return result.stdout


def _records() -> list[dict]:
    """The fixture site's articles as JSON lines whose extra keys are metadata of every kind:
    lists, names in objects, numbers, booleans, dates, nested objects (keys in any order)."""
    articles = json.loads((FIXTURES / "site" / "articles.json").read_text(encoding="utf-8"))
    names = {c["id"]: c["name"] for c in
             json.loads((FIXTURES / "site" / "categories.json").read_text(encoding="utf-8"))}
    by_title = {a["title"]: a for a in articles}
    rng = random.Random(2026)
    out = []
    for line in (FIXTURES / "site" / "articles.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        a = by_title[item["title"]]
        item.update({"zeta": rng.randint(0, 3), "categories": [names[i] for i in a["categories"]
                                                               if i in names],
                     "tags": rng.sample(TAGS, rng.randint(0, 2)), "date": a["date"],
                     "author": {"name": f"Autor {a['author']}", "id": a["author"]},
                     "views": rng.choice([5, 40, 300, 2500]), "featured": rng.random() < 0.3,
                     "extra": {"b": [1, 2.5], "a": "x"}})
        if rng.random() < 0.5:
            item["score"] = rng.choice([0.5, 1.0, 12.25])
        out.append(item)
    return out


@pytest.fixture(scope="module")
def homes(tmp_path_factory, postgres_server_url):
    """A local home and a PostgreSQL one of the same JSONL corpus, indexed alike (tfidf,
    bm25, fake dense, hybrid; on PostgreSQL with the tables of lexical=sql too)."""
    from dense_fakes import register

    folder = tmp_path_factory.mktemp("pgfilters")
    source = write_jsonl(folder / "docs.jsonl", _records())
    local, pg = folder / "home", f"{postgres_server_url}?corpus=filters_{random.getrandbits(32):x}"
    with pytest.MonkeyPatch.context() as patch:
        register(patch)
        for home in (local, pg + "&lexical=sql"):  # the SQL ranker's tables too
            busca(home, "add", str(source))
            busca(home, "index", "--quiet", "--methods", "tfidf,bm25", "--dense", "fake",
                  "--dense-groups", "0", "--size", "40", "--overlap", "10")
        yield local, pg


def test_metadata_round_trip_is_the_local_stores(homes):
    local, pg = homes
    with open_home(local) as a, open_home(pg) as b:
        docs_a, docs_b = list(a.documents()), list(b.documents())
        assert [d.url for d in docs_a] == [d.url for d in docs_b]
        for x, y in zip(docs_a, docs_b):
            assert x.meta and y.meta == x.meta
            assert json.dumps(y.meta) == json.dumps(x.meta)  # the same keys in the same order
            assert json.dumps(b.get(x.url).meta) == json.dumps(x.meta)
        assert [json.dumps(r) for r in sorted(b.records())] == [
            json.dumps(r) for r in sorted(a.records())]


def _random_filters(rng: random.Random, records: list[dict]) -> list[str]:
    values = {"categories": sorted({c for r in records for c in r["categories"]}),
              "category": sorted({c for r in records for c in r["categories"]}),
              "tag": list(TAGS) + ["Nada"], "tags": list(TAGS),
              "author": sorted({r["author"]["name"] for r in records}),
              "date": sorted(r["date"][:10] for r in records),
              "url": sorted(r["url"][:rng.randint(24, 34)] for r in records),
              "title": sorted(r["title"][:rng.randint(1, 4)] for r in records),
              "views": ["5", "40", "300", "2500", "100", "abc"], "zeta": ["0", "1", "2", "3"],
              "featured": ["true", "false"], "score": ["0.5", "1.0", "1", "12.25", "3"],
              "missing": ["x"]}
    out = []
    for _ in range(rng.randint(1, 3)):
        field = rng.choice(sorted(values))
        value = rng.choice(values[field])
        op = rng.choice({"date": [">=", "<="], "url": ["^="], "title": ["^=", ">="],
                         "views": [">=", "<=", "=", "!="], "score": [">=", "<=", "=", "!="],
                         "zeta": ["=", "!=", ">=", "<="]}.get(field, ["=", "!=", "^="]))
        if op in ("=", "!=") and rng.random() < 0.3:
            value += "," + rng.choice(values[field])
        out.append(f"{field}{op}{value}")
    return out


def test_the_same_mask_and_the_same_filtered_top10_for_every_method(homes):
    local, pg = homes
    records = _records()
    rng = random.Random(26)
    compared = {m: 0 for m in METHODS}
    empty = 0
    with api.open(local) as a, api.open(pg) as b, api.open(pg + "&lexical=sql") as c:
        for _ in range(40):
            texts = _random_filters(rng, records)
            filters = f.parse_filters(texts)
            mask = f.allowed(a.build, a.home, filters)
            assert np.array_equal(f.allowed(b.build, b.home, filters), mask), texts
            empty += not mask.any()
            query = rng.choice(QUERIES)
            for method in METHODS:
                x = a.search(query, method=method, k=10, filters=texts, log=False)
                y = b.search(query, method=method, k=10, filters=texts, log=False)
                if method in ("tfidf", "bm25"):  # busca's code on busca's numbers: bit for bit
                    assert [(h.url, h.chunk_id, h.score) for h in x.hits] == [
                        (h.url, h.chunk_id, h.score) for h in y.hits], (method, texts, query)
                else:
                    assert _same_up_to_float32_ties(x.hits, y.hits), (method, texts, query)
                assert {h.url: h.meta for h in x.hits} == {h.url: h.meta for h in y.hits}
                assert x.note == y.note and all(mask[h.chunk_id] for h in y.hits)
                compared[method] += bool(x.hits)
            for method in ("tfidf", "bm25"):  # ranked by PostgreSQL (lexical=sql)
                x = a.search(query, method=method, k=10, filters=texts, log=False)
                z = c.search(query, method=method, k=10, filters=texts, log=False)
                assert [h.chunk_id for h in x.hits] == [h.chunk_id for h in z.hits], texts
                assert np.allclose([h.score for h in x.hits], [h.score for h in z.hits],
                                   rtol=0, atol=1e-6)
    assert min(compared.values()) >= 20 and 0 < empty < 20


def _same_up_to_float32_ties(x, y) -> bool:
    """The same hits in the same order, except that hits whose scores differ by less than
    1e-6 (pgvector's sum and numpy's float32 product may differ in the last bit: ties) may
    come in either order, and the last such group may hold other tied hits."""
    sx, sy = [h.score for h in x], [h.score for h in y]
    if len(x) != len(y) or not np.allclose(sx, sy, rtol=0, atol=1e-6):
        return False
    groups, start = [], 0
    for i in range(1, len(x) + 1):
        if i == len(x) or sx[i - 1] - sx[i] > 1e-6:
            groups.append((start, i))
            start = i
    tied_at_the_end = [g for g in groups if sx[g[0]] - sx[-1] <= 1e-6]
    return all({h.chunk_id for h in x[a:b]} == {h.chunk_id for h in y[a:b]}
               for a, b in groups if (a, b) not in tied_at_the_end)


def test_filtered_dense_reads_only_the_allowed_rows_exactly(homes):
    local, pg = homes
    with api.open(local) as a, api.open(pg) as b:
        mask = f.allowed(b.build, b.home, f.parse_filters(["tags=Pesquisa"]))
        assert 0 < mask.sum() < mask.size
        ranker = b.build.ranker("dense")
        ids, scores = ranker.score_among(QUERIES[0], np.flatnonzero(mask))
        assert np.array_equal(ids, np.flatnonzero(mask))
        all_ids, all_scores = a.build.ranker("dense").score(QUERIES[0])
        by_id = dict(zip(all_ids.tolist(), all_scores.tolist()))
        assert np.allclose(scores, [by_id.get(i, 0.0) for i in ids.tolist()], atol=1e-6)


def test_stats_facets_are_the_local_ones(homes):
    local, pg = homes
    facets = [json.loads(busca(h, "stats", "--json"))["facets"] for h in homes]
    assert facets[0] == facets[1]
    assert facets[1]["categories"]["values"] >= 3 and "tags" in facets[1]
    assert "facet tags:" in busca(pg, "stats")


def test_http_and_cli_filters_and_meta_from_a_postgres_home(tmp_path, pg_home):
    from serving import Server

    source = write_jsonl(tmp_path / "docs.jsonl", _records()[:40])
    homes = (tmp_path / "home", pg_home)  # lexical only: the served process has no fake
    answers = []
    for home in homes:
        busca(home, "add", str(source))
        busca(home, "index", "--quiet", "--methods", "tfidf,bm25")
        with Server(home, "--no-log") as server:
            query = "q=curso&k=5&method=bm25&filter=tags%3DEnsino&filter=views%3E%3D40"
            with urlopen(f"{server.url}api/search?{query}", timeout=60) as response:
                answers.append(json.load(response)["hits"])
    assert answers[0] and answers[0] == answers[1]
    assert all("Ensino" in h["meta"]["tags"] and h["meta"]["views"] >= 40 for h in answers[1])
    out = busca(pg_home, "search", "curso", "--json", "-k", "5", "--method", "bm25", "--no-log",
                "--no-serve", "--filter", "tags=Ensino", "--filter", "views>=40")
    assert [json.loads(line)["url"] for line in out.splitlines()] == [
        h["url"] for h in answers[1]]


def test_a_change_of_metadata_alone_is_stored_as_on_a_local_home(tmp_path, pg_home):
    doc = Document("https://a.example/x", "X", "ovos e mais ovos", meta={"category": "Aves"})
    changed = Document(doc.url, doc.title, doc.text, meta={"category": "Répteis", "n": 1})
    with open_home(tmp_path / "home") as a, open_home(pg_home) as b:
        for home in (a, b):
            assert [home.put(d) for d in (doc, doc, changed, changed)] == [
                "added", "unchanged", "metadata_updated", "unchanged"]
            assert home.get(doc.url).meta == {"category": "Répteis", "n": 1}
            home.put(Document(doc.url, doc.title, doc.text, meta={"category": "Répteis",
                                                                   "n": True}))
            assert home.get(doc.url).meta["n"] is True  # JSON's true is not 1
    with api.open(pg_home) as corpus:
        corpus.index(methods=("bm25",))
        hits = corpus.search("ovos", filters=["category=Répteis"], method="bm25",
                              log=False).hits
        assert [h.meta for h in hits] == [{"category": "Répteis", "n": True}]
        corpus.add([doc])  # metadata is read at query time: no index needed
        assert corpus.search("ovos", filters=["category=Répteis"], method="bm25",
                              log=False).hits == ()
        assert corpus.search("ovos", filters=["category=Aves"], method="bm25",
                              log=False).hits


def test_a_corpus_made_before_metadata_reads_none_and_its_next_write_adds_the_column(pg_home):
    with open_home(pg_home) as home:
        home.put(Document("https://a.example/x", "X", "ovos", meta={"tag": "a"}))
        home.conn().execute(f"DROP INDEX {pg_schema.quoted(home.schema)}.documents_meta")
        home.conn().execute(f"ALTER TABLE {pg_schema.quoted(home.schema, 'documents')}"
                            " DROP COLUMN meta")
    with PostgresHome(pg_home) as older:
        assert older.get("https://a.example/x").meta is None
        assert list(older.records_having([("tag", "tags")])) == []
        assert [r[4] for r in older.records()] == [None]
        older.put(Document("https://a.example/y", "Y", "ovos", meta={"tag": "b"}))
        assert pg_schema.has_meta(older.conn(), older.schema)
    with PostgresHome(pg_home) as home:
        assert home.get("https://a.example/y").meta == {"tag": "b"}
        indexes = home.conn().execute("SELECT indexdef FROM pg_indexes WHERE schemaname = %s",
                                      (home.schema,)).fetchall()
        assert any("gin (meta)" in row[0] for row in indexes)
        with home.conn().transaction():  # the pre-selection's form can use the index
            home.conn().execute("SET LOCAL enable_seqscan = off")
            plan = home.conn().execute(
                f"EXPLAIN SELECT url FROM {pg_schema.quoted(home.schema, 'documents')}"
                " WHERE meta ?| %s::text[]", (["tag", "tags"],)).fetchall()
        assert "documents_meta" in " ".join(row[0] for row in plan)


FAST = {"rate": 500.0, "backoff": 0.02, "timeout": 5.0, "source": "wordpress"}


def test_a_wordpress_crawl_keeps_the_same_metadata_and_picks_up_a_tags_only_change(
        tmp_path, pg_home):
    site = FixtureSite()
    site.articles[0]["tags"] = ["Pesquisa", "Ensino"]
    with site:
        for home in (tmp_path / "home", pg_home):
            with api.open(home) as corpus:
                list(corpus.crawl(site.url, **FAST))
        article = site.articles[1]
        article["tags"] = ["Extensão"]  # WordPress need not bump `modified` for this
        with api.open(pg_home) as corpus:
            list(corpus.crawl(site.url, **FAST))
            assert corpus.home.get(site.link(article)).meta["tags"] == ["Extensão"]
    with open_home(tmp_path / "home") as a, open_home(pg_home) as b:
        metas = {d.url: d.meta for d in a.documents()}
        assert metas and all(d.meta for d in b.documents())
        for d in b.documents():
            expected = dict(metas[d.url])
            if d.url == site.link(article):
                expected["tags"] = ["Extensão"]
            assert d.meta == expected, d.url


WORDS = ("sistema rede dados curso aluno prova nota prazo regra matrícula estágio pesquisa"
         " ensino extensão bolsa edital projeto professor disciplina horário sala laboratório"
         " biblioteca livro artigo revista evento palestra congresso relatório").split()


def _synthetic(n: int, rng: random.Random) -> list[dict]:
    """`n` documents of 100 Zipf-ish words (10 windows of 20/10 each), with metadata."""
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    return [{"url": f"https://s.example/{i}", "title": f"Doc {i}",
             "text": " ".join(rng.choices(WORDS, weights, k=100)),
             "tags": rng.sample(TAGS, rng.randint(0, 2)), "zeta": rng.randint(0, 9),
             "date": f"20{10 + rng.randint(0, 14)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}"}
            for i in range(n)]


def test_filtered_top10_on_a_10k_chunk_corpus_both_backends(tmp_path, postgres_server_url):
    """Random filters on ~10k chunks: PostgreSQL's filtered top 10 (its own lists, and ranked
    in SQL) equals the local home's, which equals the unfiltered ranking restricted to the
    matching chunks."""
    rng = random.Random(10)
    source = write_jsonl(tmp_path / "docs.jsonl", _synthetic(1120, rng))
    local, pg = tmp_path / "home", f"{postgres_server_url}?corpus=f10k_{rng.getrandbits(32):x}"
    for home in (local, pg + "&lexical=sql"):
        busca(home, "add", str(source))
        busca(home, "index", "--quiet", "--methods", "tfidf,bm25", "--size", "20",
              "--overlap", "10")
    with api.open(local) as a, api.open(pg) as b, api.open(pg + "&lexical=sql") as c:
        assert a.build.manifest.chunks >= 10_000
        for _ in range(16):
            texts = [rng.choice([f"tags={rng.choice(TAGS)}", f"zeta<={rng.randint(0, 9)}",
                                 f"date>=20{10 + rng.randint(0, 14)}", f"zeta={rng.randint(0, 9)}"])
                     for _ in range(rng.randint(1, 2))]
            mask = f.allowed(a.build, a.home, f.parse_filters(texts))
            query = " ".join(rng.sample(WORDS, 2))
            for method in ("tfidf", "bm25"):
                x, y, z = (h.search(query, method=method, k=10, filters=texts, log=False).hits
                           for h in (a, b, c))
                ids, scores = a.build.ranker(method).score(query)
                keep = mask[ids]
                order = np.lexsort((ids[keep], -scores[keep]))[:10]
                assert [h.chunk_id for h in x] == list(ids[keep][order]), (method, texts)
                assert [(h.chunk_id, h.score) for h in y] == [(h.chunk_id, h.score) for h in x]
                assert [h.chunk_id for h in z] == [h.chunk_id for h in x], (method, texts)


def test_stats_pending_is_the_local_ones(tmp_path, pg_home):
    """The documents stored since the build (`pending`), counted from one row a document of
    the build (its first chunk), the same on both backends."""
    records = _records()[:6]
    more = [{"url": "https://novo.example/a", "title": "Novo", "text": "Um documento novo."},
            {**records[0], "text": records[0]["text"] + " Mudou."}]
    printed = []
    for home in (tmp_path / "home", pg_home):
        busca(home, "add", str(write_jsonl(tmp_path / "docs.jsonl", records)))
        busca(home, "index", "--quiet", "--methods", "bm25", "--size", "40", "--overlap", "10")
        assert json.loads(busca(home, "stats", "--json"))["pending"] == {"changed": 0,
                                                                         "removed": 0}
        busca(home, "add", str(write_jsonl(tmp_path / "more.jsonl", more)))
        with api.open(home) as corpus:
            corpus.home.delete(records[1]["url"])
            assert corpus.build.manifest.chunks > len(records)  # several chunks a document
        printed.append(json.loads(busca(home, "stats", "--json"))["pending"])
    assert printed == [{"changed": 2, "removed": 1}] * 2
