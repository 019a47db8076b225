"""What `crawl()` yields: progress events, and a final report with counts and failures."""

from __future__ import annotations

from dataclasses import dataclass, field

STATUSES = ("added", "updated", "metadata_updated", "unchanged", "deleted")
STORED = STATUSES[:-1]  # a document the site gave us: its text changed, its metadata only,
#                         or nothing


@dataclass(frozen=True)
class SourceFound:
    """Discovery chose a source: how the site will be read, and why."""

    source: str
    url: str
    detail: str = ""


@dataclass(frozen=True)
class Expected:
    """The site says how many documents there are (API totals, sitemap and feed sizes)."""

    total: int


@dataclass(frozen=True)
class Stored:
    """A document was added, updated (its title or text), its metadata updated (groups,
    date or other metadata alone), found unchanged (fetched or not) or deleted."""

    url: str
    status: str
    fetched: bool = True


@dataclass(frozen=True)
class Failed:
    """One URL (or API page) could not be used; the crawl goes on."""

    url: str
    reason: str


@dataclass(frozen=True)
class Notice:
    """Something the user should know (capped Retry-After, Crawl-delay, fallbacks...)."""

    message: str


@dataclass(frozen=True)
class CrawlReport:
    """The outcome of one crawl."""

    url: str
    source: str
    counts: dict[str, int]
    failures: tuple[tuple[str, str], ...]
    notices: tuple[str, ...]
    seconds: float
    requests: int
    stopped: str | None = None  # why the crawl ended early, if it did

    @property
    def documents(self) -> int:
        """Documents the site gave us in this crawl (added, updated, metadata updated or
        unchanged)."""
        return sum(self.counts.get(s, 0) for s in STORED)

    def to_json(self) -> dict:
        """`busca crawl --json`: every key of `unfinished_json` too, so a script reads
        `documents`, `stopped` and `interrupted` whatever the crawl's end."""
        return {"url": self.url, "source": self.source, "documents": self.documents,
                **self.counts,
                "failures": [{"url": u, "reason": r} for u, r in self.failures],
                "notices": list(self.notices), "requests": self.requests,
                "seconds": round(self.seconds, 3), "stopped": self.stopped,
                "interrupted": False}


def unfinished_json(url: str, why: str, documents: int, *, interrupted: bool = False) -> dict:
    """`busca crawl --json` of a crawl that never got to its report (it could not start, or
    was interrupted): the documents read and stored before it stopped, and why."""
    return {"url": url, "source": None, "documents": documents, "stopped": why,
            "interrupted": interrupted}


@dataclass(frozen=True)
class Finished:
    """The last event of every crawl that got past discovery."""

    report: CrawlReport


Event = SourceFound | Expected | Stored | Failed | Notice | Finished


@dataclass
class Tally:
    """Running counts of a crawl's events."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUSES, 0))
    failures: list[tuple[str, str]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    source: str = ""

    def add(self, event) -> None:
        if isinstance(event, Stored):
            self.counts[event.status] += 1
        elif isinstance(event, Failed):
            self.failures.append((event.url, event.reason))
        elif isinstance(event, Notice):
            self.notices.append(event.message)
        elif isinstance(event, SourceFound):
            self.source = event.source
