"""Bootstrap CIs that resample tutorials, and paired comparisons of two runs by tutorial.

Conversations of one tutorial are not independent draws (the tutorial's difficulty is shared), so every
CI here resamples *tutorials* with replacement (a cluster bootstrap) and recomputes the statistic. Two
runs that taught the same tutorials are compared on the per-tutorial means (paired data): Wilcoxon's
signed-rank test (`scipy.stats.wilcoxon`), Holm's step-down correction across the metrics of a table
(`statsmodels.stats.multitest.multipletests`), and the effect size = the mean paired difference with a
bootstrap CI over the shared tutorials.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from .bootstrap import bootstrap_ci

ALPHA = 0.05
BOOTSTRAP = 1000  # default resamples (`--bootstrap N`)
MAX_BOOTSTRAP = 100_000  # the most `--bootstrap N` takes (`cli_options.bootstrap_option`)
LEVEL = 0.95


def _finite(x: float | None) -> TypeGuard[float]:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def group_sums(groups: Sequence[str], values: Sequence[float | None]) -> dict[str, tuple[float, int]]:
    """Each row's group and value -> {group: (sum, count)} over the values that are numbers (None and NaN
    left out), the groups in the order they first have one; each sum added in row order from 0.0."""
    import numpy as np
    import pandas as pd

    vals = np.array([math.nan if v is None else v for v in values], dtype=float)
    ok = ~np.isnan(vals)
    codes, names = pd.factorize(np.asarray(groups, dtype=object)[ok], sort=False)
    sums = np.zeros(len(names))
    with np.errstate(over="ignore", invalid="ignore"):  # as Python's floats: inf, and inf - inf = nan
        np.add.at(sums, codes, vals[ok])  # unbuffered, in row order: the sums a Python loop would add
    counts = np.bincount(codes, minlength=len(names))
    return dict(zip(names.tolist(), zip(sums.tolist(), counts.tolist(), strict=True), strict=True))


def bootstrap_mean_ci(
    runs: Sequence[Mapping[str, tuple[float, int]]], n_boot: int = BOOTSTRAP, seed: int = 0, level: float = LEVEL
) -> tuple[float, float]:
    """CI of the mean over conversations (one run), or of the mean of the run means (several runs),
    resampling the tutorials (the union of the runs' tutorials) with replacement.

    `runs`: per run {tutorial: (sum of the metric over its conversations, count)}. (nan, nan) when there
    is nothing to resample or `n_boot` is 0."""
    import numpy as np

    groups = sorted({g for r in runs for g in r})
    if not groups or n_boot <= 0:
        return math.nan, math.nan
    cells = np.array([[r.get(g, (0.0, 0)) for g in groups] for r in runs], dtype=float)  # runs x groups x 2
    sums, counts = cells[..., 0], cells[..., 1]
    ones = bool((counts == 1).all())  # one conversation per tutorial and run (the paper's design): n per resample
    sums_t, counts_t = np.ascontiguousarray(sums.T), np.ascontiguousarray(counts.T)  # tutorials x runs

    def total(a: Any, idx: Any) -> Any:
        """runs x resamples: each run's sum over the chunk's resamples, or (one run) as `sums[:, idx].sum(axis=2)`
        (pairwise); several runs' sums added draw by draw, as numpy adds that strided axis, with long loops."""
        if a.shape[1] == 1:
            return a[:, 0].take(idx).sum(axis=1)[None]
        return a.take(idx.T, axis=0).sum(axis=0).T  # draws x resamples x runs, added along the draws

    def mean_of_means(idx: Any) -> Any:
        with np.errstate(invalid="ignore", divide="ignore"):
            n = float(idx.shape[1]) if ones else total(counts_t, idx)
            means = total(sums_t, idx) / n
            return np.nanmean(means, axis=0) if len(runs) > 1 else means[0]

    return bootstrap_ci(mean_of_means, len(groups), n_boot, seed, alpha=1 - level, width=len(runs))


@dataclass
class Paired:
    """Run A against run B on one metric, paired by tutorial."""

    n: int  # shared tutorials with a value in both runs
    diff: float  # mean over tutorials of (A - B)
    ci_low: float
    ci_high: float
    p: float  # Wilcoxon signed-rank, two-sided; 1.0 when every difference is 0; nan when n < 2
    p_holm: float = math.nan

    def arrow(self, alpha: float = ALPHA) -> str:
        """↑/↓ when the Holm-corrected p is below `alpha`, else ≈ ("–" when there is nothing to compare)."""
        if self.n == 0:
            return "–"
        if _finite(self.p_holm) and self.p_holm < alpha and self.diff != 0:
            return "↑" if self.diff > 0 else "↓"
        return "≈"


def paired_compare(
    a: Mapping[str, float], b: Mapping[str, float], n_boot: int = BOOTSTRAP, seed: int = 0, level: float = LEVEL
) -> Paired:
    """`a`, `b`: {tutorial: the run's mean over that tutorial's conversations}."""
    import numpy as np
    from scipy.stats import wilcoxon

    both = [g for g in a if g in b]
    av = np.array([a[g] for g in both], dtype=float)  # None -> nan
    bv = np.array([b[g] for g in both], dtype=float)
    ok = ~(np.isnan(av) | np.isnan(bv))
    order = sorted(np.flatnonzero(ok).tolist(), key=both.__getitem__)  # the shared tutorials, by name
    if not order:
        return Paired(0, math.nan, math.nan, math.nan, math.nan)
    d = av[order] - bv[order]
    diff = float(d.mean())
    lo = hi = math.nan
    if n_boot > 0:
        lo, hi = bootstrap_ci(lambda idx: d[idx].mean(axis=1), len(d), n_boot, seed, alpha=1 - level)
    if len(d) < 2:
        p = math.nan
    elif np.allclose(d, 0.0, atol=1e-12):
        p = 1.0
    else:
        p = float(wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)
    return Paired(len(order), diff, lo, hi, p)


def holm(results: Sequence[Paired]) -> None:
    """Holm's step-down correction across `results` (one table's metrics), in place; tests without a
    p-value (n < 2) are left out of the family and keep p_holm = nan."""
    from statsmodels.stats.multitest import multipletests

    tested = [r for r in results if _finite(r.p)]
    if not tested:
        return
    _, corrected, _, _ = multipletests([r.p for r in tested], alpha=ALPHA, method="holm")
    for r, q in zip(tested, corrected, strict=True):
        r.p_holm = float(q)
