"""Parity between busca's TF-IDF profile and an independent Java reference (tests/java).

The Java program (tests/java/Reference.java) implements the seed's `dividir` and `cosseno`
with HashMaps. For each corpus, both sides must agree on: the chunk count, every chunk's
text, the vocabulary (size, terms and document frequencies) and, for 50+ queries, the
top-3 chunk ids with scores equal to 1e-9. busca is driven through its public path:
Store.put -> build_index -> load_index -> search. See docs/parity.md.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
import shutil
import subprocess
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

from busca.crawler.store import Document, plain
from busca.index.text.analyzers import java_terms
from busca.index.build import build_index
from busca.index.text.chunking import chunk_words
from busca.index.home.storage import load_index
from busca.search import rank, search
from busca.index.lexical.lexical import NoSearchableTerms
from busca.index import LocalHome

JAVA_SOURCE = Path(__file__).parents[1] / "java" / "Reference.java"
FIXTURE = Path(__file__).parents[2] / "fixtures" / "site" / "articles.jsonl"
K = 3
JAVA_K = 10  # Java prints more hits, to tell a floating-point tie from a real disagreement
TOLERANCE = 1e-9
TIE = 1e-12  # two Java scores this close are a tie up to rounding

# --- a Portuguese-flavoured vocabulary with every kind of token the analyzers must handle ---
BASE = (
    "ação informação coração órgão você pôr àquele não é está três público código índice busca "
    "pedaço pedaços vetorização cosseno acervo pergunta resposta artigo artigos documento "
    "contexto fonte modelo embeddings sobreposição divisão palavras termos peso raro comum "
    "sistema empresa assistente permissão aparelhos microfone biblioteca alucinação "
    "São Paulo Brasília Goiânia Maranhão Ceará cachaça pão maçã avó avô irmã ônibus sofá "
    "API Java RAG LLM TF-IDF Google Play PostgreSQL pgvector React Native Spring Boot "
    "e-mail bem-vindo guarda-chuva pé-de-moleque snake_case _privado __init__ a_b_c "
    "2026 107.886 694 6.816 R$1.234,56 3º 1ª 10% 0,292 COVID-19 mp3 h2o x86_64 v2.0 "
    "½ ² ³ Ⅻ ⅻ ٣٤ ０１２ 東京 नमस्ते ΟΔΟΣ ΣΟΦΙΑ ΑΣ.ΒΣ İstanbul ß ẞ ǅ ǈ ﬁ ǰ "
    "𝟘𝟙 𝔸𝔹 𐐀𐐁 😀 ✓ café cafe\u0301 q\u0303 Ångström naïve jalapeño façade"
).split(" ")
GLUE_AFTER = (",", ".", ";", ":", "!", "?", "...", ")", '"', "'", "»", "—", "-", "_")
GLUE_BEFORE = ("(", '"', "«", "¿", "#", "@", "—", "-", "_", "/")
# Java's \s is [ \t\n\x0B\f\r]: only these split words.
SPLIT = (" ",) * 30 + ("\t", "\n", "\r\n", "  ", "\x0b", "\x0c", " \n\n ", "\r")
# Look like spaces (Python's str.split() splits on most), but Java does not split on them.
GLUE_SPACE = ("\xa0", "\u2007", "\u202f", "\u2003", "\u3000", "\u2028", "\u2029", "\x85",
              "\x1c", "\x1d", "\x1e", "\x1f", "\u200b", "\ufeff", "\u180e", "\x01", "\x7f")
UNKNOWN = ("xyzzy", "inexistente", "quântico123", "ZZTOP", "abcdefgh", "ñandú")


@dataclass
class Result:
    chunks: list[str]
    terms: dict[str, int]  # term -> df
    hits: list[list[tuple[int, float]]]


# --- the Java side -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def java(tmp_path_factory):
    """Compile Reference.java; returns a function running it on documents and queries."""
    javac, java_bin = shutil.which("javac"), shutil.which("java")
    if not javac or not java_bin:
        pytest.skip("no JDK on PATH (javac/java not found): the Java parity reference cannot run")
    out = tmp_path_factory.mktemp("java")
    subprocess.run([javac, "-encoding", "UTF-8", "-d", str(out), str(JAVA_SOURCE)],
                   check=True, capture_output=True)

    def run(docs: list[str], queries: list[str], *, size=200, overlap=40) -> Result:
        work = Path(tmp_path_factory.mktemp("run"))
        _write_lines(work / "corpus.txt", docs)
        _write_lines(work / "queries.txt", queries)
        cmd = [java_bin, "-cp", str(out), "Reference", str(work / "corpus.txt"),
               str(work / "queries.txt"), "--size", str(size), "--overlap", str(overlap),
               "--k", str(JAVA_K), "--dump"]
        done = subprocess.run(cmd, check=True, capture_output=True, timeout=120)
        return _parse_java(done.stdout.decode("utf-8"))

    return run


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def _unescape(s: str) -> str:
    out, chars = [], iter(s)
    for c in chars:
        out.append({"\\": "\\", "n": "\n", "r": "\r", "t": "\t"}[next(chars)] if c == "\\" else c)
    return "".join(out)


def _write_lines(path: Path, items: list[str]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(_escape(s) + "\n" for s in items)


def _parse_java(output: str) -> Result:
    result = Result([], {}, [])
    for line in output.split("\n")[:-1]:  # not splitlines(): \x85, \u2028... are data here
        kind, _, rest = line.partition(" ")
        if kind == "chunks":
            n_chunks = int(rest)
        elif kind == "vocabulary":
            n_terms = int(rest)
        elif kind == "chunk":
            result.chunks.append(_unescape(rest.partition(" ")[2]))
        elif kind == "term":
            df, _, term = rest.partition(" ")
            result.terms[_unescape(term)] = int(df)
        elif kind == "query":
            f = rest.split(" ")[1:]
            result.hits.append([(int(f[i]), float(f[i + 1])) for i in range(0, len(f), 2)])
    assert (len(result.chunks), len(result.terms)) == (n_chunks, n_terms)
    return result


# --- the busca side: the public path the CLI takes -----------------------------------------
@dataclass
class Busca(Result):
    hit_texts: list[list[str]]  # Hit.text of every hit
    wide: list[dict[int, float]]  # top-JAVA_K scores, to tell rounding ties from errors
    spans_ok: bool  # the store's chunk rows have the spans of chunk_words


def run_busca(home: Path, docs: list[str], queries: list[str], *, size=200, overlap=40,
              builds=1) -> tuple[Busca, list[str]]:
    """Index `docs` (urls doc-00000...) in a fresh store; returns the outcome, stored texts."""
    with LocalHome(home) as store:
        for i, text in enumerate(docs):
            store.put(Document(url=f"doc-{i:05d}", title=f"Documento {i}", text=text))
        for _ in range(builds):  # a second build reuses the chunk rows of the first
            build_index(store, size=size, overlap=overlap)
        index = load_index(home)
        stored = [d.text for d in store.documents()]
        chunks = [c for t in stored for c in chunk_words(t, size=size, overlap=overlap)]
        rows = index.chunks()
        spans_ok = [(r.start, r.end) for r in rows] == [(c.start, c.end) for c in chunks]
        indptr = index.array("tfidf", "indptr")
        terms = dict(zip(index.terms("tfidf"), (indptr[1:] - indptr[:-1]).tolist()))
        assert index.manifest["chunks"] == len(rows)
        assert index.methods["tfidf"]["vocabulary"] == len(terms)
        hits, texts, wide = [], [], []
        for query in queries:
            try:
                found = search(index, store, query, k=K)
                ids, scores = rank(index, query, k=JAVA_K)
            except NoSearchableTerms:
                found, ids, scores = [], [], []
            hits.append([(h.chunk_id, h.score) for h in found])
            texts.append([h.text for h in found])
            wide.append(dict(zip(ids.tolist(), scores.tolist())) if found else {})
    return Busca([c.text for c in chunks], terms, hits, texts, wide, spans_ok), stored


# --- comparison ----------------------------------------------------------------------------
def compare(expected: Result, got: Busca, queries: list[str]) -> dict:
    """Assert parity; returns counts of compared queries, hits and floating-point tie swaps."""
    assert len(got.chunks) == len(expected.chunks), "chunk count"
    for i, (a, b) in enumerate(zip(expected.chunks, got.chunks)):
        assert b == a, f"chunk {i} text differs"
    assert got.spans_ok, "the store's chunk rows do not have chunk_words' spans"
    assert len(got.terms) == len(expected.terms), (
        f"vocabulary size: only Java {sorted(set(expected.terms) - set(got.terms))[:10]!r},"
        f" only busca {sorted(set(got.terms) - set(expected.terms))[:10]!r}")
    assert got.terms == expected.terms, "vocabulary terms or document frequencies"
    stats = {"queries": len(queries), "hits": 0, "tie_swaps": 0}
    for query, java_hits, busca_hits, wide in zip(queries, expected.hits, got.hits, got.wide,
                                                  strict=True):
        where = f"query {query!r}: Java {java_hits[:K]} busca {busca_hits}"
        assert len(busca_hits) == len(java_hits[:K]), where
        _check_order(java_hits, where)
        _check_order(busca_hits, where)
        java_score = dict(java_hits)
        for (jid, jscore), (bid, bscore) in zip(java_hits, busca_hits):
            assert abs(bscore - jscore) <= TOLERANCE, where
            if bid != jid:
                assert _rounding_tie(jid, bid, java_score, wide), where
                stats["tie_swaps"] += 1
        stats["hits"] += len(busca_hits)
    for query, busca_hits, texts in zip(queries, got.hits, got.hit_texts):
        for (bid, _), text in zip(busca_hits, texts):
            assert text == expected.chunks[bid], f"Hit.text of chunk {bid} for query {query!r}"
    return stats


def _check_order(hits: list[tuple[int, float]], where: str) -> None:
    """Scores descending and positive; equal scores in chunk order."""
    for (a, sa), (b, sb) in zip(hits, hits[1:]):
        assert sa > sb or (sa == sb and a < b), where
    assert all(score > 0 for _, score in hits), where


def _rounding_tie(jid: int, bid: int, java: dict, busca: dict) -> bool:
    """Two chunks ranked differently only because their equal scores were rounded apart."""
    if jid not in busca or bid not in java:
        return False
    exact_on_both = java[jid] == java[bid] and busca[jid] == busca[bid]
    return not exact_on_both and abs(java[jid] - java[bid]) <= TIE


def check_parity(java, tmp_path, docs, queries, *, size=200, overlap=40, builds=1) -> dict:
    got, stored = run_busca(tmp_path / "home", docs, queries, size=size, overlap=overlap,
                            builds=builds)
    assert stored == [plain(d) for d in docs]  # urls keep input order; NFC, no soft hyphen
    # busca reads a question in NFC as it stores text (corpus/questions.py `asked`): the
    # reference gets both so
    expected = java(stored, [unicodedata.normalize("NFC", q) for q in queries], size=size,
                    overlap=overlap)
    assert len(queries) >= 50
    return compare(expected, got, queries)


# --- random corpora ------------------------------------------------------------------------
@functools.cache
def _zipf(n: int) -> list[float]:
    return list(itertools.accumulate(1 / (i + 1) for i in range(n)))


def _word(rng: random.Random, vocab: list[str]) -> str:
    w = rng.choices(vocab, cum_weights=_zipf(len(vocab)))[0]
    r = rng.random()
    if r < 0.08:
        w = w.upper()
    elif r < 0.16:
        w = w.title()
    elif r < 0.20:
        w = "".join(c.upper() if rng.random() < 0.5 else c for c in w)
    if rng.random() < 0.15:
        w += rng.choice(GLUE_AFTER)
    if rng.random() < 0.06:
        w = rng.choice(GLUE_BEFORE) + w
    if rng.random() < 0.03:
        w += rng.choice(GLUE_SPACE) + rng.choice(vocab)
    return w


def make_text(rng: random.Random, vocab: list[str], n_words: int) -> str:
    parts = [rng.choice(("", " ", "\n", "\t ", "\x01 ", "\xa0"))]
    for i in range(n_words):
        parts.append(_word(rng, vocab))
        parts.append(rng.choice(SPLIT) if i < n_words - 1 else "")
    parts.append(rng.choice(("", " ", "\n\n", " \t", " \x1f", "\u3000")))
    return "".join(parts)


def make_vocab(rng: random.Random, n_invented: int) -> list[str]:
    syllables = "ma pe ri co lu ção ão ên tra vi dé bo nha lhe qu ô pa gu ri ta".split()
    invented = {"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(n_invented)}
    vocab = BASE + sorted(invented)
    rng.shuffle(vocab)
    return vocab


def make_corpus(seed: int, lengths: list[int]) -> list[str]:
    rng = random.Random(seed)
    vocab = make_vocab(rng, 300)
    docs = [make_text(rng, vocab, n) for n in lengths]
    docs += rng.sample(docs, 3)  # duplicated pages: exact ties, broken by chunk order
    docs += ["", "   ", "\t\n\r\n", "\x01\x02\x1f", "\xa0"]  # no words (the NBSP one has one)
    rng.shuffle(docs)
    return docs


def make_queries(seed: int, docs: list[str], n: int = 60) -> list[str]:
    """Queries from corpus words, with unknown words, case and accent variants, junk."""
    rng = random.Random(seed)
    words = [w for d in docs for w in d.split()] or ["vazio"]
    queries = ["", "   ", "?!...", "—", "xyzzy", "inexistente ZZTOP"]
    queries += ["AÇÃO", "acao", "Informação", "INFORMACAO", "São Paulo", "são-paulo"]
    while len(queries) < n:
        kind = rng.random()
        if kind < 0.1 and docs:  # a long stretch of a document
            doc = rng.choice(docs).split(" ")
            start = rng.randrange(len(doc))
            queries.append(" ".join(doc[start:start + rng.randint(5, 60)]))
            continue
        q = rng.sample(words, min(len(words), rng.randint(1, 5)))
        if kind < 0.35:
            q.append(rng.choice(UNKNOWN))
        if kind > 0.8:
            q = [w.upper() if rng.random() < 0.5 else w.lower() for w in q]
        if kind > 0.9:
            q = [unicodedata.normalize("NFD", w) for w in q]
        queries.append(rng.choice((" ", "  ", ", ", "\t")).join(q))
    return queries


def _lengths(rng: random.Random, n_docs: int) -> list[int]:
    special = [1, 2, 5, 39, 40, 41, 159, 160, 161, 199, 200, 201, 360, 361, 520]
    return special + [rng.randint(1, 900) for _ in range(n_docs)]


RANDOM_CORPORA = [  # seed, extra random-length docs, long docs, size, overlap, builds
    (1, 12, [3000], 200, 40, 1),
    (2, 20, [5200, 4100], 200, 40, 2),
    (3, 10, [2500], 50, 10, 2),
    (4, 5, [], 7, 3, 1),
    (5, 8, [6000], 200, 0, 1),
]


@pytest.mark.parametrize("seed,n_docs,long_docs,size,overlap,builds", RANDOM_CORPORA)
def test_random_corpus_matches_java(java, tmp_path, seed, n_docs, long_docs, size, overlap,
                                    builds):
    docs = make_corpus(seed, _lengths(random.Random(seed), n_docs) + long_docs)
    queries = make_queries(seed + 1000, docs)
    stats = check_parity(java, tmp_path, docs, queries, size=size, overlap=overlap,
                         builds=builds)
    assert stats["hits"] > 2 * len(queries)  # the corpus really is searched


def test_edge_texts_match_java(java, tmp_path):
    """Hand-made texts at the window boundaries and with every kind of space."""
    n = [f"palavra{i}" for i in range(400)]
    docs = [
        "", " ", "\x01\x02 casa \x1f", "\xa0", "\xa0casa\xa0", "casa", " casa  ",
        " ".join(n[:199]), " ".join(n[:200]), "\t".join(n[:201]), "\n".join(n[:360]),
        "\x0b".join(n[:361]), "\xa0".join(n),  # NBSP does not split: one word
        "Olá,\u2003mundo\u3000de\u2028novo\x85fim\x1ctudo junto",
        "snake_case kebab-case CamelCase UPPER_CASE 3.14 1,000 x²+y² ½",
        "ΟΔΟΣ ΣΟΦΙΑ ΑΣ.ΒΣ ΑΣ1 1Σ ΑΣ,Β Α.Σ İSTANBUL ẞ ǅemal ﬁm",  # see test_final_sigma
        "casa casa casa", "mesa mesa", "cafe\u0301 café CAFÉ",
    ]
    queries = [" ".join(q) for q in (
        ["palavra0"], ["palavra199"], ["palavra200"], ["palavra399", "casa"], ["casa"],
        ["mesa"], ["café"], ["Olá"], ["mundo"], ["snake"], ["case"], ["snake_case"], ["3"],
        ["14"], ["x²"], ["½"], ["οδος"], ["ΟΔΟΣ"], ["σοφια"], ["ας"], ["βς"], ["istanbul"],
        ["i̇stanbul"], ["ß"], ["ǆemal"], ["ﬁm"], ["fim"], ["tudo"], ["junto"], ["novo"])]
    queries += [f"palavra{i} palavra{i + 1}" for i in range(0, 400, 20)]
    check_parity(java, tmp_path, docs, queries)


def test_chunk_words_matches_java_on_raw_text(java):
    """chunk_words on text that was not NFC-normalised and holds NUL and control chars."""
    rng = random.Random(7)
    vocab = make_vocab(rng, 50) + ["x\x00y", "\x00", "e\u0301", "A\u030a"]
    docs = [make_text(rng, vocab, n) for n in (0, 1, 3, 199, 200, 201, 777)] + ["\x00 a \x00"]
    expected = java(docs, [""], size=200, overlap=40).chunks
    got = [c.text for d in docs for c in chunk_words(d, size=200, overlap=40)]
    assert got == expected


def test_fixture_corpus_matches_java(java, tmp_path):
    assert FIXTURE.exists(), f"the bundled fixture corpus {FIXTURE} is missing"
    docs = [json.loads(line)["text"] for line in FIXTURE.read_text("utf-8").splitlines()
            if line.strip()]
    questions = ["Quantas horas de atividades complementares o curso exige?",
                 "Quem foi a primeira programadora?", "quando foi criada a UFMS",
                 "como pedir aproveitamento de estudos", "o que é o POSCOMP",
                 "regras para renovação de matrícula", "exercícios domiciliares: quem tem direito?",
                 "história da FACOM", "O QUE É ENGENHARIA DE SOFTWARE", "estagio obrigatorio"]
    queries = questions + make_queries(2024, docs, n=80)
    stats = check_parity(java, tmp_path, docs, queries, builds=2)
    assert stats["hits"] > 2 * len(queries)


# Java's String.toLowerCase decides between final "ς" and "σ" with word boundaries
# (java.text.BreakIterator); Python's str.lower() uses Unicode's Final_Sigma context.
# They disagree when a capital sigma touches a digit, "-", "_", '"' or ":", "^", "`", "·", "’".
SIGMA_CASES = ["ΑΣ-Β", "Α-Σ", "ΑΣ2Β", "Α2Σ", "ΑΣ_Β", "Α_Σ", 'ΑΣ"Β', "ΑΣ:Β", "Α:Σ", "ΑΣ’Β"]


@pytest.mark.xfail(strict=True, reason="known disagreement: final sigma after str.lower() "
                   "differs from Java's toLowerCase(Locale.ROOT); see docs/parity.md")
@pytest.mark.parametrize("text", SIGMA_CASES)
def test_final_sigma_matches_java(java, text):
    assert set(java_terms(text)) == set(java([text], [""]).terms)
