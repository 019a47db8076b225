"""`busca compare`, and `--per-doc` on `busca search` and `busca context`."""

import json

import pytest

from conftest import write_jsonl

LONG = " ".join(f"Frase {n} sobre o reembolso e o estorno no cartão." if n % 4 == 0
                else f"Frase {n} sobre o atendimento da loja." for n in range(40))
DOCS = [
    {"url": "https://loja.example/politica/", "title": "Política", "text": LONG},
    {"url": "https://loja.example/frete/", "title": "Frete",
     "text": "O frete é grátis acima de cem reais, e o estorno do frete demora uma semana."},
    {"url": "https://loja.example/cachorros/", "title": "Cachorros",
     "text": "Os cães latem quando o carteiro chega de manhã."},
]
GOLDEN = [
    {"id": "c1", "pergunta": "cachorro", "trecho": "Os cães latem"},
    {"id": "c2", "pergunta": "estorno do frete", "trecho": "o estorno do frete demora"},
]


@pytest.fixture
def indexed(run, tmp_path, fake):
    fake.synonyms.update({"cachorro": "cães"})
    assert run("add", str(write_jsonl(tmp_path / "docs.jsonl", DOCS))).exit_code == 0
    assert run("index", "--size", "20", "--overlap", "8", "-q", "--dense", "fake").exit_code == 0
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(GOLDEN, ensure_ascii=False), encoding="utf-8")
    return run, str(golden)


def test_compare_shows_each_hit_once_with_its_rank_under_every_method(indexed):
    run, _ = indexed
    result = run("compare", "estorno do frete", "-k", "2")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "estorno do frete"
    assert lines[1].split() == ["tfidf", "bm25", "dense", "hybrid", "passage"]
    rows = [line for line in lines[2:] if "<https://" in line]
    urls = [line.split("<")[1] for line in rows]
    data = json.loads(run("compare", "estorno do frete", "-k", "2", "--json").stdout)
    assert len(rows) == len(data["rows"]) == len({r["chunk_id"] for r in data["rows"]})
    for line, row in zip(rows, data["rows"]):
        shown = line.split()[:4]
        assert shown == [str(row["ranks"][m]) if row["ranks"][m] else "—"
                         for m in ("tfidf", "bm25", "dense", "hybrid")]
    assert urls[0].startswith("https://loja.example/frete/")
    assert "\x1b[" not in result.stdout  # not a terminal: no colour


def test_compare_ranks_agree_with_search(indexed):
    run, _ = indexed
    data = json.loads(run("compare", "reembolso estorno", "-k", "3", "--json").stdout)
    for method in ("tfidf", "bm25", "dense", "hybrid"):
        hits = [json.loads(x) for x in run("search", "reembolso estorno", "-k", "3",
                                           "--method", method, "--json", "--no-log")
                .stdout.splitlines()]
        assert data["columns"][method] == [h["chunk_id"] for h in hits]
        by_id = {r["chunk_id"]: r for r in data["rows"]}
        assert [by_id[h["chunk_id"]]["ranks"][method] for h in hits] == [1, 2, 3]


def test_compare_golden_marks_the_passage_dense_finds_and_tfidf_misses(indexed):
    run, golden = indexed
    result = run("compare", "c1", "--golden", golden, "--methods", "tfidf,dense", "-k", "1")
    assert result.exit_code == 0, result.output
    (marked,) = [line for line in result.stdout.splitlines() if "✓" in line and "<" in line]
    assert marked.split()[1:3] == ["—", "1"] and "cachorros" in marked
    assert "tfidf: none of the query's words" in result.stdout
    data = json.loads(run("compare", "c1", "--golden", golden, "--json").stdout)
    assert [r["url"] for r in data["rows"] if r["chunk_id"] in data["relevant"]] == [
        "https://loja.example/cachorros/"]


def test_compare_golden_shows_the_passage_even_outside_every_top_k(indexed):
    run, golden = indexed
    result = run("compare", "c1", "--golden", golden, "--methods", "tfidf", "-k", "1")
    (row,) = [line for line in result.stdout.splitlines() if "<https://" in line]
    assert row.split()[:2] == ["✓", "—"] and "cachorros" in row


def test_compare_bad_input(indexed):
    run, golden = indexed
    result = run("compare", "frete", "--methods", "tfidf,splade")
    assert result.exit_code == 1 and "no method 'splade'" in result.output
    assert "tfidf, bm25, dense, hybrid" in result.output
    result = run("compare", "nada disso", "--golden", golden)
    assert result.exit_code == 2 and "neither the id nor the text" in result.output
    assert run("compare", "  ").exit_code == 2
    for given in ("", ",", " , "):  # "" compared every method, as eval --methods "" did
        result = run("compare", "frete", "--methods", given)
        assert result.exit_code == 2, result.output
        assert "Invalid value for --methods: methods is empty: name at least one (e.g." \
            " bm25,dense), or leave it out for the index's methods" in result.stderr


def test_search_per_doc_keeps_other_articles(indexed):
    run, _ = indexed
    plain = [json.loads(x)["url"] for x in run("search", "reembolso estorno", "-k", "3",
                                               "--json", "--no-log").stdout.splitlines()]
    assert set(plain) == {"https://loja.example/politica/"}  # Java parity: no collapse
    one = [json.loads(x)["url"] for x in run("search", "reembolso estorno", "-k", "3",
                                             "--per-doc", "1", "--json",
                                             "--no-log").stdout.splitlines()]
    assert one[0] == plain[0] and len(set(one)) == len(one) >= 2


def test_context_per_doc_default_makes_room_for_another_article(indexed):
    run, _ = indexed
    default = json.loads(run("context", "reembolso estorno", "-k", "3", "--json",
                             "--no-log").stdout)
    whole = json.loads(run("context", "reembolso estorno", "-k", "3", "--json", "--no-log",
                           "--per-doc", "0").stdout)
    assert [p["url"] for p in whole["passages"]] == ["https://loja.example/politica/"]
    assert len(default["passages"]) == 2
    assert sum(len(p["hits"]) for p in default["passages"]) == 3


def _comparison(methods: tuple[str, ...], rows: int):
    from busca.search.compare import DEPTH, Comparison, CompareRow
    text = " ".join(f"palavra{n} sobre o estorno do frete" for n in range(30))
    made = [CompareRow(chunk_id=n, url=f"https://a.example/{n}", title=f"T{n}", text=text,
                       start=0, end=len(text), ranks={m: n + 1 for m in methods},
                       scores={m: 1.0 for m in methods}) for n in range(rows)]
    return Comparison(query="estorno", methods=methods, k=3, per_doc=0, depth=DEPTH,
                      columns={m: [] for m in methods}, rows=made, notes={}), text


@pytest.mark.parametrize("width", [40, 50, 60])
def test_compare_table_fits_a_narrow_terminal(width):
    """On a terminal too narrow for a snippet beside four rank columns (39 characters), the
    title and snippet go under the ranks, wrapped at the terminal's width: each snippet line
    was indented 40 spaces and wrapped at 20 characters, 60 wide, so a 40- or 50-column
    terminal broke every one of them across two lines."""
    from busca import display
    comparison, text = _comparison(("tfidf", "bm25", "dense", "hybrid"), rows=2)
    style = display.Style(colour=False, width=width, wrap=True)
    lines = display.compare_text(comparison, "simple", style).splitlines()
    assert max(len(line) for line in lines) <= width, "\n".join(lines)
    assert sum("<https://a.example/" in line for line in lines) == 2
    assert "estorno" in "\n".join(lines)


def test_compare_table_keeps_snippets_beside_the_ranks_when_they_fit():
    from busca import display
    comparison, _ = _comparison(("tfidf", "bm25", "dense", "hybrid"), rows=1)
    style = display.Style(colour=False, width=100, wrap=True)
    lines = display.compare_text(comparison, "simple", style).splitlines()
    assert lines[0].split() == ["tfidf", "bm25", "dense", "hybrid", "passage"]
    assert lines[1].split()[:5] == ["1", "1", "1", "1", "T0"]
    assert lines[2].startswith(" " * 39 + "palavra0") and max(len(line) for line in lines) <= 100
