import json
import random

import pytest

from busca.index.text.analyzers import (ANALYZERS, UnknownAnalyzer, get_analyzer, get_term_filter,
                                        java_terms, mapped_terms)


def test_java_terms_lowercase_letters_and_digits():
    assert java_terms("Olá, MUNDO! São-Paulo 3,5% snake_case ÇÃO") == [
        "olá", "mundo", "são", "paulo", "3", "5", "snake", "case", "ção"]


def test_java_terms_keep_other_scripts_and_digits():
    assert java_terms("Ωμέγα ½ ٣") == ["ωμέγα", "½", "٣"]


def test_unknown_analyzer_lists_known_ones():
    with pytest.raises(UnknownAnalyzer, match="java"):
        get_analyzer("klingon")


# --- en: Lucene's EnglishAnalyzer as java terms allow (issue 10) -----------------------------

def test_en_drops_possessives_and_lucene_stopwords_then_porter_stems():
    en = get_analyzer("en")
    assert en("The patient's studies were running; it's not such a relational network") == [
        "patient", "studi", "were", "run", "relat", "network"]


@pytest.mark.parametrize("word, stem", [  # Porter (1980)'s own examples, as Lucene stems them
    ("caresses", "caress"), ("ponies", "poni"), ("ties", "ti"), ("cats", "cat"),
    ("feed", "feed"), ("agreed", "agre"), ("plastered", "plaster"), ("motoring", "motor"),
    ("sing", "sing"), ("conflated", "conflat"), ("hopping", "hop"), ("happy", "happi"),
    ("relational", "relat"), ("conditional", "condit"), ("generalization", "gener"),
    ("electrical", "electr"), ("adjustable", "adjust"), ("controlling", "control"),
    ("generalizations", "gener"), ("oscillators", "oscil"),
])
def test_en_stems_like_the_porter_algorithm(word, stem):
    # Porter2 ("english") differs on several of these: "generalizations" -> "general".
    assert get_analyzer("en")(word) == [stem]


def test_en_stopwords_are_exactly_lucenes_33():
    from busca.index.text.stopwords import ENGLISH
    assert len(ENGLISH) == 33 and {"the", "with", "such", "into", "will"} <= ENGLISH
    assert get_analyzer("en")(" ".join(sorted(ENGLISH))) == []
    assert get_analyzer("en")("we were there") == ["we", "were"]  # not Lucene stopwords


def test_cli_index_with_the_en_analyzer(run, tmp_path):
    from conftest import write_jsonl
    docs = [{"url": "u1", "title": "A", "text": "The patients' studies of running mice."},
            {"url": "u2", "title": "B", "text": "A network of relational databases."}]
    assert run("add", str(write_jsonl(tmp_path / "en.jsonl", docs))).exit_code == 0
    assert run("index", "--quiet", "--methods", "bm25", "--analyzer", "en").exit_code == 0
    stats = run("stats", "--json")
    assert '"en"' in stats.stdout and "snowball porter" in stats.stdout
    hits = run("search", "the study of a runner's patient", "--method", "bm25", "--json").stdout
    assert [json.loads(line)["url"] for line in hits.splitlines()] == ["u1"]


def _fold_whole(term: str) -> str:
    """The fold of the whole string at once (what fold_accents computed before its
    character table): NFKD, then every combining mark dropped."""
    import unicodedata
    decomposed = unicodedata.normalize("NFKD", term)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def test_folding_character_by_character_is_folding_the_whole_string():
    from busca.index.text.analyzers import fold_accents
    import random
    rng = random.Random(7)
    pool = ([chr(c) for c in range(0x20, 0x250)] + list("ªºﬁ한가ǅÅ") +
            ["\u0301", "\u0327", "\u0303", "\u0345", "\u0308\u0301", "e\u0301"])
    for _ in range(20000):
        term = "".join(rng.choice(pool) for _ in range(rng.randint(1, 12)))
        assert fold_accents(term) == _fold_whole(term), repr(term)
    assert fold_accents("Informações ÉPICAS ª") == "Informacoes EPICAS a"


@pytest.mark.parametrize("name", sorted(ANALYZERS))
def test_a_vocabulary_mapped_at_once_is_each_term_filtered(name):
    """mapped_terms (the stemmer called once for a whole vocabulary) against the per-term
    filter that queries use: stopwords with and without accents, possessives, other scripts."""
    words = ("não nao é e à às o de da the a an s patient studies informações informação ação "
             "acao cafe café ΣΟΦΙΑ 東京 2019 3 universidade universidades running runs ǅ nãoﾞ "
             "informacao informacoes responsavel importancia ciencia maos ao "
             "1.000,00 1,000.50 3.12 123.456.789-09 01310-100 "  # number groups
             "informaçao informacão construido atraves atravès você voce está ﬁnanças "
             "ﬁcacao àquele aquele pôr").split()  # half accented, ligatures, stopwords
    rng = random.Random(3)
    terms = words + ["".join(rng.choice("aãçéíoõsu") for _ in range(rng.randint(1, 9)))
                     for _ in range(300)]
    term_filter = get_term_filter(name)
    expected = ([t if t.isalnum() else None for t in terms] if term_filter is None
                else [term_filter(t) for t in terms])  # java drops a number group whole
    assert mapped_terms(name, terms) == expected


@pytest.mark.parametrize("accented, plain", [
    ("informação", "informacao"), ("informações", "informacoes"), ("computação", "computacao"),
    ("importância", "importancia"), ("responsável", "responsavel"), ("ciência", "ciencia"),
    ("pão", "pao"), ("mãos", "maos"), ("eleições", "eleicoes"), ("possível", "possivel")])
def test_pt_stems_a_word_typed_without_accents_as_the_accented_one(accented, plain):
    """Snowball's suffixes are accented: "informacao" stemmed to "informaca" where
    "informação" stems to "inform", so bm25 found nothing for a question typed without
    accents (the 28th session's sweep)."""
    pytest.importorskip("Stemmer")
    from busca.index.text.analyzers import pt_term

    assert pt_term(plain) == pt_term(accented)
    assert pt_term("travel") == "travel" and pt_term("nao") is None  # stopwords first


@pytest.mark.parametrize("accented, typed", [
    ("construída", "construida"), ("distribuídos", "distribuidos"), ("possuía", "possuia"),
    ("concluíram", "concluiram"), ("extraído", "extraido"), ("informação", "informaçao"),
    ("informações", "informacões"), ("através", "atraves"), ("português", "portugues"),
    ("contém", "contem"), ("mãe", "mae"), ("horária", "horaria"), ("necessárias", "necessarias")])
def test_pt_stems_other_words_typed_without_accents_as_the_accented_one(accented, typed):
    """Measured on FaQuAD's, the handbook's and the fixture site's words: "construída" stems
    to "construid" but "construida" to "constru", "através" to "atraves" but "atraves" to
    "atrav", and "informaçao" (the tilde left out) to "informaca"."""
    pytest.importorskip("Stemmer")
    from busca.index.text.analyzers import pt_term

    assert pt_term(typed) == pt_term(accented)
    # plain words that end the same way keep their stems: "seguido" as "seguir", "cuida"
    # as "cuidar" (no "í" after g, q or c)
    assert pt_term("seguido") == pt_term("seguir") and pt_term("cuida") == pt_term("cuidar")


def test_pt_email_with_or_without_its_hyphen():
    pytest.importorskip("Stemmer")
    from busca.index.text.analyzers import pt_terms

    assert pt_terms("e-mail") == pt_terms("email") == pt_terms("E-mail") == ["mail"]
    assert pt_terms("e-mails") == pt_terms("emails")


def test_a_question_pasted_with_invisible_characters_asks_for_the_word():
    """A soft hyphen or a zero-width space (which the crawler drops from a page's text) split
    "devolução" into "devo" and "lução" in a question pasted from a page; `java` keeps
    splitting on them, as the Java experiment does (tfidf's parity)."""
    from busca.index.text.analyzers import analysis
    from busca.search.highlight import query_terms

    for invisible in "\u00ad\u200b\u200c\u200d\u2060\ufeff":
        question = f"devo{invisible}lução"
        for name in ("pt", "simple"):
            analyze, term = analysis(name)
            assert analyze(question) == [term("devolução")], (name, hex(ord(invisible)))
            assert query_terms(question, name) == {term("devolução")}
        assert analysis("java")[0](question) == ["devo", "lução"]


# Numbers and codes written with separators, as Brazilian texts write them: each question's
# terms worked out by hand (pt stems "reais" to "rea", "vagas" to "vag").
PT_NUMBERS = [("R$ 1.000,00", ["r", "1000"]), ("quanto custa 1000 reais",
                                                ["quant", "cust", "1000", "rea"]),
              ("1.000", ["1000"]), ("1000,00", ["1000"]), ("2.500 reais", ["2500", "rea"]),
              ("10.000 vagas", ["10000", "vag"]), ("R$ 2.500,50", ["r", "2500,50"]),
              ("1.000.000", ["1000000"]), ("0,5", ["0,5"]), ("1,000", ["1,000"]),
              ("CPF 123.456.789-09", ["cpf", "12345678909"]),
              ("CPF 12345678909", ["cpf", "12345678909"]),
              ("CEP 01310-100", ["cep", "01310100"]), ("cep 01310100", ["cep", "01310100"]),
              ("12.345.678/0001-90", ["12345678000190"]),
              ("(11) 99999-9999", ["11", "999999999"]),
              ("05/12/2026", ["05", "12", "2026"]), ("2026-12-05", ["2026", "12", "05"]),
              ("2019-2022", ["2019", "2022"]), ("10-20", ["10", "20"]),
              ("1.000-2.000", ["1000", "2000"]), ("versão 3.12", ["versa", "3.12"]),
              ("1 000", ["1", "000"]), ("a1.000", ["a1", "1000"]),
              ("1.000km", ["1000", "000km"]), ("v2.3.1", ["v2", "2.3.1"]),
              ("versão v2.3.1", ["versa", "v2", "2.3.1"]), ("python3.12", ["python3", "3.12"]),
              ("nº1.234", ["no1", "1234"]), ("3,5kg", ["3,5", "5kg"]),
              ("1..000", ["1", "000"]), ("1.000.", ["1000"])]


@pytest.mark.parametrize("question, terms", PT_NUMBERS)
def test_pt_asks_a_number_or_code_whole_in_one_canonical_form(question, terms):
    """Thousands dots and a decimal comma: "1.000,00", "1.000" and "1000" are one term; a
    code joined by "-" or "/" (8 digits or more, not a date or a range of years) is its
    digits, so a CPF or CEP matches with or without its separators; "1 000" stays two."""
    pytest.importorskip("Stemmer")
    from busca.index.text.analyzers import analysis

    assert analysis("pt")[0](question) == terms


EN_NUMBERS = [("$1,000.00", ["1000"]), ("1,000", ["1000"]), ("1000", ["1000"]),
              ("$1,000.50", ["1000.50"]), ("3.0", ["3"]), ("3.12", ["3.12"]),
              ("3.10", ["3.10"]), ("1,000,000 users", ["1000000", "user"]),
              ("1.000,00", ["1.000,00"]), ("SSN 123-45-6789", ["ssn", "123456789"]),
              ("12/05/2026", ["12", "05", "2026"])]


@pytest.mark.parametrize("question, terms", EN_NUMBERS)
def test_en_asks_a_number_whole_with_english_marks(question, terms):
    pytest.importorskip("Stemmer")
    from busca.index.text.analyzers import analysis

    assert analysis("en")[0](question) == terms


def test_a_document_keeps_a_number_groups_parts_beside_the_whole():
    """The index counts a text's java terms once for every method (tfidf's Java parity needs
    the parts), then each number group whole: pt and en hold both, java and simple the
    parts only."""
    pytest.importorskip("Stemmer")
    text = "R$ 1.000,00 e CPF 123.456.789-09"
    assert get_analyzer("pt")(text) == ["r", "1", "000", "00", "cpf", "123", "456", "789",
                                        "09", "1000", "12345678909"]
    assert get_analyzer("en")(text) == ["r", "1", "000", "00", "e", "cpf", "123", "456", "789",
                                        "09", "1.000,00", "12345678909"]
    for name in ("java", "simple"):
        assert get_analyzer(name)(text) == ["r", "1", "000", "00", "e", "cpf", "123", "456",
                                            "789", "09"]


def test_a_build_made_before_numbers_were_whole_is_asked_by_the_parts():
    """An index built before NUMBERS holds "1", "000" and "00" of "1.000,00" and no whole:
    its questions keep asking the parts until it is built again."""
    pytest.importorskip("Stemmer")
    from busca.index.text.analyzers import NUMBERS, UIDO, analysis, analyzer_version

    for name in ("pt", "en"):
        now = analyzer_version(name)
        assert NUMBERS in now
        before = now.replace(", " + NUMBERS, "")
        question = "10.000 vagas" if name == "pt" else "10,000 users"
        assert analysis(name, before)[0](question)[:2] == ["10", "000"]
        assert analysis(name, now)[0](question)[0] == "10000"
    assert UIDO in analyzer_version("pt")


def test_a_build_made_before_glued_numbers_asks_the_groups_it_counted():
    """A build of before GLUED counted "3.1" of "v2.3.1" (its group started at the first
    digits-only word) and no whole of "1.000km": its questions ask so until it is rebuilt;
    this busca's ask "2.3.1" and "1000"."""
    pytest.importorskip("Stemmer")
    from busca.index.text.analyzers import GLUED, analysis, analyzer_version

    for name in ("pt", "en"):
        now = analyzer_version(name)
        assert now.endswith(GLUED)
        before = now.replace(", " + GLUED, "")
        assert analysis(name, before)[0]("v2.3.1") == ["v2", "3.1"]
        assert analysis(name, now)[0]("v2.3.1") == ["v2", "2.3.1"]
        assert analysis(name, before)[0]("1.000km")[0] == "1"
        assert analysis(name, now)[0]("1.000km")[0] in ("1000", "1.000")
