"""PNG charts of an Evaluation (optional extra `plot`: matplotlib): recall@k per method with
its intervals, and per method the best-hit scores of answerable vs unanswerable questions
with the calibrated floor marked."""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import BuscaError
from .floors import Calibration
from .runs import folder_for
from .summary import Evaluation


class PlotUnavailable(BuscaError):
    """matplotlib is not installed."""


def write_plots(ev: Evaluation, folder: str | Path) -> list[Path]:
    """Write the charts into `folder` (made if missing, in a folder that exists: else
    FileNotFoundError); returns their paths."""
    plt = _pyplot()
    folder = folder_for(folder)
    folder.mkdir(exist_ok=True)
    paths = [_recall_chart(plt, ev, folder / "recall_at_k.png")]
    for system, cal in ev.floors.items():
        if isinstance(cal, Calibration):
            paths.append(_score_chart(plt, system, cal, folder / f"scores_{_safe(system)}.png"))
    return paths


def require_matplotlib() -> None:
    """PlotUnavailable now, before any work, if charts cannot be drawn."""
    _pyplot()


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable("--plot needs matplotlib: pip install 'busca[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def score_rows(cal: Calibration) -> list[tuple[str, list[float]]]:
    """The scores chart's two rows: each one's legend and the best-hit scores it plots. A
    question that got no hit at all has no score to plot (refused at any floor): its row's
    count says so, as the report counts it."""
    rows = []
    for label, scores in (("answerable", cal.answerable_scores),
                          ("unanswerable", cal.unanswerable_scores)):
        xs = [s for s in scores if s is not None]
        none = len(scores) - len(xs)
        rows.append((f"{label} ({len(scores)}" + (f", {none} with no hit" if none else "")
                     + ")", xs))
    return rows


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", name)


def _recall_chart(plt, ev: Evaluation, path: Path) -> Path:
    recalls = [m for m in ev.metrics if m.kind == "recall"]
    ks = [m.k for m in recalls]
    fig, ax = plt.subplots(figsize=(6, 4))
    for n, (system, est) in enumerate(ev.summary.items()):
        means = [est[m.name].mean for m in recalls]
        low = [est[m.name].mean - est[m.name].low for m in recalls]
        high = [est[m.name].high - est[m.name].mean for m in recalls]
        dodge = [k + (n - (len(ev.summary) - 1) / 2) * 0.08 for k in ks]
        ax.errorbar(dodge, means, yerr=[low, high], marker="o", capsize=3, label=system)
    ax.set(xlabel="k", ylabel="recall@k", ylim=(0, 1.02), xticks=ks,
           title=f"recall@k on {len(ev.golden.answerable)} answerable questions (95% CI)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _score_chart(plt, system: str, cal: Calibration, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 3))
    for row, (label, xs) in enumerate(score_rows(cal)):
        ax.scatter(xs, [row + (i % 7 - 3) * 0.04 for i in range(len(xs))], alpha=0.6,
                   label=label)
    ax.axvline(cal.floor, color="black", linestyle="--", label=f"floor {cal.floor:.3f}")
    ax.set(yticks=[0, 1], yticklabels=["answerable", "unanswerable"], xlabel="best hit score",
           title=f"{system}: best-hit scores")
    ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
