"""Applying a judge calibration (`align --calibrate` fits it, `evaluate --calibration` applies it): the one
`predict` both stages use, and the ridge mapping's features. Fitting and the out-of-fold comparison live in
`wikihowagent.alignment.calibration`; this module sits below evaluation and alignment so that `evaluate` never
reaches up into `align`."""

from __future__ import annotations

import numpy as np

from wikihowagent.records import RubricCalibration

LEVELS = np.arange(1.0, 6.0)  # the rubric scale 1..5, the support of the judge's p(1..5)


def ridge_features(expected: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """conversations x (p1..p5, expected score, spread); each distribution renormalised to sum 1."""
    p = np.asarray(dist, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):  # a missing distribution (NaN row) stays NaN
        p = p / p.sum(axis=1, keepdims=True)
        mean = p @ LEVELS
        spread = np.sqrt(np.clip((p * (LEVELS[None, :] - mean[:, None]) ** 2).sum(axis=1), 0.0, None))
    return np.column_stack([p, np.asarray(expected, dtype=float), spread])


def predict(cal: RubricCalibration, expected: np.ndarray, dist: np.ndarray | None = None) -> np.ndarray:
    """Calibrated scores (1-5); NaN where the judge's output is missing (or, for ridge, its distribution)."""
    expected = np.asarray(expected, dtype=float)
    if cal.method == "isotonic":
        out = np.interp(expected, cal.x, cal.y)  # = IsotonicRegression.predict with out_of_bounds="clip"
        return np.where(np.isnan(expected), np.nan, out)
    if dist is None:
        return np.full(expected.shape, np.nan)
    X = ridge_features(expected, dist)
    out = np.clip(X @ np.asarray(cal.coef) + cal.intercept, 1.0, 5.0)
    return np.where(np.isnan(X).any(axis=1), np.nan, out)
