"""The backend boundary: what a home must do to hold and rank busca's data, and the factory.

busca stays the analyzer: windows, terms, TF-IDF/BM25 weights and vectors are computed by
index/ (tfidf.py, bm25.py, dense.py). A backend stores documents, crawl state, chunk rows, the
built method data and the query log, and ranks: it hands out one `Ranker` per stored method.
search/ does fusion, floors, hits, snippets and context on every backend alike.

Local folder: index/home/storage.py (LocalHome, Index, LocalBuildWriter). PostgreSQL: the second
implementation, index/postgres/home.py (PostgresHome, PostgresBuild; postgres/build.py's writer,
postgres/rank.py's rankers), chosen by `open_home` from a `postgresql://` or `postgres://` location.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from ..crawler.store import Document, DocumentStore
from ..errors import BuscaError
from .text.chunks import ChunkRow
from .home.documents import DB_NAME
from .home.manifest import Manifest
from .home.vocabulary import Vocabulary
from .home.storage import HomeNotFound, LocalHome

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class BackendUnavailable(BuscaError):
    """The home's location names a backend this installation cannot open."""


class Ranker(Protocol):
    """One stored method of one build; ids are chunk ids (int64), scores float64."""

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk with a non-zero score (any order)."""

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The exact top k, best first, equal scores in chunk id order."""


class Build(Protocol):
    """A published build: read-only and immutable (a new build is a new object)."""

    manifest: Manifest

    def ranker(self, method: str, *, encoder=None) -> Ranker:
        """The ranker of a stored method, made once per build; `encoder`: for a dense
        method, an encoder already in memory to use instead of loading one (a server keeps
        its model across builds)."""
    def chunks(self, ids: Iterable[int] | None = None) -> list[ChunkRow]: ...

    def chunk_urls(self) -> list[str]:
        """The document URL of each chunk, in id order."""
    def documents(self) -> dict[str, str]:
        """url -> content hash (doc_sha256) of each document the build chunked."""
    def array(self, method: str, name: str) -> np.ndarray: ...
    def has_array(self, method: str, name: str) -> bool: ...
    def terms(self, method: str) -> list[str]: ...

    def vocabulary(self, method: str) -> Vocabulary:
        """The terms as a compact term -> column look-up (home/vocabulary.py)."""


class BuildWriter(Protocol):
    """A build in progress; readers never see it until `publish`."""

    name: str

    def save_array(self, method: str, name: str, array: np.ndarray) -> None: ...
    def write_terms(self, method: str, terms: list[str]) -> None: ...
    def write_chunks(self, rows: Iterable[ChunkRow]) -> None: ...

    def publish(self, manifest: Manifest) -> Build:
        """Make this build the live one in one atomic step; older builds are dropped after."""

    def abort(self) -> None:
        """Drop the unpublished build (what a killed build amounts to)."""


class Home(DocumentStore, Protocol):
    """A corpus home: a DocumentStore (documents, settings, crawl state) plus index builds and
    the query log. A context manager; `close` releases it."""

    location: str

    def current(self) -> Build:
        """The live build; IndexNotFound / IndexFormatError (one line, with the fix)."""

    def previous(self) -> Build | None:
        """The live build if it can be read (for reuse by the next build), else None."""

    def new_build(self, methods: Sequence[str] = ()) -> BuildWriter:
        """A writer for a build of `methods`; a home that cannot hold one of them (dense
        without pgvector) refuses here, before any work."""

    def set_floors(self, floors: Mapping[str, float],
                   models: Mapping[str, Mapping] | None = None, *, key: str = "floor") -> Build:
        """Store calibrated floors (or another per-method `key`, e.g. a dense model's tuned
        fusion `share`) and answerability models (plain JSON) in the live build's manifest."""

    def log_query(self, *, command: str, query: str, method: str, k: int,
                  scores: list[float], floor: float | None, answered: bool, seconds: float,
                  at: str | None = None) -> None: ...

    def logged_queries(self, since: str | None = None) -> list[dict]: ...
    def forget_queries(self, before: str) -> int: ...
    def documents(self, source: str | None = None) -> Iterator[Document]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Home: ...
    def __exit__(self, *exc) -> None: ...


def is_folder(location: str | Path) -> bool:
    """Whether `location` names a local folder (not a postgresql:// URL)."""
    return not str(location).lower().startswith(POSTGRES_SCHEMES)


def open_home(location: str | Path, *, embed: Mapping | None = None,
              create: bool = True) -> Home:
    """The home at `location`: a folder path (created if missing, unless `create` is False:
    then a folder without a store is HomeNotFound, so a mistyped --home, or a command that only
    reads, never leaves an empty home behind) or a `postgresql://` URL (index/postgres/home.py;
    needs the extra busca[postgres]: opening it only reads; a missing corpus is created by
    its first write, or, when `create` is False, is CorpusNotFound, a HomeNotFound).
    `embed`: the user's settings for openai:MODEL embedding servers (url, key, batch,
    prefixes), handed to the dense rankers of its builds."""
    text = str(location)
    if not is_folder(text):
        try:
            from .postgres.home import PostgresHome
        except ImportError as e:
            raise BackendUnavailable(f"a PostgreSQL home needs the postgres extra ({e.name} is"
                                     " missing): pip install 'busca[postgres]'") from e
        return PostgresHome(text, embed=embed, create=create)
    scheme = _URL.match(text)
    if scheme:  # a URL of another database would otherwise become a local folder
        raise BackendUnavailable(f"busca has no {scheme.group(1)}:// backend: give a folder or"
                                 " a postgresql:// URL as --home (or BUSCA_HOME)")
    if text.startswith("~"):  # "~/notes" from Python or an unexpanded BUSCA_HOME: never a
        location = os.path.expanduser(text)  # folder named "~" in the working folder
    if not create:
        _check_exists(Path(location))
    return LocalHome(location, embed=embed)


_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def _check_exists(home: Path) -> None:
    """HomeNotFound unless `home` holds a store: opening it would create one."""
    if not home.exists():
        raise HomeNotFound(f"no corpus in {home} — the folder does not exist: check --home"
                           " (or BUSCA_HOME), or crawl or add documents there and"
                           ' run "busca index" first')
    if not (home / DB_NAME).is_file():
        raise HomeNotFound(f'no corpus in {home} — run "busca add" or "busca crawl" first')
