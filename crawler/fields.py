"""A document given as an object — a JSONL line of `busca add`, an item of POST
/api/documents, a dict handed to `Corpus.add` — read by one reader (`read_document`), so
every way in takes the same objects and says the same of a bad one (their table:
docs/filters.md#document-fields).
"""

from __future__ import annotations

from .groups import GROUPS, BadGroup, check_names, group_names
from .store import BadDocument, Document, checked

RESERVED = ("url", "_id", "title", "text", "modified", "meta")  # a document object's own fields


def read_document(item: object, where: str, *, source: str) -> Document:
    """The Document an object gives, checked as every home stores it (`store.checked`: its
    `modified` in ISO 8601, RFC 2822 converted), or BadDocument naming `where`, the field and
    the fix. Every key beyond RESERVED is metadata (`jsonl_meta`). Groups, a list or a comma
    text beside `meta` or in it: none given, the document has no groups key (its stored
    ones are kept: corpus/documents.py `_grouped`); empty ones (`[]`, ""), `groups: []`
    (public)."""
    if not isinstance(item, dict):
        raise BadDocument(f'{where} is a {type(item).__name__}: give an object like {{"url": …,'
                          ' "title": …, "text": …}')
    ident, text = _identifier(item), item.get("text")
    if ident is None or not isinstance(text, str):
        bad = ", ".join(k for k, ok in (("url or _id", ident is not None),
                                        ("text", isinstance(text, str))) if not ok)
        raise BadDocument(f'{where}: needs a string "text" and a "url" (or a BEIR "_id")'
                          f" (bad: {bad})")
    given = item.get("meta")
    if given is not None and not isinstance(given, dict):
        raise BadDocument(f'{where}: meta must be an object, e.g. {{"category": "RH"}}, not'
                          f" {given!r:.60}")
    title = item.get("title")
    if title is not None and not isinstance(title, str):
        raise BadDocument(f"{where}: title must be a string, not {title!r:.60}: write it as"
                          " text, or leave it out (the url is the title then)")
    modified = item.get("modified")
    if isinstance(modified, str) and not modified.strip():
        modified = None  # an export's empty column: no date
    return checked(Document(ident, title or ident, text, source=source, modified=modified,
                            meta=_meta(item, where)), where)


def _meta(item: dict, where: str) -> dict | None:
    """The metadata of a document object, its groups checked names."""
    inner = item.get("meta") or {}
    for value in (item.get(GROUPS), inner.get(GROUPS)):
        if not (value is None or isinstance(value, str) or isinstance(value, list)
                and all(isinstance(v, str) for v in value)):
            raise BadDocument(f'{where}: groups must be a list of names or a comma text, e.g.'
                              f' ["staff", "hr"] or "staff,hr", not {value!r:.60}')
    meta = jsonl_meta(item)
    if not (meta or {}).get(GROUPS) and _groups_given(item):
        meta = {**(meta or {}), GROUPS: []}
    try:
        check_names(tuple((meta or {}).get(GROUPS) or ()))
    except BadGroup as e:
        raise BadDocument(f'{where}: "groups": {e}') from None
    return meta


def _groups_given(item: dict) -> bool:
    """Whether a document object gives groups (empty ones too), beside or in its "meta"."""
    inner = item.get("meta") if isinstance(item.get("meta"), dict) else {}
    return item.get(GROUPS) is not None or inner.get(GROUPS) is not None


def jsonl_meta(item: dict) -> dict | None:
    """A document object's metadata: every key beyond url/title/text (and _id, modified),
    with the keys of its "meta" object; empty values left out."""
    given = item.get("meta") if isinstance(item.get("meta"), dict) else {}
    extra = {k: v for k, v in item.items() if k not in RESERVED}
    meta = {**_filled(extra), **_filled(given)}  # an empty value never hides a given one
    if GROUPS in meta:  # a list or a comma string: kept as a list of names
        meta[GROUPS] = list(group_names(meta[GROUPS])) or None
    return {k: v for k, v in meta.items() if v is not None} or None


def _filled(values: dict) -> dict:
    return {k: v for k, v in values.items() if v not in (None, "", [], {})}


def _identifier(item: dict) -> str | None:
    """The document's id: its "url" (without the spaces around it), else a BEIR corpus "_id"
    (what qrels name), else None."""
    url = item.get("url")
    if isinstance(url, str) and url.strip():
        return url.strip()
    no_url = url is None or isinstance(url, str) and not url.strip()
    if no_url and isinstance(item.get("_id"), (str, int)) and not isinstance(item["_id"], bool):
        ident = str(item["_id"])
        return ident if ident.strip() else None
    return None
