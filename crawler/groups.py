"""Groups: who may see a document when `busca serve --tokens` restricts reading (issue #26).

A document's groups live in its metadata under `groups`, a list of names. They come from a
JSONL key `groups` (a list or a comma string) or from `busca crawl --groups` / `busca add
--groups`, which stamp every document that command stores (`stamped`). A document without
groups is public (unless the server runs with `--private`). A crawl remembers its groups for
its start URL (`crawl_groups`): the next crawl of that URL without `--groups` stamps the same
ones, so a scheduled re-crawl never turns a changed private article public; `--groups none`
forgets them.
"""

from __future__ import annotations

import re
from dataclasses import replace

from .errors import CrawlError
from .urls import normalize

GROUPS = "groups"  # the metadata key
NONE = "none"  # `--groups none`: the crawl stamps no groups and forgets the remembered ones
_NAME = re.compile(r"[\w.@:+-]+")


class BadGroup(CrawlError):
    """A group name that cannot be written in a tokens file (empty, a space, a comma)."""


def group_names(value) -> tuple[str, ...]:
    """The names in a groups value: a list of names or a comma string (blanks dropped,
    duplicates kept once)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    names = (n.strip() for v in items if v is not None for n in str(v).split(","))
    return tuple(dict.fromkeys(n for n in names if n))


def check_groups(text: str) -> tuple[str, ...]:
    """`"staff,hr"` -> ("staff", "hr"); BadGroup naming the bad name."""
    names = group_names(text)
    if not names:
        raise BadGroup("give one group name or more, e.g. staff or staff,hr")
    return check_names(names)


def given_groups(value) -> tuple[str, ...]:
    """Groups as a Python caller gives them: a comma text (`"staff,hr"`, as --groups) or a
    list of names, each one a name (a list item holding a comma or a space is refused: it
    was stored as such, or read back as two groups); none: (). BadGroup names the bad one."""
    if value is None or isinstance(value, (list, tuple)) and not value:
        return ()
    if isinstance(value, str):
        return check_groups(value)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise BadGroup(f"groups are names, as a list or a comma text such as 'staff,hr', not"
                       f" {value!r:.60}")
    return check_names(tuple(dict.fromkeys(v.strip() for v in value)))


def check_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """`names` if a tokens file can name each of them; else BadGroup naming the bad one."""
    for name in names:
        if not _NAME.fullmatch(name):
            raise BadGroup(f"bad group name {name!r}: use letters, digits and . @ : + - _"
                           " (no spaces), e.g. staff")
    return names


def with_groups(doc, groups: tuple[str, ...]):
    """The document with `groups` added to the groups its source gave it (if any)."""
    meta = dict(doc.meta or {})
    meta[GROUPS] = list(dict.fromkeys((*group_names(meta.get(GROUPS)), *groups)))
    return replace(doc, meta=meta)


class Stamped:
    """A document store whose `put` adds `groups` to every document; the rest as the store."""

    def __init__(self, store, groups: tuple[str, ...]):
        self.store, self.groups = store, groups

    def put(self, doc, *args, **kwargs):
        return self.store.put(with_groups(doc, self.groups), *args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.store, name)


def stamped(store, groups: tuple[str, ...]):
    """`store` itself without groups, else a Stamped view of it."""
    return Stamped(store, tuple(groups)) if groups else store


def kept_groups(doc, old):
    """`doc`, given the groups of `old` (its stored version, or None) when it comes without
    groups of its own: an update never makes a private document public by leaving its groups
    out (`--groups none`, or `"groups": []` in the HTTP API, does)."""
    if old is None or group_names((doc.meta or {}).get(GROUPS)):
        return doc
    names = group_names((old.meta or {}).get(GROUPS))
    return with_groups(doc, names) if names else doc


def start_key(url: str) -> str:
    """The key a crawl's groups are remembered under: its start URL as a document's URL
    (`urls.normalize`: HTTP://Host:80/? and http://host/ are one site's start)."""
    try:
        return normalize(url)
    except ValueError:  # (check_url refused it before any crawl)
        return url


def crawl_groups(store, url: str, given: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """(the groups this crawl of `url` stamps, a note when they were remembered): the groups
    given (then remembered for the URL), else those the last crawl of it was given."""
    key, given = f"crawl_groups:{start_key(url)}", tuple(given or ())
    if given == (NONE,):
        store.set_meta(key, [])
        store.set_meta(f"crawl_groups:{url}", [])  # (as busca remembered them before)
        return (), None
    if given:
        store.set_meta(key, list(given))
        return tuple(given), None
    kept = tuple(store.get_meta(key) or store.get_meta(f"crawl_groups:{url}") or ())
    if not kept:
        return (), None
    return kept, (f"every document stored gets the groups {', '.join(kept)}, remembered from"
                  f" the last crawl of {url} (--groups none forgets them)")
