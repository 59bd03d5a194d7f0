"""Figures of the alignment study (matplotlib, Agg backend, PNG).

- `score_distributions`: human vs LLM score distributions per metric as paired box plots with mean markers
  (the paper's Figures 6 and 8);
- `correlation_heatmap`: metric x coefficient (Pearson r, Spearman rho, Kendall tau) with significance
  stars (Figure 7); NaN cells are grey and marked n/a;
- `group_heatmap`: with `--by`, one panel per coefficient, metric x group.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

HUMAN_COLOR = "#4C72B0"
LLM_COLOR = "#DD8452"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _stars(p: float) -> str:
    if p is None or not math.isfinite(p):
        return ""
    return "**" if p < 0.01 else "*" if p < 0.05 else ""


def score_distributions(path: Path, series: list[tuple[str, np.ndarray, np.ndarray]], title: str = "") -> None:
    """series: (metric, human values, LLM values) over the paired conversations."""
    plt = _pyplot()
    k = len(series)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.25 * k + 1.5), 4.6))
    pos_h = np.arange(k) * 3.0
    pos_l = pos_h + 1.0
    hv = [s[1] if s[1].size else np.array([np.nan]) for s in series]
    lv = [s[2] if s[2].size else np.array([np.nan]) for s in series]
    common = dict(
        widths=0.8,
        patch_artist=True,
        showmeans=True,
        manage_ticks=False,
        meanprops=dict(marker="D", markerfacecolor="white", markeredgecolor="black", markersize=4),
        medianprops=dict(color="black"),
        flierprops=dict(marker=".", markersize=3, alpha=0.5),
    )
    bh = ax.boxplot(hv, positions=pos_h, **common)
    bl = ax.boxplot(lv, positions=pos_l, **common)
    for patch in bh["boxes"]:
        patch.set_facecolor(HUMAN_COLOR)
        patch.set_alpha(0.75)
    for patch in bl["boxes"]:
        patch.set_facecolor(LLM_COLOR)
        patch.set_alpha(0.75)
    ax.set_xticks(pos_h + 0.5)
    ax.set_xticklabels([f"{s[0]}\n(n={s[1].size})" for s in series], fontsize=8)
    ax.set_ylim(0.8, 5.2)
    ax.set_yticks([1, 2, 3, 4, 5])
    ax.set_ylabel("score (1-5)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend([bh["boxes"][0], bl["boxes"][0]], ["Human (mean of judges)", "LLM judge"], loc="lower left", fontsize=8)
    ax.set_title(title or "Human vs LLM judge scores per metric (diamond = mean)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _annotated_heatmap(ax, values: np.ndarray, pvals: np.ndarray, rows: list[str], cols: list[str]):
    cmap = _pyplot().get_cmap("RdBu_r").with_extremes(bad="#dddddd")
    im = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(
        cols,
        fontsize=8,
        rotation=30 if max(len(c) for c in cols) > 10 else 0,
        ha="right" if max(len(c) for c in cols) > 10 else "center",
    )
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=8)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = values[i, j]
            text = "n/a" if not math.isfinite(v) else f"{v:.2f}{_stars(pvals[i, j])}"
            color = "white" if math.isfinite(v) and abs(v) > 0.6 else "black"
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)
    return im


def correlation_heatmap(
    path: Path, metrics: list[str], values: np.ndarray, pvals: np.ndarray, coef_labels: list[str], title: str = ""
) -> None:
    """values/pvals: metrics x coefficients."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.6 * len(coef_labels) + 2.2, 0.42 * len(metrics) + 1.6))
    im = _annotated_heatmap(ax, values, pvals, metrics, coef_labels)
    fig.colorbar(im, ax=ax, fraction=0.05)
    ax.set_title(title or "Human-LLM correlation (* p<0.05, ** p<0.01)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def group_heatmap(
    path: Path,
    metrics: list[str],
    groups: list[str],
    values: np.ndarray,
    pvals: np.ndarray,
    coef_labels: list[str],
    by: str,
) -> None:
    """values/pvals: coefficients x metrics x groups."""
    plt = _pyplot()
    width = max(3.0, 0.75 * len(groups) + 1.8)
    fig, axes = plt.subplots(
        1, len(coef_labels), figsize=(width * len(coef_labels), 0.42 * len(metrics) + 2.2), squeeze=False
    )
    for c, ax in enumerate(axes[0]):
        im = _annotated_heatmap(ax, values[c], pvals[c], metrics, groups)
        ax.set_title(coef_labels[c], fontsize=10)
        if c:
            ax.set_yticklabels([])
    fig.colorbar(im, ax=axes[0].tolist(), fraction=0.03)
    fig.suptitle(f"Human-LLM correlation by {by} (* p<0.05, ** p<0.01)", fontsize=10)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def ppi_intervals(path: Path, rows: list, title: str = "") -> None:
    """rows: (metric, ppi.PPIEstimate). Per metric three 95 % intervals: human only (the rated
    conversations), prediction-powered (PPI++), judge only (all conversations)."""
    plt = _pyplot()
    k = len(rows)
    fig, ax = plt.subplots(figsize=(7.0, 0.55 * k + 1.6))
    kinds = (
        ("human only", HUMAN_COLOR, "human_mean", "human_low", "human_high", -0.22),
        ("prediction-powered", "#55A868", "ppi_mean", "ppi_low", "ppi_high", 0.0),
        ("judge only", LLM_COLOR, "judge_mean", "judge_low", "judge_high", 0.22),
    )
    for label, color, mean, lo, hi, off in kinds:
        ys = np.arange(k) + off
        m = np.array([getattr(e, mean) for _, e in rows])
        err = np.array(
            [[getattr(e, mean) - getattr(e, lo) for _, e in rows], [getattr(e, hi) - getattr(e, mean) for _, e in rows]]
        )
        ax.errorbar(m, ys, xerr=err, fmt="o", color=color, capsize=3, markersize=4, label=label)
    ax.set_yticks(np.arange(k))
    ax.set_yticklabels([f"{m} (n={e.n_labeled}, N={e.n_unlabeled})" for m, e in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("mean rating (1-5), 95 % CI")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    ax.set_title(title or "Estimates of the human mean rating", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def calibration_curves(path: Path, panels: list) -> None:
    """panels: (metric, raw judge scores, human means, out-of-fold isotonic predictions, fitted curve (x, y)
    or None). One scatter per metric: human mean against the judge's score, the curve fitted on all pairs."""
    plt = _pyplot()
    cols = min(4, len(panels))
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols, 3.0 * nrows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (metric, raw, human, _oof, curve) in zip(axes.flat, panels, strict=False):
        ax.scatter(raw, human, s=8, alpha=0.5, color=HUMAN_COLOR)
        ax.plot([1, 5], [1, 5], color="grey", lw=0.8, ls=":")
        if curve is not None:
            ax.plot(curve[0], curve[1], color=LLM_COLOR, lw=1.8)
        ax.set_xlim(0.8, 5.2)
        ax.set_ylim(0.8, 5.2)
        ax.set_title(f"{metric} (n={len(human)})", fontsize=9)
        ax.set_xlabel("judge score", fontsize=8)
        ax.set_ylabel("human mean", fontsize=8)
    fig.suptitle("Judge score vs human mean; line: isotonic calibration (dotted: identity)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
