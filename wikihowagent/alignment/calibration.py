"""Calibrating the judge on the human-rated conversations (`align --calibrate`), out of fold.

Per rubric, a mapping from the judge's output for a conversation to the mean human rating of it:

- `isotonic`: isotonic regression (`sklearn.isotonic.IsotonicRegression`, increasing, clipped to 1-5) on the
  judge's expected score (the weighted judge's probability-weighted mean of p(1..5); a json judge's integer).
  It keeps the judge's order and has no shape to overfit; it works on integer scores too;
- `ridge`: ridge regression (`RidgeCV` on standardised features, the penalty chosen by leave-one-out
  within the training set) on p(1)..p(5), the expected score and the spread of the distribution: it can use
  the distribution's shape. It needs the stored distributions (`--judge-scoring weighted` or `sampled`).

Every figure reported is out of fold: `GroupKFold` by tutorial (k = min(5, tutorials)), so each
conversation is predicted by a mapping fitted on other tutorials only (a tutorial in train and test at
once would leak its difficulty). Raw and calibrated predictions are compared with the human mean by
Pearson r, Spearman rho and MAE, with bootstrap 95 % percentile CIs over conversations (the same resamples
for every predictor, so the CI of a difference is paired). The mapping written to `calibration.json` is
fitted on all pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wikihowagent.errors import WikihowagentError
from wikihowagent.records import RIDGE_FEATURES, RubricCalibration
from wikihowagent.stats import folds
from wikihowagent.stats.bootstrap import percentile_ci, resamples
from wikihowagent.stats.calibration import predict, ridge_features

METHODS = ("isotonic", "ridge")
MIN_PAIRS = 20  # fewer paired conversations: no calibration (the out-of-fold figures would be noise)
K_FOLDS = 5
RIDGE_ALPHAS = np.logspace(-3, 3, 13)
STATS = ("r", "rho", "mae")


class CalibrationError(WikihowagentError, ValueError):
    """Calibration is not possible on these data; the message says why and what is possible instead."""


def fit(
    method: str, expected: np.ndarray, dist: np.ndarray | None, y: np.ndarray, groups: np.ndarray | None = None
) -> RubricCalibration:
    """The mapping fitted on these pairs (`dist`: conversations x 5, needed for ridge)."""
    expected = np.asarray(expected, dtype=float)
    y = np.asarray(y, dtype=float)
    n_tut = len(np.unique(groups)) if groups is not None else len(y)
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        iso = IsotonicRegression(y_min=1.0, y_max=5.0, increasing=True, out_of_bounds="clip").fit(expected, y)
        return RubricCalibration(
            method="isotonic",
            n=len(y),
            tutorials=n_tut,
            x=[float(v) for v in iso.X_thresholds_],
            y=[float(v) for v in iso.y_thresholds_],
        )
    if method == "ridge":
        if dist is None:
            raise CalibrationError("ridge needs the judge's p(1..5) distributions")
        from sklearn.linear_model import RidgeCV

        X = ridge_features(expected, dist)
        mu, sd = X.mean(axis=0), X.std(axis=0)
        sd = np.where(sd > 1e-12, sd, 1.0)
        model = RidgeCV(alphas=RIDGE_ALPHAS).fit((X - mu) / sd, y)
        coef = model.coef_ / sd  # back on the raw features
        intercept = float(model.intercept_ - (coef * mu).sum())
        return RubricCalibration(
            method="ridge",
            n=len(y),
            tutorials=n_tut,
            features=list(RIDGE_FEATURES),
            coef=[float(c) for c in coef],
            intercept=intercept,
            alpha=float(model.alpha_),
        )
    raise ValueError(f"unknown calibration method {method!r} (valid: {', '.join(METHODS)})")


def out_of_fold(
    method: str, expected: np.ndarray, dist: np.ndarray | None, y: np.ndarray, groups: np.ndarray, k: int = K_FOLDS
) -> np.ndarray:
    """Each conversation's calibrated score from a mapping fitted without its tutorial (GroupKFold); fewer
    than 2 tutorials: CalibrationError."""

    def fit_predict(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        cal = fit(method, expected[train], None if dist is None else dist[train], y[train])
        return predict(cal, expected[test], None if dist is None else dist[test])

    try:
        return folds.out_of_fold(fit_predict, np.asarray(groups), n_splits=k, on_too_few="raise")
    except folds.TooFewGroups:
        raise CalibrationError(
            f"all {len(y)} paired conversations belong to one tutorial; out-of-fold "
            "calibration needs at least 2 tutorials"
        ) from None


# --------------------------------------------------------------------------- agreement with the humans


def _rowwise_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    den = np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 1e-12, (a * b).sum(axis=-1) / np.where(den > 1e-12, den, 1.0), np.nan)


def _stats(y: np.ndarray, p: np.ndarray) -> dict[str, np.ndarray]:
    """r, rho, MAE along the last axis (one value per row of a resample matrix)."""
    from scipy.stats import rankdata

    return {
        "r": _rowwise_pearson(y, p),
        "rho": _rowwise_pearson(rankdata(y, axis=-1), rankdata(p, axis=-1)),
        "mae": np.abs(y - p).mean(axis=-1),
    }


@dataclass
class Estimate:
    value: float
    ci_low: float = float("nan")
    ci_high: float = float("nan")


@dataclass
class Comparison:
    """Raw and calibrated predictions against the human mean, over the same conversations."""

    n: int
    predictors: dict[str, dict[str, Estimate]] = field(default_factory=dict)  # name -> stat -> estimate
    deltas: dict[str, dict[str, Estimate]] = field(default_factory=dict)  # name -> stat -> (name - raw)


def _ci(values: np.ndarray) -> tuple[float, float]:
    return percentile_ci(values, min_count=0.9 * values.size)  # mostly undefined (constant resamples): no honest CI


def compare(
    y: np.ndarray, predictors: dict[str, np.ndarray], *, n_boot: int = 2000, seed: int = 0, baseline: str = "raw"
) -> Comparison:
    """Each predictor's r, rho and MAE against `y` with bootstrap CIs (conversations resampled; the same
    resamples for all predictors), and each one's difference from `baseline` with its paired CI."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    out = Comparison(n=n)

    arrays = {name: np.asarray(p, dtype=float) for name, p in predictors.items()}
    parts: dict[str, dict[str, list[np.ndarray]]] = {name: {s: [] for s in STATS} for name in arrays}
    bootstrapped = n_boot > 0 and n > 1
    if bootstrapped:  # the same resamples for every predictor; chunked: memory does not grow with n_boot
        for idx in resamples(np.random.default_rng(seed), n, n_boot, width=4 * len(arrays)):
            for name, p in arrays.items():
                for s, v in _stats(y[idx], p[idx]).items():
                    parts[name][s].append(v)
    boot = {name: {s: np.concatenate(v) for s, v in st.items()} if bootstrapped else {} for name, st in parts.items()}
    for name, p in arrays.items():
        point = _stats(y, p)
        out.predictors[name] = {
            s: Estimate(float(point[s]), *(_ci(boot[name][s]) if bootstrapped else (float("nan"), float("nan"))))
            for s in STATS
        }
    if baseline in predictors:
        for name in predictors:
            if name == baseline:
                continue
            out.deltas[name] = {}
            for s in STATS:
                d = out.predictors[name][s].value - out.predictors[baseline][s].value
                ci = _ci(boot[name][s] - boot[baseline][s]) if bootstrapped else (float("nan"), float("nan"))
                out.deltas[name][s] = Estimate(float(d), *ci)
    return out
