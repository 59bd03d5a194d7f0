"""A people-calibrated estimate: people's rating predicted from a few metrics, non-negative and shrunk.

`fit(X, y, shrinkage)`: the metrics (columns of X) are standardised, then weighted by a non-negative ridge —
least squares plus `shrinkage` times the sum of squared weights, every weight >= 0 (scipy's NNLS on the
system augmented with sqrt(shrinkage) * I) — so a metric can only count in the direction it is meant to (a
metric where lower is better is negated before), and 70 conversations do not carry a dozen free weights.
`choose_shrinkage` picks the penalty by grouped cross-validation (folds of whole tutorials) within the data it
is given; `out_of_fold` gives each item's prediction from a model fitted without its tutorial's fold (the
penalty chosen again inside every training fold), the honest figures of the estimate.
`predict(X, fitted)` applies it; `apply` does the same from stored (mean, sd, weight) triples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .folds import FOLDS, group_folds
from .folds import out_of_fold as out_of_fold_by_group

SHRINKAGE_GRID = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0)  # in units of "conversations' worth" of squared weight


@dataclass(frozen=True)
class Fitted:
    intercept: float
    mean: tuple[float, ...]
    sd: tuple[float, ...]
    weight: tuple[float, ...]
    shrinkage: float


def fit(X: Any, y: Any, shrinkage: float) -> Fitted:
    """Non-negative ridge of y on the standardised columns of X (items x metrics; finite values)."""
    import numpy as np
    from scipy.optimize import nnls

    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    sd = np.where(sd > 1e-12, sd, 1.0)
    Z = (X - mean) / sd
    yc = y - y.mean()
    p = X.shape[1]
    A = np.vstack([Z, math.sqrt(max(shrinkage, 0.0)) * np.eye(p)])
    b = np.concatenate([yc, np.zeros(p)])
    w, _ = nnls(A, b)
    return Fitted(float(y.mean()), tuple(map(float, mean)), tuple(map(float, sd)), tuple(map(float, w)), shrinkage)


def predict(X: Any, f: Fitted) -> Any:
    return apply(X, f.intercept, f.mean, f.sd, f.weight)


def apply(X: Any, intercept: float, mean: Sequence[float], sd: Sequence[float], weight: Sequence[float]) -> Any:
    """intercept + sum of weight * (x - mean) / sd per row (NaN where a metric with a weight is missing)."""
    import numpy as np

    X = np.asarray(X, dtype=float)
    Z = (X - np.asarray(mean, dtype=float)) / np.asarray(sd, dtype=float)
    w = np.asarray(weight, dtype=float)
    used = w > 0
    out = intercept + (np.where(np.isnan(Z), 0.0, Z)[:, used] @ w[used] if used.any() else np.zeros(len(X)))
    missing = np.isnan(Z[:, used]).any(axis=1) if used.any() else np.zeros(len(X), dtype=bool)
    return np.where(missing, np.nan, out)


def choose_shrinkage(X: Any, y: Any, groups: Sequence[str], grid: Sequence[float] = SHRINKAGE_GRID) -> float:
    """The penalty of `grid` with the least squared error out of fold (grouped folds); the largest of the grid
    (the most shrinkage) when there are too few groups to tell."""
    import numpy as np

    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    splits = group_folds(groups, FOLDS)
    if not splits:
        return float(max(grid))
    best, best_err = float(max(grid)), math.inf
    for lam in grid:
        err = 0.0
        for train, test in splits:
            f = fit(X[train], y[train], lam * len(train) / 10.0)
            err += float(((predict(X[test], f) - y[test]) ** 2).sum())
        if err < best_err - 1e-12:
            best, best_err = float(lam), err
    return best


def fit_chosen(X: Any, y: Any, groups: Sequence[str], grid: Sequence[float] = SHRINKAGE_GRID) -> Fitted:
    """`fit` with the penalty `choose_shrinkage` picks on this data (scaled by its number of items)."""
    lam = choose_shrinkage(X, y, groups, grid)
    return fit(X, y, lam * len(y) / 10.0)


def out_of_fold(X: Any, y: Any, groups: Sequence[str], grid: Sequence[float] = SHRINKAGE_GRID) -> Any:
    """Each item's prediction by a model fitted (penalty chosen inside) on the other folds' tutorials; NaN for
    every item when there are fewer than 2 groups."""
    import numpy as np

    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)

    def fit_predict(train: Any, test: Any) -> Any:
        return predict(X[test], fit_chosen(X[train], y[train], [groups[i] for i in train], grid))

    return out_of_fold_by_group(fit_predict, groups, n_splits=FOLDS, on_too_few="nan")
