"""The systems of bench_lexical.py, each run in a subprocess of its own: `run(config)` builds
or searches and returns its figures (times in seconds, sizes and peak memory in MB).

Peak memory is the process's high-water mark of resident memory: for a "query" phase it is
the memory of a process that only loads the index and searches; for systems without an
on-disk index (scikit-learn, rank_bm25, the dictionary cosine) it includes the build.
"""

from __future__ import annotations

import math
import resource
import shutil
import time
from collections import Counter
from pathlib import Path

import numpy as np

from measure import directory_mb, peak_mb, read_corpus, time_queries

# --- busca --------------------------------------------------------------------------------

def busca_store(cfg: dict) -> dict:
    """The corpus as store documents (one 200-word window each); not part of any figure."""
    from busca.crawler.store import Document
    from busca.index import LocalHome as Store
    home = Path(cfg["work"]) / f"busca-{cfg['size']}"
    shutil.rmtree(home, ignore_errors=True)
    store = Store(home)
    rows = []
    for i, text in enumerate(read_corpus(cfg["corpus"], cfg["size"])):
        doc = Document(f"c{i:07d}", "", text).normalized()
        rows.append((doc.url, doc.title, doc.text, "bench", doc.sha256, "2026-01-01"))
    store.db.execute("BEGIN")  # one transaction: Store.put's insert of new documents, in bulk
    store.db.executemany("INSERT INTO documents (url, title, text, source, sha256, fetched_at)"
                         " VALUES (?, ?, ?, ?, ?, ?)", rows)
    store.db.execute("COMMIT")
    store.close()
    return {}


def busca_build(cfg: dict) -> dict:
    """One `busca index --methods M` of the store from nothing (cfg["methods"], by default
    tfidf and bm25: both from one tokenising pass, as `busca index` does)."""
    from busca.index import LocalHome as Store
    from busca.index.build import build_index
    from busca.index.home.storage import current_dir
    home = Path(cfg["work"]) / f"busca-{cfg['size']}"
    methods = tuple(cfg.get("methods", "tfidf,bm25").split(","))
    fresh(home)
    started = time.perf_counter()
    with Store(home) as store:
        build_index(store, methods=methods)
    build = time.perf_counter() - started
    path = current_dir(home)
    return {"build": build, "size": {m: directory_mb(path, f"{m}.*") for m in methods},
            "build_peak": peak_mb(), "workers_peak": peak_mb(resource.RUSAGE_CHILDREN),
            "build_config": _busca_build_config()}


def fresh(home: Path) -> None:
    """The kept store without any index build: the next build starts from nothing (no
    chunk span of a previous build reused)."""
    for build in home.glob("index-*"):
        shutil.rmtree(build)
    (home / "CURRENT").unlink(missing_ok=True)


def _busca_build_config() -> str:
    from busca.index import compiled
    from busca.index.text.stream import default_workers
    loops = compiled.module("tokens_numba")
    how = (f"compiled loops (numba {loops.numba.__version__})" if loops is not None
           else "Python/numpy loops (no numba)")
    return f"{default_workers()} tokenising workers, {how}"


def busca_query(cfg: dict) -> dict:
    from busca.index.home.storage import load_index
    from busca import search as core
    from busca.index.lexical.lexical import NoSearchableTerms
    method = cfg["method"]
    started = time.perf_counter()
    index = load_index(Path(cfg["work"]) / f"busca-{cfg['size']}")
    core.scorer(index, method).prepare()  # as busca serve and shell start: kernels, tables
    load = time.perf_counter() - started

    def search(query):
        try:
            return core.rank(index, query, method=method, k=10)
        except NoSearchableTerms:
            return None

    found = {"load": load, **time_queries(search, cfg), "search_peak": peak_mb()}
    return {**found, "config": _busca_query_config(method)}


def _busca_query_config(method: str) -> str:
    """How busca answered: read after the queries (the kernels they loaded, if any)."""
    import sys

    from busca.version import __version__
    compiled = "busca.index.lexical.maxscore_numba" in sys.modules
    return (f"busca {__version__}: {method}, top 10 through search.rank, one thread, the"
            " scorer prepared before the clock (as busca serve and shell start); MaxScore's"
            f" numba loops {'loaded' if compiled else 'not loaded (its numpy loops)'}")


# --- peers without an on-disk index ------------------------------------------------------

def _top10(scores: np.ndarray) -> np.ndarray:
    top = np.argpartition(-scores, 9)[:10]
    return top[np.argsort(-scores[top], kind="stable")]


def sklearn_naive(cfg: dict) -> dict:
    """scikit-learn's TfidfVectorizer (defaults) and the naive X @ q.T per query."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    texts = read_corpus(cfg["corpus"], cfg["size"])
    started = time.perf_counter()
    vectorizer = TfidfVectorizer()
    matrix = vectorizer.fit_transform(texts)
    build = time.perf_counter() - started
    del texts

    def search(query):
        return _top10((matrix @ vectorizer.transform([query]).T).toarray().ravel())

    config = (f"scikit-learn {_version('scikit-learn')}: TfidfVectorizer() defaults (its own"
              " tokenizer, no stemming, no stopwords), X @ q.T on the sparse matrix per query,"
              " top 10 by argpartition, one thread")
    return {"build": build, **time_queries(search, cfg), "search_peak": peak_mb(),
            "config": config}


def rank_bm25(cfg: dict) -> dict:
    """rank_bm25's BM25Okapi on busca's pt terms."""
    from rank_bm25 import BM25Okapi

    from busca.index.text.analyzers import pt_terms
    texts = read_corpus(cfg["corpus"], cfg["size"])
    started = time.perf_counter()
    model = BM25Okapi([pt_terms(t) for t in texts])
    build = time.perf_counter() - started
    del texts
    config = (f"rank_bm25 {_version('rank-bm25')}: BM25Okapi(k1={model.k1:g}, b={model.b:g},"
              f" epsilon={model.epsilon:g}) on busca's pt terms, get_scores per query, top 10;"
              f" {cfg['most']} queries at most")
    return {"build": build, **time_queries(lambda q: _top10(model.get_scores(pt_terms(q))), cfg),
            "search_peak": peak_mb(), "config": config}


def dict_cosine(cfg: dict) -> dict:
    """The seed's Java program in Python dictionaries: TF-IDF maps and `cosseno` against every
    chunk, both norms recomputed at each comparison."""
    from busca.index.text.analyzers import java_terms
    texts = read_corpus(cfg["corpus"], cfg["size"])
    started = time.perf_counter()
    counts = [Counter(java_terms(t)) for t in texts]
    df = Counter(term for c in counts for term in c)
    idf = {t: math.log(len(texts) / d) for t, d in df.items()}
    vectors = [{t: n * idf[t] for t, n in c.items()} for c in counts]
    build = time.perf_counter() - started
    del texts, counts

    def search(query):
        q = {t: n * idf[t] for t, n in Counter(java_terms(query)).items() if t in idf}
        scores = []
        for v in vectors:
            dot = sum(w * v.get(t, 0.0) for t, w in q.items())
            na = math.sqrt(sum(w * w for w in q.values()))
            nb = math.sqrt(sum(w * w for w in v.values()))
            scores.append(0.0 if na == 0 or nb == 0 else dot / (na * nb))
        return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:10]

    config = ("Python dicts: tf x log(N/df) on the Java-parity terms, cosine against every"
              " chunk with both norms recomputed at each comparison (the seed's Java program),"
              f" top 10 by a full sort; {cfg['most']} queries at most")
    return {"build": build, **time_queries(search, cfg), "search_peak": peak_mb(),
            "config": config}


def _version(distribution: str) -> str:
    import importlib.metadata
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


RUNNERS = {"busca-store": busca_store, "busca-build": busca_build, "busca-query": busca_query,
           "sklearn": sklearn_naive, "rank_bm25": rank_bm25, "dict-cosine": dict_cosine}


def run(cfg: dict) -> dict:
    from dense_systems import RUNNERS as DENSE
    from lexical_peers import RUNNERS as PEERS
    return {**RUNNERS, **PEERS, **DENSE}[cfg["runner"]](cfg)
