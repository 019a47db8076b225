"""Split a document's text into chunks that remember their character span.

`chunk_words` reproduces the seed's Java `dividir` exactly: words are the tokens of
`text.trim().split("\\s+")` (Java's trim drops every char <= U+0020 at both ends; Java's
`\\s` is only ASCII whitespace, so a no-break space does not split words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SIZE = 200
OVERLAP = 40

_JAVA_SPACE = re.compile(r"[^ \t\n\x0b\f\r]+")


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: its position, character span and text."""

    position: int
    start: int
    end: int
    text: str


class ChunkingError(ValueError):
    """Chunking parameters that cannot work."""


def words(text: str) -> list[tuple[int, int]]:
    """Character spans of the Java-parity words of `text`."""
    lo, hi = 0, len(text)
    while lo < hi and text[lo] <= " ":
        lo += 1
    while hi > lo and text[hi - 1] <= " ":
        hi -= 1
    return [(m.start(), m.end()) for m in _JAVA_SPACE.finditer(text, lo, hi)]


def window_starts(n_words: int, *, size: int = SIZE, overlap: int = OVERLAP) -> list[int]:
    """Start word of each window: 0, size-overlap, ... up to the one reaching the end."""
    check_window(size, overlap)
    starts = []
    for start in range(0, n_words, size - overlap):
        starts.append(start)
        if start + size >= n_words:
            break
    return starts


def check_window(size: int, overlap: int) -> None:
    """Refuse window parameters that cannot make progress."""
    if size < 1:
        raise ChunkingError(f"window size must be at least 1 word, got {size}")
    if overlap < 0 or overlap >= size:
        raise ChunkingError(
            f"overlap must be between 0 and size - 1 ({size - 1}), got {overlap}"
        )


def chunk_words(text: str, *, size: int = SIZE, overlap: int = OVERLAP) -> list[Chunk]:
    """Windows of `size` words that overlap by `overlap` words (the seed's `dividir`)."""
    spans = words(text)
    chunks = []
    for position, start in enumerate(window_starts(len(spans), size=size, overlap=overlap)):
        window = spans[start : start + size]
        body = " ".join(text[a:b] for a, b in window)
        chunks.append(Chunk(position, window[0][0], window[-1][1], body))
    return chunks


def chunk_text(text: str, start: int, end: int) -> str:
    """The text of a word chunk rebuilt from its span of the document text."""
    piece = text[start:end]
    return " ".join(piece[a:b] for a, b in words(piece))
