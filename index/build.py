"""Build an index from the store: chunk every document, then build each method."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from busca import __version__
from busca.crawler.store import Store
from busca.index import bm25, storage, stream, tfidf
from busca.index import dense
from busca.index.chunking import OVERLAP, SIZE, check_window
from busca.index.dense_models import DENSE, model_of

METHODS = ("tfidf", "bm25")

# method name -> build(texts, out_dir, *, options, previous, on_progress) -> manifest entry
BUILDERS: dict[str, Callable] = {"tfidf": tfidf.build, "bm25": bm25.build}
BUILDERS.update(dense=dense.build, hybrid=dense.build_hybrid)  # index/dense.py

# Lexical builders that can start from the term counts of one shared tokenising pass
# (streamed, on every core) instead of the chunk texts: builder -> build(counts, out, *,
# options, on_progress). A method whose builder is not here gets the texts.
FROM_COUNTS: dict[Callable, Callable] = {tfidf.build: tfidf.build_counts,
                                         bm25.build: bm25.build_counts}

Progress = Callable[[str, int, int], None]

# Manifest keys that change what a method's scores mean: a calibrated floor survives a
# rebuild (e.g. after a crawl added articles) only when none of them changed.
SETTINGS = ("analyzer", "analyzer_version", "weighting", "k1", "b", "encoder", "version",
            "dimension")


class NothingToIndex(Exception):
    """The store has no document."""


class UnknownMethodError(ValueError):
    """A method busca cannot build."""


def build_index(store: Store, *, size: int = SIZE, overlap: int = OVERLAP,
                methods: Sequence[str] = METHODS, options: dict | None = None,
                on_progress: Progress | None = None) -> dict:
    """Chunk the store's documents, build `methods` and swap the new index in."""
    check_window(size, overlap)
    _check_methods(methods)
    options = options or {}
    if "bm25" in methods:
        bm25.check_options(options)  # a bad k1 or a missing stemmer fails before any work
    progress = on_progress or (lambda stage, done, total: None)
    total = store.count()
    if total == 0:
        raise NothingToIndex("nothing to index: run busca crawl or busca add first")
    chunker = {"kind": "words", "size": size, "overlap": overlap}
    previous = storage.current_dir(store.home)
    before = _same_chunker(previous, chunker)
    reusable = _reusable_rows(store, before)
    from_counts = {m: FROM_COUNTS[BUILDERS[m]] for m in methods if BUILDERS.get(m) in FROM_COUNTS}
    chunked = stream.chunk_documents(
        store.documents(), size=size, overlap=overlap, reusable=reusable, total=total,
        count=bool(from_counts), keep_texts=len(from_counts) < len(methods),
        workers=options.get("workers"), on_progress=progress)
    n_chunks = chunked.chunks
    if not n_chunks:
        raise NothingToIndex("nothing to index: every document in the store is empty")
    out = storage.new_build_dir(store.home)
    entries = {}
    for method in methods:
        progress(f"building {method}", 0, n_chunks)
        if method in from_counts:
            entries[method] = from_counts[method](chunked.counts, out, options=options,
                                                  on_progress=progress)
        else:
            entries[method] = builder(method)(chunked.texts, out, options=options,
                                              previous=previous, on_progress=progress)
    _keep_floors(entries, before)
    store.write_chunks(out.name, chunked.rows())
    figures = {"documents": total, "words": chunked.words, "chunks": n_chunks,
               "rechunked_documents": chunked.rechunked}
    manifest = {"busca_version": __version__, "chunker": chunker, **figures,
                "methods": entries}
    storage.publish(store.home, out, manifest)
    store.drop_builds_except(out.name)
    storage.remove_stale(store.home)
    return storage.read_manifest(out)


def builder(method: str) -> Callable:
    """The builder of `method`; `dense:NAME` is dense.build for that model."""
    if method.startswith(DENSE + ":") and model_of(method):
        return partial(dense.build, method=method)
    return BUILDERS[method]


def _check_methods(methods: Sequence[str]) -> None:
    """Refuse an empty list, unknown names, and a hybrid without its components."""
    unknown = [m for m in methods if m not in BUILDERS and not m.startswith(DENSE + ":")]
    if unknown or not methods:
        what = f"unknown method {unknown[0]!r}" if unknown else "no method to build"
        raise UnknownMethodError(f"{what}; known methods: {', '.join(BUILDERS)}")
    if "hybrid" in methods and not ("dense" in methods and {"tfidf", "bm25"} & set(methods)):
        raise UnknownMethodError("hybrid needs dense vectors and a lexical method:"
                                 " busca index --methods tfidf,bm25 --dense use")


def _same_chunker(previous: Path | None, chunker: dict) -> dict | None:
    """The previous build's manifest, if there is one and it used the same chunker."""
    if previous is None:
        return None
    try:
        manifest = storage.read_manifest(previous)
    except storage.IndexFormatError:
        return None
    return manifest if manifest.get("chunker") == chunker else None


def _keep_floors(entries: dict, before: dict | None) -> None:
    """Carry calibrated floors over to methods built with the same settings as before."""
    for method, entry in entries.items():
        old = (before or {}).get("methods", {}).get(method, {})
        if old.get("floor") is not None and all(old.get(k) == entry.get(k) for k in SETTINGS):
            entry["floor"] = old["floor"]


def _reusable_rows(store: Store, manifest: dict | None) -> dict:
    """url -> (doc sha256, rows) of the previous build (None: nothing to reuse)."""
    if manifest is None:
        return {}
    by_url: dict = {}
    for row in store.chunks(manifest["build"]):
        by_url.setdefault(row.url, (row.doc_sha256, []))[1].append(row)
    return by_url
