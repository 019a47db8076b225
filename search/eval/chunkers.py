"""Temporary indexes of the stored documents cut by other chunkers, for `busca eval
--chunkers`: built into a temporary folder with the same method builders as `busca index`,
searched through the same scorers, deleted afterwards; the live index is never touched."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ...version import __version__
from ...crawler.store import Document
from ...index import build as index_build
from ...index.home.manifest import Manifest
from ...index.dense.dense_models import HYBRID, is_hybrid
from ...index.methods import METHODS, UnknownMethod, method_spec, stored_methods
from ...index.home.storage import Index, LocalBuildWriter
from ...index.text.titles import titled_texts
from .judge import ChunkTable, chunk_documents


@contextmanager
def temporary_indexes(documents: Sequence[Document], chunkers: Sequence[dict],
                      methods: Sequence[str], *, options: dict | None = None,
                      previous=None,
                      on_progress: Callable[[str, int, int], None] | None = None,
                      ) -> Iterator[list[tuple[ChunkTable, Index]]]:
    """One (chunk table, loaded index) per chunker; the folders vanish on exit."""
    unknown = [m for m in methods if method_spec(m) is None]
    if unknown:
        raise UnknownMethod(
            f"cannot build {unknown[0]!r} for --chunkers; buildable methods:"
            f" {', '.join(METHODS)}, dense:NAME")
    if not documents:
        raise index_build.NothingToIndex("nothing to index: run busca crawl or busca add first")
    wanted = {m: None for m in methods}
    if any(is_hybrid(m) for m in methods):
        wanted[HYBRID] = None  # hybrid:NAME fuses with the settings of the stored hybrid
    ordered = stored_methods(wanted)
    progress = on_progress or (lambda stage, done, total: None)
    titled = set((options or {}).get("titles") or _titled(previous))
    titles = {d.url: d.title or "" for d in documents}
    with tempfile.TemporaryDirectory(prefix="busca-eval-") as tmp:
        built = []
        for n, chunker in enumerate(chunkers):
            table, texts = chunk_documents(documents, chunker)
            if not texts:
                raise index_build.NothingToIndex("nothing to index: every document is empty")
            path = Path(tmp) / f"index-{n}"
            path.mkdir()
            out = LocalBuildWriter(Path(tmp), path)
            entries = {}
            for method in ordered:
                progress(f"building {method} ({table.label})", 0, len(texts))
                titled_method = method in titled
                entries[method] = method_spec(method).build(
                    titled_texts(texts, [titles[u] for u in table.urls]) if titled_method
                    else texts, out, options=dict(options or {}), previous=previous,
                    on_progress=progress)
                if titled_method:
                    entries[method]["titles"] = True
            out.write_chunks(table.rows())
            manifest = Manifest(build=out.name, chunker=chunker, documents=len(documents),
                                chunks=len(texts), methods=entries, busca_version=__version__)
            built.append((table, out.finish(manifest)))
        yield built


def _titled(previous) -> list[str]:
    """The methods of the live build that index titles (the temporary ones do as well)."""
    if previous is None:
        return []
    return [m for m, entry in previous.manifest.methods.items() if entry.get("titles")]
