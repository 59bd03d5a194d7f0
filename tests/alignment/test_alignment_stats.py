"""Statistics of the alignment study against scipy / krippendorff / sklearn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from wikihowagent.alignment import agreement as S
from wikihowagent.alignment.annotations import average_judges
from wikihowagent.alignment.core import overall_scores
from wikihowagent.alignment.csv_dialect import stars


def _ratings(rng, n, halves=False):
    x = rng.integers(1, 6, n).astype(float)
    y = np.clip(x + rng.integers(-2, 3, n), 1, 5).astype(float)
    if halves:
        x = np.clip(x + rng.integers(0, 2, n) * 0.5, 1, 5)
    return x, y


@pytest.mark.parametrize("seed,n,halves", [(1, 5, False), (2, 12, False), (3, 40, True), (4, 175, True)])
def test_correlations_and_p_values_match_scipy(seed, n, halves):
    x, y = _ratings(np.random.default_rng(seed), n, halves)
    res = S.correlate(x, y, n_boot=0)
    assert res.n == n
    for name, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr), ("kendall", stats.kendalltau)):
        ref = fn(x, y)
        assert res.coefs[name].value == pytest.approx(ref.statistic, abs=1e-12)
        assert res.coefs[name].p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)


def test_table_coefficients_equal_scipy_on_weighted_tables():
    """The vectorised bootstrap computes r/rho/tau-b from count tables; check it on random tables."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        ux = np.sort(rng.choice(np.arange(1, 5.5, 0.5), size=rng.integers(2, 8), replace=False))
        uy = np.arange(1.0, 6.0)
        W = rng.integers(0, 4, size=(1, ux.size, uy.size)).astype(float)
        W[0, 0, 0] += 1
        W[0, -1, -1] += 1
        xi, yi = np.nonzero(W[0])
        reps = W[0][xi, yi].astype(int)
        x, y = np.repeat(ux[xi], reps), np.repeat(uy[yi], reps)
        r, rho, tau = S._table_coefficients(W, ux - x.mean(), uy - y.mean(), x.size)
        assert r[0] == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-10)
        assert rho[0] == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-10)
        assert tau[0] == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-10)


def test_bootstrap_ci_reproducible_and_sensible():
    x, y = _ratings(np.random.default_rng(3), 120, True)
    a = S.correlate(x, y, n_boot=1000, seed=5)
    b = S.correlate(x, y, n_boot=1000, seed=5)
    c = S.correlate(x, y, n_boot=1000, seed=6)
    for name in S.COEFFICIENTS:
        ca, cb, cc = a.coefs[name], b.coefs[name], c.coefs[name]
        assert (ca.ci_low, ca.ci_high) == (cb.ci_low, cb.ci_high)
        assert (ca.ci_low, ca.ci_high) != (cc.ci_low, cc.ci_high)
        assert ca.ci_low < ca.value < ca.ci_high
        assert ca.ci_high - ca.ci_low < 0.5


def test_bootstrap_loop_fallback_agrees_with_table_method(monkeypatch):
    x, y = _ratings(np.random.default_rng(11), 150)
    table = S.correlate(x, y, n_boot=1500, seed=1)
    monkeypatch.setattr(S, "MAX_TABLE_CELLS", 1)
    loop = S.correlate(x, y, n_boot=1500, seed=1)
    for name in S.COEFFICIENTS:
        assert loop.coefs[name].value == table.coefs[name].value
        assert loop.coefs[name].ci_low == pytest.approx(table.coefs[name].ci_low, abs=0.04)
        assert loop.coefs[name].ci_high == pytest.approx(table.coefs[name].ci_high, abs=0.04)


def test_constant_and_too_few_give_nan_with_note():
    res = S.correlate([3, 3, 3, 3], [1, 2, 3, 4], n_boot=100)
    assert all(math.isnan(c.value) for c in res.coefs.values())
    assert "constant" in res.notes[0]
    res = S.correlate([1, 2], [1, 2], n_boot=100)
    assert all(math.isnan(c.value) for c in res.coefs.values())
    assert res.notes == ["fewer than 3 paired values (n=2)"]


def test_bootstrap_constant_resamples_are_dropped_not_fatal():
    # 3 pairs, two of them equal: many resamples are constant
    res = S.correlate([1, 1, 5], [2, 2, 4], n_boot=500, seed=0)
    assert res.coefs["pearson"].value == pytest.approx(1.0)
    assert any("bootstrap resamples" in n for n in res.notes)


def test_stars():
    assert stars(0.009) == "**" and stars(0.01) == "*" and stars(0.049) == "*"
    assert stars(0.05) == "" and stars(float("nan")) == ""


def test_average_judges_ignores_blanks_and_counts():
    nan = np.nan
    H = np.array([[[4, nan, 2], [nan, nan, 5]], [[2, 3, nan], [nan, nan, 4]]])  # 2 judges x 2 conv x 3 metrics
    mean, counts = average_judges(H)
    np.testing.assert_allclose(mean, [[3, 3, 2], [nan, nan, 4.5]])
    np.testing.assert_array_equal(counts, [[2, 1, 1], [0, 0, 2]])


def test_overall_uses_metrics_available_on_both_sides():
    nan = np.nan
    human = np.array([[4, 2, nan], [nan, nan, nan]])
    model = np.array([[5, nan, 3], [4, 4, 4]])
    h, m = overall_scores(human, model)
    assert h[0] == 4 and m[0] == 5  # only metric 0 on both sides
    assert math.isnan(h[1]) and math.isnan(m[1])


def test_describe_quantifies_llm_rating_higher():
    x = np.array([2, 3, 3, 4, 2, 3.0])
    y = np.array([4, 4, 5, 4, 3, 5.0])
    d = S.describe(x, y)
    assert d.n == 6 and d.human_mean == pytest.approx(x.mean()) and d.llm_mean == pytest.approx(y.mean())
    assert d.human_std == pytest.approx(np.std(x, ddof=1))
    assert d.diff_mean == pytest.approx((y - x).mean())
    assert d.llm_higher == pytest.approx(5 / 6)
    assert d.wilcoxon_p == pytest.approx(stats.wilcoxon(y, x).pvalue)


def test_agreement_matches_libraries():
    import krippendorff
    from sklearn.metrics import cohen_kappa_score

    nan = np.nan
    R = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, 5, 4, nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3, nan],
            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan, 4],
        ]
    )
    ag = S.agreement(R, ["a", "b", "c"])
    assert ag.alpha == pytest.approx(krippendorff.alpha(reliability_data=R, level_of_measurement="ordinal"))
    assert ag.n_units == 12  # the last conversation has a single rating: not pairable
    assert len(ag.pairs) == 3
    for p in ag.pairs:
        i, j = "abc".index(p.judge_a), "abc".index(p.judge_b)
        both = ~np.isnan(R[i]) & ~np.isnan(R[j])
        a, b = R[i, both].astype(int), R[j, both].astype(int)
        assert p.n == both.sum()
        assert p.kappa == pytest.approx(cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3, 4, 5]))
        assert p.pearson == pytest.approx(stats.pearsonr(a, b).statistic)
        assert p.pearson_p == pytest.approx(stats.pearsonr(a, b).pvalue)
    assert ag.kappa_mean == pytest.approx(np.mean([p.kappa for p in ag.pairs]))


def test_agreement_half_points_and_degenerate_cases():
    R = np.array([[1, 2.5, 3, 4], [1.5, 2.5, 3, 5]])
    ag = S.agreement(R, ["a", "b"])
    assert math.isfinite(ag.alpha) and math.isfinite(ag.pairs[0].kappa)
    # identical constant ratings: alpha and kappa undefined, with notes, no exception
    ag = S.agreement(np.array([[3, 3, 3.0], [3, 3, 3.0]]), ["a", "b"])
    assert math.isnan(ag.alpha) and math.isnan(ag.pairs[0].kappa) and ag.notes
    # no overlap at all
    ag = S.agreement(np.array([[1, np.nan], [np.nan, 2.0]]), ["a", "b"])
    assert ag.n_units == 0 and math.isnan(ag.alpha) and ag.pairs[0].n == 0


def test_weighted_kappa_equals_sklearn_on_random_labels():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(0)
    for _ in range(25):
        n = int(rng.integers(3, 60))
        a = rng.integers(1, 6, n)
        b = np.clip(a + rng.integers(-2, 3, n), 1, 5)
        assert S.weighted_kappa(a, b, [1, 2, 3, 4, 5]) == pytest.approx(
            cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3, 4, 5]), abs=1e-12
        )


def test_csv_cells_keep_tiny_p_values():
    from wikihowagent.alignment.csv_dialect import fmt

    assert float(fmt(1.234e-300)) == pytest.approx(1.234e-300)
    assert fmt(float("nan")) == "" and fmt(None) == "" and fmt(0.5) == "0.5" and fmt(3) == "3"
