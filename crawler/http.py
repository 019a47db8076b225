"""The polite HTTP client: robots.txt, per-host rate, retries, redirects, size and host limits.

Every request of a crawl goes through one `Fetcher`, which owns the `requests.Session`
given to it (robots.txt is fetched with the same session), so it is the one place where
politeness is enforced.
"""

from __future__ import annotations

import codecs
import json
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from urllib.parse import quote_from_bytes, urljoin, urlsplit

import requests
import urllib3

from .defaults import (DEFAULT_DEADLINE, DEFAULT_RATE, DEFAULT_RETRIES, DEFAULT_TIMEOUT,
                       DEFAULT_USER_AGENT)
from .errors import (ConnectFailed, CrawlStopped, Disallowed, FetchError, OffSite, TooLarge,
                     TooSlow)
from .robots import Robots

DEFAULT_BACKOFF = 0.5  # seconds before the first retry, doubled each time, plus jitter
DEFAULT_MAX_RETRY_AFTER = 120.0  # longest Retry-After honoured (seconds)
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
SITEMAP_MAX_BYTES = 50 * 1024 * 1024  # the sitemaps standard: 50 MB (50,000 URLs) uncompressed
READ_SIZE = 64 * 1024  # most bytes taken from the socket per read
MAX_REDIRECTS = 5
THROTTLED_STOP = 5  # requests refused (429), unavailable (502-504) or unanswered in a row stop a crawl
UNAVAILABLE_STATUSES = frozenset({502, 503, 504})  # the site (or its backend) is down
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))
_CHARSET = re.compile(r"""charset\s*=\s*["']?([\w.:-]+)""", re.I)


@dataclass(frozen=True)
class Response:
    """A complete answer: final URL after redirects, status, headers and body bytes."""

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self):
        """The body as JSON; FetchError naming the URL if it is not valid JSON."""
        try:
            return json.loads(self._json_text())
        except ValueError as e:
            if self.is_html():
                raise FetchError(self.url, "an HTML page, not JSON (a login page, cache or"
                                 " firewall in front of the API?)", status=self.status) from None
            raise FetchError(self.url, f"malformed JSON ({e}); {len(self.body)} bytes received",
                             status=self.status) from None

    def _json_text(self) -> str:
        """The body as text: a byte-order mark wins, then the charset the Content-Type
        declares (a Latin-1 API), else UTF-8 (JSON's own encoding)."""
        for mark, codec in _BOMS:
            if self.body.startswith(mark):
                return self.body[len(mark):].decode(codec, errors="replace")
        declared = _CHARSET.search(self.headers.get("Content-Type", ""))
        try:
            codec = codecs.lookup(declared.group(1)).name if declared else "utf-8"
        except LookupError:
            codec = "utf-8"
        return self.body.decode(codec, errors="replace")

    def is_html(self) -> bool:
        """Whether the body is an HTML page (by its Content-Type or its first tag)."""
        head = self.body[:512].lstrip().lower()
        return ("html" in self.headers.get("Content-Type", "").lower()
                or head.startswith((b"<!doctype html", b"<html")))


@dataclass(frozen=True)
class Politeness:
    """The knobs of a Fetcher; the defaults are the CLI's."""

    user_agent: str = DEFAULT_USER_AGENT
    rate: float = DEFAULT_RATE
    timeout: float = DEFAULT_TIMEOUT
    deadline: float = DEFAULT_DEADLINE  # per attempt: connection, headers and body
    retries: int = DEFAULT_RETRIES
    backoff: float = DEFAULT_BACKOFF
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER
    max_bytes: int = DEFAULT_MAX_BYTES
    allow_hosts: tuple[str, ...] = ()
    workers: int = 1
    obey_robots: bool = True


class RateLimiter:
    """Spaces the starts of requests to one host by at least 1/rate seconds (thread-safe)."""

    def __init__(self, rate: float, *, clock=time.monotonic, sleep=time.sleep):
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self._intervals: dict[str, float] = {}
        self._next: dict[str, float] = {}
        self._holds: dict[str, float] = {}  # no request before this time (Retry-After)
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep

    def slow_down(self, host: str, interval: float) -> None:
        """At least `interval` seconds between requests to `host` from now on."""
        with self._lock:
            self._intervals[host] = max(interval, self._intervals.get(host, 0.0))

    def hold(self, host: str, seconds: float) -> None:
        """No request to `host` for the next `seconds` (after a 429 or 503)."""
        with self._lock:
            self._holds[host] = max(self._holds.get(host, 0.0), self._clock() + seconds)

    def wait(self, host: str) -> None:
        """Sleep until this request may start; a hold() made meanwhile is waited out too."""
        while True:
            with self._lock:
                held = self._holds.get(host, 0.0)
                start = self._reserve(host)
                delay = start - self._clock()
            if delay > 0:
                self._sleep(delay)
            with self._lock:
                if self._holds.get(host, 0.0) == held:  # no new hold while asleep
                    # A sleep that overslept (a busy machine) moves the next slot too: the
                    # spacing holds between the requests' real starts, not their schedule.
                    self._next[host] = max(self._next[host], self._clock() + self._gap(host))
                    return

    def _reserve(self, host: str) -> float:
        start = max(self._clock(), self._next.get(host, 0.0), self._holds.get(host, 0.0))
        self._next[host] = start + self._gap(host)
        return start

    def _gap(self, host: str) -> float:
        return max(self.interval, self._intervals.get(host, 0.0))


@dataclass
class Fetcher:
    """GET with robots.txt, rate limit, retries, redirect and host checks and a size cap."""

    session: requests.Session
    polite: Politeness = field(default_factory=Politeness)
    hosts: set[str] = field(default_factory=set)
    on_notice: Callable[[str], None] = lambda message: None
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self):
        self.limiter = RateLimiter(self.polite.rate, sleep=self.sleep)
        self._robots: dict[str, Robots | FetchError] = {}
        self._robots_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self.requests = 0
        self._refused = 0  # requests refused with 429 in a row (`_throttled`)
        adapter = requests.adapters.HTTPAdapter(pool_maxsize=max(10, self.polite.workers))
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    def get(self, url: str, *, headers: Mapping[str, str] | None = None,
            max_bytes: int | None = None) -> Response:
        """Final response of `url` (redirects followed); FetchError when there is none.
        `max_bytes`: the size cap of this body, if not the crawl's (`sitemap_cap`)."""
        seen: list[str] = []
        for _ in range(MAX_REDIRECTS + 1):
            try:
                self.check(url)  # its robots.txt is the first request to a new origin
                response = self._retrying(url, headers or {}, max_bytes)
            except ConnectFailed as e:
                if seen and url.startswith("https:") and "does not speak HTTPS" in e.reason:
                    raise ConnectFailed(seen[0], f"{_short(seen[-1])} redirects to"
                                                 f" {_short(url)}, but no HTTPS is served"
                                                 " there (the site's redirect is broken)") from None
                raise
            location = response.headers.get("Location")
            if response.status not in REDIRECT_STATUSES or not location:
                return response
            url, seen = _redirect(url, location), [*seen, url]
        if url in seen:  # one return is a cookie check; a chain that goes on comes back again
            raise FetchError(seen[0], f"more than {MAX_REDIRECTS} redirects: a redirect loop"
                                      f" ({' → '.join(map(_short, seen[:3]))} → …); the site's"
                                      " redirects are broken there")
        raise FetchError(seen[0], f"more than {MAX_REDIRECTS} redirects ({_short(seen[0])} →"
                                  f" … → {_short(url)}); the site's redirects go on and on")

    @property
    def sitemap_cap(self) -> int:
        """The size cap of a sitemap (uncompressed): the standard's 50 MiB, or the crawl's
        cap if larger; pages keep theirs."""
        return max(SITEMAP_MAX_BYTES, self.polite.max_bytes)

    def check(self, url: str) -> None:
        """Raise unless the URL is http(s), on an allowed host and allowed by robots.txt."""
        try:
            parts = urlsplit(url)
            parts.port  # raises on a port out of range
        except ValueError as e:
            raise FetchError(url, f"malformed URL ({e})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise FetchError(url, "only http:// and https:// URLs are crawled")
        if not self.on_site(url):
            raise OffSite(url, f"{parts.hostname} is another host; add --allow-host"
                               f" {parts.hostname} to crawl it too")
        if self.polite.obey_robots and not self.robots(url).allowed(url, self.polite.user_agent):
            raise Disallowed(url, "robots.txt disallows it")

    def on_site(self, url: str) -> bool:
        host = _bare(urlsplit(url).hostname or "")
        return host in {_bare(h) for h in self.hosts} | {_bare(h) for h in self.polite.allow_hosts}

    def _throttled(self, status: int | None, failure: str | None = None) -> None:
        """Count requests that ended, after every retry, refused with 429, unavailable (502,
        503, 504) or with no answer at all (`failure`), in a row (any other answer resets the
        count); CrawlStopped at THROTTLED_STOP: going on would take hours and keep loading a
        site that asks us to stop or is down."""
        down = status == 429 or status in UNAVAILABLE_STATUSES or failure is not None
        with self._count_lock:
            self._refused = self._refused + 1 if down else 0
            refused = self._refused
        if refused < THROTTLED_STOP:
            return
        if status == 429:
            raise CrawlStopped(f"the site answered 429 (too many requests) to {refused}"
                               " requests in a row, even after waiting as it asked: stopped;"
                               " what was stored stays — crawl again later with a lower"
                               " --rate")
        what = f"answered HTTP {status}" if failure is None else f"gave no answer ({failure})"
        raise CrawlStopped(f"the site {what} to {refused} requests in a row, after their"
                           " retries: it is down or overloaded, so the crawl stopped; what was"
                           " stored stays — crawl again later")

    def robots(self, url: str) -> Robots:
        """The robots.txt rules of the URL's origin, fetched once with this session."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        with self._robots_lock:
            if origin not in self._robots:
                try:
                    self._robots[origin] = self._fetch_robots(origin + "/robots.txt")
                except FetchError as e:
                    self._robots[origin] = e  # asked once: no hammering a failing host
            found = self._robots[origin]
        if isinstance(found, FetchError):
            raise found
        return found

    def _fetch_robots(self, url: str) -> Robots:
        try:
            response, at = self._retrying(url, {}), url
            for _ in range(MAX_REDIRECTS):
                location = response.headers.get("Location")
                if response.status not in REDIRECT_STATUSES or not location:
                    break
                at = _redirect(at, location)
                self._on_site_robots(url, at)
                response = self._retrying(at, {})
        except ConnectFailed:
            raise
        except FetchError as e:
            raise FetchError(url, f"robots.txt answers {e.reason}; busca does not crawl a site"
                                  " whose rules it cannot read", status=e.status) from None
        robots = Robots(_text(response.body) if response.status == 200 else "", url=url)
        delay = robots.delay(self.polite.user_agent)
        if delay:
            self._obey_crawl_delay(limit_key(url), delay)
        return robots

    def _on_site_robots(self, url: str, target: str) -> None:
        """OffSite unless a robots.txt redirect stays on the crawl's hosts, as every other
        redirect does: a site's robots.txt cannot make busca fetch another host (127.0.0.1,
        169.254.169.254, an intranet's) for it."""
        parts = urlsplit(target)
        if parts.scheme in ("http", "https") and parts.hostname and self.on_site(target):
            return
        host = parts.hostname or parts.scheme or "?"
        raise OffSite(url, f"a redirect to {_short(target)}, another host; add"
                           f" --allow-host {host} to follow it")

    def _obey_crawl_delay(self, host: str, delay: float) -> None:
        cap = self.polite.max_retry_after
        if delay > cap:
            self.on_notice(f"robots.txt of {host} asks for {delay:g} s between requests"
                           f" (Crawl-delay); waiting the {cap:g} s cap instead")
            delay = cap
        elif delay > 1.0 / max(self.polite.rate, 1e-9):
            self.on_notice(f"robots.txt of {host} asks for {delay:g} s between requests;"
                           " obeying it")
        self.limiter.slow_down(host, delay)

    def _retrying(self, url: str, headers: Mapping[str, str],
                  cap: int | None = None) -> Response:
        host, cap = limit_key(url), cap or self.polite.max_bytes
        for attempt in range(self.polite.retries + 1):
            last = attempt == self.polite.retries
            self.limiter.wait(host)
            try:
                response = self._once(url, headers, cap)
            except ConnectFailed as e:
                if last or not _transient(e):
                    self._throttled(None, e.reason)
                    raise
                self.limiter.hold(host, self._backoff(attempt))
                continue
            if response.status not in RETRY_STATUSES:
                self._throttled(response.status)
                return response
            if last:
                self._throttled(response.status)
                raise FetchError(url, f"HTTP {response.status} after {attempt + 1} attempt"
                                 f"{'s' * (attempt > 0)}", status=response.status)
            pause = max(self._backoff(attempt), self._retry_after(url, response))
            self.limiter.hold(host, pause)
        raise AssertionError("unreachable")  # pragma: no cover

    def _backoff(self, attempt: int) -> float:
        base = self.polite.backoff * 2**attempt
        return base + self.rng.uniform(0, base)

    def _retry_after(self, url: str, response: Response) -> float:
        value = response.headers.get("Retry-After")
        seconds = _seconds(value) if value else None
        if seconds is None:
            return 0.0
        if seconds > self.polite.max_retry_after:
            self.on_notice(f"{urlsplit(url).netloc} asked to wait {seconds:g} s (Retry-After);"
                           f" waiting the {self.polite.max_retry_after:g} s cap instead")
            return self.polite.max_retry_after
        return seconds

    def _once(self, url: str, headers: Mapping[str, str], cap: int) -> Response:
        with self._count_lock:
            self.requests += 1
        all_headers = {"User-Agent": self.polite.user_agent, **headers}
        deadline = time.monotonic() + self.polite.deadline
        timeout = min(self.polite.timeout, self.polite.deadline)
        try:
            with self.session.get(url, headers=all_headers, timeout=(min(10.0, timeout), timeout),
                                  allow_redirects=False, stream=True,
                                  hooks={"response": _ascii_location}) as r:
                body = self._read(url, r, deadline, cap)
                return Response(url, r.status_code, r.headers, body)
        except requests.RequestException as e:
            raise ConnectFailed(url, _describe(e, url, timeout)) from None
        except urllib3.exceptions.HTTPError as e:  # reading the body from the socket
            raise ConnectFailed(url, _describe_read(e, url, timeout)) from None
        except ValueError as e:  # requests parses a redirect's Location even when not following
            raise FetchError(url, f"bad redirect Location ({e})") from None

    def _read(self, url: str, r: requests.Response, deadline: float, cap: int) -> bytes:
        """The body, read as it arrives so that the deadline is checked after every read."""
        length = r.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > cap:
            raise TooLarge(url, f"response of {int(length):,} bytes is over the"
                                f" {cap:,}-byte cap{_add_it(r)}", status=r.status_code)
        chunks, size = [], 0
        self._in_time(url, deadline, size, length)
        while chunk := r.raw.read1(READ_SIZE, decode_content=True):
            size += len(chunk)
            if size > cap:
                raise TooLarge(url, f"response is over the {cap:,}-byte cap{_add_it(r)}",
                               status=r.status_code)
            self._in_time(url, deadline, size, length)
            chunks.append(chunk)
        if _cut_gzip(r.raw):
            raise ConnectFailed(url, f"{urlsplit(url).netloc} sent a gzip body that stops"
                                     " before its end (a truncated response)")
        return b"".join(chunks)

    def _in_time(self, url: str, deadline: float, size: int, length: str) -> None:
        """TooSlow, naming the deadline and the option that raises it, once it has passed."""
        if time.monotonic() <= deadline:
            return
        of = f" of {int(length):,}" if length.isdigit() else ""
        raise TooSlow(url, f"no complete answer within the {self.polite.deadline:g} s deadline"
                           f" ({size:,}{of} bytes received); raise --deadline for a slow site")


def _redirect(url: str, location: str) -> str:
    try:
        target = urljoin(url, location)
        urlsplit(target).port  # raises on a port out of range
    except ValueError:
        raise FetchError(url, f"bad redirect Location {location[:100]!r}") from None
    return target


def _ascii_location(response: requests.Response, **_) -> requests.Response:
    """Percent-encode each raw non-ASCII byte of a Location header, as browsers do (a server
    may send `/ação` unescaped, in UTF-8 or Latin-1): http.client reads the bytes as Latin-1,
    which requests then took for mojibake (`/aÃ§Ã£o`) or refused (a Latin-1 byte is no UTF-8).
    A response hook, because requests reads Location before handing the response back."""
    location = response.headers.get("Location")
    if location and not location.isascii():
        try:
            raw = location.encode("latin-1")
        except UnicodeEncodeError:  # not from the wire: a str holding any character
            raw = location.encode("utf-8")
        response.headers["Location"] = quote_from_bytes(raw, safe=bytes(range(0x21, 0x7F)))
    return response


def _add_it(r: requests.Response) -> str:
    """The way in for a document over the cap (a PDF, a page): busca add has no cap."""
    kind = r.headers.get("Content-Type", "").lower()
    return "; to index it, download it and run busca add FILE" if (
        "pdf" in kind or "html" in kind or "text/plain" in kind) else ""


def _cut_gzip(raw) -> bool:
    """Whether urllib3 decompressed a gzip body whose stream never ended (cut short with a
    Content-Length that matches what was sent): its decoder's zlib object is not at eof."""
    decoder = getattr(raw, "_decoder", None)
    stream = getattr(decoder, "_obj", None)
    return isinstance(decoder, urllib3.response.GzipDecoder) and stream is not None \
        and not stream.eof and raw.tell() > 0  # bytes came: an empty body has no stream


def _short(url: str) -> str:
    return url if len(url) <= 80 else url[:79] + "…"


def limit_key(url: str) -> str:
    """Whose pace a request counts against: the host and port, without www. (which
    `on_site` takes for the same site: two keys let www.host and host double the rate)."""
    return _bare(urlsplit(url).netloc)


def _bare(host: str) -> str:
    host = host.lower()
    return host[4:] if host.startswith("www.") else host


def _text(body: bytes) -> str:
    return body.decode("utf-8-sig", errors="replace")


def _seconds(value: str) -> float | None:
    """Retry-After as seconds: delay-seconds or an HTTP date."""
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _transient(error: ConnectFailed) -> bool:
    return not error.reason.startswith(("DNS", "TLS"))


def _describe(error: requests.RequestException, url: str, timeout: float) -> str:
    host = urlsplit(url).netloc
    text = str(error)
    if isinstance(error, requests.exceptions.SSLError):
        if "WRONG_VERSION_NUMBER" in text.upper().replace(" ", "_"):  # plain HTTP answered
            return (f"TLS error talking to {host}: it does not speak HTTPS there; crawl"
                    f" http://{host}/ instead")
        return f"TLS error talking to {host}: {text[:200]}"
    if isinstance(error, requests.exceptions.ConnectTimeout):
        return f"no connection to {host} within {min(10.0, timeout):g} s (host unreachable?)"
    if isinstance(error, requests.exceptions.ReadTimeout):
        return _stalled(host, timeout)
    if "NameResolution" in text or "Name or service not known" in text or "getaddrinfo" in text:
        return f"DNS lookup failed: the name {urlsplit(url).hostname} does not resolve; check the URL"
    if "Connection refused" in text or "Errno 111" in text:
        return f"connection refused by {host}; is the site up and the port right?"
    if isinstance(error, requests.exceptions.ChunkedEncodingError):
        return f"{host} closed the connection in the middle of the response"
    if "ConnectionResetError" in text or "reset by peer" in text:
        return (f"{host} reset the connection before answering (the server is overloaded,"
                " or a firewall cuts the crawler off)")
    if "RemoteDisconnected" in text:
        return f"{host} closed the connection without answering"
    return f"cannot connect to {host}: {text[:200]}"


def _stalled(host: str, timeout: float) -> str:
    return f"{host} stopped answering (no data for {timeout:g} s; a longer --timeout waits more)"


def _describe_read(error: urllib3.exceptions.HTTPError, url: str, timeout: float) -> str:
    host = urlsplit(url).netloc
    if isinstance(error, urllib3.exceptions.ReadTimeoutError):
        return _stalled(host, timeout)
    if isinstance(error, urllib3.exceptions.ProtocolError):
        return f"{host} closed the connection in the middle of the response"
    if isinstance(error, urllib3.exceptions.DecodeError):
        return (f"{host} sent a body its Content-Encoding does not describe (it cannot be"
                " decompressed); the site's server is misconfigured")
    return f"cannot read the response of {host}: {str(error)[:200]}"
