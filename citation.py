"""Where in a document a passage sits, for its citation: the PDF page (`file.pdf#page=12`),
or the section (`URL#anchor` and its heading path "Reembolso › Prazos"), from the
document's stored metadata (`pages`: [number, offset]; `headings`: [offset, level, text,
anchor]).

No imports but the standard library's: `busca context` and the index's sections chunker
load it without the crawler.
"""

from __future__ import annotations

import unicodedata

SEPARATOR = " › "


def cite(url: str, meta: dict | None, offset: int) -> str:
    """The citation of character `offset` of the document `url` (the URL when nothing finer),
    as the prompt's `[fonte: …]` label writes it (`label_url`)."""
    base = url.split("#")[0]
    if (page := page_at(meta, offset)) is not None:
        return label_url(f"{base}#page={page}")
    heading = _last_at(((h, h[0]) for h in _rows(meta, "headings")), offset)
    if heading is not None and len(heading) >= 4 and heading[3]:
        return label_url(f"{base}#{heading[3]}")
    return label_url(url)


def page_at(meta: dict | None, offset: int) -> int | None:
    """The PDF page holding character `offset`, or None (no page offsets stored)."""
    return _last_at(((n, start) for n, start, *_ in _rows(meta, "pages")), offset)


def label_url(url: str) -> str:
    """The URL with "[", "]", whitespace, control or format characters (an escape
    sequence, a bidi override, tag characters) and variation selectors percent-encoded
    (%5B, %5D, %20, %1B…), the rest as stored: a `[fonte: URL]` label reads it whole, hides
    nothing from a person, and is inert on a terminal."""
    return "".join("%" + "%".join(f"{b:02X}" for b in c.encode()) if _encoded(c) else c
                   for c in url)


def _encoded(c: str) -> bool:
    return c in "[]" or c.isspace() or unicodedata.category(c) in ("Cc", "Cf") or (
        "\ufe00" <= c <= "\ufe0f" or "\U000e0100" <= c <= "\U000e01ef")  # variation selectors


def section(meta: dict | None, offset: int) -> str:
    """The heading path over character `offset` ("Reembolso › Prazos"), or ""."""
    path: list[tuple[int, str]] = []
    for row in _rows(meta, "headings"):
        if len(row) < 3 or not isinstance(row[0], int) or row[0] > offset:
            break
        level, text = row[1], str(row[2])
        path = [(lv, t) for lv, t in path if isinstance(lv, int) and lv < level] + [(level, text)]
    return SEPARATOR.join(text for _, text in path)


def _rows(meta: dict | None, key: str) -> list:
    value = meta.get(key) if isinstance(meta, dict) else None
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
