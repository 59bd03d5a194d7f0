"""The shared percentile bootstrap (wikihowagent/stats/bootstrap.py): closed-form percentiles, coverage on a
simulation with known truth, and the same draws for every caller (judge-check, paired runs, align)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wikihowagent.stats import bootstrap
from wikihowagent.stats.bootstrap import bootstrap_ci, percentile_ci


def test_percentile_ci_is_the_2_5_and_97_5_percentiles_of_the_finite_values():
    values = np.arange(101.0)  # the p-th percentile of 0..100 is p
    assert percentile_ci(values) == (2.5, 97.5)
    assert percentile_ci(np.concatenate([values, [np.nan, np.inf, -np.inf]])) == (2.5, 97.5)
    assert percentile_ci(values, alpha=0.1) == (5.0, 95.0)
    lo, hi = percentile_ci(values, min_count=102)  # 101 finite values: fewer than asked
    assert math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(v) for v in percentile_ci(np.array([np.nan, np.nan])))
    assert all(math.isnan(v) for v in percentile_ci(np.array([])))


def test_bootstrap_ci_of_a_mean_covers_the_true_mean_near_the_nominal_rate():
    rng = np.random.default_rng(11)
    reps, hits = 300, 0
    for k in range(reps):
        x = rng.normal(1.0, 2.0, 40)
        lo, hi = bootstrap_ci(lambda idx, x=x: x[idx].mean(axis=1), len(x), 500, seed=k)
        hits += lo <= 1.0 <= hi
    assert 0.88 <= hits / reps <= 0.99  # nominal 0.95 (the percentile bootstrap runs a little under)


def test_bootstrap_ci_is_the_draws_of_one_rng_call_whatever_the_chunks(monkeypatch):
    x = np.random.default_rng(0).normal(size=37)
    idx = np.random.default_rng(5).integers(0, 37, size=(999, 37))
    expected = tuple(float(v) for v in np.percentile(x[idx].mean(axis=1), [2.5, 97.5]))
    assert bootstrap_ci(lambda i: x[i].mean(axis=1), 37, 999, seed=5) == expected
    monkeypatch.setattr(bootstrap, "CHUNK_ELEMENTS", 100)  # 2 resamples per chunk
    assert bootstrap_ci(lambda i: x[i].mean(axis=1), 37, 999, seed=5) == expected
    monkeypatch.setattr(bootstrap, "CACHE_ELEMENTS", 0)  # drawn chunk by chunk, none kept
    assert bootstrap_ci(lambda i: x[i].mean(axis=1), 37, 999, seed=5) == expected


def test_kept_draws_are_those_of_the_seed_asked_for():
    """The kept resamples serve only the same seed, size and count: another one draws its own."""
    x = np.random.default_rng(0).normal(size=50)
    for seed, n, n_boot in [(1, 50, 300), (2, 50, 300), (2, 40, 300), (2, 40, 301), ([3, 4], 40, 301), (1, 50, 300)]:
        idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
        expected = tuple(float(v) for v in np.percentile(x[:n][idx].mean(axis=1), [2.5, 97.5]))
        assert bootstrap_ci(lambda i, n=n: x[:n][i].mean(axis=1), n, n_boot, seed=seed) == expected


def test_nothing_to_resample_gives_no_ci():
    assert all(math.isnan(v) for v in bootstrap_ci(lambda i: i.mean(axis=1), 0, 100))
    assert all(math.isnan(v) for v in bootstrap_ci(lambda i: i.mean(axis=1), 5, 0))
    assert all(math.isnan(v) for v in bootstrap_ci(lambda i: np.full(len(i), np.nan), 5, 100))


def test_the_callers_ci_is_the_shared_bootstrap_of_their_statistic():
    """judge-check's accuracy CI and the paired runs' difference CI are the shared bootstrap of a mean, with the
    draws of numpy's default_rng(seed) in the same order (the difference's as counts: equal up to rounding)."""
    from wikihowagent.judgecheck.accuracy import bootstrap_ci as accuracy_ci
    from wikihowagent.stats.paired import paired_compare

    wins = [1.0, 0.5, 0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 1.0, 1.0]
    w = np.asarray(wins)
    idx = np.random.default_rng(3).integers(0, len(w), size=(700, len(w)))
    assert accuracy_ci(wins, n_boot=700, seed=3) == tuple(np.percentile(w[idx].mean(axis=1), [2.5, 97.5]))

    a = {f"t{i}": float(i % 4) for i in range(12)}
    b = {f"t{i}": float((i * 7) % 5) for i in range(12)}
    d = np.array([a[g] - b[g] for g in sorted(a)])
    idx = np.random.default_rng(4).integers(0, len(d), size=(800, len(d)))
    want = np.percentile(d[idx].mean(axis=1), [50 * (1 - 0.95), 100 - 50 * (1 - 0.95)])
    got = paired_compare(a, b, n_boot=800, seed=4)
    assert (got.ci_low, got.ci_high) == pytest.approx(tuple(want), rel=1e-12, abs=1e-12)
    assert got.ci_low < got.diff < got.ci_high


def test_align_correlation_cis_need_10_resamples_defined():
    """align's correlation CIs go through `percentile_ci`: at least half the resamples, and 10, defined."""
    from wikihowagent.alignment.agreement import correlate

    res = correlate([1, 2, 3, 4, 5, 1, 2, 3, 4, 5], [1, 2, 2, 4, 5, 2, 2, 3, 5, 4], n_boot=400, seed=1)
    r = res.coefs["pearson"]
    assert r.ci_low < r.value < r.ci_high <= 1.0
    none = correlate([1, 2, 3, 4, 5], [2, 1, 4, 3, 5], n_boot=5, seed=1)  # 5 resamples: fewer than 10
    assert math.isnan(none.coefs["pearson"].ci_low) and math.isfinite(none.coefs["pearson"].value)


def test_counts_are_the_resamples_of_bootstrap_ci_whatever_the_chunks(monkeypatch):
    """`bootstrap_counts_ci` sees the resamples `bootstrap_ci` sees, as counts: kept whole, or counted chunk by
    chunk when they are not kept; a sum over the drawn items is the same either way (up to rounding)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=37)
    seen: list[np.ndarray] = []
    bootstrap_ci(lambda idx: seen.append(idx) or x[idx].sum(axis=1), 37, 300, seed=9)
    want = np.concatenate([bootstrap.multiplicities(idx, 37) for idx in seen])
    assert want.shape == (300, 37) and (want.sum(axis=1) == 37).all()
    assert (want[0] == np.bincount(np.concatenate(seen)[0], minlength=37)).all()

    def counted(drawn: np.ndarray) -> np.ndarray:
        got.append(drawn)
        return bootstrap.drawn_sums(drawn, x)

    got: list[np.ndarray] = []
    kept = bootstrap.bootstrap_counts_ci(counted, 37, 300, seed=9)
    assert len(got) == 1 and (got[0] == want).all()
    monkeypatch.setattr(bootstrap, "CHUNK_ELEMENTS", 100)
    monkeypatch.setattr(bootstrap, "CACHE_ELEMENTS", 0)
    got = []
    chunked = bootstrap.bootstrap_counts_ci(counted, 37, 300, seed=9)
    assert len(got) > 1 and (np.concatenate(got) == want).all()
    assert chunked == pytest.approx(kept, rel=1e-12)
    assert kept == pytest.approx(bootstrap_ci(lambda idx: x[idx].sum(axis=1), 37, 300, seed=9), rel=1e-12)


def test_a_value_that_is_not_finite_counts_only_where_it_is_drawn():
    """As in a gathered sum: a resample that does not draw the inf is finite, one that draws it is inf (a
    matrix product alone would give 0 x inf = nan everywhere)."""
    values = np.array([1.0, np.inf, 2.0, np.nan])
    idx = np.array([[0, 0, 2, 2], [1, 0, 2, 0], [3, 0, 0, 0], [0, 2, 0, 2]])
    drawn = bootstrap.multiplicities(idx, 4)
    want = values[idx].sum(axis=1)
    got = bootstrap.drawn_sums(drawn, values)
    np.testing.assert_array_equal(got, want)
    two = np.stack([values, values * 2], axis=1)
    np.testing.assert_array_equal(bootstrap.drawn_sums(drawn, two), two[idx].sum(axis=1))
