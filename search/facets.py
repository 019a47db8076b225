"""Facet counts: how many documents carry each value of each metadata key (`busca stats`)."""

from __future__ import annotations

from collections import Counter

from .filters import field_values

SKIPPED = ("headings", "sections", "pages")  # structure of a document, not facets
TOP = 10  # values shown per key


def facets(store, top: int = TOP) -> dict[str, dict]:
    """Key -> {"values": distinct values, "top": {value: documents}} for each metadata key
    of a home's documents, local or PostgreSQL (most frequent first, at most `top`); {}
    without metadata or on a store that cannot list it."""
    if not hasattr(store, "records"):
        return {}
    counts: dict[str, Counter] = {}
    for record in store.records():
        for key in record[4] or {}:
            if key not in SKIPPED:
                counts.setdefault(key, Counter()).update(set(field_values(record, key)))
    return {key: {"values": len(c), "top": dict(c.most_common(top))}
            for key, c in sorted(counts.items()) if c}
