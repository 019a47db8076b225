"""bench_lexical.py --rounds: the queries of every system run in alternating order, their
rounds combined into one row (q/s over all the time, medians of the latencies), and PISA's
faster algorithm kept."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import bench_lexical  # noqa: E402


def _round(qps: float, p50: float, peak: float) -> dict:
    return {"queries": 100, "qps": qps, "p50": p50, "p99": 10 * p50, "p99_cpu": 9 * p50,
            "first_ms": 1.0, "first_qps": qps, "load": 0.5, "search_peak": peak}


def test_rounds_combine_by_total_time_and_medians():
    # 100 queries at 1,000 q/s (0.1 s) and 100 at 500 q/s (0.2 s): 200 in 0.3 s
    out = bench_lexical.combined([_round(1000, 0.1, 300), _round(500, 0.6, 320),
                                  _round(1000, 0.2, 310)])
    assert out["queries"] == 300
    assert out["qps"] == pytest.approx(300 / (0.1 + 0.2 + 0.1))
    assert out["p50"] == pytest.approx(0.2)  # the median round, not the mean
    assert out["search_peak"] == 320
    assert out["round_qps"] == [1000, 500, 1000]
    one = _round(700, 0.1, 300)
    assert bench_lexical.combined([one]) == one


def test_rounds_alternate_and_keep_pisas_faster_algorithm():
    asked = []
    speeds = {("busca-query", None): [900, 1000], ("pisa-query", "wand"): [300, 200],
              ("pisa-query", "maxscore"): [400, 350]}

    def step(label, runner, **extra):
        asked.append(label)
        qps = speeds[(runner, extra.get("algorithm"))][label.endswith("2 of 2")]
        return _round(qps, 0.1, 100)

    jobs = [("busca bm25", "busca", "busca-query", {}),
            ("PISA#wand", "pisa w", "pisa-query", {"algorithm": "wand"}),
            ("PISA#maxscore", "pisa m", "pisa-query", {"algorithm": "maxscore"})]
    rows = {"busca bm25": {"build": 1.0}, "PISA": {"build": 2.0}}
    bench_lexical._run_queries(step, rows, jobs, 2)
    assert [a.split(",")[0] for a in asked] == ["busca", "pisa w", "pisa m",
                                                "pisa m", "pisa w", "busca"]
    assert rows["PISA"]["build"] == 2.0
    assert rows["PISA"]["round_qps"] == [400, 350]  # maxscore: 200 / (0.25 + 0.2857) s
    assert rows["PISA"]["qps"] == pytest.approx(200 / (100 / 400 + 100 / 350))
    assert rows["busca bm25"]["qps"] == pytest.approx(200 / (100 / 900 + 100 / 1000))


def test_build_rounds_take_each_systems_median_and_skip_an_unavailable_peer():
    asked = []
    seconds = {"busca-build": [3.0, 2.0, 2.5], "tantivy-build": [4.0, 5.0, 4.2]}

    def step(label, runner, one_thread, **extra):
        asked.append(label)
        if runner == "pisa-build":
            raise bench_lexical.PeerUnavailable("no pisa here")
        r = int(label.rsplit(" of ", 1)[0][-1]) - 1
        return {"build": seconds[runner][r], "build_peak": 100.0 + r, "size": {}}

    builds = [("busca bm25", "busca alone", "busca-build", {"methods": "bm25"}),
              ("tantivy", "tantivy build", "tantivy-build", {}),
              ("PISA", "PISA build", "pisa-build", {})]
    out = bench_lexical._run_builds(step, builds, 3)
    assert [a.split(",")[0] for a in asked] == ["busca alone", "tantivy build", "PISA build",
                                                "busca alone", "tantivy build",
                                                "busca alone", "tantivy build"]
    assert out["busca bm25"]["build"] == 2.5 and out["busca bm25"]["round_build"] == [3.0, 2.0, 2.5]
    assert out["tantivy"]["build"] == 4.2 and out["tantivy"]["build_peak"] == 102.0
    assert out["PISA"] == {"config": "not measured: no pisa here"}
