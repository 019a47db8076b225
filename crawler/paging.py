"""How a JSON API pages, and the next page's URL: a next link or number, a page number,
an offset, a cursor, or MediaWiki's continue object.

    next_page(data, opts, url, first=list_url, count=len(items)) -> the next URL or None

Dotted paths (`meta.pagination.next`) are looked up with `lookup`; `*` maps over a list
(`authors.*.name`).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .errors import FetchError
from .html import join_url
from .options import JsonApiOptions

MISSING = object()


def lookup(data, path: str):
    """The value at a dotted path ("" is the data itself); MISSING if absent."""
    keys = [k for k in path.split(".") if k]
    for i, key in enumerate(keys):
        if key == "*" and isinstance(data, list):
            rest = ".".join(keys[i + 1:])
            found = [lookup(item, rest) for item in data]
            return [v for v in found if v is not MISSING and v is not None]
        if isinstance(data, dict) and key in data:
            data = data[key]
        elif isinstance(data, list) and _index(key, len(data)):
            data = data[int(key)]
        else:
            return MISSING
    return data


def first(data, paths: str):
    """The value at the first of `|`-separated dotted paths that has one (not None, not
    ""); MISSING if none does: `attributes.title|title` reads Strapi 4 and 5 alike."""
    for path in paths.split("|"):
        value = lookup(data, path.strip())
        if value not in (None, "", MISSING):
            return value
    return MISSING


def fill(template: str, data) -> str | None:
    """A URL template filled from the item: `{slug}`, `{sys.id}` (dotted paths, `|`
    alternatives); None when a field is missing or not a string or number."""
    parts = re.split(r"\{([^{}]+)\}", template)
    for i in range(1, len(parts), 2):
        value = first(data, parts[i])
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            return None
        parts[i] = str(value)
    if any(brace in part for part in parts[::2] for brace in "{}"):
        return None  # an unmatched brace
    return "".join(parts)


def _index(key: str, length: int) -> bool:
    return re.fullmatch(r"-?\d+", key) is not None and -length <= int(key) < length


def pages_itself(opts: JsonApiOptions) -> bool:
    """Whether the options say how to page (so a listing read to its end is the whole list)."""
    return any((opts.page_param, opts.next_path, opts.offset_param, opts.cursor_path,
                opts.continue_path))


def next_page(data, opts: JsonApiOptions, url: str, *, first: str, count: int) -> str | None:
    """The URL of the page after `url` (whose answer is `data`, with `count` items), or None."""
    if opts.more_path and lookup(data, opts.more_path) in (False, "false", 0):
        return None
    if opts.continue_path:
        return _continued(lookup(data, opts.continue_path), first)
    if opts.cursor_path:
        value = lookup(data, opts.cursor_path)
        if value in (None, "", MISSING) or isinstance(value, (dict, list, bool)):
            return None
        return with_param(url, opts.cursor_param, value) if opts.cursor_param \
            else _link(url, str(value))
    if opts.next_path:
        value = lookup(data, opts.next_path)
        if isinstance(value, int) and not isinstance(value, bool) and opts.page_param:
            return with_param(url, opts.page_param, value)
        if isinstance(value, str) and value.strip():
            return _link(url, value.strip())
        return None
    if not count:
        return None
    if opts.offset_param:
        offset = _number(url, opts.offset_param, 0) + count
        total = lookup(data, opts.total_path) if opts.total_path else MISSING
        if isinstance(total, int) and offset >= total:
            return None
        return with_param(url, opts.offset_param, offset)
    if opts.page_param:
        return with_param(url, opts.page_param, _number(url, opts.page_param, 1) + 1)
    return None


def _continued(value, first: str) -> str | None:
    """MediaWiki: every key of the continue object goes into the first request's query."""
    if not isinstance(value, dict) or not value:
        return None
    url = first
    for key, item in value.items():
        url = with_param(url, key, item)
    return url


def _link(url: str, value: str) -> str:
    target = join_url(url, value)
    if target is None:
        raise FetchError(url, f"malformed next-page URL {value[:100]!r}")
    return target


def _number(url: str, name: str, default: int) -> int:
    current = dict(parse_qsl(urlsplit(url).query)).get(name, "")
    return int(current) if current.isdigit() else default


def with_param(url: str, name: str, value) -> str:
    """`url` with query parameter `name` set to `value` (kept last)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != name]
    return urlunsplit((*parts[:3], urlencode([*query, (name, str(value))], safe="/,|"), ""))


def without(url: str, *names: str | None) -> str:
    """`url` without the named query parameters (a listing's identity across its pages)."""
    names = {n for n in names if n}
    if not names:
        return url
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in names]
    return urlunsplit((*parts[:3], urlencode(query, safe="/,|"), ""))
