"""Analyzer-aware highlighting: where in a text are the words that match the query.

A word of the text is highlighted when the analyzer maps it to a term the analyzer also
makes of the query: with `pt`, "informações" lights up for the question "informação"
(both stem to "inform"); with `simple`, "acao" matches "Ação"; with `java` (tfidf's
Java-parity terms) only the same lowercase word matches, as the index sees it. Stopwords are
never highlighted (they would light up every line): Portuguese ones with every analyzer but
`en`, whose own term filter drops the English ones.
Words are the analyzers' own runs of letters or digits, so spans match what was scored.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

from ..index.text.analyzers import (as_asked, fold_accents, get_term_filter, grouped_terms,
                                    number_groups, visible)
from ..index.text.stopwords import ENGLISH, PORTUGUESE

_WORD = re.compile(r"[^\W_]+")  # the analyzers' runs of Unicode letters or digits
_STOP = PORTUGUESE | {fold_accents(w) for w in PORTUGUESE}
_STOPWORDS = {"en": ENGLISH}  # analyzer -> words never highlighted (default: Portuguese)
_GROUPED = ("pt", "en")  # analyzers that ask a number group whole ("1.000,00": analyzers.py)
_SENTENCE_END = re.compile(r"[.!?…]\s+")

DEFAULT_ANALYZER = "pt"
SNIPPET = 240  # characters of a snippet
# A match no sentence start reaches: the snippet starts LEAD_WORDS words before it, looking
# at most LEAD_CHARS (a third of a narrower snippet) back; a longer word is skipped rather
# than shown from its middle.
LEAD_WORDS, LEAD_CHARS = 3, 60
_WORD_START = re.compile(r"(?<=\s)\S")


# whole escape sequences: CSI; OSC, DCS, SOS, PM and APC strings ended by BEL or ST; the
# two-byte ones (ESC 7, ESC c…). An unended string loses only its ESC (its text stays).
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]"
                     r"|[]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)"
                     r"|[ -/]*[0-~])")
# what is left: C0 but newline and tab, DEL, C1; the bidi embeddings, overrides, isolates
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def strip_controls(text: str) -> str:
    """`text` from a site or a file, safe to show on a terminal or a page: no escape
    sequence, no C0/C1 control but newline and tab, no bidi override (which could make a
    URL read "…/exe.jpg"; the stored text keeps them)."""
    return _CONTROL.sub("", _ESCAPE.sub("", text))


def _term(word: str, term_filter, stop) -> str | None:
    word = word.lower()
    if word in stop or fold_accents(word) in stop:
        return None
    return term_filter(word) if term_filter else word


def query_terms(query: str, analyzer: str = DEFAULT_ANALYZER) -> set[str]:
    """The analyzed terms of `query` (NFC, as the text), stopwords left out."""
    query = visible(as_asked(query), analyzer)
    term_filter, stop = get_term_filter(analyzer), _STOPWORDS.get(analyzer, _STOP)
    words = grouped_terms(query) if analyzer in _GROUPED else _WORD.findall(query)
    return {t for t in (_term(w, term_filter, stop) for w in words) if t}


def spans(text: str, query: str, analyzer: str = DEFAULT_ANALYZER) -> list[tuple[int, int]]:
    """(start, end) of each word of `text` whose analyzed term is a term of `query`."""
    return [(a, b) for a, b, _ in matches(text, query, analyzer)]


def matches(text: str, query: str,
            analyzer: str = DEFAULT_ANALYZER) -> list[tuple[int, int, str]]:
    """(start, end, term) of each word of `text` whose analyzed term is a term of `query`."""
    wanted = query_terms(query, analyzer)
    if not wanted:
        return []
    term_filter, stop = get_term_filter(analyzer), _STOPWORDS.get(analyzer, _STOP)
    cache: dict[str, str | None] = {}
    out = []
    for m in _WORD.finditer(text):
        word = m.group()
        if word not in cache:
            cache[word] = _term(word, term_filter, stop)
        if cache[word] in wanted:
            out.append((*m.span(), cache[word]))
    if analyzer in _GROUPED:  # "1.000,00" lights up whole for "1000"
        groups = [(*_words_around(text, a, b), term) for a, b in number_groups(text)
                  if (term := term_filter(text[a:b])) in wanted]
        if groups:  # a part inside a group that lights up is not lit on its own
            out = sorted(groups + [w for w in out
                                   if not any(a <= w[0] and w[1] <= b for a, b, _ in groups)])
    return out


def _words_around(text: str, a: int, b: int) -> tuple[int, int]:
    """The span a..b widened to the words it starts and ends in: "2.3.1" of "v2.3.1" lights
    up "v2.3.1", never a span that overlaps the word "v2"."""
    while a > 0 and text[a - 1].isalnum():  # isalnum: what _WORD matches
        a -= 1
    end = _WORD.match(text, b)
    return a, (end.end() if end else b)


def snippet(text: str, query: str, analyzer: str = DEFAULT_ANALYZER, *,
            width: int = SNIPPET, at: int | None = None) -> tuple[str, list[tuple[int, int]]]:
    """About `width` characters of `text` from the sentence start whose stretch holds most
    distinct matching words (ties: the one nearest its first match), or from the sentence
    holding position `at`; with "…" where it was cut, and the highlight spans in it. A match
    (or `at`) that no sentence start before it reaches within `width` is shown from a few
    words before it: a long run without a sentence break showed its beginning and no match."""
    found = spans(text, query, analyzer)
    starts = [0] + [m.end() for m in _SENTENCE_END.finditer(text)]
    if at is not None:
        start = _start_near(text, starts, at, at + 1, width)
    elif found:
        start = _best_start(text, found, starts, width)
    else:
        start = 0
    end = _piece_end(text, start, width)
    lead = "… " if start else ""
    shift = len(lead) - start
    inside = [(a + shift, b + shift) for a, b in found if a >= start and b <= end]
    return lead + text[start:end] + (" …" if end < len(text) else ""), inside


def _piece_end(text: str, start: int, width: int) -> int:
    """Where the snippet from `start` ends: `width` characters on, back to the last space
    when that cuts the text, so no word is shown in part; in a run without a space, never
    between a character and what joins it (`_joined`), back to the one before it (or on
    past it, when it is the snippet's first)."""
    end = start + width
    if end >= len(text):
        return len(text)
    space = text.rfind(" ", start, end)
    if space >= 0:
        return space
    back = end
    while back > start and _joined(text, back):
        back -= 1
    if back > start:
        return back
    while 0 < end < len(text) and _joined(text, end):
        end += 1
    return end


_ZWJ = "\u200d"


def _joined(text: str, i: int) -> bool:
    """True when text[i] belongs to the character before it: a combining mark (Devanagari's
    vowel signs and virama, an accent NFC cannot compose), either side of a zero-width
    joiner (👨‍👩‍👧), an emoji's skin tone or tag, a flag's second regional indicator."""
    c, before = text[i], text[i - 1]
    if unicodedata.category(c) in ("Mn", "Mc", "Me") or _ZWJ in (c, before):
        return True
    if "\U0001f3fb" <= c <= "\U0001f3ff" or "\U000e0020" <= c <= "\U000e007f":
        return True
    if not (_regional(c) and _regional(before)):
        return False
    run = i  # a flag is a pair: text[i] is a second one after an odd run of them
    while run > 0 and _regional(text[run - 1]):
        run -= 1
    return (i - run) % 2 == 1


def _regional(c: str) -> bool:
    return "\U0001f1e6" <= c <= "\U0001f1ff"


def _best_start(text: str, found: list[tuple[int, int]], starts: list[int],
                width: int) -> int:
    """The sentence start whose stretch holds most distinct matching words; each match also
    offers the start `_start_near` gives it, which wins only with more distinct words than
    every sentence start (ties: sentence starts, then the nearest first match)."""
    sentences = set(starts)
    candidates = dict.fromkeys(starts + [_start_near(text, starts, a, b, width)
                                         for a, b in found])
    return max(candidates,
               key=lambda s: _fitness(text, found, s, width, s in sentences))


def _start_near(text: str, starts: list[int], a: int, b: int, width: int) -> int:
    """Where to start so that text[a:b] is shown: the sentence start before it when the
    snippet from there reaches `b`, else a few words before `a`."""
    sentence = starts[bisect_right(starts, a) - 1]
    if b <= _piece_end(text, sentence, width):
        return sentence
    return _words_before(text, a, min(LEAD_CHARS, width // 3))


def _words_before(text: str, a: int, back: int) -> int:
    """The start of the LEAD_WORDS-th word before position `a` (whitespace-separated words,
    at most `back` characters back, so a narrow snippet still reaches `a`; `a` itself when
    no word starts there): never mid-word."""
    heads = [m.start() for m in _WORD_START.finditer(text, max(0, a - back), a)]
    return heads[-LEAD_WORDS] if len(heads) >= LEAD_WORDS else heads[0] if heads else a


def _fitness(text: str, found: list[tuple[int, int]], lo: int, width: int,
             sentence: bool = True) -> tuple[int, bool, int]:
    """Distinct matching words shown from `lo`; then a sentence start; then the nearer the
    first match, the better."""
    end = _piece_end(text, lo, width)
    inside = [(a, b) for a, b in found if a >= lo and b <= end]
    first = inside[0][0] - lo if inside else width
    return len({text[a:b].lower() for a, b in inside}), sentence, -first


def mark(text: str, found: list[tuple[int, int]], before: str, after: str) -> str:
    """`text` with `before` and `after` around each span (spans sorted, not overlapping)."""
    out, at = [], 0
    for a, b in found:
        out += [text[at:a], before, text[a:b], after]
        at = b
    out.append(text[at:])
    return "".join(out)


def analyzer_for(index_methods: dict, method: str) -> str:
    """The analyzer whose terms explain `method`'s hits: its own, else bm25's, else pt."""
    for name in (method, "bm25"):
        analyzer = index_methods.get(name, {}).get("analyzer")
        if analyzer:
            return analyzer
    return DEFAULT_ANALYZER
