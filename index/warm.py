"""`python -m busca.index.warm`: compile every kernel of compiled.KERNELS into numba's cache,
in a process of its own (index/compiled.py starts it; a user never waits for it), and record
the signatures compiled so that other processes load exactly those.

The kernels are reached through the real code paths, with the thresholds lowered, on a
small index in a temporary folder: a build with both lexical methods, then queries of
each method through both walks (tables only, then codes per chunk), so the signatures are
the ones a user's build and queries ask for."""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np

WORDS = ("informação informações prazo reembolso pedido pedidos entrega produto sistema"
         " pacote pacotes comando instalação configuração rede servidor arquivo arquivos"
         " usuário usuários senha acesso").split()
QUERIES = ("qual o prazo do reembolso?", "pedido entrega", "pacotes do sistema",
           "senha de acesso ao servidor", "configuração", "palavraquenaoexiste reembolso")


def _documents(n: int = 48):
    """n small documents: every word in many of them, a few words in one only."""
    for i in range(n):
        words = [WORDS[(i * 5 + j * j) % len(WORDS)] for j in range(4 + i % 9)] * (1 + i % 3)
        words.append(f"raro{i}")
        yield f"https://warm.example/{i}", " ".join(words)


def exercise(folder: Path) -> None:
    """A build and queries on a small index in `folder`, through the compiled paths."""
    from busca.crawler.store import Document

    from . import compiled
    from .lexical import maxscore
    from .build import build_index
    from .lexical.lexical import NoSearchableTerms
    from .home.storage import LocalHome, load_index
    from .text.tokens import warm_up
    compiled.MIN_DOCUMENTS = compiled.MIN_POSTINGS = maxscore.COMPILED_MIN_ROWS = 0
    warm_up()
    with LocalHome(folder) as home:
        for url, text in _documents():
            home.put(Document(url, "", text).normalized())
        build_index(home, methods=("tfidf", "bm25"))
    index = load_index(folder)
    for method in ("tfidf", "bm25"):
        ranker = index.ranker(method)
        for query in QUERIES + QUERIES:
            try:
                ranker.top(query, 10)
            except NoSearchableTerms:
                pass
        ranker.prepare()
        columns, weights = [0, 1], np.ones(2)
        ranker.lookup(np.arange(4, dtype=np.int64), columns, weights)
        maxscore.top(_one_query(ranker, columns), np.arange(2), weights, 10,
                     getattr(ranker, "walk_factor", None))


def _one_query(ranker, columns):
    """The postings of `columns` only, in memory: as PostgreSQL's ranker lays them out."""
    spans = [ranker._span(c) for c in columns]
    lengths = [s.stop - s.start for s in spans]
    return SimpleNamespace(
        indptr=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        indices=np.concatenate([ranker.indices[s] for s in spans]),
        data=np.concatenate([ranker.data[s] for s in spans]), n_rows=ranker.n_rows,
        accumulator=ranker.accumulator, bound=None)


def signatures() -> dict:
    """{module: {function: [signature, ...]}} of every kernel compiled in this process."""
    from . import compiled
    found = {}
    for name in compiled.KERNELS:
        loaded = compiled.module(name)
        found[name] = {attr: list(value.signatures) for attr, value in vars(loaded).items()
                       if hasattr(value, "signatures") and hasattr(value, "compile")
                       and value.signatures}
    return found


def main() -> None:
    from . import compiled
    os.environ["BUSCA_NUMBA_LOAD"] = "wait"
    _yield_to_the_user()
    path = compiled.record_path()
    if path is None or compiled.module(compiled.KERNELS[0]) is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    running = path.with_name(path.name + ".running")  # compiled._warming_elsewhere reads it
    running.write_text(str(os.getpid()))
    try:
        with tempfile.TemporaryDirectory(prefix="busca-warm-") as folder:
            exercise(Path(folder) / "home")
        partial = path.with_name(f"{path.name}.{os.getpid()}")
        partial.write_bytes(pickle.dumps(signatures()))
        os.replace(partial, path)
    finally:
        running.unlink(missing_ok=True)


def _yield_to_the_user() -> None:
    """The lowest CPU priority: the build or the queries that started this process run on
    the numpy path meanwhile and get the cores first (the user's first build at 100k chunks
    took 25.7 s beside a compiler of equal priority, 14.9 s alone)."""
    try:
        os.nice(19)
    except (AttributeError, OSError):  # no nice (Windows) or not allowed: same priority
        pass


if __name__ == "__main__":
    main()
