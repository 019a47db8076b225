"""Build an index from the store: chunk every document, then build each method."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from busca import __version__
from busca.crawler.store import Store
from busca.index import bm25, storage, stream, tfidf
from busca.index import dense
from busca.index.chunking import OVERLAP, SIZE, check_window

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


class NothingToIndex(Exception):
    """The store has no document."""


class UnknownMethodError(ValueError):
    """A method busca cannot build."""


def build_index(store: Store, *, size: int = SIZE, overlap: int = OVERLAP,
                methods: Sequence[str] = METHODS, options: dict | None = None,
                on_progress: Progress | None = None) -> dict:
    """Chunk the store's documents, build `methods` and swap the new index in."""
    check_window(size, overlap)
    unknown = [m for m in methods if m not in BUILDERS]
    if unknown:
        raise UnknownMethodError(
            f"unknown method {unknown[0]!r}; known methods: {', '.join(BUILDERS)}")
    options = options or {}
    if "bm25" in methods:
        bm25.check_options(options)  # a bad k1 or a missing stemmer fails before any work
    progress = on_progress or (lambda stage, done, total: None)
    total = store.count()
    if total == 0:
        raise NothingToIndex("nothing to index: run busca crawl or busca add first")
    chunker = {"kind": "words", "size": size, "overlap": overlap}
    previous = storage.current_dir(store.home)
    reusable = _reusable_rows(store, previous, chunker)
    from_counts = {m: FROM_COUNTS[BUILDERS[m]] for m in methods if BUILDERS[m] in FROM_COUNTS}
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
            entries[method] = BUILDERS[method](chunked.texts, out, options=options,
                                               previous=previous, on_progress=progress)
    store.write_chunks(out.name, chunked.rows())
    figures = {"documents": total, "words": chunked.words, "chunks": n_chunks,
               "rechunked_documents": chunked.rechunked}
    manifest = {"busca_version": __version__, "chunker": chunker, **figures,
                "methods": entries}
    storage.publish(store.home, out, manifest)
    store.drop_builds_except(out.name)
    storage.remove_stale(store.home)
    return storage.read_manifest(out)


def _reusable_rows(store: Store, previous: Path | None, chunker: dict) -> dict:
    """url -> (doc sha256, rows) of the previous build, if it used the same chunker."""
    if previous is None:
        return {}
    try:
        manifest = storage.read_manifest(previous)
    except storage.IndexFormatError:
        return {}
    if manifest.get("chunker") != chunker:
        return {}
    by_url: dict = {}
    for row in store.chunks(manifest["build"]):
        by_url.setdefault(row.url, (row.doc_sha256, []))[1].append(row)
    return by_url
