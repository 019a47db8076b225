"""The query log table of a local home: the `queries` table of `busca.db`, written only here.

Columns: time (ISO 8601, UTC), command, query, method, k, top scores as JSON, floor, answered,
seconds. What is logged, and whether a query was answered, is decided by search/querylog.py.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone

SCHEMA = """
CREATE TABLE IF NOT EXISTS queries (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    command TEXT NOT NULL,
    query TEXT NOT NULL,
    method TEXT NOT NULL,
    k INTEGER NOT NULL,
    scores TEXT NOT NULL,
    floor REAL,
    answered INTEGER NOT NULL,
    seconds REAL NOT NULL
);
"""

KEYS = ("at", "command", "query", "method", "k", "scores", "floor", "answered", "seconds")


def create_queries(db: sqlite3.Connection) -> None:
    db.executescript(SCHEMA)


def append_query(db: sqlite3.Connection, *, command: str, query: str, method: str, k: int,
           scores: list[float], floor: float | None, answered: bool, seconds: float,
           at: str | None = None) -> None:
    """Append one query; `at` defaults to now (UTC, ISO 8601)."""
    at = at or datetime.now(timezone.utc).isoformat(timespec="seconds")
    db.execute(
        "INSERT INTO queries (at, command, query, method, k, scores, floor, answered,"
        " seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (at, command, query, method, k, json.dumps(scores), floor, int(answered), seconds))


def delete_queries(db: sqlite3.Connection, before: str) -> int:
    """Forget the queries logged before `before` (ISO, UTC); how many were forgotten."""
    return db.execute("DELETE FROM queries WHERE at < ?", (before,)).rowcount


def read_queries(db: sqlite3.Connection, since: str | None = None) -> list[dict]:
    """Logged queries in time order, optionally only those at or after `since` (ISO)."""
    sql = f"SELECT {', '.join(KEYS)} FROM queries"
    args: tuple = ()
    if since is not None:
        sql, args = sql + " WHERE at >= ?", (since,)
    rows = db.execute(sql + " ORDER BY at, id", args).fetchall()
    return [{**dict(zip(KEYS, r)), "scores": json.loads(r[5]), "answered": bool(r[7])}
            for r in rows]
