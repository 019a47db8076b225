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


SENTENCES_CHECK = """
from busca.search import sentences as se
text = "." * 100_000 + "a"  # a crawled page of dots (or "?!…") with no space after
se.sentences(text), se.sentence_stops(text, 10, 90_000), se.widen(text, 50_000, 50_001)
print("done")
"""


def test_a_run_of_marks_without_a_space_is_read_once():
    """A stored text of 100,000 "." before a letter: the lookahead after the run of marks
    made the pattern read the run again from each mark, minutes for each search or context
    that reached the page; a fraction of a second now."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", SENTENCES_CHECK], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr


def test_a_run_of_marks_ends_a_sentence_only_before_whitespace_or_the_end():
    text = "Fim...a b?!» c.\td..."
    assert se.sentence_stops(text, 0, len(text)) == [text.index("»") + 1, text.index("\t"),
                                                     len(text)]
    assert se.sentence_stops(text, 0, 6) == [6]  # the end of the window counts as the end
    assert se.sentences("...") == [(0, 3)]


def test_pieces_split_only_an_overlong_sentence_at_spaces():
    """A budget cuts at `pieces`: sentences as they are, and a sentence longer than twice
    the reach split into runs of whole words of at most SENTENCE_REACH characters."""
    short = "Uma frase curta."
    run_on = " ".join(f"palavra{n}" for n in range(200))  # no sentence end at all
    text = f"{short} {run_on}"
    found = se.pieces(text)
    assert found[0] == se.sentences(text)[0] and len(found) > 2
    assert " ".join(text[a:b] for a, b in found[1:]) == run_on
    assert all(b - a <= se.SENTENCE_REACH for a, b in found[1:])
    assert all(text[a - 1] == " " and (b == len(text) or text[b] == " ") for a, b in found[1:])
    assert se.pieces(short) == se.sentences(short)
