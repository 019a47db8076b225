"""BM25 (index/lexical/bm25.py, index.lexical.lexical.Bm25Scorer), the pt and simple analyzers,
and their CLI: against bm25s, a hand-worked case, FaQuAD and a tiny BEIR folder."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from busca.crawler.store import Document
from busca.index.text import analyzers
from busca.index.text.analyzers import (MissingStemmer, UnknownAnalyzer, get_analyzer, java_terms,
                                   pt_terms, simple_terms)
from busca.index.lexical.bm25 import Bm25ParameterError, check_parameters
from busca.index.build import build_index
from busca.index.home.storage import load_index
from busca import search as core
from busca.index.lexical.lexical import NoSearchableTerms
from busca.index import LocalHome

from conftest import FIXTURES, REPO

CORPUS = [
    "O prazo para pedir o reembolso é de sete dias úteis após a compra.",
    "Reembolsos e estornos: o estorno do cartão leva até duas faturas.",
    "A universidade oferece cursos de graduação e pós-graduação; as matrículas abrem em março.",
    "Informações sobre a matrícula: o aluno deve apresentar documentos na secretaria.",
    "Gato, GATO, gato: três vezes gato. O gato comeu o rato na cozinha.",
    "O cão latiu para o carteiro; o gato fugiu!",
    "Ação, ações e informação: a universidade publica as informações no site.",
    "o a de que é",
]
QUERIES = ["prazo do reembolso", "gato gato rato", "matrícula na universidade",
           "informação sobre ações", "estorno no cartão de crédito", "cursos de pós-graduação"]


def indexed(tmp_path, texts, **options):
    store = LocalHome(tmp_path)
    for i, text in enumerate(texts):
        store.put(Document(f"d{i:02d}", f"T{i}", text))
    build_index(store, methods=("bm25",), options=options)
    return load_index(tmp_path)


def indexed_as(tmp_path, monkeypatch, texts, version: str, **then):
    """`indexed` as an older busca built it: bm25's analyzer_version `version`, and the
    analyzers' attributes `then` as they were."""
    from busca.index.lexical import bm25

    with monkeypatch.context() as old:
        for name, value in then.items():
            old.setattr(analyzers, name, value)
        old.setattr(bm25, "analyzer_version", lambda name: version)
        return indexed(tmp_path, texts)


def dense_scores(index, query, n):
    ids, scores = core.scorer(index, "bm25").score(query)
    out = np.zeros(n)
    out[ids] = scores
    return out


# --- the same scores as bm25s (method="lucene") on the same tokens ---------------------------

@pytest.mark.parametrize("k1, b", [(1.2, 0.75), (0.9, 0.4), (2.0, 1.0), (0.0, 0.0)])
def test_scores_equal_bm25s_lucene(tmp_path, k1, b):
    bm25s = pytest.importorskip("bm25s")
    index = indexed(tmp_path, CORPUS, bm25_k1=k1, bm25_b=b, bm25_analyzer="pt")
    vocab = {t: i for i, t in enumerate(index.terms("bm25"))}
    tokens = [[vocab[t] for t in pt_terms(text)] for text in CORPUS]
    retriever = bm25s.BM25(method="lucene", k1=k1, b=b)
    retriever.index(bm25s.tokenization.Tokenized(ids=tokens, vocab=vocab), show_progress=False)
    for query in QUERIES:
        expected = retriever.get_scores([vocab[t] for t in pt_terms(query) if t in vocab])
        assert dense_scores(index, query, len(CORPUS)) == pytest.approx(expected, abs=1e-6)
        ids, _ = core.rank(index, query, method="bm25", k=3)
        order = sorted(range(len(CORPUS)), key=lambda i: (-expected[i], i))
        assert ids.tolist() == [i for i in order[:3] if expected[i] > 0]


def test_hand_worked_case(tmp_path):
    # N = 3, dl = 2, 3, 1, avgdl = 2; "gato" and "cão" each in 2 chunks:
    # idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6)
    # d0 gato: tf 1, dl 2: 1 / (1 + 1.2 (0.25 + 0.75 * 2/2))   = 1 / 2.2
    # d1 gato: tf 2, dl 3: 2 / (2 + 1.2 (0.25 + 0.75 * 3/2))   = 2 / 3.65
    # d1 cão:  tf 1, dl 3: 1 / (1 + 1.65)                       = 1 / 2.65
    # d2 cão:  tf 1, dl 1: 1 / (1 + 1.2 (0.25 + 0.75 * 1/2))   = 1 / 1.75
    index = indexed(tmp_path, ["gato rato", "gato gato cão", "cão"], bm25_analyzer="simple")
    idf = math.log(1.6)
    assert dense_scores(index, "gato", 3) == pytest.approx([idf / 2.2, idf * 2 / 3.65, 0])
    ids, scores = core.rank(index, "gato cão", method="bm25", k=3)
    assert ids.tolist() == [1, 2, 0]
    assert scores == pytest.approx([idf * (2 / 3.65 + 1 / 2.65), idf / 1.75, idf / 2.2])
    entry = index.methods["bm25"]
    assert (entry["k1"], entry["b"], entry["avgdl"], entry["vocabulary"]) == (1.2, 0.75, 2.0, 3)


def test_repeated_query_terms_count_twice(tmp_path):
    index = indexed(tmp_path, ["gato rato", "rato rato cão"], bm25_analyzer="simple")
    once = dense_scores(index, "gato rato", 2)
    twice = dense_scores(index, "gato rato rato", 2)
    assert twice - once == pytest.approx(dense_scores(index, "rato", 2))


# --- analyzers ---------------------------------------------------------------------------

def test_pt_folds_accents_drops_stopwords_and_stems():
    assert pt_terms("Informações e INFORMAÇÃO sobre as Ações da Universidade") == [
        "inform", "inform", "sobr", "aco", "univers"]
    assert pt_terms("universidades") == pt_terms("universidade") == ["univers"]
    assert pt_terms("ação") == pt_terms("acao") == ["aca"]  # a query typed without accents


def test_pt_stopwords_with_or_without_accents():
    assert pt_terms("Não nao é à às o que DE") == []
    assert pt_terms("São Paulo") == ["paul"]  # "são" is also a verb form, a stopword


def test_simple_and_java():
    assert simple_terms("Não É AÇÃO ½") == ["nao", "e", "acao", "1⁄2"]
    assert java_terms("Não É AÇÃO") == ["não", "é", "ação"]  # unchanged: the parity terms


def test_query_without_accents_finds_accented_text(tmp_path):
    index = indexed(tmp_path, CORPUS)
    assert core.rank(index, "informacoes sobre acoes", method="bm25", k=1)[0].tolist() == [6]


UNACCENTED = ["Sistemas de informacao e gestao para empresas responsaveis.",
              "Receitas de bolo de cenoura com cobertura de chocolate."]


def test_text_typed_without_accents_is_found_with_or_without_them(tmp_path):
    """The documents' words get their suffix's accents as the questions' do (the 28th
    session accented the questions' only: "informacao" in a text was indexed as "informaca"
    and no question found it)."""
    index = indexed(tmp_path, UNACCENTED)
    for query in ("informacao", "informação", "informações", "empresa responsável"):
        assert core.rank(index, query, method="bm25", k=1)[0].tolist() == [0], query
    assert analyzers.ACCENTED in index.methods["bm25"]["analyzer_version"]


@pytest.mark.parametrize("label, question_term", [
    ("snowball portuguese, PyStemmer 3.1.0", "informaca"),  # before the 28th session
    ("snowball portuguese, PyStemmer 3.1.0, plain suffixes re-accented", "inform")])  # 28th
def test_a_build_made_before_the_accents_is_asked_as_it_was_built(tmp_path, monkeypatch,
                                                                   label, question_term):
    """A pt build whose analyzer_version lacks ACCENTED mapped its documents' words as typed;
    its questions are asked as that build asked them until `busca index` builds it again:
    as typed before the 28th session, accented in the 28th session's builds (whose
    "transferencia" found "Transferência": asking those as typed lost it on upgrade)."""
    texts = [*UNACCENTED, "Transferência compulsória de alunos entre universidades."]
    index = indexed_as(tmp_path, monkeypatch, texts, label, _reaccented=lambda term: term)
    assert core.scorer(index, "bm25").term_filter("informacao") == question_term
    assert core.rank(index, "sistemas de informação", method="bm25", k=1)[0].tolist() == [0]

    def top(question):
        try:
            return core.rank(index, question, method="bm25", k=1)[0].tolist()
        except NoSearchableTerms:
            return []
    assert top("informacao") == ([0] if question_term == "informaca" else [])
    assert top("transferencia") == ([] if question_term == "informaca" else [2])


UCAO_TEXTS = ["A devolução do produto e as devoluções parciais seguem a política da loja.",
              "A resolucao do conselho foi publicada sem acentos.",
              "Receitas de bolo de cenoura com cobertura de chocolate."]


def test_ucao_typed_without_accents_finds_its_accented_word(tmp_path):
    """Snowball stems "devolução" to "devolu" but "devolucao" to "devoluca": "-ucao" gets
    its accents back as "-cao" does, in questions and texts ("resolucao" in a text)."""
    index = indexed(tmp_path, UCAO_TEXTS)
    for query in ("devolucao", "devolucoes", "devolução", "devoluções"):
        assert core.rank(index, query, method="bm25", k=1)[0].tolist() == [0], query
    for query in ("resolução", "resolucao"):
        assert core.rank(index, query, method="bm25", k=1)[0].tolist() == [1], query
    assert analyzers.UCAO in index.methods["bm25"]["analyzer_version"]


def test_a_build_made_before_ucao_is_asked_as_it_was_built(tmp_path, monkeypatch):
    """A build whose analyzer_version says ACCENTED but not UCAO indexed "resolucao" as
    "resoluca": its questions keep asking that term until `busca index` builds it again."""
    before, accent = analyzers._ENDINGS_BEFORE_UCAO, analyzers._reaccented
    index = indexed_as(tmp_path, monkeypatch, UCAO_TEXTS,
                       f"snowball portuguese, PyStemmer 3.1.0, {analyzers.ACCENTED}",
                       _PLAIN_ENDINGS=before,
                       _reaccented=lambda term, ends=before: accent(term, ends, False))
    assert core.scorer(index, "bm25").term_filter("resolucao") == "resoluca"
    assert core.rank(index, "resolucao", method="bm25", k=1)[0].tolist() == [1]


UIDO_TEXTS = ["A carga horária foi distribuída entre as disciplinas construídas no curso.",
              "Envie o e-mail através do portal do aluno em português.",
              "Receitas de bolo de cenoura com cobertura de chocolate."]


def test_other_words_typed_without_accents_find_their_accented_word(tmp_path):
    """"construida", "horaria", "atraves", "portugues" and a half-typed "informaçao"
    stemmed apart from their accented words ("construída" -> "construid", "construida" ->
    "constru"), and "email" apart from "e-mail" (whose "e" is a stopword)."""
    index = indexed(tmp_path, UIDO_TEXTS)
    for query in ("carga horaria distribuida", "disciplinas construidas"):
        assert core.rank(index, query, method="bm25", k=1)[0].tolist() == [0], query
    for query in ("email", "atraves do portal", "portugues"):
        assert core.rank(index, query, method="bm25", k=1)[0].tolist() == [1], query
    assert analyzers.UIDO in index.methods["bm25"]["analyzer_version"]


def test_a_build_made_before_uido_is_asked_as_it_was_built(tmp_path, monkeypatch):
    """A build whose analyzer_version says UCAO but not UIDO indexed "distribuída" as
    "distribuid" and "distribuida" as "distribu": its questions keep asking that."""
    texts = ["A tarefa foi distribuida sem acentos.", *UIDO_TEXTS[1:]]
    accent = analyzers._reaccented
    index = indexed_as(tmp_path, monkeypatch, texts, "snowball portuguese, PyStemmer 3.1.0,"
                       f" {analyzers.ACCENTED} ({analyzers.UCAO})", _UI_ENDINGS=(),
                       _PLAIN_WORDS={}, _reaccented=lambda term: accent(term, more=False))
    assert core.scorer(index, "bm25").term_filter("distribuida") == "distribu"
    assert core.rank(index, "distribuida", method="bm25", k=1)[0].tolist() == [0]


NUMBER_TEXTS = ["O curso custa R$ 1.000,00 por semestre e oferece 10.000 vagas.",
                "Informe o CPF 123.456.789-09 e o CEP 01310-100 no formulário.",
                "O prazo é de 000 dias e a taxa de 10 reais, versão 3.12."]


def test_a_number_typed_without_separators_finds_the_one_written_with_them(tmp_path):
    """Brazilian texts write "R$ 1.000,00", "10.000 vagas", a CPF "123.456.789-09": java
    terms split them at every separator, so "quanto custa 1000 reais" missed "1.000,00" and
    "10.000" asked for "10" and "000" (found in "000 dias"). pt counts each group whole,
    canonical; tfidf keeps its java terms."""
    store = LocalHome(tmp_path)
    for i, text in enumerate(NUMBER_TEXTS):
        store.put(Document(f"d{i:02d}", f"T{i}", text))
    build_index(store, methods=("tfidf", "bm25"))
    index = load_index(tmp_path)
    for query in ("quanto custa 1000 reais", "1000", "1.000", "R$ 1000,00"):
        assert core.rank(index, query, method="bm25", k=1)[0].tolist() == [0], query
    assert core.rank(index, "10.000", method="bm25", k=3)[0].tolist() == [0]
    for query in ("12345678909", "123.456.789-09", "01310100", "01310-100"):
        assert core.rank(index, query, method="bm25", k=3)[0].tolist() == [1], query
    assert core.rank(index, "3.12", method="bm25", k=3)[0].tolist() == [2]
    assert analyzers.NUMBERS in index.methods["bm25"]["analyzer_version"]
    tfidf = list(index.terms("tfidf"))
    assert sorted(tfidf) == sorted({t for text in NUMBER_TEXTS for t in java_terms(text)})


def test_en_finds_a_number_typed_without_its_thousands_commas(tmp_path):
    index = indexed(tmp_path, ["The fee is $1,000.00 for 10,000 users.",
                               "Version 3.12 has 000 changes."], bm25_analyzer="en")
    for query in ("1000", "10000", "1,000"):
        assert core.rank(index, query, method="bm25", k=2)[0].tolist() == [0], query


def test_a_build_made_before_numbers_is_asked_as_it_was_built(tmp_path, monkeypatch):
    """A build whose analyzer_version lacks NUMBERS holds "1", "000" and "00" of "1.000,00"
    and no whole: its questions keep asking the parts until `busca index` builds it again
    (asked whole, "1.000,00" found nothing there)."""
    from busca.index.text.counting import piece_terms

    piece_terms.cache_clear()  # (pieces met before, counted with their groups)
    index = indexed_as(tmp_path, monkeypatch, NUMBER_TEXTS, "snowball portuguese, PyStemmer"
                       f" 3.1.0, {analyzers.ACCENTED} ({analyzers.UCAO}; {analyzers.UIDO})",
                       number_groups=lambda text: [])
    piece_terms.cache_clear()
    assert "1000" not in index.terms("bm25")
    assert core.rank(index, "R$ 1.000,00", method="bm25", k=1)[0].tolist() == [0]
    assert core.rank(index, "CPF 123.456.789-09", method="bm25", k=1)[0].tolist() == [1]


GLUED_TEXTS = ["Notas da v2.3.1: corrige o login.", "O release 3.1 mudou o menu.",
               "Percurso de 1.000km em python3.12."]


def test_a_number_glued_to_a_word_is_found_whole(tmp_path):
    """Release notes write "v2.3.1", "python3.12", "1.000km": the group started at the first
    word of digits only, so "v2.3.1" was counted as "3.1" (found by "release 3.1", a
    different version) and "2.3.1" found nothing; "1000 km" missed "1.000km"."""
    index = indexed(tmp_path, GLUED_TEXTS)
    for query in ("2.3.1", "versão 2.3.1", "v2.3.1"):
        assert core.rank(index, query, method="bm25", k=1)[0].tolist() == [0], query
    assert core.rank(index, "3.1", method="bm25", k=3)[0].tolist() == [1]
    for query in ("1000 km", "3.12"):
        assert core.rank(index, query, method="bm25", k=1)[0].tolist() == [2], query
    assert analyzers.GLUED in index.methods["bm25"]["analyzer_version"]


def test_a_build_made_before_glued_numbers_is_asked_as_it_was_built(tmp_path, monkeypatch):
    """A build whose analyzer_version lacks GLUED counted "3.1" of "v2.3.1": its questions
    ask "v2.3.1" so until `busca index` builds it again."""
    from busca.index.text.counting import piece_terms

    number_groups = analyzers.number_groups
    piece_terms.cache_clear()
    index = indexed_as(tmp_path, monkeypatch, GLUED_TEXTS, "snowball portuguese, PyStemmer"
                       f" 3.1.0, {analyzers.ACCENTED} ({analyzers.UCAO}; {analyzers.UIDO}),"
                       f" {analyzers.NUMBERS}",
                       number_groups=lambda text, glued=True: number_groups(text, False))
    piece_terms.cache_clear()
    assert "2.3.1" not in index.terms("bm25") and "3.1" in index.terms("bm25")
    assert core.rank(index, "v2.3.1", method="bm25", k=1)[0].tolist() == [0]


ORDINAL_TEXTS = ["Art. 5º Todos são iguais perante a lei; § 1º As normas têm aplicação imediata.",
                 "A 2ª Turma julgou o recurso no 3º andar do fórum.",
                 "O inciso 7 trata dos direitos dos trabalhadores urbanos e rurais."]


def test_an_ordinal_is_found_by_its_number(tmp_path):
    """Brazilian laws write "Art. 5º", "§ 1º", "2ª Turma": pt indexed "5º" as "5o", so
    "artigo 5" and "§ 1" found nothing there, and "1o andar" typed on a keyboard without º
    matched "1º" but not the "1°" that many sites type."""
    index = indexed(tmp_path, ORDINAL_TEXTS + ["Fica no 1° andar, sala 12."])
    for query in ("artigo 5", "art. 5º", "art 5o"):
        assert core.rank(index, query, method="bm25", k=1)[0].tolist() == [0], query
    assert sorted(core.rank(index, "§ 1", method="bm25", k=4)[0].tolist()) == [0, 3]
    for query in ("2 turma", "2a turma", "2ª Turma", "3 andar", "3º andar"):
        assert core.rank(index, query, method="bm25", k=1)[0].tolist() == [1], query
    assert core.rank(index, "1º andar", method="bm25", k=1)[0].tolist() == [3]
    assert core.rank(index, "inciso 7", method="bm25", k=1)[0].tolist() == [2]
    assert analyzers.ORDINALS in index.methods["bm25"]["analyzer_version"]


def test_a_build_made_before_ordinals_is_asked_as_it_was_built(tmp_path, monkeypatch):
    """A build whose analyzer_version lacks ORDINALS indexed "5º" as "5o": its questions
    keep asking "5o" for "5º" until `busca index` builds it again."""
    index = indexed_as(tmp_path, monkeypatch, ORDINAL_TEXTS, "snowball portuguese, PyStemmer"
                       f" 3.1.0, {analyzers.ACCENTED} ({analyzers.UCAO}; {analyzers.UIDO}),"
                       f" {analyzers.NUMBERS}, {analyzers.GLUED}",
                       _ordinal_number=lambda folded: None)
    assert "5o" in index.terms("bm25") and core.scorer(index, "bm25").term_filter("5º") == "5o"
    assert core.rank(index, "art. 5º", method="bm25", k=1)[0].tolist() == [0]


def test_a_question_of_unknown_words_names_them_as_typed(tmp_path):
    """bm25 said "none of the query's words occurs in the index: xilofon" (the stem)."""
    index = indexed(tmp_path, UCAO_TEXTS)
    with pytest.raises(NoSearchableTerms, match=r"in the index: xilofones, ornitorrincos$"):
        core.rank(index, "Os xilofones dos ornitorrincos", method="bm25", k=1)


def test_default_analyzer_is_pt_and_recorded(tmp_path):
    entry = indexed(tmp_path, CORPUS).methods["bm25"]
    assert entry["analyzer"] == "pt" and "PyStemmer" in entry["analyzer_version"]


# --- bad input ----------------------------------------------------------------------------

def test_unknown_analyzer_lists_the_known_ones(tmp_path):
    with pytest.raises(UnknownAnalyzer, match="java, pt, simple"):
        get_analyzer("klingon")
    store = LocalHome(tmp_path)
    store.put(Document("a", "A", "gato"))
    with pytest.raises(UnknownAnalyzer, match="java, pt, simple"):
        build_index(store, methods=("tfidf", "bm25"), options={"bm25_analyzer": "klingon"})
    assert not list(tmp_path.glob("index-*"))  # refused before any work


@pytest.fixture
def no_stemmer(monkeypatch):
    """PyStemmer not installed."""
    monkeypatch.setitem(sys.modules, "Stemmer", None)
    analyzers.portuguese_stemmer.cache_clear()
    yield
    analyzers.portuguese_stemmer.cache_clear()


def test_pt_without_pystemmer_names_the_extra(no_stemmer, tmp_path):
    with pytest.raises(MissingStemmer, match=r"pip install 'busca\[pt\]'"):
        get_analyzer("pt")
    assert analyzers.default_bm25_analyzer() == "simple"
    assert indexed(tmp_path, CORPUS).methods["bm25"]["analyzer"] == "simple"


def test_cli_without_pystemmer(run, home, tmp_path, no_stemmer):
    _add(run, tmp_path)
    result = run("index", "--analyzer", "pt")
    assert result.exit_code == 1
    assert "busca[pt]" in result.output and "Traceback" not in result.output


def test_cli_search_on_a_pt_index_without_pystemmer(run, tmp_path, monkeypatch):
    _add(run, tmp_path)
    assert run("index", "--analyzer", "pt").exit_code == 0
    monkeypatch.setitem(sys.modules, "Stemmer", None)
    analyzers.portuguese_stemmer.cache_clear()
    try:
        result = run("search", "prazo do reembolso", "--method", "bm25")
    finally:
        analyzers.portuguese_stemmer.cache_clear()
    assert result.exit_code == 1 and "busca[pt]" in result.output


@pytest.mark.parametrize("k1, b", [(-0.1, 0.75), (10.5, 0.75), (float("nan"), 0.75),
                                   (1.2, -0.01), (1.2, 1.5), ("1", 0.5)])
def test_k1_and_b_out_of_range(k1, b):
    with pytest.raises(Bm25ParameterError):
        check_parameters(k1, b)


@pytest.mark.parametrize("option, value", [("--k1", "-1"), ("--k1", "11"), ("--b", "1.1"),
                                           ("--analyzer", "klingon")])
def test_cli_rejects_bad_bm25_options(run, tmp_path, option, value):
    _add(run, tmp_path)
    result = run("index", option, value)
    assert result.exit_code == 2
    assert option.lstrip("-") in result.output
    if option == "--analyzer":
        assert "'java', 'pt', 'simple'" in result.output


def test_all_stopword_query_has_no_hits_and_says_why(tmp_path, run):
    index = indexed(tmp_path / "lib", CORPUS)
    with pytest.raises(NoSearchableTerms, match="stopword.*o, que, é"):
        core.scorer(index, "bm25").score("o que é?")
    _add(run, tmp_path)
    run("index")
    result = run("search", "o que é?", "--method", "bm25")
    assert result.exit_code == 3 and result.stdout == ""  # nothing found
    assert "no hits" in result.stderr and "stopword" in result.stderr


# --- CLI ----------------------------------------------------------------------------------

def _add(run, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"url": f"d{i}", "title": f"T{i}", "text": t},
                                         ensure_ascii=False) + "\n"
                              for i, t in enumerate(CORPUS)), encoding="utf-8")
    assert run("add", str(corpus)).exit_code == 0


def test_cli_index_options_reach_the_manifest(run, tmp_path):
    _add(run, tmp_path)
    assert run("index").exit_code == 0
    methods = json.loads(run("stats", "--json").stdout)["methods"]
    assert list(methods) == ["tfidf", "bm25"]  # the default methods
    assert methods["bm25"]["analyzer"] == "pt"
    result = run("index", "--methods", "bm25", "--k1", "0.9", "--b", "0.4", "--analyzer", "simple")
    assert result.exit_code == 0
    entry = json.loads(run("stats", "--json").stdout)["methods"]["bm25"]
    assert (entry["k1"], entry["b"], entry["analyzer"]) == (0.9, 0.4, "simple")
    hits = run("search", "prazo do reembolso", "--method", "bm25", "--json").stdout.splitlines()
    assert json.loads(hits[0])["url"] == "d0"


def test_beir_folder_run(run, tmp_path):
    """tests/data/beir-tiny: 4 of 5 queries find their documents on top, one shares no word
    with the corpus (see its README), so nDCG@10 = 0.8."""
    beir = REPO / "tests" / "data" / "beir-tiny"
    assert run("add", str(beir / "corpus.jsonl")).exit_code == 0
    assert run("index", "--size", "1000", "--overlap", "0", "--methods", "bm25").exit_code == 0
    result = run("eval", str(beir), "--methods", "bm25", "--json", "-q")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["summary"]["bm25"]["ndcg@10"]["mean"] == pytest.approx(0.8)


def test_faquad_paragraphs_reach_the_published_stemmed_bm25(tmp_path):
    """FaQuAD task A (249 paragraphs as documents, 900 questions): nDCG@10 >= 0.91."""
    data = json.loads((FIXTURES / "faquad" / "dataset.json").read_text(encoding="utf-8"))
    store = LocalHome(tmp_path)
    questions = []
    for d, doc in enumerate(data["data"]):
        for p, paragraph in enumerate(doc["paragraphs"]):
            url = f"p{d:02d}-{p:02d}"
            store.put(Document(url, doc["title"], paragraph["context"]))
            questions += [(qa["question"], url) for qa in paragraph["qas"]]
    build_index(store, size=100_000, overlap=0, methods=("bm25",))
    index = load_index(tmp_path)
    urls = [row.url for row in index.chunks()]
    gains = []
    for question, url in questions:
        ranked = [urls[i] for i in core.rank(index, question, method="bm25", k=10)[0]]
        gains.append(1 / math.log2(ranked.index(url) + 2) if url in ranked else 0.0)
    assert len(gains) == 900 and sum(gains) / len(gains) >= 0.91


def test_a_fallback_from_pt_is_one_warning_on_stderr(run, home, tmp_path):
    """Issue 10 item 12: without PyStemmer, bm25 falls back to `simple`, never silently."""
    _add(run, tmp_path)
    without = "import sys; sys.modules['Stemmer'] = None; from busca.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", without, "--home", str(home), "index", "-q"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    warning = "PyStemmer is not installed, so bm25 uses the simple analyzer"
    assert done.stderr.count(warning) == 1, done.stderr
    assert "--analyzer simple" in done.stderr
    assert load_index(home).methods["bm25"]["analyzer"] == "simple"
    chosen = subprocess.run([sys.executable, "-c", without, "--home", str(home), "index", "-q",
                             "--analyzer", "simple"], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120)
    assert chosen.returncode == 0 and warning not in chosen.stderr  # chosen, not a fallback
