"""search.eval: score the search methods on labelled questions (golden sets, BEIR qrels).

Names load on first use (busca/lazy.py).
"""

from ...lazy import face

EXPORTS = {
    "align": ".runs",
    "Calibration": ".floors",
    "chunk_table": ".judge",
    "default_metrics": ".metrics",
    "DEPTH": ".judge",
    "evaluate_chunkers": ".harness",
    "evaluate_index": ".harness",
    "Evaluation": ".summary",
    "FloorError": ".floors",
    "floors_to_store": ".floors",
    "Golden": ".golden",
    "GoldenError": ".golden",
    "Harness": ".harness",
    "judge": ".judge",
    "KEEP": ".floors",
    "KEY": ".metrics",
    "KS": ".metrics",
    "load_golden": ".golden",
    "SPLIT": ".golden",
    "load_run": ".runs",
    "MetricError": ".metrics",
    "NoFloorToStore": ".floors",
    "NothingRelevant": ".harness",
    "parse_ks": ".metrics",
    "parse_metric": ".metrics",
    "plots": ".plots:",
    "PlotUnavailable": ".plots",
    "Question": ".golden",
    "report": ".report:",
    "require_matplotlib": ".plots",
    "run_pairs": ".runs",
    "RunError": ".runs",
    "runs": ".runs:",
    "save_run": ".runs",
    "scope": ".scope:",
    "store_floors": ".floors",
    "summarize": ".summary",
    "tune_fusion": ".tuning",
    "tuning": ".tuning:",
    "write_plots": ".plots",
}
__all__ = sorted(EXPORTS)
face(__name__)
