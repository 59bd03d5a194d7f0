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
MAX_BOOTSTRAP = 100_000  # the most `--bootstrap N` takes (`stats.bootstrap_option`)
LEVEL = 0.95


def _finite(x: float | None) -> TypeGuard[float]:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def group_sums(values: Sequence[tuple[str, float | None]]) -> dict[str, tuple[float, int]]:
    """[(tutorial, value)] -> {tutorial: (sum, count)} over the values that are numbers."""
    out: dict[str, tuple[float, int]] = {}
    for g, v in values:
        if v is not None and v == v:  # `_finite`, inline: this loop runs over every row of every table
            s, n = out.get(g, (0.0, 0))
            out[g] = (s + float(v), n + 1)
    return out


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
    sums = np.array([[r.get(g, (0.0, 0))[0] for g in groups] for r in runs], dtype=float)
    counts = np.array([[r.get(g, (0.0, 0))[1] for g in groups] for r in runs], dtype=float)
    ones = bool((counts == 1).all())  # one conversation per tutorial and run (the paper's design): n per resample

    def mean_of_means(idx: Any) -> Any:
        with np.errstate(invalid="ignore", divide="ignore"):
            n = float(idx.shape[1]) if ones else counts[:, idx].sum(axis=2)
            means = sums[:, idx].sum(axis=2) / n  # runs x resamples of this chunk
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

    shared = sorted(g for g in a if g in b and _finite(a[g]) and _finite(b[g]))
    if not shared:
        return Paired(0, math.nan, math.nan, math.nan, math.nan)
    d = np.array([a[g] - b[g] for g in shared], dtype=float)
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
    return Paired(len(shared), diff, lo, hi, p)


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
