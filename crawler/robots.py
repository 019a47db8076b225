"""robots.txt rules (RFC 9309): groups by user agent, longest match wins, `*` and `$` patterns.

The standard library's parser ignores wildcards and fractional Crawl-delay, so this small
one is used instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit


@dataclass
class _Group:
    agents: list[str] = field(default_factory=list)
    rules: list[tuple[bool, str]] = field(default_factory=list)
    delay: float | None = None


class Robots:
    """What one robots.txt allows a user agent. An empty text allows everything."""

    def __init__(self, text: str = "", *, url: str = ""):
        self.url = url
        self._groups: list[_Group] = []
        self._sitemaps: list[str] = []
        self._parse(text)

    def allowed(self, url: str, agent: str) -> bool:
        parts = urlsplit(url)
        path = unquote(parts.path or "/") + (f"?{unquote(parts.query)}" if parts.query else "")
        if path == "/robots.txt":
            return True
        best_len, allow = -1, True
        for is_allow, pattern in self._rules(agent):
            if _matches(pattern, path):
                size = len(pattern)
                if size > best_len or (size == best_len and is_allow):
                    best_len, allow = size, is_allow
        return allow

    def delay(self, agent: str) -> float | None:
        """Seconds between requests asked by Crawl-delay for this agent, if any."""
        delays = [g.delay for g in self._groups_for(agent) if g.delay is not None]
        return max(delays) if delays else None

    def sitemaps(self) -> list[str]:
        return list(self._sitemaps)

    def _rules(self, agent: str) -> list[tuple[bool, str]]:
        return [rule for group in self._groups_for(agent) for rule in group.rules]

    def _groups_for(self, agent: str) -> list[_Group]:
        token = agent.split("/")[0].strip().lower()
        mine = [g for g in self._groups if token in g.agents]
        return mine or [g for g in self._groups if "*" in g.agents]

    def _parse(self, text: str) -> None:
        group: _Group | None = None
        for raw in text.splitlines():
            line = raw.split("#", 1)[0].strip()
            key, sep, value = line.partition(":")
            if not sep:
                continue
            key, value = key.strip().lower(), value.strip()
            if key == "sitemap":
                self._sitemaps.append(value)
            elif key == "user-agent":
                if group is None or group.rules or group.delay is not None:
                    group = _Group()
                    self._groups.append(group)
                group.agents.append(value.lower())
            elif group is not None and key in ("allow", "disallow") and value:
                group.rules.append((key == "allow", unquote(value)))
            elif group is not None and key == "crawl-delay":
                group.delay = _number(value)


def _number(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number >= 0 else None


def _matches(pattern: str, path: str) -> bool:
    """Whether `path` starts with `pattern`, each `*` any run of characters. Each `*` takes
    the first place where the rest can go on, and keeps it (an atomic group): a rule of
    many `*` made the regular expression try every split of a long path, hours for one URL."""
    anchored = pattern.endswith("$")
    *pieces, last = (pattern[:-1] if anchored else pattern).split("*")
    regex = "".join([re.escape(pieces[0]) if pieces else "",
                     *(f"(?>.*?{re.escape(piece)})" for piece in pieces[1:]),
                     (".*" if pieces else "") + re.escape(last) + ("$" if anchored else "")])
    return re.match(regex, path) is not None
