"""Where in a document a passage sits, for its citation: the PDF page (`file.pdf#page=12`)
or the section (`URL#anchor — Heading`), from the document's stored metadata.

No imports beyond the standard library: `busca context` loads it without the crawler.
"""

from __future__ import annotations


def cite(url: str, meta: dict | None, offset: int) -> str:
    """The citation of character `offset` of the document `url` (the URL when nothing finer)."""
    page = _last_at(((n, start) for n, start in _pairs(meta, "pages")), offset)
    if page is not None:
        return f"{url.split('#')[0]}#page={page}"
    return url


def _pairs(meta: dict | None, key: str) -> list:
    value = (meta or {}).get(key) if isinstance(meta, dict) else None
    return [v for v in value if isinstance(v, list) and len(v) >= 2] if isinstance(value, list) \
        else []


def _last_at(entries, offset: int):
    """The value of the last (value, start) entry starting at or before `offset`."""
    found = None
    for value, start in entries:
        if not isinstance(start, int) or start > offset:
            break
        found = value
    return found
