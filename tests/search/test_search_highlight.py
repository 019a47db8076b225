"""search/highlight.py: analyzer-aware spans, snippets and marking."""

from busca.search import highlight


def words(text, found):
    return [text[a:b] for a, b in found]


def test_pt_highlights_stemmed_and_accented_forms():
    text = "As informações do Estágio: informar o estagio supervisionado de 400 horas."
    found = highlight.spans(text, "informação sobre estágios", "pt")
    assert words(text, found) == ["informações", "Estágio", "informar", "estagio"]


def test_simple_folds_accents_but_does_not_stem():
    text = "Ação e acao, mas não ações."
    assert words(text, highlight.spans(text, "AÇÃO", "simple")) == ["Ação", "acao"]


def test_java_matches_the_lowercase_word_only():
    text = "Ação e acao e AÇÃO."
    assert words(text, highlight.spans(text, "ação", "java")) == ["Ação", "AÇÃO"]


def test_stopwords_are_never_highlighted():
    text = "O prazo de entrega é de uma semana."
    assert words(text, highlight.spans(text, "qual é o prazo de entrega", "java")) == [
        "prazo", "entrega"]
    assert highlight.spans(text, "de o é", "pt") == []


def test_snippet_starts_at_the_best_sentence_and_shifts_spans():
    text = ("Primeira frase sem nada. " * 20) + "Aqui o reembolso chega em dez dias úteis."
    piece, found = highlight.snippet(text, "reembolsos", "pt", width=80)
    assert piece.startswith("… Aqui o reembolso")
    assert words(piece, found) == ["reembolso"]


def test_mark_wraps_each_span():
    assert highlight.mark("um dois três", [(3, 7), (8, 12)], "[", "]") == "um [dois] [três]"


def test_analyzer_for_method():
    methods = {"tfidf": {"analyzer": "java"}, "bm25": {"analyzer": "pt"}, "dense": {}}
    assert highlight.analyzer_for(methods, "tfidf") == "java"
    assert highlight.analyzer_for(methods, "dense") == "pt"
    assert highlight.analyzer_for({}, "dense") == "pt"


def test_en_stems_the_english_way_and_keeps_portuguese_stopword_lookalikes():
    text = "The patient's studies come first; a study of patients."
    assert words(text, highlight.spans(text, "study patient come", "en")) == [
        "patient", "studies", "come", "study", "patients"]
