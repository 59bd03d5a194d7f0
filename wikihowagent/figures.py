"""Figures more than one stage draws: an annotated heatmap (judge-check's sensitivity, compare's win rates)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def annotated_heatmap(
    grid: Any,
    xlabels: list[str],
    ylabels: list[str],
    path: Path,
    *,
    title: str,
    colorbar: str,
    figsize: tuple[float, float],
    xrotation: int = 30,
    tick_size: float | None = None,
    cell_size: float = 8,
) -> Path:
    """A 0..1 red-yellow-green heatmap of `grid` (rows = ylabels), each known cell written in it (NaN = blank)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=figsize)
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn")
    ax.set_xticks(range(len(xlabels)), xlabels, rotation=xrotation, ha="right", fontsize=tick_size)
    ax.set_yticks(range(len(ylabels)), ylabels, fontsize=tick_size)
    for i in range(len(ylabels)):
        for j in range(len(xlabels)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=cell_size)
    fig.colorbar(im, ax=ax, label=colorbar)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
