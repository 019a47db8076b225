"""`busca stats`'s use case: the live build's figures (or the documents without an index),
each method's settings, the metadata's facets, and what the store holds that the build
does not."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .. import index as indexing
from .. import search as searching

EMPTY_TEXT = hashlib.sha256(b"").hexdigest()  # the text hash of a document with no text
BLANKS = "".join(map(chr, range(33)))  # what the windows' words are split by (no word: no chunk)


@dataclass(frozen=True)
class Stats:
    """The figures of a home: `manifest` None before the first `busca index`."""

    documents: int
    facets: dict
    manifest: indexing.Manifest | None = None
    settings: dict | None = None  # method -> its parameters as they apply (with detail)
    pending: tuple[int, int] = (0, 0)  # documents added or changed, and removed, since it

    def to_json(self) -> dict:
        """`busca stats --json` (the facets only when the documents have metadata; with an
        index, `pending`: the documents added or changed, and removed, since it)."""
        shown = {"facets": self.facets} if self.facets else {}
        if self.manifest is None:
            return {"documents": self.documents, "index": None, **shown}
        changed, removed = self.pending
        return {**self.manifest.figures(), "pending": {"changed": changed, "removed": removed},
                **shown}


def stats(home, build_of, *, detail: bool = False) -> Stats:
    """The figures of `home` whose live build `build_of()` gives, with the documents stored
    since that build (a row a document of the store and of the build); `detail`: also each method's settings."""
    facets = searching.facets(home)
    try:
        build = build_of()
    except indexing.IndexNotFound:  # the documents are known without an index
        return Stats(home.count(), facets)
    settings = {m: searching.method_settings(build, m)
                for m in build.manifest.methods} if detail else None
    return Stats(build.manifest.documents, facets, build.manifest, settings,
                 _not_indexed(home, build))


def _not_indexed(home, build) -> tuple[int, int]:
    """(documents added or changed, documents removed) in the store since `build`."""
    stored = {u: h for u, h in home.hashes().items() if h != EMPTY_TEXT}  # never chunked
    indexed = build.documents()
    missing = [url for url in stored if url not in indexed]
    changed = sum(1 for url, sha in stored.items()
                  if url in indexed and indexed[url] and sha and indexed[url] != sha)
    return (changed + sum(1 for url in missing if _has_words(home, url)),
            sum(1 for url in indexed if url not in stored))


def _has_words(home, url: str) -> bool:
    """Whether the stored document has a word to chunk (one of blanks alone, which no build
    takes in, is not pending); read only for the documents the build lacks."""
    doc = home.get(url)
    return doc is not None and bool(doc.text.strip(BLANKS))
