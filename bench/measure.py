"""What every system of bench_lexical.py measures the same way: peak memory, corpus lines, index
size on disk, and timed passes over the queries."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import numpy as np

WARMUP = 3  # queries run before timing (first calls page in data, fill caches)
MAX_PASSES = 20  # passes over the queries at most, while they take less than cfg["timed"]


def peak_mb(who=resource.RUSAGE_SELF) -> float:
    """Peak resident memory. Linux keeps ru_maxrss across exec (a child starts with the
    parent's peak), so this process's own high-water mark is read from /proc when it can."""
    if who == resource.RUSAGE_SELF:
        try:
            status = Path("/proc/self/status").read_text()
            return int(status.split("VmHWM:")[1].split()[0]) / 1024
        except (OSError, IndexError, ValueError):
            pass
    return resource.getrusage(who).ru_maxrss / 1024


def read_corpus(path: str, n: int) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(n)]


def directory_mb(path: Path, pattern: str = "*") -> float:
    return sum(p.stat().st_size for p in path.rglob(pattern) if p.is_file()) / 2**20


def once(search, queries: list[str], budget: float) -> dict:
    """Every query asked once, in order, from the process's first query on (no warm-up: the
    first query's loading and every word's first analysis are counted), for at most `budget`
    seconds: queries/s, p50 and p99 in ms, the first query's ms, and the p99 of the
    process's CPU time per query (`p99_cpu`: on a shared machine the wall-clock p99 is
    mostly the queries during which the process was descheduled). The CPU clock is read
    outside the wall-clock interval: it is a system call (2.2 µs a read on a VM measured,
    against 0.23 µs for `perf_counter`), which would weigh most on the fastest system."""
    times, cpu = [], []
    started = time.perf_counter()
    for q in queries:
        c = time.process_time()
        t = time.perf_counter()
        search(q)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        if time.perf_counter() - started > budget and len(times) >= 5:
            break
    ms = np.array(times) * 1000
    return {"queries": len(times), "qps": len(times) / (ms.sum() / 1000),
            "p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99)),
            "p99_cpu": float(np.percentile(np.array(cpu) * 1000, 99)),
            "first_ms": float(ms[0]), "first_qps": len(times) / (ms.sum() / 1000)}


def time_queries(search, cfg: dict, budget: float | None = None) -> dict:
    """Run `search(query)` one query at a time over cfg's queries (at most cfg["most"], for
    at most `budget` seconds, default cfg["budget"]), cfg["passes"] times after WARMUP
    queries, and more passes (up to MAX_PASSES) while all of them took less than
    cfg["timed"] seconds (a fast system's pass lasts 50 ms: one burst of the machine's other
    work would spoil every pass): queries/s, p50 and p99 in ms of the fastest pass (the
    least disturbed), and the first pass's queries/s (words analyzed and pages read for the
    first time)."""
    queries, most = cfg["queries"], cfg["most"]
    budget = cfg["budget"] if budget is None else budget
    if cfg.get("once"):
        return once(search, queries[:most], budget)
    for q in queries[:WARMUP]:
        search(q)
    best, first = None, None
    done, spent = 0, 0.0
    while done < max(1, cfg.get("passes", 1)) or (
            spent < cfg.get("timed", 0.0) and done < MAX_PASSES):
        done += 1
        times = []
        started = time.perf_counter()
        for q in queries[WARMUP:WARMUP + most]:
            t = time.perf_counter()
            search(q)
            times.append(time.perf_counter() - t)
            if time.perf_counter() - started > budget and len(times) >= 5:
                break
        spent += time.perf_counter() - started
        ms = np.array(times) * 1000
        found = {"queries": len(times), "qps": len(times) / (ms.sum() / 1000),
                 "p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99))}
        first = found["qps"] if first is None else first
        best = found if best is None or found["qps"] > best["qps"] else best
    return {**best, "first_qps": first}
