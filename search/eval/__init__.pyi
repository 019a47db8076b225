"""Types of the lazy face busca.search.eval (busca/lazy.py loads the names on first use)."""

from .runs import align as align
from .floors import Calibration as Calibration
from .judge import chunk_table as chunk_table
from .metrics import default_metrics as default_metrics
from .judge import DEPTH as DEPTH
from .harness import evaluate_chunkers as evaluate_chunkers
from .harness import evaluate_index as evaluate_index
from .summary import Evaluation as Evaluation
from .floors import FloorError as FloorError
from .floors import floors_to_store as floors_to_store
from .golden import Golden as Golden
from .golden import GoldenError as GoldenError
from .harness import Harness as Harness
from .judge import judge as judge
from .floors import KEEP as KEEP
from .metrics import KEY as KEY
from .metrics import KS as KS
from .golden import load_golden as load_golden
from .runs import load_run as load_run
from .metrics import MetricError as MetricError
from .floors import NoFloorToStore as NoFloorToStore
from .harness import NothingRelevant as NothingRelevant
from .metrics import parse_ks as parse_ks
from .metrics import parse_metric as parse_metric
from . import plots as plots
from .plots import PlotUnavailable as PlotUnavailable
from .golden import Question as Question
from . import report as report
from .plots import require_matplotlib as require_matplotlib
from .runs import run_pairs as run_pairs
from .runs import RunError as RunError
from . import runs as runs
from .runs import save_run as save_run
from . import scope as scope
from .golden import SPLIT as SPLIT
from .floors import store_floors as store_floors
from .summary import summarize as summarize
from .tuning import tune_fusion as tune_fusion
from . import tuning as tuning
from .plots import write_plots as write_plots

EXPORTS: dict[str, str]
__all__ = [
    "Calibration",
    "DEPTH",
    "Evaluation",
    "FloorError",
    "Golden",
    "GoldenError",
    "Harness",
    "KEEP",
    "KEY",
    "KS",
    "MetricError",
    "NoFloorToStore",
    "NothingRelevant",
    "PlotUnavailable",
    "Question",
    "RunError",
    "SPLIT",
    "align",
    "chunk_table",
    "default_metrics",
    "evaluate_chunkers",
    "evaluate_index",
    "floors_to_store",
    "judge",
    "load_golden",
    "load_run",
    "parse_ks",
    "parse_metric",
    "plots",
    "report",
    "require_matplotlib",
    "run_pairs",
    "runs",
    "save_run",
    "scope",
    "store_floors",
    "summarize",
    "tune_fusion",
    "tuning",
    "write_plots",
]
