import pytest

from busca.index.text.chunking import (ChunkingError, chunk_text, chunk_words, window_starts,
                                  words)


def numbered(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


@pytest.mark.parametrize("n, expected", [
    (0, []), (1, [0]), (199, [0]), (200, [0]), (201, [0, 160]), (360, [0, 160]),
    (361, [0, 160, 320]), (450, [0, 160, 320]),
])
def test_window_starts_follow_dividir(n, expected):
    assert window_starts(n) == expected


def test_windows_take_200_words_with_40_overlap():
    chunks = chunk_words(numbered(450))
    assert [len(c.text.split()) for c in chunks] == [200, 200, 130]
    assert chunks[1].text.split()[0] == "w160"
    assert chunks[0].text.split()[-40:] == chunks[1].text.split()[:40]
    assert chunks[-1].text.split()[-1] == "w449"


def test_empty_and_blank_text_have_no_chunk():
    assert chunk_words("") == []
    assert chunk_words(" \n\t ") == []


def test_java_whitespace_rules():
    # Java's \s is ASCII only: a no-break space does not split words; trim drops
    # control characters at both ends.
    text = "\x01 um\u00a0dois\ttrês\n quatro \x02"
    assert [text[a:b] for a, b in words(text)] == ["um\u00a0dois", "três", "quatro"]


def test_span_maps_back_to_text():
    text = "  Olá,  mundo!\n\nSegunda   linha com\tacentos: ção.  " * 50
    for chunk in chunk_words(text, size=7, overlap=2):
        assert chunk_text(text, chunk.start, chunk.end) == chunk.text
        assert text[chunk.start:chunk.end].split() == chunk.text.split()


@pytest.mark.parametrize("size, overlap", [(200, 200), (10, 11), (0, 0), (5, -1)])
def test_bad_window_parameters(size, overlap):
    with pytest.raises(ChunkingError):
        chunk_words("a b c", size=size, overlap=overlap)
