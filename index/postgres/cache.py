"""The posting lists a process has read from PostgreSQL, kept in memory up to a byte budget.

Builds are immutable and their names unique, so an entry keyed by (database, corpus, build,
method, term) is never stale: a new build has new keys, and the old build's entries age out
(least recently used first). A serving process thus reads the lists of frequent terms once;
rare terms are read per query. One cache per process and budget (`shared(mb)`), safe to use
from many threads; budget 0 keeps nothing (every query reads its lists from the database).

The budget is the home URL's `cache_mb`, else the environment's BUSCA_PG_CACHE_MB, else
DEFAULT_MB.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable

DEFAULT_MB = 256
ENTRY_OVERHEAD = 160  # bytes counted per entry besides its arrays (key, tuple, objects)
MISSING = object()

_shared: dict[int, PostingCache] = {}
_shared_lock = threading.Lock()


class PostingCache:
    """A thread-safe LRU of values with a size (`nbytes`), capped at `capacity` bytes."""

    def __init__(self, capacity: int):
        self.capacity = max(0, int(capacity))
        self._entries: OrderedDict = OrderedDict()  # key -> (value, size)
        self._lock = threading.Lock()
        self.size = 0
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get_many(self, keys: Iterable[Hashable]) -> dict:
        """{key: value} of the keys held (each becomes the most recently used)."""
        found = {}
        with self._lock:
            for key in keys:
                item = self._entries.get(key, MISSING)
                if item is MISSING:
                    self.misses += 1
                    continue
                self._entries.move_to_end(key)
                found[key] = item[0]
                self.hits += 1
        return found

    def put(self, key: Hashable, value, nbytes: int) -> None:
        """Keep `value` (of `nbytes` bytes), dropping the least recently used entries to stay
        within the budget; a value larger than the whole budget is not kept."""
        size = int(nbytes) + ENTRY_OVERHEAD
        if size > self.capacity:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.size -= old[1]
            while self._entries and self.size + size > self.capacity:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.size -= dropped
            self._entries[key] = (value, size)
            self.size += size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.size = 0


def budget_mb(value: str | None = None) -> int:
    """The cache budget in MB: `value` (the home URL's cache_mb), else BUSCA_PG_CACHE_MB,
    else DEFAULT_MB. ValueError if it is not a whole number >= 0."""
    text = value if value is not None else os.environ.get("BUSCA_PG_CACHE_MB")
    if text is None or text == "":
        return DEFAULT_MB
    mb = int(text)
    if mb < 0:
        raise ValueError(text)
    return mb


def shared(mb: int) -> PostingCache:
    """This process's cache of `mb` megabytes (one per budget, made on first use)."""
    with _shared_lock:
        cache = _shared.get(mb)
        if cache is None:
            cache = _shared[mb] = PostingCache(mb << 20)
        return cache
