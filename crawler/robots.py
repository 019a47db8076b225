"""robots.txt rules of one site (RFC 9309), parsed with the standard library."""

from __future__ import annotations

from urllib.robotparser import RobotFileParser


class Robots:
    """What one robots.txt allows a user agent; allow_all for a missing file (4xx)."""

    def __init__(self, text: str = "", *, url: str = ""):
        self.url = url
        self._parser = RobotFileParser(url)
        self._parser.parse(text.splitlines())

    def allowed(self, url: str, agent: str) -> bool:
        return self._parser.can_fetch(agent, url)

    def delay(self, agent: str) -> float | None:
        """Seconds between requests asked by Crawl-delay or Request-rate, if any."""
        delays = []
        crawl_delay = self._parser.crawl_delay(agent)
        if crawl_delay is not None:
            try:
                delays.append(float(crawl_delay))
            except ValueError:
                pass
        rate = self._parser.request_rate(agent)
        if rate is not None and rate.requests > 0:
            delays.append(rate.seconds / rate.requests)
        return max(delays) if delays else None

    def sitemaps(self) -> list[str]:
        return list(self._parser.site_maps() or [])
