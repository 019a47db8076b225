"""The strong BM25 peers of bench_lexical.py, each at its best and run in a subprocess of its own
(`run` in lexical_systems.py dispatches here). Every peer gets busca's `pt` analyzer choices:
lowercase, runs of letters or digits, the Snowball Portuguese stopwords (with and without
accents), Snowball Portuguese stemming, accent folding; k1 = 1.2, b = 0.75; top 10; one thread
for queries. Each returns its configuration (`config`) so the table can print it.

- bm25s (numpy and numba backends): `method="lucene"`, its own tokenizer with PyStemmer's
  Portuguese stemmer and busca's stopword list; the index is saved and memory-mapped.
- tantivy: a `simple` tokenizer, lowercase, busca's stopwords, tantivy's Snowball Portuguese
  stemmer, ASCII folding; frequencies without positions; queries parsed in Rust
  (`parse_query_lenient`, OR of terms) and collected without counting (block-max WAND).
- PISA (pyterrier-pisa): it has no Portuguese stemmer, so documents and queries are
  analyzed by busca's `pt` terms in Python (one stem per distinct word, kept) and PISA
  indexes them with `stemmer="none"` and no stopwords; block_simdbp postings, queries
  through its C++ retrieval call directly (no DataFrame per query), block-max MaxScore and
  block-max WAND measured, the faster kept (with `--queries once`, each in a process of its
  own, so that neither meets a query the other has asked).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from measure import directory_mb, peak_mb, read_corpus, time_queries

K1, B = 1.2, 0.75
ALGORITHMS = ("block_max_maxscore", "block_max_wand")  # PISA's, the faster kept
BUILD_THREADS = 2  # peers that can build with threads get the machine's cores, as busca does
TANTIVY_HEAP = 512_000_000  # writer memory shared by its threads (1M chunks: 0.5 to 4 GB
# measured within the noise of a shared machine; tantivy-py's default is 128 MB)


def _stopwords() -> list[str]:
    from busca.index.text.analyzers import _STOPWORDS
    return sorted(_STOPWORDS)


def _figures(search, cfg: dict, load: float, config: str) -> dict:
    return {"load": load, **time_queries(search, cfg), "search_peak": peak_mb(),
            "config": config}


# --- bm25s ----------------------------------------------------------------------------------

def _bm25s_tokenize(texts, stemmer, ids: bool):
    import bm25s
    return bm25s.tokenize(texts, stopwords=_stopwords(), stemmer=stemmer, return_ids=ids,
                          show_progress=False)


def bm25s_build(cfg: dict) -> dict:
    """bm25s: tokenize (PyStemmer Portuguese, busca's stopwords), index, save. The index does
    not depend on the retrieval backend: one build serves numpy and numba."""
    import bm25s
    import Stemmer
    texts = read_corpus(cfg["corpus"], cfg["size"])
    out = Path(cfg["work"]) / f"bm25s-{cfg['size']}"
    started = time.perf_counter()
    # no stemmer cache for the build (it stems each distinct word once: PyStemmer's LRU
    # cache of 10,000 words made it 5x slower on a large vocabulary); queries keep it
    tokens = _bm25s_tokenize(texts, Stemmer.Stemmer("portuguese", 0), True)
    retriever = bm25s.BM25(method="lucene", k1=K1, b=B, csc_backend="scipy")
    retriever.index(tokens, show_progress=False)
    retriever.save(str(out))
    build = time.perf_counter() - started
    config = (f"bm25s {bm25s.__version__}: method=lucene, csc_backend=scipy, PyStemmer pt"
              " without cache + busca stopwords, its default threads")
    return {"build": build, "size": directory_mb(out), "build_peak": peak_mb(),
            "build_config": config}


def bm25s_query(cfg: dict) -> dict:
    import bm25s
    import Stemmer
    stemmer = Stemmer.Stemmer("portuguese")
    started = time.perf_counter()
    retriever = bm25s.BM25.load(str(Path(cfg["work"]) / f"bm25s-{cfg['size']}"), mmap=True,
                                backend=cfg["backend"])
    load = time.perf_counter() - started

    def search(query):
        tokens = _bm25s_tokenize([query], stemmer, False)
        if tokens[0]:
            return retriever.retrieve(tokens, k=10, show_progress=False, n_threads=1)
        return None

    config = (f"bm25s {bm25s.__version__}, backend={cfg['backend']}, method=lucene, mmap,"
              " PyStemmer pt + busca stopwords, n_threads=1; built with csc_backend=scipy and"
              " a stemmer without cache")
    return _figures(search, cfg, load, config)


# --- tantivy --------------------------------------------------------------------------------

def _tantivy_index(path: Path, create: bool):
    import tantivy
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("text", stored=False, tokenizer_name="pt", index_option="freq")
    schema = builder.build()
    index = tantivy.Index(schema, path=str(path), reuse=not create)
    analyzer = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
                .filter(tantivy.Filter.lowercase())
                .filter(tantivy.Filter.custom_stopword(_stopwords()))
                .filter(tantivy.Filter.stemmer("portuguese"))
                .filter(tantivy.Filter.ascii_fold()).build())
    index.register_tokenizer("pt", analyzer)
    return index


def tantivy_build(cfg: dict) -> dict:
    """tantivy: one document per chunk, analyzed in Rust, committed and merged."""
    import tantivy
    texts = read_corpus(cfg["corpus"], cfg["size"])
    out = Path(cfg["work"]) / f"tantivy-{cfg['size']}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    started = time.perf_counter()
    index = _tantivy_index(out, True)
    writer = index.writer(heap_size=TANTIVY_HEAP, num_threads=BUILD_THREADS)
    for text in texts:
        writer.add_document(tantivy.Document(text=text))
    writer.commit()
    writer.wait_merging_threads()
    build = time.perf_counter() - started
    config = (f"tantivy {_tantivy_version()}: {BUILD_THREADS} threads, a"
              f" {TANTIVY_HEAP // 1_000_000} MB writer heap, committed and merged")
    return {"build": build, "size": directory_mb(out), "build_peak": peak_mb(),
            "build_config": config}


def _tantivy_version() -> str:
    import tantivy
    return tantivy.__version__.split()[1].rstrip(",")  # "tantivy v0.27.0, index_format v7"


def tantivy_query(cfg: dict) -> dict:
    started = time.perf_counter()
    index = _tantivy_index(Path(cfg["work"]) / f"tantivy-{cfg['size']}", False)
    index.reload()
    searcher = index.searcher()
    load = time.perf_counter() - started

    def search(query):
        parsed, _ = index.parse_query_lenient(query, ["text"])
        return searcher.search(parsed, 10, count=False).hits

    config = (f"tantivy {_tantivy_version()}: simple tokenizer, lowercase, busca"
              " stopwords, Snowball pt stemmer, ascii_fold; freq (no positions);"
              f" parse_query_lenient (OR), count=False; built with {BUILD_THREADS} threads and a"
              f" {TANTIVY_HEAP // 1_000_000} MB writer heap")
    return _figures(search, cfg, load, config)


# --- PISA -----------------------------------------------------------------------------------

def _pt_analyzed(texts):
    """busca's pt terms of each text, one analysis per distinct whitespace piece (cached)."""
    import functools

    from busca.index.text.analyzers import pt_terms
    cached = functools.lru_cache(maxsize=1 << 20)(lambda piece: " ".join(pt_terms(piece)))
    for text in texts:
        yield " ".join(filter(None, map(cached, text.split())))


def pisa_build(cfg: dict) -> dict:
    """PISA: pt terms made in Python, then indexed by PISA (no stemmer, no stopwords)."""
    from pyterrier_pisa import PisaIndex
    texts = read_corpus(cfg["corpus"], cfg["size"])
    out = Path(cfg["work"]) / f"pisa-{cfg['size']}"
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    index = PisaIndex(str(out), stemmer="none", stops="none", threads=BUILD_THREADS)
    docs = ({"docno": str(i), "text": t} for i, t in enumerate(_pt_analyzed(texts)))
    index.index(docs)
    build = time.perf_counter() - started
    config = (f"PISA via pyterrier-pisa {_pisa_version()}: {BUILD_THREADS} threads, busca pt"
              " terms made in Python, stemmer=none, no stopwords")
    return {"build": build, "size": directory_mb(out), "build_peak": peak_mb(),
            "build_config": config}


def _pisa_version() -> str:
    import pyterrier_pisa
    return pyterrier_pisa.__version__


def pisa_query(cfg: dict) -> dict:
    import numpy as np
    import pyterrier_pisa
    from pyterrier_pisa import PisaIndex, _pisathon

    from busca.index.text.analyzers import java_terms, pt_term
    started = time.perf_counter()
    index = PisaIndex(str(Path(cfg["work"]) / f"pisa-{cfg['size']}"), stemmer="none",
                      stops="none")
    retriever = index.bm25(k1=K1, b=B, num_results=10, threads=1)
    load = time.perf_counter() - started
    out = {name: np.empty(10, dtype=t) for name, t in
           (("qidxs", np.int32), ("docnos", object), ("ranks", np.int32), ("scores", np.float32))}

    stems: dict[str, str | None] = {}  # each word's term, kept as busca's scorer keeps them

    def terms(query: str) -> str:
        found = []
        for word in java_terms(query):
            if word not in stems:
                stems[word] = pt_term(word)
            if stems[word]:
                found.append(stems[word])
        return " ".join(found)

    def searcher(algorithm):
        def search(query):
            n = _pisathon.retrieve(retriever._ctxt, algorithm, [(0, terms(query))],
                                   k=10, threads=1, query_weighted=0, pretokenised=False,
                                   **{f"result_{k}": v for k, v in out.items()})
            return out["docnos"][:n]
        return search

    best, first = None, None
    algorithms = [cfg["algorithm"]] if cfg.get("algorithm") else ALGORITHMS
    for algorithm in algorithms:
        found = time_queries(searcher(algorithm), cfg, budget=cfg["budget"] / len(algorithms))
        first = found["first_qps"] if first is None else first  # the cold one
        if best is None or found["qps"] > best[1]["qps"]:
            best = algorithm, found
    config = (f"PISA via pyterrier-pisa {pyterrier_pisa.__version__}: busca pt terms (Python,"
              " each word's term kept from its first query on, as busca does),"
              f" stemmer=none, no stopwords, block_simdbp, {best[0]} (faster of it and"
              f" {'block_max_wand' if best[0] == 'block_max_maxscore' else 'block_max_maxscore'}"
              f"{', each in a process of its own' if cfg.get('algorithm') else ''}),"
              f" threads=1; built with {BUILD_THREADS} threads")
    return {"load": load, **best[1], "first_qps": first, "search_peak": peak_mb(),
            "config": config}


RUNNERS = {"bm25s-build": bm25s_build, "bm25s-query": bm25s_query,
           "tantivy-build": tantivy_build, "tantivy-query": tantivy_query,
           "pisa-build": pisa_build, "pisa-query": pisa_query}
