"""Analyzers: text -> list of terms. Each index stores the name of the one it used.

Every analyzer first splits like `java_terms` (lowercase, then runs of Unicode letters or
digits) and then maps each of those terms to one final term or drops it: its *term filter*.
The index builder relies on that shape: it tokenises the chunks once and maps the vocabulary.
That one pass also counts each number group whole, as typed ("1.000,00", "123.456.789-09":
`number_groups`), a term no java term can be: `java` and `simple` drop it, `pt` and `en` map
it to one canonical term ("1000", "12345678909") and ask a question's groups whole.

- `java`: the Java-parity terms, unchanged (the default for `tfidf`).
- `simple`: java terms with accents folded ("Ação" -> "acao"); no stopwords, no stemming.
- `pt`: java terms minus Portuguese stopwords, Snowball-stemmed (PyStemmer, the `pt` extra),
  then accent-folded ("informações" -> "inform"), an ordinal as its number ("5º" -> "5");
  the default for `bm25` when installed.
- `en`: Lucene's EnglishAnalyzer as far as java terms allow: possessive "'s" dropped, its 33
  stopwords dropped, Porter-stemmed (PyStemmer's `porter`, the algorithm of Lucene's
  PorterStemFilter); no accent folding ("Studies" -> "studi", "patient's" -> "patient").
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Callable, Iterable

from ...errors import BuscaError
from .stopwords import ENGLISH, PORTUGUESE

# Runs of characters for which str.isalnum() is true: Python's \w minus the underscore,
# the same set as Java's [\p{L}\p{N}].
_ALNUM_RUN = re.compile(r"[^\W_]+")

PT_EXTRA = "pip install 'busca[pt]'"

TermFilter = Callable[[str], "str | None"]
STEMMERS = {"pt": "portuguese", "en": "porter"}  # analyzer -> PyStemmer algorithm


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str, never half of a pair


def as_asked(question: str) -> str:
    """A question as every search reads it: NFC, as stored text is ("ç" typed as c + U+0327
    asks for "ç"), a lone surrogate (a byte that was not UTF-8 on a command line) as
    U+FFFD."""
    return unicodedata.normalize("NFC", _LONE_SURROGATE.sub("\ufffd", question))


def visible(question: str, analyzer: str) -> str:
    """A question as `analyzer` asks it: without the invisible characters a crawled page's
    text lacks ("devo\u00adlução" asks for "devolução"), except for `java`, which splits
    words on them as the published Java experiment does (docs/parity.md)."""
    if analyzer == "java":
        return question
    from ...crawler.store import drop_invisible  # (what a search loads anyway)

    return drop_invisible(question)


def lone_surrogate(value: object) -> str | None:
    """The first lone surrogate in the texts of a JSON value (a "\\ud800" escape without its
    pair), which no UTF-8 output can carry; None when there is none."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        return e.object[e.start]
    return None


def java_terms(text: str) -> list[str]:
    """Lowercase, then every maximal run of Unicode letters or digits (Java parity)."""
    return _ALNUM_RUN.findall(text.lower())


# Numbers and codes written with separators ("R$ 1.000,00", "10.000", CPF "123.456.789-09",
# CEP "01310-100", "3.12"): java terms split them at every separator ("10", "000"). Counting
# also keeps each such group whole, as typed (a *number term*: never a java term, it holds a
# separator); `java` and `simple` drop it, `pt` and `en` map it to one canonical term
# (`pt_number`, `en_number`), and ask a question's groups whole, without their parts.
NUMBER_SEPARATORS = ".,-/"  # not a space: "1 000" stays two numbers (as "3 4" does)
_MAY_GROUP = re.compile(r"[0-9][.,\-/][0-9]")
CODE_DIGITS = 8  # a group joined by "-" or "/" is one code from this many digits on


def number_groups(text: str, glued: bool = True) -> list[tuple[int, int]]:
    """(start, end) of each number or code of a lowercase `text` that is kept whole: runs of
    ASCII digits (whole java terms) each joined to the next by one of NUMBER_SEPARATORS; the
    first may be the digits that end a word ("v2.3.1", "python3.12", "nº1.234": "2.3.1",
    "3.12", "1.234") and the last the digits that begin one ("1.000km", "3,5kg": "1.000",
    "3,5"), unless not `glued` (builds before GLUED: "v2.3.1" gave "3.1"). A
    group joined by "-" or "/" too is a code (CPF, CEP, phone, process number) when it has
    CODE_DIGITS digits or more and is not a date ("05/12/2026", "2026-12-05"), a range of
    years ("2019-2022") or of two numbers with their own separators ("1.000-2.000");
    otherwise it is cut at its "-" and "/" ("10-20", "05/12/2026":
    their numbers stay java terms, so "2026" finds the date). tokens_numba's `_groups` finds
    the same spans."""
    if not _MAY_GROUP.search(text):
        return []
    runs = [m.span() for m in _ALNUM_RUN.finditer(text)]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        j, first = i, _digit_tail(text, runs[i]) if glued else _whole_run(text, runs[i])
        if first is not None:
            while _joined(text, runs, j) and _digits(text, runs[j + 1]):
                j += 1
            last = _digit_head(text, runs[j + 1]) if glued and _joined(text, runs, j) else None
            group = [(first, runs[i][1])] + runs[i + 1:j + 1]
            if last is not None:
                j += 1
                group.append((runs[j][0], last))
            if j > i:
                spans += _kept_groups(text, group)
        i = j + 1
    return spans


def _joined(text: str, runs: list[tuple[int, int]], j: int) -> bool:
    """Run j is followed by a run after one separator."""
    return (j + 1 < len(runs) and runs[j + 1][0] == runs[j][1] + 1
            and text[runs[j][1]] in NUMBER_SEPARATORS)


def _whole_run(text: str, run: tuple[int, int]) -> int | None:
    return run[0] if _digits(text, run) else None


def _digits(text: str, run: tuple[int, int]) -> bool:
    word = text[run[0]:run[1]]
    return word.isascii() and word.isdigit()


def _digit_tail(text: str, run: tuple[int, int]) -> int | None:
    """Where the ASCII digits that end the run start (None: it ends otherwise)."""
    start, k = run[0], run[1]
    while k > start and "0" <= text[k - 1] <= "9":
        k -= 1
    return k if k < run[1] else None


def _digit_head(text: str, run: tuple[int, int]) -> int | None:
    """Where the ASCII digits that begin the run end (None: it begins otherwise)."""
    k, end = run[0], run[1]
    while k < end and "0" <= text[k] <= "9":
        k += 1
    return k if k > run[0] else None


def _kept_groups(text: str, runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    seps = [text[end] for _, end in runs[:-1]]
    if "-" not in seps and "/" not in seps:
        return [(runs[0][0], runs[-1][1])]
    sizes = [end - start for start, end in runs]
    date = len(runs) == 3 and seps[0] == seps[1] and seps[0] in "-/" and (
        (sizes[0] <= 2 and sizes[1] <= 2 and sizes[2] == 4)
        or (sizes[0] == 4 and sizes[1] <= 2 and sizes[2] <= 2))
    years = len(runs) == 2 and seps[0] in "-/" and sizes == [4, 4]
    cuts = [k for k, sep in enumerate(seps) if sep in "-/"]
    numbers = len(cuts) == 1 and 0 < cuts[0] < len(seps) - 1  # "1.000-2.000": two numbers
    if sum(sizes) >= CODE_DIGITS and not date and not years and not numbers:
        return [(runs[0][0], runs[-1][1])]
    out, first = [], 0
    for k, sep in enumerate(seps + ["-"]):
        if sep in "-/":
            if k > first:
                out.append((runs[first][0], runs[k][1]))
            first = k + 1
    return out


def counted_terms(piece: str) -> list[str]:
    """What the one counting pass counts of a whitespace-free piece: its java terms, then its
    number groups whole, as typed (lowercase)."""
    low = piece.lower()
    terms = _ALNUM_RUN.findall(low)
    groups = number_groups(low)
    return terms + [low[a:b] for a, b in groups] if groups else terms


def grouped_terms(text: str, glued: bool = True) -> list[str]:
    """A question's java terms, each number group whole in place of its digits (as `pt` and
    `en` ask: "10.000 vagas" -> "10.000", "vagas"); a word a group starts or ends in is kept
    as well ("v2.3.1" -> "v2", "2.3.1"). `glued`: as `number_groups`."""
    low = text.lower()
    groups = number_groups(low, glued)
    if not groups:
        return _ALNUM_RUN.findall(low)
    words = [(m.start(), m.group()) for m in _ALNUM_RUN.finditer(low)
             if not any(a <= m.start() and m.end() <= b for a, b in groups)]
    return [word for _, word in sorted(words + [(a, low[a:b]) for a, b in groups])]


def is_number_term(term: str) -> bool:
    """True for a number group counted whole (it holds a separator), never a java term."""
    return not term.isalnum()


_PT_THOUSANDS = re.compile(r"([0-9]{1,3})((?:\.[0-9]{3})+)(?:,([0-9]+))?")
_EN_THOUSANDS = re.compile(r"([0-9]{1,3})((?:,[0-9]{3})+)(?:\.([0-9]+))?")
_PT_DECIMAL = re.compile(r"([0-9]+),([0-9]+)")
_EN_DECIMAL = re.compile(r"([0-9]+)\.([0-9]+)")


def pt_number(term: str) -> str:
    """A number group as the pt analyzer indexes it: a code joined by "-" or "/" as its
    digits ("123.456.789-09" -> "12345678909", "01310-100" -> "01310100"); a number with
    thousands dots and a decimal comma without the dots, a decimal part of one or two
    zeros dropped ("1.000,00" and "1.000" -> "1000", "2.500,50" -> "2500,50"); any other
    group as typed ("3.12", "192.168.0.1")."""
    return _number(term, _PT_THOUSANDS, _PT_DECIMAL, ",")


def en_number(term: str) -> str:
    """pt_number with English marks: thousands commas, a decimal point ("1,000.00" ->
    "1000", "1,000.50" -> "1000.50", "3.0" -> "3", "3.12" as typed)."""
    return _number(term, _EN_THOUSANDS, _EN_DECIMAL, ".")


def _number(term: str, thousands: re.Pattern, decimal: re.Pattern, point: str) -> str:
    if "-" in term or "/" in term:
        return "".join(c for c in term if c.isdigit())
    m = thousands.fullmatch(term)
    if m:
        whole, fraction = m[1] + m[2].replace(m[2][0], ""), m[3]
    else:
        m = decimal.fullmatch(term)
        if not m:
            return term
        whole, fraction = m[1], m[2]
    if fraction is None or (len(fraction) <= 2 and not fraction.strip("0")):
        return whole
    return whole + point + fraction


class UnknownAnalyzer(BuscaError, ValueError):
    """An analyzer name that busca does not know."""


class MissingStemmer(BuscaError, RuntimeError):
    """The `pt` analyzer needs PyStemmer, which is not installed."""


def fold_accents(term: str) -> str:
    """Compatibility-decompose and drop combining marks: "ação" -> "acao", "ª" -> "a"."""
    if term.isascii():
        return term
    return term.translate(_FOLDED)


def fold_char(char: str) -> str:
    """One character compatibility-decomposed without its combining marks."""
    decomposed = unicodedata.normalize("NFKD", char)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


class _Folded(dict):
    """Each character's fold, made on first sight (str.translate's table). Folding a string
    character by character gives the same string: NFKD decomposes each character on its own,
    and its only reordering moves combining marks, which are all dropped."""

    def __missing__(self, code: int) -> str:
        self[code] = folded = fold_char(chr(code))
        return folded


_FOLDED = _Folded()


@functools.cache
def stemmer(algorithm: str = "portuguese"):
    """PyStemmer's Snowball stemmer for `algorithm`, or MissingStemmer naming the extra."""
    try:
        import Stemmer
    except ImportError:
        raise MissingStemmer("the pt and en analyzers need PyStemmer (Snowball stemming): "
                             f"{PT_EXTRA}, or choose the simple analyzer") from None
    # no cache of its own (maxCacheSize 0): its LRU cache of 10,000 words costs more than
    # it saves on a vocabulary (5 us a word instead of 1 us on 400k distinct words), and a
    # query's words are kept by the scorer that analyzed them
    return Stemmer.Stemmer(algorithm, 0)


def portuguese_stemmer():
    """PyStemmer's Snowball Portuguese stemmer, or MissingStemmer naming the extra."""
    return stemmer("portuguese")


portuguese_stemmer.cache_clear = stemmer.cache_clear  # forgets every cached stemmer


_STOPWORDS = PORTUGUESE | {fold_accents(w) for w in PORTUGUESE}


def simple_term(term: str) -> str | None:
    """A java term with its accents folded (a number group counted whole: dropped)."""
    return fold_accents(term) or None if term.isalnum() else None


def pt_term(term: str) -> str | None:
    """A java term stemmed and folded, or None for a Portuguese stopword (with or without
    accents: "não" and "nao"). A word typed without accents gets its suffix's accents back
    before stemming (`_reaccented`): Snowball's suffixes are accented, so "informacao" became
    "informaca" where "informação" becomes "inform". A number group: `pt_number`."""
    if not term.isalnum():
        return pt_number(term)
    number = _ordinal_number(term if term.isascii() else fold_accents(term))
    return number if number is not None else _pt_term_before_ordinals(term)


# since ORDINALS: an ordinal as its number ("5º", "2ª", and "1o", "2a" as a keyboard without º
# types them: "5", "2", "1", "2"): laws write "Art. 5º" and "§ 1º" where a question asks
# "artigo 5", and many sites type "1°" (a degree sign: the java term "1") for "1º"
_ORDINAL = re.compile(r"([0-9]+)[oa]")


def _ordinal_number(folded: str) -> str | None:
    """The number of an ordinal given accent-folded ("5º" as "5o" -> "5"); None otherwise."""
    found = _ORDINAL.fullmatch(folded) if folded[:1].isdigit() else None
    return found[1] if found else None


def _pt_term_before_ordinals(term: str) -> str | None:
    """pt_term of a java term as builds made before ORDINALS mapped it ("5º" -> "5o")."""
    return None if _pt_stopword(term) else _pt_stem(_reaccented(term))


def _pt_term_as_typed(term: str) -> str | None:
    """pt_term as builds made before plain suffixes were accented (`ACCENTED` missing from
    their analyzer_version) mapped their documents' words: each word stemmed as typed."""
    return None if _pt_stopword(term) else _pt_stem(term)


def _pt_stem(term: str) -> str | None:
    return fold_accents(portuguese_stemmer().stemWord(term)) or None


# Portuguese suffixes whose accents decide Snowball's stem, as they are typed without them
# ("-ução" since UCAO: "devolucao" stemmed to "devoluca" where "devolução" stems to "devolu")
_PLAIN_SUFFIXES = {"acoes": "ações", "acao": "ação", "oes": "ões", "aes": "ães", "aos": "ãos",
                   "ao": "ão", "ancias": "âncias", "ancia": "ância", "encias": "ências",
                   "encia": "ência", "aveis": "áveis", "avel": "ável", "iveis": "íveis",
                   "ivel": "ível", "ucoes": "uções", "ucao": "ução"}
_PLAIN_ENDINGS = tuple(sorted(_PLAIN_SUFFIXES, key=len, reverse=True))  # longest first
_ENDINGS_BEFORE_UCAO = tuple(e for e in _PLAIN_ENDINGS if e not in ("ucoes", "ucao"))
# since UIDO: the stressed "í" of "-uir" and "-air" verbs ("construído", "possuía",
# "concluíram", "extraído"), which no plain word has after a letter other than g, q or c
# ("seguido", "conseguia", "cuida")
_UI_SUFFIXES = {"uidos": "uídos", "uidas": "uídas", "uido": "uído", "uida": "uída",
                "uiam": "uíam", "uias": "uías", "uia": "uía", "uiram": "uíram",
                "uirem": "uírem", "aidos": "aídos", "aidas": "aídas", "aido": "aído",
                "aida": "aída"}
_UI_ENDINGS = tuple(sorted(_UI_SUFFIXES, key=len, reverse=True))
# since UIDO: whole words typed without their accents that a plain word spells rarely or never
# ("atraves" stemmed to "atrav" where "através" stems to "atraves"; "contem" is also contar's
# subjunctive, far rarer in a question than "contém"), and "email" as "e-mail" is analyzed
# (its "e" is a stopword)
_PLAIN_WORDS = {"atraves": "através", "alguem": "alguém", "ninguem": "ninguém",
                "porem": "porém", "contem": "contém", "mantem": "mantém", "detem": "detém",
                "retem": "retém", "mae": "mãe", "maes": "mães", "portugues": "português",
                "frances": "francês", "japones": "japonês", "chines": "chinês",
                "holandes": "holandês", "polones": "polonês", "escoces": "escocês",
                "robo": "robô", "robos": "robôs", "recem": "recém", "goias": "goiás",
                "horaria": "horária", "horarias": "horárias", "necessaria": "necessária",
                "necessarias": "necessárias", "universitaria": "universitária",
                "universitarias": "universitárias", "estatutaria": "estatutária",
                "estatutarias": "estatutárias", "extraordinaria": "extraordinária",
                "previdenciaria": "previdenciária", "terciaria": "terciária",
                "materia": "matéria", "materias": "matérias", "email": "mail", "emails": "mails"}


def _reaccented(term: str, ends: tuple[str, ...] = _PLAIN_ENDINGS, more: bool = True) -> str:
    """An unaccented word with its suffix accented ("informacao" -> "informação"); any other
    word as it is (one C call for most words: the index maps every distinct word). With
    `more` (since UIDO), also a word half typed ("informaçao", "informacão"), a "-uir" verb's
    "-uido" ("construido" -> "construído") and the words of _PLAIN_WORDS."""
    plain = term
    if not term.isascii():
        plain = fold_accents(term) if more else ""
        if len(plain) != len(term):  # a character that folds to several: left as it is
            return term
    if more:
        if plain in _PLAIN_WORDS:
            return _PLAIN_WORDS[plain]
        if plain.endswith(_UI_ENDINGS):
            ui = next(e for e in _UI_ENDINGS if plain.endswith(e))
            if len(plain) > len(ui) and plain[-len(ui) - 1] not in "gqc":
                return term[:-len(ui)] + _UI_SUFFIXES[ui]
            return term
    if not plain.endswith(ends):
        return term
    end = next(e for e in ends if plain.endswith(e))
    return term[:-len(end)] + _PLAIN_SUFFIXES[end] if len(term) > len(end) else term


def _pt_term_before_ucao(term: str) -> str | None:
    """pt_term as builds made before "-ução" was accented (UCAO missing from their
    analyzer_version) mapped their words."""
    return None if _pt_stopword(term) else _pt_stem(_reaccented(term, _ENDINGS_BEFORE_UCAO,
                                                                False))


def _pt_term_before_uido(term: str) -> str | None:
    """pt_term as builds made before UIDO mapped their words: plain suffixes only."""
    return None if _pt_stopword(term) else _pt_stem(_reaccented(term, _PLAIN_ENDINGS, False))


def _pt_stopword(term: str) -> bool:
    if term.isascii():  # folding leaves it as it is: one look-up
        return term in _STOPWORDS
    return term in _STOPWORDS or fold_accents(term) in _STOPWORDS


def en_term(term: str) -> str | None:
    """A java term Porter-stemmed, or None for an English stopword or the "s" that java terms
    split off a possessive ("patient's" -> "patient", "s"); a number group: `en_number`."""
    if not term.isalnum():
        return en_number(term)
    if _en_stopword(term):
        return None
    return stemmer(STEMMERS["en"]).stemWord(term) or None


def _en_stopword(term: str) -> bool:
    return term in ENGLISH or term == "s"


TERM_FILTERS: dict[str, TermFilter | None] = {"java": None, "simple": simple_term, "pt": pt_term,
                                              "en": en_term}


def mapped_terms(name: str, terms: list[str]) -> list[str | None]:
    """Analyzer `name`'s term filter applied to each of `terms` (a vocabulary: the stemmer
    called once for them all; 1.30 s against 1.47 s with a call per term at 1.7M terms)."""
    _check(name)
    if name in ("pt", "en", "java") and not all(map(str.isalnum, terms)):
        number = pt_number if name == "pt" else en_number if name == "en" else _dropped
        words = mapped_terms(name, [t for t in terms if t.isalnum()])[::-1]
        return [words.pop() if t.isalnum() else number(t) for t in terms]
    if name == "pt":  # pt_term, written out: no call per term (a fifth of the time), and
        # each word folded once (a word whose folded form ends otherwise is not reaccented;
        # _STOPWORDS holds every stopword's folded form)
        ends, words, stop, folded = _PLAIN_ENDINGS + _UI_ENDINGS, _PLAIN_WORDS, _STOPWORDS, _FOLDED
        plain = [t if t.isascii() else t.translate(folded) for t in terms]
        asked = [_reaccented(t) if p.endswith(ends) or p in words else t
                 for t, p in zip(terms, plain)]
        stems = portuguese_stemmer().stemWords(asked)
        ordinal = _ordinal_number
        return [None if p in stop else (p[:1].isdigit() and ordinal(p))
                or (s if s.isascii() else s.translate(folded)) or None
                for p, s in zip(plain, stems)]
    if name == "en":
        stems = stemmer(STEMMERS["en"]).stemWords(terms)
        return [None if _en_stopword(t) else s or None for t, s in zip(terms, stems)]
    term_filter = TERM_FILTERS[name]
    return list(terms) if term_filter is None else [term_filter(t) for t in terms]


def _dropped(term: str) -> None:
    return None


def simple_terms(text: str) -> list[str]:
    """Java terms with accents folded."""
    return [t for t in map(simple_term, java_terms(text)) if t]


def pt_terms(text: str) -> list[str]:
    """A text's terms as the index holds them: java terms without Portuguese stopwords,
    stemmed and accent-folded, then its number groups whole, canonical ("R$ 1.000,00" ->
    "r", "1", "000", "00", "1000"). A question asks its groups without their parts
    (`analysis`: "1.000,00" -> "1000")."""
    return [t for t in map(pt_term, counted_terms(text)) if t]


def en_terms(text: str) -> list[str]:
    """A text's terms as the index holds them: java terms without possessives and English
    stopwords, Porter-stemmed, then its number groups whole, canonical ("$1,000.00" -> "1",
    "000", "00", "1000"); a question asks its groups without their parts (`analysis`)."""
    return [t for t in map(en_term, counted_terms(text)) if t]


ANALYZERS: dict[str, Callable[[str], list[str]]] = {
    "java": java_terms, "simple": simple_terms, "pt": pt_terms, "en": en_terms}


def get_analyzer(name: str) -> Callable[[str], list[str]]:
    """The analyzer called `name`, or an error listing the known ones (or naming the extra
    it needs)."""
    _check(name)
    return ANALYZERS[name]


def get_term_filter(name: str) -> TermFilter | None:
    """The per-term map of analyzer `name` (None: java terms are kept as they are)."""
    _check(name)
    return TERM_FILTERS[name]


def _check(name: str) -> None:
    if name not in ANALYZERS or name not in TERM_FILTERS:
        known = ", ".join(sorted(ANALYZERS))
        raise UnknownAnalyzer(f"unknown analyzer {name!r}; known analyzers: {known}")
    if name in STEMMERS:
        stemmer(STEMMERS[name])


def has_stemmer() -> bool:
    """True when PyStemmer is installed (the `pt` analyzer can run)."""
    try:
        portuguese_stemmer()
    except MissingStemmer:
        return False
    return True


def default_bm25_analyzer() -> str:
    """`pt` when PyStemmer is installed, else `simple`."""
    return "pt" if has_stemmer() else "simple"


# words that one of the two languages writes often and the other (almost) never: "a", "as",
# "no", "se" and "do" are words of both
_ENGLISH_MARKS = frozenset("the and of to is that with for this are was".split())
_PORTUGUESE_MARKS = frozenset("de que não para com uma um os da em por é".split())
_WORD = re.compile(r"[^\W\d_]+")


def language_marks(texts: Iterable[str]) -> tuple[int, int]:
    """How many words of `texts` mark them as English, and how many as Portuguese."""
    english = portuguese = 0
    for text in texts:
        for word in _WORD.findall(text.lower()):
            english += word in _ENGLISH_MARKS
            portuguese += word in _PORTUGUESE_MARKS
    return english, portuguese


# what a pt build's analyzer_version says since its documents' words typed without accents get
# their suffix's accents, as the questions' do (builds of the 28th session said "plain
# suffixes re-accented" but mapped their documents' words as typed)
ACCENTED = "plain suffixes accented"
QUESTIONS_ACCENTED = "plain suffixes re-accented"  # the 28th session's builds: questions only
UCAO = "-ução too"  # builds since "-ucao" and "-ucoes" are accented as well (_PLAIN_SUFFIXES)
# builds since "-uido", half-typed words ("informaçao") and _PLAIN_WORDS are accented as well
UIDO = "-uído, half-typed, whole words too"
# pt and en builds since number groups are counted whole ("1.000,00" -> "1000"): older ones
# hold their parts only ("1", "000", "00") and are asked so (`question_words`)
NUMBERS = "numbers and codes whole"
# builds since a group may start or end inside a word ("v2.3.1" -> "2.3.1", "1.000km" ->
# "1000"): older ones counted "3.1" of "v2.3.1" and no whole of "1.000km" (`number_groups`)
GLUED = "numbers glued to words"
# pt builds since an ordinal is indexed as its number ("5º" -> "5": `_ordinal_number`); older
# ones hold "5o" and are asked so (`analysis`)
ORDINALS = "ordinals as numbers"


def analyzer_version(name: str) -> str:
    """What else decides the terms of `name` (the stemmer's version), for the manifest."""
    if name not in STEMMERS:
        return ""
    import Stemmer
    plain = f", {ACCENTED} ({UCAO}; {UIDO}), {ORDINALS}" if name == "pt" else ""
    return (f"snowball {STEMMERS[name]}, PyStemmer {Stemmer.version()}{plain}, {NUMBERS},"
            f" {GLUED}")


def question_words(name: str, version: str | None = None) -> Callable[[str], list[str]]:
    """How analyzer `name` cuts a question into the words its term filter maps, for a build
    whose manifest says `version` (None: this busca's): pt and en builds since NUMBERS ask a
    number group whole (`grouped_terms`: "1.000,00" is one word; those before GLUED as they
    found groups then), any other its java terms."""
    if name in STEMMERS and (version is None or NUMBERS in version):
        return grouped_terms if version is None or GLUED in version else _grouped_before_glued
    return java_terms


def _grouped_before_glued(text: str) -> list[str]:
    return grouped_terms(text, glued=False)


def analysis(name: str, version: str | None = None) -> tuple[Callable[[str], list[str]],
                                                             TermFilter | None]:
    """Analyzer `name`'s text analyzer and per-term map for the questions of a build whose
    manifest says `version` (its analyzer_version; None: this busca's), as that build asked
    them, so that its answers stay what they were until it is rebuilt: a pt build made before
    plain suffixes were accented stems a question's words as typed; one of the 28th session
    (QUESTIONS_ACCENTED) accented the questions' words, not its documents' (most documents
    carry their accents: "transferencia" finds "Transferência" there); one made before
    "-ucao" was accented (UCAO) accents the other plain suffixes only; one made before UIDO
    accents the plain suffixes only; one made before ORDINALS asks "5º" as "5o". A pt or en
    build made before NUMBERS asks a number group by its parts, as it indexed it
    (`question_words`)."""
    words = question_words(name, version)
    if name != "pt" or version is None or UIDO in version:
        if name not in STEMMERS:
            analyze = get_analyzer(name)
            return (lambda text: analyze(visible(text, name))), get_term_filter(name)
        term = get_term_filter(name)
        if name == "pt" and version is not None and ORDINALS not in version:
            term = _pt_term_before_ordinals
    else:
        _check(name)
        accented = ACCENTED in version or QUESTIONS_ACCENTED in version
        term = (_pt_term_before_uido if UCAO in version else
                _pt_term_before_ucao if accented else _pt_term_as_typed)
    return (lambda text: [t for t in map(term, words(visible(text, name))) if t]), term
