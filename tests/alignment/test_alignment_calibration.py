"""The statistics of `align --calibrate` and `align --ppi` against a simulated study with known truth
(tests/fixtures/alignment/simulate.py: 8 runs x 300 conversations, humans on a random 60 per run)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
from simulate import N_RUNS, simulate, true_run_means, truth  # noqa: E402

from wikihowagent.alignment import calibration, ppi  # noqa: E402


@pytest.fixture(scope="module")
def study():
    return simulate(seed=1)


def labeled_pairs(s):
    m = s.labeled
    return s.expected[m], s.dist[m], s.human[m], s.tutorial[m], s.truth[m]


@pytest.mark.parametrize("method", calibration.METHODS)
def test_calibration_recovers_the_function(study, method):
    expected, dist, human, groups, true = labeled_pairs(study)
    oof = calibration.out_of_fold(method, expected, dist, human, groups)
    ceiling = np.corrcoef(true, human)[0, 1]  # no predictor of these noisy ratings does better than the truth
    r = np.corrcoef(oof, human)[0, 1]
    assert ceiling - 0.05 < r <= ceiling + 0.02, (r, ceiling)
    assert np.abs(oof - true).mean() < 0.15  # close to the function itself, out of fold
    raw_mae, cal_mae = np.abs(expected - human).mean(), np.abs(oof - human).mean()
    assert cal_mae < raw_mae - 0.1  # the judge's scale is off; the calibration fixes it
    # the mapping fitted on all pairs reproduces the function over the judge's range
    cal = calibration.fit(method, expected, dist, human, groups)
    grid = np.linspace(np.percentile(expected, 5), np.percentile(expected, 95), 50)
    if method == "isotonic":
        assert np.abs(calibration.predict(cal, grid) - truth(grid)).max() < 0.45
        assert cal.tutorials == len(np.unique(groups)) and cal.n == len(human)
    assert np.abs(calibration.predict(cal, study.expected, study.dist) - study.truth).mean() < 0.15


@pytest.mark.parametrize("method", calibration.METHODS)
def test_random_labels_give_nothing_out_of_fold(study, method):
    """No leakage: labels unrelated to the judge give an out-of-fold r near 0 (in-sample it would not be)."""
    expected, dist, _, groups, _ = labeled_pairs(study)
    noise = np.random.default_rng(7).uniform(1, 5, len(expected))
    oof = calibration.out_of_fold(method, expected, dist, noise, groups)
    assert abs(np.corrcoef(oof, noise)[0, 1]) < 0.12
    in_sample = calibration.predict(calibration.fit(method, expected, dist, noise), expected, dist)
    if method == "isotonic":  # fitted and judged on the same labels it "finds" a relation
        assert np.corrcoef(in_sample, noise)[0, 1] > np.corrcoef(oof, noise)[0, 1] + 0.1


def test_folds_keep_a_tutorial_out_of_its_own_fit(monkeypatch):
    """GroupKFold by tutorial: no fit sees a conversation of a tutorial it then predicts."""
    tut = np.repeat(np.arange(12), 5)
    expected = tut + np.linspace(0, 0.5, len(tut))  # the tutorial can be read back from the judge's score
    y = np.random.default_rng(0).uniform(1, 5, len(tut))
    seen = []
    real_fit, real_predict = calibration.fit, calibration.predict

    def spy_fit(method, x, dist, yy, groups=None):
        seen.append(set(np.floor(x).astype(int)))
        return real_fit(method, x, dist, yy, groups)

    def spy_predict(cal, x, dist=None):
        assert not set(np.floor(x).astype(int)) & seen[-1]
        return real_predict(cal, x, dist)

    monkeypatch.setattr(calibration, "fit", spy_fit)
    monkeypatch.setattr(calibration, "predict", spy_predict)
    oof = calibration.out_of_fold("isotonic", expected, None, y, tut)
    assert len(seen) == 5 and np.isfinite(oof).all()


def test_isotonic_file_predicts_as_sklearn(study):
    from sklearn.isotonic import IsotonicRegression

    expected, _, human, _, _ = labeled_pairs(study)
    cal = calibration.fit("isotonic", expected, None, human)
    iso = IsotonicRegression(y_min=1, y_max=5, out_of_bounds="clip").fit(expected, human)
    x = np.concatenate([study.expected, [0.0, 6.0]])
    np.testing.assert_allclose(calibration.predict(cal, x), iso.predict(x), atol=1e-9)


def test_ridge_needs_distributions(study):
    expected, _, human, groups, _ = labeled_pairs(study)
    with pytest.raises(calibration.CalibrationError, match="p\\(1..5\\)"):
        calibration.fit("ridge", expected, None, human)
    with pytest.raises(calibration.CalibrationError, match="2 tutorials"):
        calibration.out_of_fold("isotonic", expected, None, human, np.zeros(len(human)))


def test_compare_cis_cover_and_are_paired(study):
    expected, dist, human, groups, true = labeled_pairs(study)
    oof = calibration.out_of_fold("isotonic", expected, dist, human, groups)
    cmp = calibration.compare(human, {"raw": expected, "isotonic": oof}, n_boot=500, seed=0)
    assert cmp.n == len(human)
    raw, cal = cmp.predictors["raw"], cmp.predictors["isotonic"]
    for est in (*raw.values(), *cal.values()):
        assert est.ci_low <= est.value <= est.ci_high
    np.testing.assert_allclose(raw["r"].value, np.corrcoef(expected, human)[0, 1])
    from scipy.stats import spearmanr

    np.testing.assert_allclose(cal["rho"].value, spearmanr(oof, human).statistic)
    d = cmp.deltas["isotonic"]["mae"]
    assert d.value == pytest.approx(cal["mae"].value - raw["mae"].value)
    assert d.ci_high < 0  # the calibrated MAE is lower, and the paired CI says so


def test_ppi_covers_the_true_mean_and_is_narrower():
    """200 repetitions x 8 runs: the PPI 95 % CI covers each run's true human mean in >= 93 % of the cases
    and is narrower than the human-only CI on the same 60 ratings."""
    truth_means = true_run_means()
    covered, widths, human_covered = [], [], []
    for rep in range(200):
        s = simulate(seed=1000 + rep)
        for r in range(N_RUNS):
            m = s.run == r
            lab, unl = m & s.labeled, m & ~s.labeled
            est = ppi.estimate(s.human[lab], s.expected[lab], s.expected[unl])
            covered.append(est.ppi_low <= truth_means[r] <= est.ppi_high)
            human_covered.append(est.human_low <= truth_means[r] <= est.human_high)
            widths.append(est.width_ratio)
    assert len(covered) == 1600
    assert np.mean(covered) >= 0.93, np.mean(covered)
    assert np.mean(human_covered) >= 0.92  # the classical interval is right too (sanity of the truth)
    assert np.median(widths) < 0.8 and np.max(widths) <= 1.0 + 1e-9


def test_ppi_reports_the_judge_bias_and_ignores_a_useless_judge():
    s = simulate(seed=5)
    m = s.run == 0
    lab, unl = m & s.labeled, m & ~s.labeled
    est = ppi.estimate(s.human[lab], s.expected[lab], s.expected[unl])
    assert est.n_labeled == 60 and est.n_unlabeled == 240
    assert est.judge_mean == pytest.approx(s.expected[m].mean())
    assert est.judge_bias == pytest.approx(est.judge_mean - est.ppi_mean)
    assert est.judge_bias > 0.3  # this judge is too generous for the weaker models
    junk = np.random.default_rng(0).uniform(1, 5, m.sum())
    useless = ppi.estimate(s.human[lab], junk[: lab.sum()], junk[lab.sum() :])
    assert useless.lam < 0.3 and useless.width_ratio > 0.9  # PPI++ falls back towards the human-only mean
    # a judge with one score for everything (the paper's judges on some models): lambda 0, the human-only mean
    const = ppi.estimate(s.human[lab], np.full(lab.sum(), 4.5), np.full(unl.sum(), 4.5))
    assert const.lam == 0 and const.ppi_mean == pytest.approx(s.human[lab].mean())
    assert (const.ppi_low, const.ppi_high) == pytest.approx((const.human_low, const.human_high))
    with pytest.raises(ValueError, match="unrated"):
        ppi.estimate(s.human[lab], s.expected[lab], np.array([]))
