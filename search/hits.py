"""Answer a query on a build: rank, apply the floor, attach sources (Hit), show a snippet."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..citation import page_at, section
from ..errors import BuscaError
from ..index.text.chunking import chunk_text
from . import highlight
from .fusion import FusionSettings
from .scorers import K, rank

if TYPE_CHECKING:  # the crawler package loads only when a command needs it
    from ..crawler.store import DocumentStore


class StaleIndex(BuscaError):
    """The store changed since the index was built."""


class BadFloor(BuscaError, ValueError):
    """A score floor that is not a finite number (NaN or infinite)."""


class BadJson(BuscaError, ValueError):
    """A value given to a `from_json` that is not the form its `to_json` gives."""


def json_form(kind: str):
    """Decorate a `from_json`: a value that is not `kind`'s JSON form (a key missing, a
    value of another type) is a BadJson naming what is wrong, not a KeyError or TypeError."""
    def decorate(read):
        @functools.wraps(read)
        def wrapper(cls, data, *args, **kwargs):
            try:
                return read(cls, data, *args, **kwargs)
            except BuscaError:
                raise
            except KeyError as e:
                why = f"no {e.args[0]!r}"
            except (TypeError, ValueError, AttributeError, IndexError) as e:
                why = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise BadJson(f"not the JSON form of a busca {kind} ({why}): give what"
                          f" {kind}.to_json() returned") from None
        return wrapper
    return decorate


def check_floor(floor: float | None) -> float | None:
    """The floor, or BadFloor: a NaN or infinite floor would silently drop every hit."""
    if floor is not None and not math.isfinite(floor):
        raise BadFloor(f"the score floor must be a finite number, got {floor}; e.g. 0.3, or 0"
                       " to see every match")
    return floor


@dataclass(frozen=True)
class Hit:
    """One ranked chunk with its source."""

    rank: int
    score: float
    chunk_id: int
    url: str
    title: str
    start: int
    end: int
    text: str
    method: str
    meta: dict | None = field(default=None, compare=False)  # the document's metadata

    def to_json(self, *, method: bool = True) -> dict:
        """The fields of `busca search --json`, in its order (`meta` when the document has
        metadata: categories, tags, author, dates …); without `method` where the answer
        names it once (the HTTP API's hits)."""
        out = {"rank": self.rank, "score": self.score, "url": self.url, "title": self.title,
               "chunk_id": self.chunk_id, "start": self.start, "end": self.end,
               "text": self.text, **({"method": self.method} if method else {})}
        return {**out, "meta": self.meta} if self.meta else out

    @classmethod
    @json_form("Hit")
    def from_json(cls, data: dict, *, method: str = "") -> Hit:
        """The hit `to_json` gave (`method` when the form leaves it out, as the HTTP API)."""
        return cls(data["rank"], data["score"], data["chunk_id"], data["url"], data["title"],
                   data["start"], data["end"], data["text"], data.get("method", method),
                   data.get("meta"))


def search(index, store: DocumentStore, query: str, *, method: str = "tfidf", k: int = K,
           min_score: float | None = None, fusion: FusionSettings | None = None) -> list[Hit]:
    """Ranked hits with their sources; hits below `min_score` are dropped."""
    check_floor(min_score)
    ids, scores = rank(index, query, method=method, k=k, fusion=fusion)
    if min_score is not None:
        keep = scores >= min_score
        ids, scores = ids[keep], scores[keep]
    return hits_for(index, store, ids, scores, method)


def hits_for(index, store: DocumentStore, ids, scores, method: str) -> list[Hit]:
    """Attach chunk text, URL and title to ranked chunk ids."""
    rows = index.chunks(ids)
    docs = {}
    hits = []
    for rank_, (row, score) in enumerate(zip(rows, scores), start=1):
        doc = docs.get(row.url) or docs.setdefault(row.url, store.get(row.url))
        if doc is None:
            raise StaleIndex(f"{row.url} was removed from the store since the index was"
                             ' built — run "busca index" to drop it from the index')
        if doc.sha256 != row.doc_sha256:
            raise StaleIndex(f"{row.url} changed in the store since the index was built —"
                             ' run "busca index" to search the current text')
        text = chunk_text(doc.text, row.start, row.end)
        hits.append(Hit(rank_, float(score), row.id, row.url, doc.title, row.start, row.end,
                        text, method, placed(doc.meta, row.start)))
    return hits


LAYOUT = ("pages", "pages_without_text", "headings", "sections")  # where a document's parts lie


def placed(meta: dict | None, start: int) -> dict | None:
    """A hit's metadata: its document's, the layout lists (a 300-page PDF's page offsets
    were 5 KB in every hit, read by an MCP client's model too) replaced by where the hit
    starts: `page` (a PDF's) and `section` (the heading path, "Reembolso › Prazos")."""
    if not meta or not any(key in meta for key in LAYOUT):
        return meta
    kept = {key: value for key, value in meta.items() if key not in LAYOUT}
    if (page := page_at(meta, start)) is not None:
        kept["page"] = page
    if heading := section(meta, start):
        kept["section"] = heading
    return kept


def snippet(text: str, query: str, width: int = 240) -> str:
    """About `width` characters of `text` where it best matches `query`, as busca search and
    the page show it (search/highlight.py, without the highlight spans)."""
    return highlight.snippet(text, query, width=width)[0]
