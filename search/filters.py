"""Filters on the documents' fields and metadata, applied before ranking (issue #26).

`--filter FIELD OP VALUE`, OP one of `=` (one of a comma list), `!=` (none of a comma list),
`>=`, `<=` (numbers when both sides are numbers, else text: ISO dates compare as text) and
`^=` (prefix). FIELD is `url`, `title`, `source`, `modified` or a metadata key (`categories`,
`tags`, `author`, `date` …; `category` and `tag` name `categories` and `tags` when the
document has no key of that exact name); a list-valued key matches when one of its values
does; several
filters AND together. A query's filters give a boolean mask over the build's chunk ids
(`allowed`), computed from the documents' url, title and metadata (not their text) and kept
while the build, the filters and the documents' version (`store.version()`) stay the same
(`remembered`); the rankers then rank only the allowed chunks (`restricted`), so the k hits
are the top k among the matching chunks, never a post-filter of an unfiltered top k. `Visible`, the
access rule of `busca serve --tokens`, is one more filter of the same kind.
Speed: a ranker with `masked = True` (tfidf, bm25, sparse, dense) takes the mask into its
fast path: the block-max MaxScore walk passes over the windows and chunks the mask leaves
out (index/lexical/maxscore*.py), the int8 dense pass skips those rows (index/dense/vectors*.py);
the results are those of scoring every allowed chunk. Other rankers (PostgreSQL's) score
every chunk and keep the allowed ones.
"""

from __future__ import annotations

import re
import threading
import unicodedata
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import BuscaError
from ..index.lexical.lexical import top_k

OPERATORS = ("!=", ">=", "<=", "^=", "=")  # two-character ones first
FIELDS = ("url", "title", "source", "modified")  # the document's own columns
_FIELD = re.compile(r"[\w.:-]+")


@dataclass(frozen=True)
class Filter:
    """One condition: FIELD OP VALUES (VALUES: the comma list of `=` / `!=`, else one)."""

    field: str
    op: str
    values: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.field}{self.op}{','.join(self.values)}"

    @cached_property
    def _set(self) -> frozenset[str]:
        """The values as a set: `url!=a,b,…` with thousands of values is one look-up a
        document's value, not a walk of the list."""
        return frozenset(self._spelt)

    @cached_property
    def _spelt(self) -> tuple[str, ...]:
        """The values; for `url`, each in every spelling a store may hold it under
        (crawler/urls.py `spellings`: /educação/ is /educa%C3%A7%C3%A3o/), in NFC."""
        if self.field != "url":
            return self.values
        from ..crawler.urls import spellings  # here: a search loads no crawler module

        return tuple(dict.fromkeys(unicodedata.normalize("NFC", s)
                                   for v in self.values for s in spellings(v)))

    def matches(self, found: list[str]) -> bool:
        """Whether a document whose FIELD has the values `found` passes."""
        if self.op == "!=":
            return not any(v in self._set for v in found)
        if self.op == "=":
            return any(v in self._set for v in found)
        if self.op == "^=":
            return any(v.startswith(self._spelt) for v in found)
        return any(_compare(v, self.values[0], self.op) for v in found)


@dataclass(frozen=True)
class Visible:
    """The access rule (busca serve --tokens): a document passes when one of its `groups` is
    one of `groups`, or when it has none and the rule is not `private`. A filter like the
    others, so every method and backend restricts to it before top-k."""

    groups: frozenset[str]
    private: bool = False
    field = "groups"  # the metadata key (crawler/groups.py), not a dataclass field

    def __str__(self) -> str:
        return "(what this request may see)"

    def matches(self, found: list[str]) -> bool:
        names = [n.strip() for v in found for n in v.split(",") if n.strip()]
        return any(n in self.groups for n in names) if names else not self.private

    def admits(self, meta: dict | None) -> bool:
        """Whether a document with metadata `meta` passes."""
        return self.matches(field_values(("", "", "", None, meta), self.field))


def visible_to(groups, *, private: bool = False) -> Visible:
    """The rule of a reader of `groups`, a list of names or a comma string (documents
    without groups: public unless `private`); BadFilter for anything else ("staff" was read
    as the groups s, t, a and f)."""
    if isinstance(groups, str):
        groups = groups.split(",")
    if not isinstance(groups, (list, tuple, set, frozenset)) or not all(
            isinstance(g, str) for g in groups):
        raise BadFilter(f"visible_to takes the reader's group names, e.g. [\"staff\", \"hr\"]"
                        f" or \"staff,hr\", not {type(groups).__name__}")
    return Visible(frozenset(g.strip() for g in groups if g.strip()), private)


class BadFilter(BuscaError, ValueError):
    """A filter that cannot be read (no operator, no field, no value)."""


def _compare(found: str, given: str, op: str) -> bool:
    a, b = _number(found), _number(given)
    if a is None or b is None:
        a, b = found, given
    return a >= b if op == ">=" else a <= b


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_filter(text: str) -> Filter:
    """`"category=Python,Go"` -> Filter("category", "=", ("Python", "Go")); BadFilter."""
    at = min(((text.find(op), op) for op in OPERATORS if op in text),
             key=lambda found: (found[0], -len(found[1])), default=None)
    if at is None:
        raise BadFilter(f"bad filter {text!r}: write FIELD=VALUE (or !=, >=, <=, ^=), e.g."
                        " category=Python or 'date>=2015-01-01'")
    field, op, raw = text[:at[0]].strip(), at[1], text[at[0] + len(at[1]):].strip()
    if not _FIELD.fullmatch(field):
        raise BadFilter(f"bad filter {text!r}: the field before {op!r} must be a name such as"
                        " category, tags, author, date or url")
    raw = unicodedata.normalize("NFC", raw)  # as field_values gives them
    values = tuple(v.strip() for v in raw.split(",")) if op in ("=", "!=") else (raw,)
    if not raw or not all(values):
        raise BadFilter(f"bad filter {text!r}: give a value after {op!r}, e.g. {field}{op}X")
    if op in (">=", "<=") and raw.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise BadFilter(f"bad filter {text!r}: {raw} is no bound (nothing compares with it):"
                        f" give a number or a date, e.g. {field}{op}2015-01-01")
    return Filter(field, op, values)


def parse_filters(texts) -> tuple[Filter, ...]:
    """Each `--filter` text parsed once (none: an empty tuple); one text, Filter or access
    rule (visible_to) given alone is a list of one."""
    if isinstance(texts, (str, Filter, Visible)):
        texts = (texts,)
    if texts is not None and not isinstance(texts, (list, tuple)):
        raise BadFilter(f"filters are texts such as 'category=Python' (one, or a list), not"
                        f" {texts!r:.60}")
    parsed = tuple(parse_filter(t) if isinstance(t, str) else t for t in texts or ())
    for odd in (f for f in parsed if not isinstance(f, (Filter, Visible))):  # None too
        raise BadFilter(f"a filter is a text such as 'category=Python', not {odd!r:.60}")
    return parsed


def field_values(record: tuple, field: str) -> list[str]:
    """The values of `field` in (url, title, source, modified, meta): a list of texts."""
    meta = record[4] or {}
    if field in FIELDS:
        value = record[FIELDS.index(field)]
    else:  # `category` and `tag` name the lists `categories` and `tags` too
        value = meta.get(field, meta.get(_plural(field)))
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [unicodedata.normalize("NFC", _text(v)) for v in items if v is not None]


def _plural(field: str) -> str:
    return field[:-1] + "ies" if field.endswith("y") else field + "s"


def _text(value) -> str:
    if isinstance(value, dict):  # a {"name": …} object of a source's metadata
        return str(value.get("name", ""))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def passes(record: tuple, filters) -> bool:
    """Whether a document (url, title, source, modified, meta) passes every filter."""
    return all(f.matches(field_values(record, f.field)) for f in filters)


def allowed(index, store, filters) -> np.ndarray:
    """Boolean mask over the build's chunk ids: the chunks of documents passing `filters`
    (read-only: kept for the next query with the same build, filters and documents)."""
    filters = tuple(filters)
    return remembered(_masks(index), store, filters, lambda: _allowed(index, store, filters))


def as_built(index, store) -> tuple[np.ndarray, int]:
    """(Boolean mask over the build's chunk ids: the chunks of documents the store holds as
    the build chunked them, the number of documents it leaves out: removed from the store,
    or changed, since the build), kept while the build and the documents stay the same."""
    return remembered(_masks(index), store, (_AS_BUILT,), lambda: _as_built(index, store))


_AS_BUILT = "as built"  # the key of that mask beside the filters' own


def left_out_of(index, as_built_mask: np.ndarray, allowed: np.ndarray) -> int:
    """How many documents among the chunks `allowed` (filters, a --tokens rule) the
    as-built mask leaves out: never a count of documents the question could not see."""
    return _chunk_documents(index).count(allowed & ~as_built_mask)


def _as_built(index, store) -> tuple[np.ndarray, int]:
    stored = store.hashes()
    gone = [url for url, sha in index.documents().items() if stored.get(url) != sha]
    mask = ~_chunk_documents(index).mask(gone)
    mask.flags.writeable = False  # shared by the queries that reuse it
    return mask, len(gone)


_MASKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # build -> its masks
_LOCK = threading.Lock()
KEPT = 16  # masks (or facets) kept per build, the least recently used dropped first


def _masks(index) -> OrderedDict | None:
    with _LOCK:
        try:
            return _MASKS.setdefault(index, OrderedDict())
        except TypeError:  # a build that cannot be weakly referenced: nothing kept
            return None


def remembered(kept: OrderedDict | None, store, key: tuple, compute):
    """`compute()`, or what it gave before for `key` in `kept` while the store's documents
    are in the same state: `store.version()` names that state (another value after any
    document is added, changed or deleted, by any process); a store without it, or a key
    that cannot be hashed, computes every time. What `compute` gives must not be changed."""
    version = store.version() if kept is not None and hasattr(store, "version") else None
    try:
        key = (version, *key)
        hash(key)
    except TypeError:
        version = None
    if version is None:
        return compute()
    with _LOCK:
        if key in kept:
            kept.move_to_end(key)
            return kept[key]
    value = compute()
    if store.version() == version:  # no change while it was computed: the value is that state's
        with _LOCK:
            kept[key] = value
            while len(kept) > KEPT:
                kept.popitem(last=False)
    return value


def _allowed(index, store, filters) -> np.ndarray:
    urls = [r[0] for r in _candidates(store, filters) if passes(r, filters)]
    mask = _chunk_documents(index).mask(urls)
    mask.flags.writeable = False  # shared by the queries that reuse it
    return mask


def _candidates(store, filters):
    """The records `passes` is to judge: a store that selects by metadata key (PostgreSQL,
    through its GIN index) gives only the documents having a key that each Filter on
    metadata other than `!=` needs (FIELD or its plural: without either it has no value);
    the rule itself is always `passes`, in Python (a Visible rule selects nothing here)."""
    needed = [(f.field, _plural(f.field)) for f in filters
              if isinstance(f, Filter) and f.op != "!=" and f.field not in FIELDS]
    if needed and hasattr(store, "records_having"):
        return store.records_having(needed)
    return store.records()


def has_groups(store) -> bool:
    """Whether a document of `store` has groups (is private to some readers): one scan of the
    records (through the GIN index on PostgreSQL)."""
    return any(field_values(r, Visible.field) for r in _with_groups(store))


def stored_groups(store) -> set[str]:
    """The group names the documents of `store` carry (one scan, as `has_groups`)."""
    return {name for r in _with_groups(store) for name in field_values(r, Visible.field)}


def _with_groups(store):
    return (store.records_having([(Visible.field,)]) if hasattr(store, "records_having")
            else store.records() if hasattr(store, "records") else ())


def counts(index, store, filters) -> tuple[int, int]:
    """(documents, chunks) of a build passing `filters`."""
    mask = allowed(index, store, filters)
    return _chunk_documents(index).count(mask), int(mask.sum())


@dataclass(frozen=True)
class ChunkDocuments:
    """Each chunk's document as a number (`of`, by chunk id) and each URL's number: a mask
    over a set of URLs without an array of URL texts (which took 0.3 KB a chunk)."""

    of: np.ndarray
    number: dict[str, int]

    @classmethod
    def of_urls(cls, urls: list[str]) -> ChunkDocuments:
        number: dict[str, int] = {}
        of = np.fromiter((number.setdefault(u, len(number)) for u in urls), np.int32,
                         len(urls))
        return cls(of, number)

    def count(self, mask: np.ndarray) -> int:
        """How many documents the chunks of `mask` belong to."""
        return int(np.unique(self.of[mask]).size) if mask.any() else 0

    def mask(self, urls) -> np.ndarray:
        """True for each chunk of a document in `urls`."""
        wanted = [self.number[u] for u in urls if u in self.number]
        return np.isin(self.of, wanted) if wanted else np.zeros(self.of.size, dtype=bool)


_CHUNK_DOCUMENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _chunk_documents(index) -> ChunkDocuments:
    """The document of each chunk of a build, read once per build."""
    try:
        return _CHUNK_DOCUMENTS[index]
    except (KeyError, TypeError):
        found = ChunkDocuments.of_urls(index.chunk_urls())
        try:
            _CHUNK_DOCUMENTS[index] = found
        except TypeError:
            pass
        return found


class Restricted:
    """A ranker that ranks only the chunks `mask` allows: inside its fast `top` when it takes
    a mask (`masked`), else by scoring every chunk and keeping the allowed ones."""

    def __init__(self, ranker, mask: np.ndarray):
        self.ranker, self.mask = ranker, mask

    def score(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        if hasattr(self.ranker, "score_among"):  # pgvector: reads only the allowed rows
            return self.ranker.score_among(query, np.flatnonzero(self.mask))
        ids, scores = self.ranker.score(query)
        keep = self.mask[ids]
        return ids[keep], scores[keep]

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        if getattr(self.ranker, "masked", False):
            return self.ranker.top(query, k, allowed=self.mask)
        return top_k(*self.score(query), k)


def restricted(ranker, mask: np.ndarray):
    """`ranker` ranking only the chunks of `mask`; a hybrid's components each restricted."""
    from .fusion import HybridScorer

    if isinstance(ranker, HybridScorer):
        return HybridScorer({m: Restricted(r, mask) for m, r in ranker.rankers.items()},
                            ranker.weights, ranker.settings, ranker.floors, ranker.lexicon,
                            ranker.coord)
    return Restricted(ranker, mask)
