"""The report's figures (matplotlib, PNG): radar charts of the metric means per model (the paper's
Figs. 3-4) and per-metric domain bars (Fig. 5). The Table-style bar charts and the run x domain heatmap
are `wikihowagent.scores.summary.write_figures`'s, reused as they are."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def radar(
    means: dict[str, dict[str, float]], metrics: list[str], path: Path, title: str, rmax: float, rmin: float = 0.0
) -> Path | None:
    """Small multiples: one radar per model (`means[model][metric]`), all on the same scale."""
    import numpy as np

    models = [m for m in means if any(not math.isnan(means[m].get(k, math.nan)) for k in metrics)]
    if not models or len(metrics) < 3:
        return None
    plt = _plt()
    cols = min(4, len(models))
    rows = -(-len(models) // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.4 * cols, 3.4 * rows + 0.4), subplot_kw={"polar": True}, squeeze=False
    )
    angles = np.linspace(0, 2 * np.pi, len(metrics), endpoint=False).tolist()
    for ax, model in zip(axes.flat, models, strict=False):
        vals = [means[model].get(k, math.nan) for k in metrics]
        vals = [rmin if math.isnan(v) else v for v in vals]
        ax.plot(angles + angles[:1], vals + vals[:1], linewidth=1.5)
        ax.fill(angles + angles[:1], vals + vals[:1], alpha=0.25)
        ax.set_xticks(angles)
        ax.set_xticklabels(metrics, fontsize=7)
        ax.set_ylim(rmin, rmax)
        ax.tick_params(axis="y", labelsize=6)
        ax.set_title(model, fontsize=8, pad=14)
    for ax in list(axes.flat)[len(models) :]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def domain_bars(
    values: dict[str, dict[str, dict[str, float]]], metrics: list[str], path: Path, ylabel: str
) -> Path | None:
    """One panel per metric: bars per domain, one series per model (`values[metric][model][domain]`)."""
    metrics = [m for m in metrics if values.get(m)]
    if not metrics:
        return None
    plt = _plt()
    domains = sorted({d for m in metrics for per in values[m].values() for d in per})
    models = sorted({mod for m in metrics for mod in values[m]})
    cols = min(2, len(metrics))
    rows = -(-len(metrics) // cols)
    width_in = max(6.0, 0.35 * len(domains) * max(1, min(len(models), 4)) + 2)
    fig, axes = plt.subplots(rows, cols, figsize=(min(18.0, width_in) * cols / 1.6, 2.8 * rows + 0.8), squeeze=False)
    w = 0.8 / max(1, len(models))
    for ax, metric in zip(axes.flat, metrics, strict=False):
        for i, model in enumerate(models):
            per = values[metric].get(model, {})
            xs = [j + (i - (len(models) - 1) / 2) * w for j in range(len(domains))]
            ax.bar(xs, [per.get(d, math.nan) for d in domains], w, label=model)
        ax.set_title(metric, fontsize=9)
        ax.set_xticks(range(len(domains)))
        ax.set_xticklabels(domains, rotation=35, ha="right", fontsize=6)
        ax.set_ylabel(ylabel, fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(metrics) :]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(models)), fontsize=7)
    fig.tight_layout(rect=(0, 0.06 if len(models) <= 4 else 0.1, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
