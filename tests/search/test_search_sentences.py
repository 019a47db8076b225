"""search/sentences.py: where sentences end, and widening a window to whole sentences."""

from busca.search import sentences as se


def test_sentence_stops_after_punctuation_closers_and_line_breaks():
    text = 'Ele disse "vá!" e foi. Versão 3.5 saiu\nTítulo sem ponto\nFim?'
    stops = se.sentence_stops(text, 0, len(text))
    pieces = [text[a:b].strip() for a, b in zip([0, *stops], stops)]
    assert pieces == ['Ele disse "vá!"', "e foi.", "Versão 3.5 saiu", "Título sem ponto", "Fim?"]


def test_widen_reaches_the_sentence_boundaries():
    text = "Primeira frase. Segunda frase bem longa aqui. Terceira."
    start = text.index("frase bem")
    end = text.index("longa") + len("longa")
    a, b = se.widen(text, start, end)
    assert text[a:b] == "Segunda frase bem longa aqui."


def test_widen_goes_no_further_than_its_reach():
    text = "x " * 100 + "meio " + "y " * 100
    start = text.index("meio")
    assert se.widen(text, start, start + 4, reach=20) == (start, start + 4)
    assert se.widen(text, start, start + 4, reach=1000) == (0, len(text.rstrip()))


def test_sentences_are_stripped_and_keep_an_unpunctuated_tail():
    text = "  Primeira.\n\nSegunda!  terceira sem ponto  "
    assert [text[a:b] for a, b in se.sentences(text)] == [
        "Primeira.", "Segunda!", "terceira sem ponto"]
    assert se.sentences("   ") == []


def test_a_window_already_on_sentence_boundaries_stays_put():
    text = "Antes disso. Janela inteira aqui. Depois disso."
    start, end = text.index("Janela"), text.index("aqui.") + len("aqui.")
    assert se.widen(text, start, end) == (start, end)
    assert se.widen(text, 0, 5) == (0, len("Antes disso."))
    last = text.index("Depois")
    assert se.widen(text, last + 7, len(text)) == (last, len(text))
