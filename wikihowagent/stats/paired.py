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

from .bootstrap import bootstrap_counts_ci, drawn_sums

ALPHA = 0.05
BOOTSTRAP = 1000  # default resamples (`--bootstrap N`)
MAX_BOOTSTRAP = 100_000  # the most `--bootstrap N` takes (`cli_options.bootstrap_option`)
LEVEL = 0.95


def _finite(x: float | None) -> TypeGuard[float]:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


class Groups:
    """Rows' groups, factorized once (`codes`: each row's group number; `names`: the groups in the order they
    first appear), for the sums of several columns over the same rows."""

    def __init__(self, groups: Sequence[str]) -> None:
        import numpy as np
        import pandas as pd

        self.codes, self.names = pd.factorize(np.asarray(groups, dtype=object), sort=False)

    def sums(self, values: Any) -> dict[str, tuple[float, int]]:
        """Each row's value (None and NaN left out) -> {group: (sum, count)}, the groups in the order they first
        have a number; each sum added in row order from 0.0."""
        import numpy as np

        vals = np.asarray(values, dtype=float)  # None -> nan
        ok = ~np.isnan(vals)
        codes, names = self.codes, self.names
        if not ok.all():
            codes = codes[ok]
            seen, first = np.unique(codes, return_index=True)
            order = seen[np.argsort(first, kind="stable")]  # the groups with a number, by their first one
            renumber = np.zeros(len(names), dtype=np.intp)
            renumber[order] = np.arange(len(order))
            codes, names, vals = renumber[codes], names[order], vals[ok]
        with np.errstate(over="ignore", invalid="ignore"):  # as Python's floats: inf, and inf - inf = nan
            sums = np.bincount(codes, weights=vals, minlength=len(names))  # in row order: a Python loop's sums
        counts = np.bincount(codes, minlength=len(names))
        return dict(zip(names.tolist(), zip(sums.tolist(), counts.tolist(), strict=True), strict=True))


def group_sums(groups: Sequence[str] | Groups, values: Any) -> dict[str, tuple[float, int]]:
    """Each row's group and value -> {group: (sum, count)} over the values that are numbers (None and NaN
    left out), the groups in the order they first have one; each sum added in row order from 0.0."""
    return (groups if isinstance(groups, Groups) else Groups(groups)).sums(values)


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
    k = len(runs)
    columns = np.ascontiguousarray((sums if ones else np.concatenate([sums, counts])).T)  # tutorials x (2) runs

    def mean_of_means(drawn: Any) -> Any:
        """drawn: resamples x tutorials (how many times each is drawn) -> the statistic of each resample."""
        totals = drawn_sums(drawn, columns)  # resamples x (2) runs: each run's sum (and count) over the resample
        with np.errstate(invalid="ignore", divide="ignore"):
            means = totals / len(groups) if ones else totals[:, :k] / totals[:, k:]
            return np.nanmean(means, axis=1) if k > 1 else means[:, 0]

    return bootstrap_counts_ci(mean_of_means, len(groups), n_boot, seed, alpha=1 - level, width=2 * k)


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
        lo, hi = bootstrap_counts_ci(lambda drawn: drawn_sums(drawn, d) / len(d), len(d), n_boot, seed, alpha=1 - level)
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
