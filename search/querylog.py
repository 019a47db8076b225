"""The query log: what users asked, what they got, and which questions the corpus misses.

Every `busca search` and `busca context` call appends one row to the home's query log (unless
`--no-log` or the `querylog` setting is off); the home stores it (index/home/queries.py
locally). `misses` groups the questions that found nothing or only scores below the floor, most
frequent first; `golden_skeleton` turns them into a golden set in the seeds' format
(`{"pergunta": ..., "trecho": ""}`) for a person to label and `busca eval` to score — the seed's
loop of turning failures into tests.
"""

from __future__ import annotations

import json
import os
import re
import time
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..index.home.storage import require_folder


SETTING = "querylog"  # home setting (meta key): true (default) or false


@dataclass(frozen=True)
class LoggedQuery:
    """One logged call of `search` or `context`."""

    at: str  # ISO 8601, UTC
    command: str
    query: str
    method: str
    k: int
    scores: tuple[float, ...]  # top-k scores before the floor
    floor: float | None
    answered: bool
    seconds: float


@dataclass(frozen=True)
class Miss:
    """A question that went unanswered, with how often and how well it scored."""

    query: str  # the wording of its latest occurrence
    count: int
    first: str
    last: str
    best: float | None  # best score it ever got; None if it never matched anything
    methods: tuple[str, ...]

    @property
    def reason(self) -> str:
        return "nothing found" if self.best is None else "low scores"


def is_enabled(store) -> bool:
    """Whether queries are logged in this store (on unless turned off)."""
    return bool(store.get_meta(SETTING, True))


def read_only(store) -> bool:
    """Whether the home can only be read (e.g. on a read-only share): nothing is logged."""
    return bool(getattr(store, "read_only", False))


def set_enabled(store, on: bool) -> None:
    store.set_meta(SETTING, bool(on))


@dataclass(frozen=True)
class LogState:
    """`busca log`: whether the log is on, the queries it holds, and how many a prune
    forgot (None: no prune asked)."""

    enabled: bool
    queries: int
    pruned: int | None = None

    def to_json(self) -> dict:
        return {"enabled": self.enabled, "queries": self.queries, "pruned": self.pruned}


def setting(store, *, on: bool | None = None, prune_days: int | None = None) -> LogState:
    """`busca log`: turn the log on or off (None: leave it), forget the queries older than
    `prune_days` days (`prune`; None: none), and the log's state after it."""
    if on is not None:
        set_enabled(store, on)
    pruned = None if prune_days is None else prune(store, prune_days)
    return LogState(is_enabled(store), count(store), pruned)


def answered(scores, floor: float | None) -> bool:
    """Whether a query was answered: some hit scored at or above the floor (any, without one)."""
    return any(floor is None or s >= floor for s in scores)


def log_call(store, *, command: str, query: str, method: str, k: int, scores,
             floor: float | None, started: float, refused: bool = False) -> bool:
    """Log one search/context call that started at `started` (time.perf_counter());
    `refused`: the answerability model refused it (not answered, whatever the scores)."""
    scores = [float(s) for s in scores]
    return record(store, command=command, query=query, method=method, k=k, scores=scores,
                  floor=floor, answered=not refused and answered(scores, floor),
                  seconds=time.perf_counter() - started)


def count(store) -> int:
    """How many queries the log holds."""
    return len(store.logged_queries())


def record(store, *, command: str, query: str, method: str, k: int,
           scores: list[float], floor: float | None, answered: bool, seconds: float) -> bool:
    """Append a query to the log if logging is on and the home can be written (see
    `read_only`); True if it was logged."""
    if not is_enabled(store) or read_only(store):
        return False
    query = query.encode("utf-8", "replace").decode("utf-8")  # argv's undecodable bytes: ?
    store.log_query(command=command, query=query, method=method, k=k,
                    scores=[float(s) for s in scores], floor=floor, answered=answered,
                    seconds=seconds)
    return True


def prune(store, days: int, *, now: datetime | None = None) -> int:
    """Forget the queries logged more than `days` days before `now` (0: every one), so a
    public site's log of what visitors typed does not grow forever; how many were forgotten."""
    if isinstance(days, bool) or not isinstance(days, int) or days < 0:
        raise ValueError(f"days must be a whole number of days, 0 or more, not {days!r}")
    moment = (now or datetime.now(timezone.utc)) - timedelta(days=days)
    return store.forget_queries(_iso(moment) if days else "9999")


def logged(store, *, since: datetime | None = None) -> list[LoggedQuery]:
    """Logged queries in time order, optionally from `since` on."""
    rows = store.logged_queries(_iso(since) if since else None)
    return [LoggedQuery(**{**r, "scores": tuple(r["scores"])}) for r in rows]


def _iso(moment: datetime) -> str:
    """UTC ISO 8601 to compare with the stored stamps; a naive time is local time."""
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def is_miss(entry: LoggedQuery, *, below: float | None = None) -> bool:
    """Unanswered (nothing, or nothing above its floor), or best score under `below`."""
    if not entry.answered:
        return True
    return below is not None and (not entry.scores or max(entry.scores) < below)


def misses(store, *, since: datetime | None = None,
           below: float | None = None) -> list[Miss]:
    """Missed questions grouped by wording, most frequent first, then most recently asked."""
    groups: dict[str, list[LoggedQuery]] = {}
    latest: dict[str, int] = {}  # log position of each question's latest miss
    for position, entry in enumerate(logged(store, since=since)):
        if is_miss(entry, below=below):
            key = question_key(entry.query)
            groups.setdefault(key, []).append(entry)
            latest[key] = position
    order = sorted(groups, key=lambda key: (-len(groups[key]), -latest[key]))
    return [_miss(groups[key]) for key in order]


def _miss(entries: list[LoggedQuery]) -> Miss:
    """One missed question: its best score is that of the method it was asked with last
    (bm25's and a cosine's are on other scales: their max meant nothing)."""
    last = entries[-1].method
    scores = [s for e in entries if e.method == last for s in e.scores]
    methods = tuple(sorted({e.method for e in entries}))
    return Miss(entries[-1].query.strip(), len(entries), entries[0].at, entries[-1].at,
                max(scores) if scores else None, methods)


def question_key(question: str) -> str:
    """The form under which two wordings count as the same question: Unicode's compatibility
    form (fullwidth or ligature letters as the plain ones), case folded, spaces collapsed."""
    text = unicodedata.normalize("NFKC", question).casefold()
    return re.sub(r"\s+", " ", text).strip()


def golden_skeleton(found: list[Miss]) -> list[dict]:
    """The seeds' golden format with the question filled in and the trecho left empty."""
    return [{"pergunta": m.query, "trecho": ""} for m in found]


def write_golden(path: str | Path, found: list[Miss]) -> int:
    """Write the skeleton as a JSON list (temporary name, then rename); returns its size."""
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} already exists — choose a new file name,"
                              " or merge by hand")
    require_folder(path)
    items = golden_skeleton(found)
    tmp = path.with_name(path.name + f".tmp-{uuid.uuid4().hex[:8]}")
    tmp.write_text(_dump(items), encoding="utf-8")
    os.replace(tmp, path)
    return len(items)


def _dump(items: list[dict]) -> str:
    """One item per line, like the seed's example, so a person can fill in trechos."""
    if not items:
        return "[]\n"
    lines = [json.dumps(item, ensure_ascii=False) for item in items]
    return "[\n  " + ",\n  ".join(lines) + "\n]\n"
