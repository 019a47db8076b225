"""search.eval: score the search methods on labelled questions (golden sets, BEIR qrels)."""

from . import plots, report, runs, tuning
from .floors import Calibration, FloorError, NoFloorToStore, floors_to_store, store_floors
from .golden import Golden, GoldenError, Question, load_golden
from .harness import Harness, NothingRelevant, evaluate_chunkers, evaluate_index
from .judge import DEPTH, chunk_table, judge
from .metrics import KS, MetricError, default_metrics, parse_ks, parse_metric
from .plots import PlotUnavailable, require_matplotlib, write_plots
from .runs import RunError, align, load_run, run_pairs, save_run
from .summary import KEY, Evaluation, summarize
from .tuning import tune_fusion

__all__ = [
    "Calibration", "DEPTH", "chunk_table", "judge", "Evaluation", "FloorError", "Golden", "GoldenError", "Harness",
    "KEY", "KS", "MetricError", "NoFloorToStore", "NothingRelevant", "PlotUnavailable",
    "Question", "RunError", "align", "default_metrics", "evaluate_chunkers", "evaluate_index",
    "floors_to_store", "load_golden", "load_run", "parse_ks", "parse_metric", "plots", "report",
    "require_matplotlib", "run_pairs", "runs", "save_run", "store_floors", "summarize", "tune_fusion",
    "tuning", "write_plots",
]
