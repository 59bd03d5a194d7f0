"""The judge-check's unit of accuracy: does the original beat its perturbed copy (`win`), with a bootstrap CI;
the mean accuracy over cells of several judging modes with a shared (paired) bootstrap; the variant names of
the originals. Shared by the judge's check (core.py) and the post-test's (posttest_check.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from wikihowagent.stats import bootstrap as stats_bootstrap

ORIGINAL, ORIGINAL_2 = "original", "original-2"  # the original, judged twice (rubric order reversed, seed + 1)
BOOTSTRAP = 2000


def win(orig: float, pert: float) -> float:
    """1 if the original scores higher, 0.5 for a tie, 0 if the perturbed copy scores higher."""
    if abs(orig - pert) <= 1e-9:
        return 0.5
    return 1.0 if orig > pert else 0.0


def paired_wins(
    pairs: Iterable[tuple[float | None, float | None]],
) -> tuple[list[float], list[float], list[float], int]:
    """(original, perturbed) score pairs -> (wins, original scores, perturbed scores, pairs with a missing side)."""
    wins: list[float] = []
    orig: list[float] = []
    pert: list[float] = []
    failed = 0
    for o, q in pairs:
        if o is None or q is None:
            failed += 1
            continue
        wins.append(win(o, q))
        orig.append(o)
        pert.append(q)
    return wins, orig, pert, failed


def bootstrap_ci(values: list[float], n_boot: int = BOOTSTRAP, seed: int = 0) -> tuple[float, float]:
    """The 95 % percentile bootstrap CI of the mean of `values` (conversations resampled with replacement)."""
    import numpy as np

    arr = np.asarray(values, dtype=float)
    return stats_bootstrap.bootstrap_ci(lambda idx: arr[idx].mean(axis=1), len(arr), n_boot, seed)


def mean_accuracy_samples(
    modes: dict[str, list[dict[str, float]]], n_boot: int = BOOTSTRAP, seed: int = 0
) -> tuple[dict[str, float], dict[str, Any]]:
    """The mean accuracy over cells of several judging modes on the same conversations, and its bootstrap.

    `modes`: {mode: [one {conversation id: win} per cell]}. -> ({mode: mean over cells of the cell's mean
    win}, {mode: array of that mean in each of `n_boot` resamples}). Every mode is resampled with the same
    conversations (a resample draws conversations with replacement, as `bootstrap_ci`), so the difference
    of two modes' samples is their paired difference's bootstrap."""
    import numpy as np

    convs = sorted({c for cells in modes.values() for cell in cells for c in cell})
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(convs), [1 / len(convs)] * len(convs), size=n_boot) if convs else np.zeros((n_boot, 0))
    means: dict[str, float] = {}
    samples: dict[str, Any] = {}
    for mode, cells in modes.items():
        if not cells:
            means[mode], samples[mode] = math.nan, np.full(n_boot, np.nan)
            continue
        v = np.array([[cell.get(c, np.nan) for c in convs] for cell in cells], dtype=float)  # cells x conversations
        have = ~np.isnan(v)
        with np.errstate(invalid="ignore", divide="ignore"):
            point = np.nansum(v, axis=1) / have.sum(axis=1)
            boot = (counts @ np.nan_to_num(v).T) / (counts @ have.T)  # resamples x cells
        means[mode] = float(np.nanmean(point)) if np.any(~np.isnan(point)) else math.nan
        samples[mode] = np.array([np.nanmean(row) if np.any(~np.isnan(row)) else np.nan for row in boot])
    return means, samples
