"""A document's URL, as every source that lists pages gives it (`normalize`)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

TRACKING = re.compile(r"(utm_[a-z]+|fbclid|gclid|dclid|msclkid|mc_[ce]id|_ga)(=|$)", re.I)


def normalize(url: str) -> str:
    """A document's URL, for every source that lists pages (HTML links, sitemaps, feeds,
    WordPress's `link`): scheme and host lowercased, default port and fragment dropped, empty
    path as /, and no campaign-tracking parameters (utm_*, fbclid, gclid…: the same page
    under other URLs). ValueError for a malformed URL (bad port or host)."""
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host  # an IPv6 address keeps its brackets
    port = parts.port
    if port and (scheme, port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    query = "&".join(p for p in parts.query.split("&") if p and not TRACKING.match(p))
    return urlunsplit((scheme, host, parts.path or "/", query, ""))
