"""search/highlight.py: analyzer-aware spans, snippets and marking."""

import pytest

from busca.search import highlight


def words(text, found):
    return [text[a:b] for a, b in found]


def test_pt_highlights_stemmed_and_accented_forms():
    text = "As informações do Estágio: informar o estagio supervisionado de 400 horas."
    found = highlight.spans(text, "informação sobre estágios", "pt")
    assert words(text, found) == ["informações", "Estágio", "informar", "estagio"]


def test_pt_and_en_light_up_a_number_group_whole():
    """"quanto custa 1000 reais" found "R$ 1.000,00" (bm25 counts the group whole) but lit
    nothing of it; a part inside a lit group is not lit again ("10" of "10.000")."""
    text = "O curso custa R$ 1.000,00 e oferece 10.000 vagas; CPF 123.456.789-09."
    found = highlight.spans(text, "quanto custa 1000 reais 10 10.000 12345678909", "pt")
    assert words(text, found) == ["custa", "1.000,00", "10.000", "123.456.789-09"]
    assert words(text, highlight.spans(text, "1,000 123456789-09", "en")) == \
        ["123.456.789-09"]
    assert words(text, highlight.spans(text, "1000", "java")) == []


def test_a_number_glued_to_a_word_lights_up_the_word_whole():
    """"2.3.1" finds "v2.3.1" and "1000 km" finds "1.000km" (the group is counted from
    inside the word): the word lights up whole, never as "v2" beside an overlapping
    "2.3.1"."""
    text = "A versão v2.3.1 corrige o erro da rota de 1.000km; python3.12 também."
    for question, lit in (("v2.3.1", ["v2.3.1"]), ("2.3.1", ["v2.3.1"]),
                          ("1000 km", ["1.000km"]), ("3.12", ["python3.12"])):
        found = highlight.spans(text, question, "pt")
        assert words(text, found) == lit, question
        assert all(b <= a2 for (_, b), (a2, _) in zip(found, found[1:])), question


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


LONG = "palavra " * 60  # 480 characters without a sentence break


def test_a_match_no_sentence_start_reaches_is_shown_a_few_words_after_the_cut():
    """The only sentence start is 0, 480 characters before the match: the snippet showed the
    first 80 characters of "palavra" and no highlight. Hand-worked: it starts 3 words before
    "reembolso"; 80 characters from there end inside the 6th "mais", cut back to the space."""
    text = LONG + "o reembolso chega em dez dias úteis " + "mais " * 20
    piece, found = highlight.snippet(text, "reembolsos", "pt", width=80)
    assert piece == ("… palavra palavra o reembolso chega em dez dias úteis"
                     " mais mais mais mais mais …")
    assert words(piece, found) == ["reembolso"] and found == [(20, 29)]


def test_a_far_sentence_start_before_the_match_is_not_taken():
    text = "Começo. " + LONG + "o reembolso chega"
    piece, found = highlight.snippet(text, "reembolso", "pt", width=80)
    assert piece == "… palavra palavra o reembolso chega" and words(piece, found) == ["reembolso"]


def test_a_sentence_start_within_the_width_before_the_match_is_taken():
    text = LONG + "fim. Depois vem o reembolso em dez dias"
    piece, found = highlight.snippet(text, "reembolso", "pt", width=80)
    assert piece == "… Depois vem o reembolso em dez dias" and words(piece, found) == ["reembolso"]


def test_more_distinct_words_without_a_sentence_start_beat_a_sentence_with_fewer():
    text = LONG + "o reembolso do boleto " + "palavra " * 30 + "fim. Reembolso aqui."
    piece, found = highlight.snippet(text, "reembolso boleto", "pt", width=60)
    # both matches' starts show the two words; 3 words before "boleto" is nearer the first
    assert piece == "… o reembolso do boleto palavra palavra palavra palavra …"
    assert words(piece, found) == ["reembolso", "boleto"]


def test_a_focus_no_sentence_start_reaches_is_shown():
    """`at` (a golden passage's position, display.marked_snippet): the sentence holding it
    starts 480 characters before, so the passage was never on screen."""
    text = LONG + "o prazo do estorno é de sete dias " + "mais " * 20
    at = text.index("sete dias")
    piece, found = highlight.snippet(text, "xyz", "pt", width=60, at=at)
    assert piece == "… estorno é de sete dias mais mais mais mais mais mais mais …"
    assert found == []
    short = "Uma frase. " + "O prazo é de sete dias."
    assert highlight.snippet(short, "xyz", "pt", at=short.index("sete"))[0] == (
        "… O prazo é de sete dias.")  # the sentence start, as before


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


# runs without a space, each a character and what joins it: Devanagari vowel signs and
# virama (Mn, Mc), an emoji and its skin tone, a flag's two regional indicators, a family
# joined by ZWJ
CLUSTERS = [["न", "म", "स्", "ते"], ["👍🏽"], ["🇧🇷", "🇵🇹"], ["👨\u200d👩\u200d👧"]]


@pytest.mark.parametrize("clusters", CLUSTERS, ids=["devanagari", "skin", "flags", "zwj"])
def test_a_snippet_cut_without_a_space_keeps_each_character_with_its_marks(clusters):
    """A run with no space in the snippet's width was cut at exactly `width` characters:
    "नमस्ते" cut after "स" showed its virama alone at the start of nothing, "👍🏽" lost its
    skin tone, "🇧🇷" became the letter B. The cut now falls between two of them."""
    text = "".join(clusters * 40)
    for width in range(1, 25):
        piece, _ = highlight.snippet(text, "nada", "java", width=width)
        body = piece.removesuffix(" …")
        assert piece.endswith(" …") and body and text.startswith(body)
        at, kept = 0, 0
        while at < len(body):  # the body is whole clusters, one after another
            cluster = clusters[kept % len(clusters)]
            assert body.startswith(cluster, at), (width, body)
            at, kept = at + len(cluster), kept + 1
