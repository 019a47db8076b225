"""A document's URL, as every source that lists pages gives it (`normalize`), and the one
spelling of a URL that names its document (`doc_key`)."""

from __future__ import annotations

import re
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

TRACKING = re.compile(r"(utm_[a-z]+|fbclid|gclid|dclid|msclkid|mc_[ce]id|_ga)(=|$)", re.I)
# a visitor's session id (Java's, PHP's, ASP's; `sid` when it is a long token, not a number)
SESSION = re.compile(r"(jsessionid|phpsessid|aspsessionid[a-z]*)(=|$)|sid=[0-9a-z]{16,}$", re.I)
_PATH_SESSION = re.compile(r";jsessionid=[^;/]*", re.I)  # /post/;jsessionid=AB12
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# an escape, or a character a URL cannot hold as it is (non-ASCII, space, ", <, |, a lone %…)
_RESPELL = re.compile(r"%[0-9A-Fa-f]{2}|[^A-Za-z0-9._~!$&'()*+,;=:@/?\[\]-]")


def normalize(url: str) -> str:
    """A document's URL, for every source that lists pages (HTML links, sitemaps, feeds,
    WordPress's `link`): scheme and host lowercased, default port and fragment dropped, empty
    path as /, no campaign-tracking parameters (utm_*, fbclid, gclid…) or session ids
    (;jsessionid=, PHPSESSID…): the same page under other URLs, and its escapes spelled
    one way (`respelled`). ValueError for a malformed URL (bad port or host)."""
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host  # an IPv6 address keeps its brackets
    port = parts.port
    if port and (scheme, port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    query = "&".join(p for p in parts.query.split("&")
                     if p and not TRACKING.match(p) and not SESSION.match(p))
    path = _PATH_SESSION.sub("", parts.path) or "/"
    return urlunsplit((scheme, host, respelled(path), respelled(query), ""))


def respelled(part: str) -> str:
    """A URL's path, query or fragment in one spelling of the many that name the same
    resource (RFC 3986, 6.2.2; RFC 3987's IRI to URI): what a URL cannot hold as it is
    (ação, a space, a lone %) escaped as UTF-8, escapes in upper case, and unreserved
    characters (letters, digits, - . _ ~) unescaped; reserved ones (%2F, %3F, %26) stay
    escaped. /ação/, /a%c3%a7%c3%a3o/ and /a%C3%A7%C3%A3o/ are all /a%C3%A7%C3%A3o/."""
    return _RESPELL.sub(_respell, part)


def _respell(match: re.Match) -> str:
    text = match.group()
    if len(text) == 3 and text[0] == "%":
        char = chr(int(text[1:], 16))
        return char if char in _UNRESERVED else text.upper()
    return "".join(f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass"))


def doc_key(url: str) -> str:
    """The spelling under which every spelling of an http(s) URL is one document: its path,
    query and fragment `respelled` (anything else, a file's id, as it is). A document stored
    under an older spelling keeps it (crawler/store.py's `OneSpelling`)."""
    parts = web_parts(url)
    if parts is None:
        return url
    return urlunsplit(parts._replace(path=respelled(parts.path), query=respelled(parts.query),
                                     fragment=respelled(parts.fragment)))


def web_parts(url: str) -> SplitResult | None:
    """The parts of an http(s) URL; None for anything else (a file's id, a malformed URL)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return parts if parts.scheme.lower() in ("http", "https") else None


_ESCAPE = re.compile(r"%[0-9A-F]{2}")
_HIGH_ESCAPES = re.compile(r"(?:%[89A-F][0-9A-F])+")  # the escapes of non-ASCII UTF-8


def spellings(url: str) -> list[str]:
    """The spellings of one http(s) URL that a store may hold it under, its `doc_key` first:
    the URL as given, escapes in lower case (WordPress's links) and non-ASCII unescaped (an
    IRI, as a page may link it): what `OneSpelling` looks up when it has not read every
    stored URL."""
    key = doc_key(url)
    found = [key, url, _ESCAPE.sub(lambda m: m.group().lower(), key),
             _HIGH_ESCAPES.sub(lambda m: unquote(m.group()), key)]
    return list(dict.fromkeys([*found, *map(lower_host, found)]))


def lower_host(url: str) -> str:
    """The URL with its scheme and host in lower case (as a crawl stores them: they are
    case-insensitive), the rest as it is."""
    parts = web_parts(url)
    return urlunsplit(parts._replace(scheme=parts.scheme.lower(),
                                     netloc=parts.netloc.lower())) if parts else url
