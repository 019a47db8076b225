"""Facet counts: how many documents carry each value of each metadata key (`busca stats`)."""

from __future__ import annotations

from collections import Counter, OrderedDict

from .filters import field_values, passes, remembered

SKIPPED = ("headings", "sections", "pages", "path")  # structure or a file's own path, not facets
TOP = 10  # values shown per key


def facets(store, top: int = TOP, filters=()) -> dict[str, dict]:
    """Key -> {"values": distinct values, "top": {value: documents}} for each metadata key
    of a home's documents passing `filters`, local or PostgreSQL (most frequent first, at
    most `top`); {} without metadata or on a store that cannot list it."""
    if not hasattr(store, "records"):
        return {}
    filters = tuple(filters)
    found = remembered(_KEPT, store, ("facets", top, *filters),
                       lambda: _facets(store, top, filters))
    return {key: {"values": f["values"], "top": dict(f["top"])} for key, f in found.items()}


_KEPT: OrderedDict = OrderedDict()  # the facets of the documents' last states (a state's
# version is its own: search/filters.py)


def _facets(store, top: int, filters: tuple) -> dict[str, dict]:
    counts: dict[str, Counter] = {}
    for record in (r for r in store.records() if passes(r, filters)):
        for key in record[4] or {}:
            if key not in SKIPPED:
                counts.setdefault(key, Counter()).update(set(field_values(record, key)))
    return {key: {"values": len(c), "top": dict(sorted(c.items(), key=_most_first)[:top])}
            for key, c in sorted(counts.items()) if c}


def _most_first(item: tuple[str, int]) -> tuple[int, str]:
    """The most documents first, equal counts in the values' order (Counter.most_common
    keeps the order met, which a set's iteration makes change from run to run)."""
    value, documents = item
    return -documents, value
