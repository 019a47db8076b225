"""A held-out synthetic Portuguese corpus and questions for bench_lexical.py (`--corpus zipf`):
no text busca was tuned on, a vocabulary that keeps growing with the corpus (Heaps' law), and
questions that are all different and made from another random stream.

Words. A content word is a stem and a suffix. Stems are numbered by rank and drawn from a
Zipf-Mandelbrot law, p(r) ~ (r + Q)^-S over RANKS ranks; stem r's letters come from a hash
of r (syllables of Portuguese-like onsets, vowels with and without accents, and codas; frequent
stems are shorter), and its class (noun, verb or adjective) chooses its suffixes (`-ção`,
`-ções`, `-mente`, `-ava`, `-ados`...: the inflections Snowball's Portuguese stemmer removes,
so one stem's forms meet again as one term). FUNCTION_SHARE of the words are function words
(articles, prepositions, pronouns: the stopwords of any Portuguese analyzer), a few words are
capitalised or followed by a comma or a period. A chunk has WINDOW words and TOPIC_WORDS
stems of its own that make up TOPIC_SHARE of its content words (real text repeats its
subject's words: term frequencies above 1).

Fitted to Portuguese text, not copied from it: the Debian handbook's Portuguese articles
(fixtures/handbook, 61,190 words) have 28 % stopwords (technical text; 40-50 % in prose) and
content words of 5.9 letters on average; its stems grow by Heaps' law with exponent 0.67 at
that size. S = 1.5 and Q = 30 give about 14,000 distinct stems at 1,000 chunks and keep a
Heaps exponent between 0.5 and 0.7 up to a million chunks (several hundred thousand `pt`
terms there: tests/test_bench_corpus.py fits it), while the most frequent stem holds 1.6 % of
the content words (a plain Zipf law with a Heaps exponent that high would give one stem a
quarter of them). FaQuAD, the old corpus, has 2,884 `pt` terms in all.

Questions: a question word, two to six content words drawn from the same law by another
random stream (QUESTION_SEED, and suffixes chosen uniformly: forms the corpus may never
show), function words between them and, for one word in twenty, a letter changed (a word
no index has). Every question is different (duplicates are drawn again).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

WINDOW = 200
S, Q, RANKS = 1.6, 30.0, 1 << 23
FUNCTION_SHARE = 0.35
TOPIC_WORDS, TOPIC_SHARE = 8, 0.25
CORPUS_SEED, QUESTION_SEED = 20260531, 977
BLOCK = 2_000  # chunks made at a time, each block from a random stream of its own

FUNCTION = ("de a o que e do da em um para é com não uma os no se na por mais as dos como mas"
            " foi ao ele das tem à seu sua ou ser quando muito há nos já está eu também só pelo"
            " pela até isso ela entre era depois sem mesmo aos ter seus quem nas me esse eles"
            " estão você tinha foram essa num nem suas meu às minha têm numa pelos elas havia"
            " seja qual será nós tenho lhe deles essas esses pelas este fosse dele").split()
QUESTION_WORDS = ("como", "qual", "quais", "quando", "onde", "quem", "o que", "por que",
                  "quantos", "quanto")
ONSETS = ("", "b", "c", "d", "f", "g", "j", "l", "m", "n", "p", "r", "s", "t", "v", "br", "cr",
          "pr", "tr", "gr", "fl", "pl", "ch", "qu", "x", "z", "gu", "bl", "lh", "nh", "rr", "ss")
FIRST_ONSETS = 28  # a word starts with none of the last four
VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o")
ACCENTED = {"a": "áãâ", "e": "éê", "i": "í", "o": "óôõ", "u": "ú"}  # one vowel in 3 words
CODAS = ("", "", "", "", "r", "s", "n", "l", "m", "")
SUFFIXES = (  # by class, the commonest first (drawn with weights 1/(i+1))
    ("o", "os", "a", "as", "ção", "ções", "mento", "mentos", "dade", "dades", "eiro", "eira",
     "inho", "ismo"),
    ("ar", "a", "am", "ou", "ado", "ada", "ados", "ando", "ava", "avam", "amos", "aram", "em",
     "ará", "asse", "aria"),
    ("al", "ais", "oso", "osa", "osos", "ível", "íveis", "mente", "ico", "ica", "icos", "ante",
     "ivo", "iva"),
)
DECOR = ("", ",", ".", "^")  # "^": capitalised
DECOR_SHARE = 0.05  # of the words, for each of the last three


def zipf_ranks(rng: np.random.Generator, shape) -> np.ndarray:
    """Stem ranks (1..RANKS) drawn from p(r) ~ (r + Q)^-S, by the inverse of the continuous law."""
    lo, hi = (1 + Q) ** (1 - S), (RANKS + Q) ** (1 - S)
    y = (lo - rng.random(shape) * (lo - hi)) ** (1 / (1 - S))
    return np.clip(np.floor(y - Q), 1, RANKS).astype(np.int64)


def _mix(x: int) -> int:
    """splitmix64 of x: the letters of a stem from its rank."""
    x = (x + 0x9E3779B97F4A7C15) & (2**64 - 1)
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
    return x ^ (x >> 31)


@functools.lru_cache(maxsize=1 << 21)
def stem(rank: int) -> tuple[str, int]:
    """Stem `rank`'s letters and class (0 noun, 1 verb, 2 adjective)."""
    h = _mix(rank)
    syllables = 2 + (rank > 300) + (rank > 30_000) + (h & 1)
    h >>= 1
    out = []
    for i in range(syllables):
        out.append(ONSETS[h % (FIRST_ONSETS if i == 0 else len(ONSETS))]
                   + VOWELS[(h >> 5) % len(VOWELS)])
        h >>= 8
    if h % 3 == 0:  # one accented vowel
        i = (h >> 2) % syllables
        vowel = out[i][-1]
        out[i] = out[i][:-1] + ACCENTED[vowel][(h >> 5) % len(ACCENTED[vowel])]
    h >>= 8
    out.append(CODAS[h % len(CODAS)])
    return "".join(out), (h >> 4) % 3


@functools.lru_cache(maxsize=1 << 20)
def _word(key: int) -> str:
    """The word of a key (see `_keys`)."""
    decor, key = DECOR[key % len(DECOR)], key // len(DECOR)
    suffix, rank = key % 32, key // 32
    if rank == 0:
        word = FUNCTION[suffix]
    else:
        letters, kind = stem(rank)
        word = letters + SUFFIXES[kind][suffix % len(SUFFIXES[kind])]
    if decor == "^":
        return word[:1].upper() + word[1:]
    return word + decor


def _cumulative(weights: np.ndarray) -> np.ndarray:
    return np.cumsum(weights / weights.sum())


_SUFFIX_CDF = _cumulative(1 / np.arange(1, 15))
_DECOR_CDF = _cumulative(np.array([1 - 3 * DECOR_SHARE] + [DECOR_SHARE] * 3))
_FUNCTION_CDF = _cumulative(1 / np.arange(1, len(FUNCTION) + 1) ** 0.8)


def _draw(rng: np.random.Generator, cdf: np.ndarray, shape) -> np.ndarray:
    """Indices drawn with the probabilities whose running sum is `cdf`."""
    return np.minimum(np.searchsorted(cdf, rng.random(shape)), cdf.size - 1)



def _keys(rng: np.random.Generator, m: int) -> np.ndarray:
    """m chunks of WINDOW word keys: (rank * 32 + suffix) * len(DECOR) + decoration, rank 0
    for a function word (its number in place of the suffix)."""
    ranks = zipf_ranks(rng, (m, WINDOW))
    topics = zipf_ranks(rng, (m, TOPIC_WORDS))
    pick = rng.integers(0, TOPIC_WORDS, (m, WINDOW))
    ranks = np.where(rng.random((m, WINDOW)) < TOPIC_SHARE,
                     np.take_along_axis(topics, pick, axis=1), ranks)
    function = rng.random((m, WINDOW)) < FUNCTION_SHARE
    ranks = np.where(function, 0, ranks)
    suffix = np.where(function, _draw(rng, _FUNCTION_CDF, (m, WINDOW)),
                      _draw(rng, _SUFFIX_CDF, (m, WINDOW)))
    decor = _draw(rng, _DECOR_CDF, (m, WINDOW))
    return (ranks * 32 + suffix) * len(DECOR) + decor


def chunks(n: int, seed: int = CORPUS_SEED):
    """The first n chunks (each a str of WINDOW words): block b of BLOCK chunks comes from
    the random stream (seed, b), so the first m chunks of a larger corpus are the m chunks
    of a smaller one."""
    for block in range(-(-n // BLOCK)):
        keys = _keys(np.random.default_rng([seed, block]), BLOCK)[:n - block * BLOCK]
        unique, inverse = np.unique(keys, return_inverse=True)
        words = np.array([_word(k) for k in unique.tolist()], dtype=object)
        yield from map(" ".join, words[inverse.reshape(keys.shape)])


def make_corpus(n: int, out: Path) -> None:
    """n chunks, one per line."""
    with out.open("w", encoding="utf-8") as f:
        for text in chunks(n):
            f.write(text + "\n")


def questions(n: int, seed: int = QUESTION_SEED) -> list[str]:
    """n different questions (see the module docstring)."""
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        q = _question(rng)
        if q not in seen:
            seen.add(q)
            out.append(q)
    return out


def _question(rng: np.random.Generator) -> str:
    words = [QUESTION_WORDS[rng.integers(len(QUESTION_WORDS))]]
    for rank in zipf_ranks(rng, int(rng.integers(2, 7))).tolist():
        if rng.random() < 0.4:
            words.append(FUNCTION[int(_draw(rng, _FUNCTION_CDF, ()))])
        letters, kind = stem(rank)
        word = letters + SUFFIXES[kind][rng.integers(len(SUFFIXES[kind]))]
        if rng.random() < 0.05:  # a typo: a word no index has
            at = int(rng.integers(len(word)))
            word = word[:at] + "kwy"[rng.integers(3)] + word[at + 1:]
        words.append(word)
    return " ".join(words) + "?"
