"""The bundled fixture site (fixtures/site/) and golden set (fixtures/golden/)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest

from busca.fixtures import check_golden as cg
from busca.fixtures import make_site

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SITE = FIXTURES / "site"
FAQUAD = FIXTURES / "faquad" / "dataset.json"
SHARED_FAQUAD = FIXTURES.parent.parent / "shared" / "data" / "faquad" / "dataset.json"
GOLDEN = FIXTURES / "golden" / "golden.json"

# A tiny literal corpus for the checker: 400 numbered words, and a lowercased twin.
LONG = " ".join(f"w{i}" for i in range(400))
CORPUS = [
    {"url": "u1", "title": "Um", "text": "O prazo do reembolso é de 7 dias úteis.\n\nFim."},
    {"url": "u2", "title": "Dois", "text": "Parcelamento sem juros até 6 vezes no cartão."},
    {"url": "u3", "title": "Três", "text": "parcelamento sem juros até 6 vezes no boleto."},
    {"url": "u4", "title": "Longo", "text": LONG},
]


class _Paragraphs(HTMLParser):
    """Text of each <p>, entities decoded; records every tag seen."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self.tags: set[str] = set()
        self._open = False

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag == "p":
            self.paragraphs.append("")
            self._open = True

    def handle_endtag(self, tag):
        if tag == "p":
            self._open = False

    def handle_data(self, data):
        if self._open:
            self.paragraphs[-1] += data
        elif data.strip():
            raise AssertionError(f"text outside <p>: {data!r}")


def _paragraphs(content: str) -> _Paragraphs:
    parser = _Paragraphs()
    parser.feed(content)
    parser.close()
    return parser


@pytest.fixture(scope="module")
def faquad():
    return json.loads(FAQUAD.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def articles():
    return json.loads((SITE / "articles.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def records():
    return cg.read_articles(SITE / "articles.jsonl")


# --- FaQuAD copy ---------------------------------------------------------------------

def test_faquad_copy_has_39_documents_and_900_questions(faquad):
    questions = [q for d in faquad["data"] for p in d["paragraphs"] for q in p["qas"]]
    assert len(faquad["data"]) == 39
    assert sum(len(d["paragraphs"]) for d in faquad["data"]) == 249
    assert len(questions) == 900


@pytest.mark.skipif(not SHARED_FAQUAD.exists(), reason="no ../shared FaQuAD in this clone")
def test_faquad_copy_is_the_original_file():
    assert FAQUAD.read_bytes() == SHARED_FAQUAD.read_bytes()


# --- the site --------------------------------------------------------------------------

def test_site_has_39_articles_with_unique_ids_and_slugs(articles):
    ids = [a["id"] for a in articles]
    slugs = [a["slug"] for a in articles]
    assert len(articles) == 39
    assert len(set(ids)) == 39 and len(set(slugs)) == 39
    assert ids == sorted(ids) and ids[0] >= 1
    assert ids != list(range(ids[0], ids[0] + 39))  # WordPress-like gaps
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", s) for s in slugs)


def test_articles_have_wordpress_fields(articles):
    categories = json.loads((SITE / "categories.json").read_text(encoding="utf-8"))
    known = {c["id"] for c in categories}
    edited = 0
    for article in articles:
        date, modified = (datetime.fromisoformat(article[k]) for k in ("date", "modified"))
        assert modified >= date
        edited += modified > date
        for local, gmt in (("date", "date_gmt"), ("modified", "modified_gmt")):
            shift = datetime.fromisoformat(article[gmt]) - datetime.fromisoformat(article[local])
            assert shift == timedelta(hours=3)  # Brazil is UTC-3
        assert 1 <= len(article["categories"]) <= 2 and set(article["categories"]) <= known
        assert article["author"] == 1 and article["title"].strip()
    assert 0 < edited < len(articles)


def test_titles_are_human_portuguese(articles):
    titles = {a["slug"]: a["title"] for a in articles}
    assert titles["analise-de-sistemas"] == "Análise de sistemas"
    assert titles["pos-graduacao"] == "Pós-graduação"
    assert titles["tecnologia-da-informacao"] == "Tecnologia da informação"


def test_html_paragraphs_are_faquad_paragraphs(articles, faquad):
    for article, document in zip(articles, faquad["data"], strict=True):
        parsed = _paragraphs(article["content"])
        assert parsed.tags <= {"p", "strong", "em"}
        assert parsed.paragraphs == [p["context"].strip() for p in document["paragraphs"]]
        assert article["content"].endswith("</p>\n")
        assert article["content"].count("<p>") == len(document["paragraphs"])


def test_some_articles_carry_inline_markup(articles):
    marked = [a for a in articles if "<strong>" in a["content"] or "<em>" in a["content"]]
    assert 3 <= len(marked) < len(articles)
    assert any("&amp;" in a["content"] for a in articles)


def test_article_words_equal_faquad_words(articles, faquad):
    total = 0
    for article, document in zip(articles, faquad["data"], strict=True):
        text = "\n\n".join(_paragraphs(article["content"]).paragraphs)
        faquad_text = "\n\n".join(p["context"] for p in document["paragraphs"])
        assert text.split() == faquad_text.split()
        total += len(text.split())
    assert total == 30_337


def test_excerpt_is_the_start_of_the_first_paragraph(articles, records):
    for article, record in zip(articles, records, strict=True):
        words = article["excerpt"].removesuffix(" […]").split()
        assert 0 < len(words) <= make_site.EXCERPT_WORDS
        assert record["text"].split()[:len(words)] == words


def test_jsonl_matches_json(articles, records):
    assert len(records) == len(articles)
    for article, record in zip(articles, records, strict=True):
        assert set(record) == {"url", "title", "text"}
        assert record["url"] == f"https://faquad.example/{article['slug']}/"
        assert record["title"] == article["title"]
        assert record["text"] == "\n\n".join(_paragraphs(article["content"]).paragraphs)


def test_site_has_201_windows_of_200_40(records):
    assert sum(len(cg.windows(r["text"])) for r in records) == 201


def test_make_site_is_deterministic(tmp_path, faquad):
    make_site.write_site(faquad, tmp_path)
    for name in ("articles.json", "articles.jsonl", "categories.json"):
        assert (tmp_path / name).read_bytes() == (SITE / name).read_bytes()


def test_slugify_drops_accents_and_punctuation():
    assert make_site.slugify("Renovação de matrícula: aditivo") == "renovacao-de-matricula-aditivo"
    assert make_site.slugify("  Pós-graduação!  ") == "pos-graduacao"


# --- windows, hand-worked ----------------------------------------------------------------

@pytest.mark.parametrize("count, starts", [
    (0, []), (5, [0]), (200, [0]), (201, [0, 160]), (360, [0, 160]), (361, [0, 160, 320]),
])
def test_windows_start_every_160_words(count, starts):
    text = " ".join(f"w{i}" for i in range(count))
    assert [int(w.split()[0][1:]) for w in cg.windows(text)] == starts
    if starts:
        assert cg.windows(text)[-1].split()[-1] == f"w{count - 1}"
        assert all(len(w.split()) <= 200 for w in cg.windows(text))


# --- the golden set ---------------------------------------------------------------------

def test_bundled_golden_set_passes(records):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert cg.check_golden(golden, records) == []


def test_bundled_golden_set_is_big_and_spread(records):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    tipos = [item["tipo"] for item in golden]
    assert tipos.count("parafrase") >= 22
    assert tipos.count("lexical") >= 20
    assert tipos.count("parafrase") + tipos.count("lexical") >= 45
    assert tipos.count("sem_resposta") >= 12
    assert all(set(item) == {"id", "tipo", "pergunta", "trecho"} for item in golden)
    texts = [cg.collapse(r["text"]) for r in records]
    covered = {i for item in golden if item["trecho"]
               for i, text in enumerate(texts) if cg.collapse(item["trecho"]) in text}
    assert len(covered) >= 20


def _item(id_="a1", tipo="lexical", pergunta="Qual o prazo?", trecho="prazo do reembolso é de"):
    return {"id": id_, "tipo": tipo, "pergunta": pergunta, "trecho": trecho}


def test_checker_accepts_a_good_set():
    golden = [_item(trecho="prazo do reembolso é de 7 dias"),
              _item("a2", "parafrase", "Em quanto tempo devolvem?", "O prazo do\n reembolso é  de"),
              _item("n1", "sem_resposta", "Tem frete grátis?", None)]
    assert cg.check_golden(golden, CORPUS) == []


@pytest.mark.parametrize("golden, message", [
    ([], "non-empty JSON list"),
    ({"pergunta": "x"}, "non-empty JSON list"),
    (["texto"], "not an object"),
    ([{"id": "a", "pergunta": "x", "tipo": "lexical"}], "missing trecho"),
    ([_item(pergunta="  ")], "pergunta must be"),
    ([_item(trecho=42)], "trecho must be a string or null"),
    ([_item(tipo="outro")], "tipo must be one of"),
    ([_item(trecho=None)], "null exactly when"),
    ([_item(tipo="sem_resposta")], "null exactly when"),
    ([_item(), _item()], "duplicate id"),
    ([_item(trecho="prazo do estorno é de 7")], "occurs in no article"),
    ([_item(trecho="sem juros até 6 vezes")], "occurs in 2 articles"),
    ([_item(trecho="Parcelamento sem juros até 6 vezes")], "occurs in 2 articles"),
    ([_item(trecho="7 dias")], "has 2 words"),
    ([_item(trecho=" ".join(f"w{i}" for i in range(150, 211)))], "straddles"),
])
def test_checker_reports_problems(golden, message):
    problems = cg.check_golden(golden, CORPUS)
    assert any(message in p for p in problems), problems


def test_checker_fails_on_a_broken_copy_of_the_bundled_set(records):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    answerable = next(i for i, item in enumerate(golden) if item["trecho"])
    golden[answerable] = {**golden[answerable], "trecho": golden[answerable]["trecho"] + " xyz"}
    golden.append(dict(golden[-1]))
    problems = cg.check_golden(golden, records)
    assert len(problems) == 2
    assert "occurs in no article" in problems[0] and "duplicate id" in problems[1]


def test_script_exit_codes(tmp_path, capsys):
    assert cg.main([str(GOLDEN)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "ok" in out and "sem_resposta" in out
    broken = tmp_path / "golden.json"
    broken.write_text(json.dumps([_item(trecho="não existe em lugar nenhum aqui")]),
                      encoding="utf-8")
    assert cg.main([str(broken)]) == 1
    assert "1 problem" in capsys.readouterr().out
