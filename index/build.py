"""Build an index from a home's documents: chunk every document, build each method, publish.

Every write goes through the home's BuildWriter (index/backend.py), so readers see the old
build until the new one is published, and a build that dies leaves the old one live.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import __version__
from ..errors import BuscaError
from .bm25 import check_options as check_bm25_options
from .chunking import OVERLAP, SIZE, check_window
from .manifest import Manifest
from .methods import DEFAULT, DENSE, METHODS, UnknownMethod, check_methods, with_dense
from .stream import chunk_documents

UnknownMethodError = UnknownMethod  # the name build errors had before the registry moved

Progress = Callable[[str, int, int], None]

# Manifest keys that change what a method's scores mean: a calibrated floor survives a
# rebuild (e.g. after a crawl added articles) only when none of them changed.
SETTINGS = ("analyzer", "analyzer_version", "weighting", "k1", "b", "encoder", "version",
            "dimension")


class NothingToIndex(BuscaError):
    """The store has no document."""


def build_index(home, *, size: int = SIZE, overlap: int = OVERLAP,
                methods: Sequence[str] = DEFAULT, options: dict | None = None,
                on_progress: Progress | None = None) -> Manifest:
    """Chunk the home's documents, build `methods` and publish the new build."""
    check_window(size, overlap)
    check_methods(methods)
    options = options or {}
    if "bm25" in methods:
        check_bm25_options(options)  # a bad k1 or a missing stemmer fails before any work
    progress = on_progress or (lambda stage, done, total: None)
    total = home.count()
    if total == 0:
        raise NothingToIndex("nothing to index: run busca crawl or busca add first")
    chunker = {"kind": "words", "size": size, "overlap": overlap}
    previous = home.previous()
    before = previous if previous is not None and previous.manifest.chunker == chunker else None
    from_counts = _counted(methods)
    chunked = chunk_documents(
        home.documents(), size=size, overlap=overlap, reusable=_reusable_rows(before),
        total=total, count=bool(from_counts), keep_texts=len(from_counts) < len(methods),
        workers=options.get("workers"), on_progress=progress)
    if not chunked.chunks:
        raise NothingToIndex("nothing to index: every document in the store is empty")
    out = home.new_build()
    try:
        entries = _build_methods(methods, chunked, out, options, previous, progress)
        _keep_floors(entries, before)
        out.write_chunks(chunked.rows())
        manifest = Manifest(build=out.name, chunker=chunker, documents=total,
                            chunks=chunked.chunks, methods=entries, words=chunked.words,
                            rechunked_documents=chunked.rechunked, busca_version=__version__)
        return out.publish(manifest).manifest
    except BaseException:
        out.abort()
        raise


def _build_methods(methods, chunked, out, options, previous, progress) -> dict:
    entries = {}
    for method in methods:
        spec = METHODS[method]
        progress(f"building {method}", 0, chunked.chunks)
        if method in _counted(methods):
            entries[method] = spec.build_counts(chunked.counts, out, options=options,
                                                on_progress=progress)
        else:
            entries[method] = spec.build(chunked.texts, out, options=options,
                                         previous=previous, on_progress=progress)
    return entries


def _counted(methods: Sequence[str]) -> set[str]:
    return {m for m in methods if METHODS[m].build_counts is not None}


def methods_for(home, methods: Sequence[str], *, dense: str | None = None,
                ) -> tuple[list[str], str | None, bool]:
    """The methods a build needs (the dense/hybrid rule of index/methods.py), the encoder,
    and whether that encoder was kept from the previous build (no --dense given)."""
    kept = previous_encoder(home) if dense is None else None
    names, encoder = with_dense(methods, dense, kept)
    return names, encoder, bool(kept)


def previous_encoder(home) -> str | None:
    """The encoder of the live build's dense vectors, if it has any."""
    previous = home.previous()
    return previous.manifest.entry(DENSE).get("encoder") if previous is not None else None


def _keep_floors(entries: dict, before) -> None:
    """Carry calibrated floors over to methods built with the same settings as before."""
    for method, entry in entries.items():
        old = before.manifest.entry(method) if before is not None else {}
        if old.get("floor") is not None and all(old.get(k) == entry.get(k) for k in SETTINGS):
            entry["floor"] = old["floor"]


def _reusable_rows(before) -> dict:
    """url -> (doc sha256, rows) of the previous build (None: nothing to reuse)."""
    if before is None:
        return {}
    by_url: dict = {}
    for row in before.chunks():
        by_url.setdefault(row.url, (row.doc_sha256, []))[1].append(row)
    return by_url
