"""Which `Host` headers the server answers: its defence against DNS rebinding.

A page on evil.example can make its own name resolve to 127.0.0.1 and then read a server on
loopback with the victim's browser; the browser still sends `Host: evil.example`. So a server
bound to loopback answers only Host names that cannot be rebound: loopback literals
(127.0.0.0/8, [::1]), `localhost`, and the names given with `--allow-host`. A server bound to
another address answers every Host, unless `--allow-host` is given: then those names, plus
`localhost` and any IP literal (a literal cannot be rebound).

`cors_origin` reads a `--cors` value: a page origin (`scheme://host[:port]`) whose requests
the server lets read its answers (serve/app.py's Guard adds the CORS headers).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..errors import BuscaError

# name or [IPv6], then an optional :port (RFC 9110's Host = uri-host [ ":" port ])
_HOST = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))"
                   r"(?::(?P<port>[0-9]{0,5}))?")
_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?"
                   r"(\.[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?)*")


class BadHostName(BuscaError):
    """An --allow-host value that is not a host name or IP address."""


class BadOrigin(BuscaError):
    """A --cors value that is not an origin a browser sends."""


@dataclass(frozen=True)
class HostRule:
    """The Host names a server answers (lower-case); `any_ip`: every IP literal too."""

    names: frozenset[str]
    any_ip: bool = False

    def accepts(self, value: str) -> bool:
        """Whether `value`, a Host header (name and optional port), is one to answer."""
        match = _HOST.fullmatch(value)
        if match is None:
            return False
        if match["v6"] is not None:
            return self._address(match["v6"], ipaddress.IPv6Address)
        name = match["name"].lower()
        return name in self.names or self._address(name, ipaddress.IPv4Address)

    def accepts_origin(self, value: str) -> bool:
        """Whether `value`, an Origin header, is a page this server answers: http(s)://HOST
        with an optional port, HOST one that `accepts` (not "null", no path)."""
        url = urlsplit(value)
        return url.scheme in ("http", "https") and not url.path and self.accepts(url.netloc)

    def _address(self, text: str, kind: type) -> bool:
        try:
            address = kind(text)
        except ValueError:
            return False
        return self.any_ip or address.is_loopback


def host_rule(bound: str, allowed: tuple[str, ...] = ()) -> HostRule | None:
    """The rule of a server listening on `bound`, None when every Host is answered."""
    names = frozenset({"localhost", *(allowed_name(a) for a in allowed)})
    if is_loopback(bound):
        return HostRule(names)
    return HostRule(names, any_ip=True) if allowed else None


def allowed_name(value: str) -> str:
    """An --allow-host value as compared (lower-case); BadHostName names the problem."""
    text = value.strip().lower()
    if _NAME.fullmatch(text) is None or len(text) > 253:
        raise BadHostName(f"{value!r} is not a host name: give the bare name the browser"
                          " shows, without scheme or port (e.g. busca.lan)")
    return text


def cors_origin(value: str) -> str:
    """A --cors value as a browser sends it in `Origin` (scheme and host in lower case, no
    default port, an IPv6 literal compressed); BadOrigin names the problem and the fix."""
    text, example = value.strip(), "e.g. --cors http://localhost:5173"
    if text == "*":
        raise BadOrigin(f"'*' is not accepted: it would let every web page a visitor opens read"
                        f" this server's answers; list each origin of your front end, {example}")
    if text.lower() == "null":
        raise BadOrigin(f"'null' is not accepted: it is the origin of every sandboxed or file://"
                        f" page; serve your page over http(s) and give its origin, {example}")
    url = _ORIGIN.fullmatch(text.removesuffix("/"))  # as copied from the address bar
    if url is not None and url["rest"]:
        raise BadOrigin(f"{value!r} has a path: an origin is scheme://host[:port] with no path,"
                        f" {example}")
    scheme = url["scheme"].lower() if url else ""
    port = int(url["port"]) if url and url["port"] else _PORTS.get(scheme)
    host = _origin_host(url["host"]) if url else None
    if scheme not in _PORTS or host is None or not 0 < port < 65536:
        raise BadOrigin(f"{value!r} is not an origin: give http(s)://host[:port] as the address"
                        f" bar shows the page that calls this server, {example}")
    return f"{scheme}://{host}" + ("" if port == _PORTS[scheme] else f":{port}")


_ORIGIN = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<host>\[[0-9A-Fa-f:.]+\]|"
                     r"[A-Za-z0-9._-]+)(?::(?P<port>[0-9]{1,5}))?(?P<rest>/.*)?")
_PORTS = {"http": 80, "https": 443}


def _origin_host(text: str) -> str | None:
    """The host of an origin as the browser writes it, None when it is none."""
    if text.startswith("["):
        try:
            return f"[{ipaddress.IPv6Address(text[1:-1]).compressed}]"
        except ValueError:
            return None
    return text.lower() if _NAME.fullmatch(text) and len(text) <= 253 else None


def is_loopback(host: str) -> bool:
    """Whether a --host address is loopback (127.0.0.0/8, ::1, localhost)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() == "localhost"
