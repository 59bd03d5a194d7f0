"""Pooled vs within-tutorial correlation (wikihowagent/stats/correlation.py): simulations with known truth."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wikihowagent.stats.correlation import grouped_r, within_r


def simulate(k=40, m=8, confound=1.0, effect=0.0, seed=0):
    """k tutorials x m conversations: a tutorial effect u shifts both x and y (confound); within a tutorial
    y = effect * x + noise."""
    rng = np.random.default_rng(seed)
    u = np.repeat(rng.normal(size=k), m)
    xw = rng.normal(size=k * m)
    x = confound * u + xw
    y = confound * u + effect * xw + rng.normal(size=k * m)
    return x.tolist(), y.tolist(), [f"t{i // m}" for i in range(k * m)]


def test_a_tutorial_level_confound_gives_pooled_r_but_no_within_r():
    x, y, g = simulate(confound=1.5, effect=0.0)
    res = grouped_r(x, y, g, n_boot=300)
    assert res.pooled > 0.5 and res.pooled_ci[0] > 0.3  # pooled: a strong, "significant" r
    assert abs(res.within) < 0.1 and res.within_ci[0] < 0 < res.within_ci[1]  # within: nothing
    assert res.between > 0.8
    assert abs(res.mixed_slope) < 0.1 and res.mixed_ci[0] < 0 < res.mixed_ci[1]
    assert res.n == len(x) and res.groups == 40


def test_a_within_tutorial_effect_is_recovered():
    x, y, g = simulate(confound=0.0, effect=1.0, seed=1)  # true within r = 1 / sqrt(2)
    res = grouped_r(x, y, g, n_boot=300)
    assert res.within == pytest.approx(1 / math.sqrt(2), abs=0.07)
    assert res.within_ci[0] > 0.5


def test_centring_by_hand_and_missing_values():
    x = [1.0, 2.0, 3.0, 10.0, 11.0, 12.0, None]
    y = [3.0, 2.0, 1.0, 13.0, 12.0, 11.0, 5.0]
    g = ["a", "a", "a", "b", "b", "b", "b"]
    assert within_r(x[:6], y[:6], g[:6]) == pytest.approx(-1.0)
    res = grouped_r(x, y, g, n_boot=50, mixed=False)
    assert res.n == 6 and res.within == pytest.approx(-1.0) and res.pooled > 0.8
    assert math.isnan(res.mixed_slope)


def test_weighted_pearson_is_the_r_of_the_data_repeated_by_its_weights():
    from wikihowagent.stats.correlation import weighted_pearson

    rng = np.random.default_rng(4)
    x, y = rng.normal(size=9), rng.normal(size=9)
    W = rng.integers(0, 4, size=(6, 9)).astype(float)
    W[:, :2] = 1.0  # at least two distinct items in every row
    want = [np.corrcoef(np.repeat(x, w.astype(int)), np.repeat(y, w.astype(int)))[0, 1] for w in W]
    assert weighted_pearson(W, x, y) == pytest.approx(want, abs=1e-12)
    # per-row values (resamples x items), as align's mid-ranks are
    X = x + np.arange(6)[:, None]  # a shift per row does not change r
    assert weighted_pearson(W, X, y) == pytest.approx(want, abs=1e-12)
    constant = np.zeros((1, 9))
    constant[0, 3] = 5.0  # one item only: its x is constant
    assert np.isnan(weighted_pearson(constant, x, y)).all()
