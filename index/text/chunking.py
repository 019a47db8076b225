"""Split a document's text into chunks that remember their character span.

`chunk_words` reproduces the seed's Java `dividir` exactly: words are the tokens of
`text.trim().split("\\s+")` (Java's trim drops every char <= U+0020 at both ends; Java's
`\\s` is only ASCII whitespace, so a no-break space does not split words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...citation import section
from ...errors import BuscaError

SIZE = 200
OVERLAP = 40

JAVA_SPACE = " \t\n\x0b\f\r"  # Java's \s: ASCII whitespace only
_JAVA_WORD = re.compile(f"[^{JAVA_SPACE}]+")
# Python's str.split() also splits at these, Java's split does not.
_PYTHON_ONLY_SPACE = ("\xa0\x85\x1c\x1d\x1e\x1f\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                      "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: its position, character span and text."""

    position: int
    start: int
    end: int
    text: str


class ChunkingError(BuscaError, ValueError):
    """Chunking parameters that cannot work."""


class BadWindow(ChunkingError):
    """An overlap not smaller than the window size (`size_from`, `overlap_from`: whose value
    it is when the caller did not give it, e.g. "the previous build's"); the message names
    the options as Python and HTTP do, `worded` as a front end spells them (busca index:
    --size, --overlap)."""

    def __init__(self, size: int, overlap: int, *, size_from: str = "",
                 overlap_from: str = ""):
        self.size, self.overlap = size, overlap
        self.size_from, self.overlap_from = size_from, overlap_from
        super().__init__(self.worded())

    def worded(self, size: str = "size", overlap: str = "overlap") -> str:
        return (f"the overlap ({self.overlap} words{_whose(self.overlap_from)}) must be smaller"
                f" than the window size ({self.size} words{_whose(self.size_from)}): give"
                f" {overlap} below {self.size}, or {size} above {self.overlap}")


def _whose(origin: str) -> str:
    return f", {origin}" if origin else ""


def words(text: str) -> list[tuple[int, int]]:
    """Character spans of the Java-parity words of `text`."""
    lo, hi = 0, len(text)
    while lo < hi and text[lo] <= " ":
        lo += 1
    while hi > lo and text[hi - 1] <= " ":
        hi -= 1
    return [(m.start(), m.end()) for m in _JAVA_WORD.finditer(text, lo, hi)]


def splits_like_java(text: str) -> bool:
    """True when `text.split()` gives the Java words (a fast path for `words`): no
    Python-only whitespace, and no control character at either end (Java's trim() drops
    every char <= U+0020 there)."""
    if any(c in text for c in _PYTHON_ONLY_SPACE):
        return False
    core = text.strip(JAVA_SPACE)
    return not core or (core[0] > " " and core[-1] > " ")


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
    if overlap < 0:
        raise ChunkingError(f"the overlap must be 0 words or more, got {overlap}")
    if overlap >= size:
        raise BadWindow(size, overlap)


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


# --- sentence chunks (the seed's `chunk_por_frase`) and chunker specs -------------------

MAX_CHARS = 220
SENTENCE_OVERLAP = 1

_SENTENCE_GAP = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of `text`: cut only at whitespace after . ! or ?."""
    lo, hi = 0, len(text)
    while lo < hi and text[lo].isspace():
        lo += 1
    while hi > lo and text[hi - 1].isspace():
        hi -= 1
    if lo == hi:
        return []
    spans, start = [], lo
    for gap in _SENTENCE_GAP.finditer(text, lo, hi):
        spans.append((start, gap.start()))
        start = gap.end()
    spans.append((start, hi))
    return spans


def chunk_sentences(text: str, *, max_chars: int = MAX_CHARS,
                    overlap: int = SENTENCE_OVERLAP) -> list[Chunk]:
    """Whole sentences joined by one space up to `max_chars`; the next chunk repeats the last
    `overlap` sentences (the seed's `chunk_por_frase`; one long sentence is a chunk alone)."""
    if max_chars < 1:
        raise ChunkingError(f"max_chars must be at least 1, got {max_chars}")
    if overlap < 0:
        raise ChunkingError(f"overlap must be 0 or more sentences, got {overlap}")
    spans = sentences(text)
    groups: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    for span in spans:
        joined = sum(b - a for a, b in current) + len(current) + (span[1] - span[0])
        if current and joined > max_chars:
            groups.append(current)
            current = current[-overlap:] if overlap else []
        current = current + [span]
    if current:
        groups.append(current)
    return [Chunk(position, group[0][0], group[-1][1], " ".join(text[a:b] for a, b in group))
            for position, group in enumerate(groups)]


# --- section chunks: word windows that never cross a heading ---------------------------

def chunk_sections(text: str, headings=(), *, size: int = SIZE,
                   overlap: int = OVERLAP) -> list[Chunk]:
    """Word windows cut anew at every heading (`headings`: the document's meta.headings,
    [offset, level, text, anchor]); each window's indexed text starts with its heading path
    ("Reembolso › Prazos"), while its span covers the document's own text only."""
    check_window(size, overlap)
    meta = {"headings": [list(h) for h in headings or ()]}
    cuts = sorted({0, *(h[0] for h in meta["headings"] if isinstance(h[0], int)
                        and 0 < h[0] < len(text))})
    chunks: list[Chunk] = []
    for start, end in zip(cuts, [*cuts[1:], len(text)]):
        path = section(meta, start)
        for piece in chunk_words(text[start:end], size=size, overlap=overlap):
            body = f"{path}\n{piece.text}" if path else piece.text
            chunks.append(Chunk(len(chunks), start + piece.start, start + piece.end, body))
    return chunks


CHUNKER_DEFAULTS = {"words": (SIZE, OVERLAP), "sentences": (MAX_CHARS, SENTENCE_OVERLAP),
                    "sections": (SIZE, OVERLAP)}


def parse_chunker(spec: str) -> dict:
    """A chunker spec ("words:200:40", "sentences:220:1", "words") as a manifest dict."""
    kind, _, rest = spec.strip().partition(":")
    if kind not in CHUNKER_DEFAULTS:
        raise ChunkingError(f"unknown chunker {spec!r}; use words[:SIZE[:OVERLAP]],"
                            " sections[:SIZE[:OVERLAP]] or sentences[:MAX_CHARS[:OVERLAP]],"
                            " e.g. words:200:40")
    parts = rest.split(":") if rest else []
    if len(parts) > 2 or not all(p.strip().isdigit() for p in parts):
        raise ChunkingError(f"chunker {spec!r}: expected {kind}:N:M with whole numbers")
    first, second = [int(p) for p in parts] + list(CHUNKER_DEFAULTS[kind][len(parts):])
    if kind in ("words", "sections"):
        try:
            check_window(first, second)
        except BadWindow as e:  # KIND:SIZE:OVERLAP names no option
            raise ChunkingError(f"chunker {spec!r}: {e.worded('its size', 'its overlap')}"
                                ) from None
        return {"kind": kind, "size": first, "overlap": second}
    chunk_sentences("", max_chars=first, overlap=second)  # validates the numbers
    return {"kind": "sentences", "max_chars": first, "overlap": second}


def chunker_label(chunker: dict) -> str:
    """The spec string of a chunker dict: "words:200:40"."""
    first = chunker["max_chars"] if chunker["kind"] == "sentences" else chunker["size"]
    return f"{chunker['kind']}:{first}:{chunker['overlap']}"


def chunk_with(chunker: dict, text: str, headings=()) -> list[Chunk]:
    """Chunks of `text` by a chunker dict (from `parse_chunker` or a manifest); `headings`
    (the document's meta.headings) only matter to the sections chunker."""
    if chunker["kind"] == "words":
        return chunk_words(text, size=chunker["size"], overlap=chunker["overlap"])
    if chunker["kind"] == "sections":
        return chunk_sections(text, headings, size=chunker["size"], overlap=chunker["overlap"])
    if chunker["kind"] == "sentences":
        return chunk_sentences(text, max_chars=chunker["max_chars"], overlap=chunker["overlap"])
    raise ChunkingError(f"unknown chunker kind {chunker['kind']!r}")
