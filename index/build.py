"""Build an index from the store: chunk every document, then build each method."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from busca import __version__
from busca.crawler.store import ChunkRow, Store
from busca.index import storage, tfidf
from busca.index import dense
from busca.index.chunking import OVERLAP, SIZE, check_window, chunk_text, chunk_words, words

METHODS = ("tfidf",)

# method name -> build(texts, out_dir, *, options, previous, on_progress) -> manifest entry
BUILDERS: dict[str, Callable] = {"tfidf": tfidf.build}
BUILDERS.update(dense=dense.build, hybrid=dense.build_hybrid)  # index/dense.py

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
    progress = on_progress or (lambda stage, done, total: None)
    total = store.count()
    if total == 0:
        raise NothingToIndex("nothing to index: run busca crawl or busca add first")
    chunker = {"kind": "words", "size": size, "overlap": overlap}
    previous = storage.current_dir(store.home)
    reusable = _reusable_rows(store, previous, chunker)
    rows, texts, figures = _chunk_all(store, chunker, reusable, total, progress)
    if not texts:
        raise NothingToIndex("nothing to index: every document in the store is empty")
    out = storage.new_build_dir(store.home)
    entries = {}
    for method in methods:
        progress(f"building {method}", 0, len(texts))
        entries[method] = BUILDERS[method](texts, out, options=options or {},
                                           previous=previous, on_progress=progress)
    store.write_chunks(out.name, rows)
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


def _chunk_all(store: Store, chunker: dict, reusable: dict, total: int, progress: Progress):
    rows: list[ChunkRow] = []
    texts: list[str] = []
    n_words = rechunked = 0
    for done, doc in enumerate(store.documents(), start=1):
        n_words += len(words(doc.text))
        old = reusable.get(doc.url)
        if old and old[0] == doc.sha256:
            spans = [(r.start, r.end) for r in old[1]]
            chunk_texts = [chunk_text(doc.text, a, b) for a, b in spans]
        else:
            rechunked += 1
            chunks = chunk_words(doc.text, size=chunker["size"], overlap=chunker["overlap"])
            spans = [(c.start, c.end) for c in chunks]
            chunk_texts = [c.text for c in chunks]
        for position, ((start, end), text) in enumerate(zip(spans, chunk_texts)):
            rows.append(ChunkRow(len(rows), doc.url, position, start, end, doc.sha256))
            texts.append(text)
        progress("chunking", done, total)
    figures = {"documents": total, "words": n_words, "chunks": len(texts),
               "rechunked_documents": rechunked}
    return rows, texts, figures

