"""Sentence boundaries in stored text, for cutting passages where a sentence ends.

A sentence ends after `.`, `!`, `?` or `…` (with any closing quotes or brackets) before
whitespace, or at a line break: titles and list items often have no final punctuation.
Abbreviations ("Dr. Silva") count as ends; that only makes a cut a little shorter.
"""

from __future__ import annotations

import re

SENTENCE_REACH = 300  # how far a window is widened to reach a sentence boundary

_MARKS = re.compile(r"[.!?…]+[\"'”’»)\]]*|\n")  # an end when whitespace or the end follows
_WORD = re.compile(r"\S+")


def _sentence_ends(text: str, pos: int = 0, endpos: int | None = None):
    """The matches of a sentence's end in text[pos:endpos], each run of marks read once (a
    lookahead after the run made a text of 50,000 "." read it again from each one)."""
    endpos = len(text) if endpos is None else min(endpos, len(text))
    for m in _MARKS.finditer(text, pos, endpos):
        if m.end() == endpos or m.group() == "\n" or text[m.end()].isspace():
            yield m


def sentence_stops(text: str, start: int, end: int) -> list[int]:
    """Positions in (start, end] where a sentence of text[start:end] ends."""
    stops = []
    for m in _sentence_ends(text, start, end):
        stop = m.start() if m.group() == "\n" else m.end()
        if stop > start and text[start:stop].strip():
            stops.append(stop)
    return stops


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, without surrounding whitespace."""
    bounds = [0, *sentence_stops(text, 0, len(text))]
    if bounds[-1] < len(text):
        bounds.append(len(text))
    out = []
    for a, b in zip(bounds, bounds[1:]):
        piece = text[a:b]
        if piece.strip():
            out.append((a + len(piece) - len(piece.lstrip()), a + len(piece.rstrip())))
    return out


def pieces(text: str, *, longest: int = 2 * SENTENCE_REACH) -> list[tuple[int, int]]:
    """`sentences`, with each one longer than `longest` characters (a table, a run-on
    extract: no sentence end within `widen`'s reach) split at spaces into runs of words of
    at most SENTENCE_REACH characters (a longer word alone): the units a budget cuts at."""
    out = []
    for a, b in sentences(text):
        if b - a <= longest:
            out.append((a, b))
            continue
        start = end = a
        for m in _WORD.finditer(text, a, b):
            if end > start and m.end() - start > SENTENCE_REACH:
                out.append((start, end))
                start = m.start()
            end = m.end()
        out.append((start, end))
    return out


def widen(text: str, start: int, end: int, *, reach: int = SENTENCE_REACH) -> tuple[int, int]:
    """Move `start` back to its sentence's start and `end` on to its sentence's end."""
    return _sentence_start(text, start, reach), _sentence_stop(text, end, reach)


def _sentence_start(text: str, start: int, reach: int) -> int:
    lo = max(0, start - reach)
    found = None
    for m in _sentence_ends(text, lo):
        if m.end() > start:
            break
        found = m.end()
    if found is None:
        return 0 if lo == 0 else start
    while found < start and text[found].isspace():
        found += 1
    return found


def _sentence_stop(text: str, end: int, reach: int) -> int:
    for m in _sentence_ends(text, max(0, end - 8)):
        stop = m.start() if m.group() == "\n" else m.end()
        if stop > end + reach:
            break
        if stop >= end:
            return stop
    return len(text.rstrip()) if len(text) <= end + reach else end
