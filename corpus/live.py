"""A corpus's live build, kept across calls and swapped when a newer one is published.

Every call asks the home for its current build's manifest (local homes: the `CURRENT` pointer
and one small JSON file); when it differs from the one loaded — another build, or new
calibrated floors — the first call to notice loads the new build (reusing the dense encoders
already in memory) and every later call uses it. A call that ran on a build swapped out
meanwhile is run again on the new one (`LiveBuild.run`). Safe to share between threads, each
with its own home handle (SQLite connections stay in one thread): `busca serve` does.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .. import index as indexing
from .. import search as searching
from .questions import WARM_UP, prepare

log = logging.getLogger(__name__)

T = TypeVar("T")
RETRIES = 3  # a call re-run on a newer build at most this many times


def _retry_on() -> tuple:
    """The errors of a build read while `busca index` swapped it (loaded on first use: the
    command line imports this module without the index's storage)."""
    return (searching.StaleIndex, indexing.IndexFormatError, indexing.IndexNotFound, OSError,
            sqlite3.Error)


@dataclass(frozen=True)
class Live:
    """One loaded build."""

    index: indexing.Build
    manifest: indexing.Manifest

    @property
    def build(self) -> str:
        return self.manifest.build


class LiveBuild:
    """The build a home serves now, loaded once; `warm`: load its rankers when it is."""

    def __init__(self, *, warm: bool = False):
        self.warm = warm
        self._live: Live | None = None
        self._swap = threading.Lock()
        self._encoders: dict[tuple, object] = {}

    def last(self) -> str | None:
        """The build loaded last (None before the first), without asking the home."""
        return self._live.build if self._live is not None else None

    def loaded(self) -> Live | None:
        """The Live of the build loaded last (its manifest, its index; None before the
        first), without asking the home."""
        return self._live

    def current(self, home: indexing.Home) -> Live:
        """The build `home` serves now; IndexNotFound if there is none."""
        for attempt in range(RETRIES + 1):
            try:
                return self._current(home)
            except _retry_on():  # read while `busca index` swapped builds and removed the old one
                if attempt == RETRIES:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _current(self, home: indexing.Home) -> Live:
        current = home.current()
        live = self._live
        if live is not None and live.manifest == current.manifest:
            return live
        with self._swap:
            if self._live is None or self._live.manifest != current.manifest:
                started = time.perf_counter()
                if self.warm:
                    self.warm_up(current)
                self._live = Live(current, current.manifest)
                log.info("serving build %s (%d chunks), loaded in %.0f ms", current.manifest.build,
                         current.manifest.chunks, 1000 * (time.perf_counter() - started))
            return self._live

    def warm_up(self, index) -> None:
        """Load every ranker and the chunk table now; each dense model reuses the encoder
        already in memory (the build's own dense ranker: exact in memory on a local home,
        pgvector on a PostgreSQL one), so no question waits for one. An openai:MODEL server
        that does not answer now is warned about: the other methods are served, and that
        model's questions ask its server again (each one a 503 while it stays away)."""
        for method in index.methods:
            if indexing.is_dense(method):
                entry = index.manifest.entry(method)
                key = (method, entry["encoder"], entry["dimension"])
                ranker = index.ranker(method, encoder=self._encoders.get(key))
                try:
                    ranker.embed(WARM_UP)  # some encoders load their tables lazily
                except indexing.EmbeddingServerError as e:
                    log.warning("%s: %s", method, e)
                prepare(ranker)
                self._encoders[key] = ranker.encoder
        for method in searching.available_methods(index):
            if not indexing.is_dense(method):
                prepare(searching.scorer(index, method))
        index.chunks([0])  # opens the build's chunk table while its files surely exist

    def run(self, home: indexing.Home, work: Callable[[Live], T]) -> T:
        """`work(live)`, run again on the newer build if `busca index` swapped it meanwhile."""
        for attempt in range(RETRIES + 1):
            live = self.current(home)
            try:
                result = work(live)
            except _retry_on():
                if attempt < RETRIES and _swapped(home, live):
                    continue
                raise
            if attempt == RETRIES or not _swapped(home, live):
                return result
        raise AssertionError("unreachable")  # pragma: no cover


def _swapped(home: indexing.Home, live: Live) -> bool:
    try:
        return home.current().manifest != live.manifest
    except (indexing.IndexNotFound, indexing.IndexFormatError):
        return False
