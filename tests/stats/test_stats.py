"""Statistics with known truth: bootstrap CIs over tutorials, paired tests + Holm, Bradley–Terry."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikihowagent.stats.paired import Paired, bootstrap_mean_ci, group_sums, holm, paired_compare
from wikihowagent.stats.ranking import Outcome, bradley_terry, fit_bt, win_rate


def _sums(pairs):
    """group_sums of [(tutorial, value)]."""
    return group_sums([g for g, _ in pairs], [v for _, v in pairs])


def _clustered(rng, n_tut=20, per=3, mean=3.0, tut_sd=0.5, noise=0.3):
    """[(tutorial, value)]: a tutorial effect shared by its conversations, plus noise."""
    out = []
    for t in range(n_tut):
        eff = rng.normal(0, tut_sd)
        out += [(f"t{t}", mean + eff + rng.normal(0, noise)) for _ in range(per)]
    return out


def test_bootstrap_ci_over_tutorials_covers_the_true_mean_near_the_nominal_rate():
    rng = np.random.default_rng(1)
    hits = 0
    reps = 200
    for k in range(reps):
        lo, hi = bootstrap_mean_ci([_sums(_clustered(rng))], n_boot=400, seed=k)
        hits += lo <= 3.0 <= hi
    assert 0.85 <= hits / reps <= 0.99  # nominal 0.95 (percentile bootstrap, 20 clusters: a little under)


def test_bootstrap_ci_resamples_tutorials_not_conversations():
    """With a strong tutorial effect and many conversations per tutorial, a conversation-level bootstrap
    would be far too narrow; resampling tutorials keeps the width of the tutorial spread."""
    rng = np.random.default_rng(2)
    vals = _clustered(rng, n_tut=10, per=30, tut_sd=1.0, noise=0.05)
    lo, hi = bootstrap_mean_ci([_sums(vals)], n_boot=2000)
    clo, chi = bootstrap_mean_ci([_sums([(f"c{i}", v) for i, (_, v) in enumerate(vals)])], n_boot=2000)
    assert hi - lo > 4 * (chi - clo)  # sqrt(30 conversations per tutorial) = 5.5x narrower per conversation
    assert bootstrap_mean_ci([_sums(vals)], n_boot=0) == (pytest.approx(math.nan, nan_ok=True),) * 2


def test_bootstrap_ci_of_several_runs_is_around_the_mean_of_run_means():
    a = _sums([(f"t{i}", 1.0 + 0.01 * i) for i in range(10)])
    b = _sums([(f"t{i}", 3.0 + 0.01 * i) for i in range(10)])
    lo, hi = bootstrap_mean_ci([a, b], n_boot=500)
    assert lo < 2.045 < hi and hi - lo < 0.1


def _runs(rng, n_tut=15, per=2, shift=0.0, seed_noise=0.3):
    """Two runs on the same tutorials: same truth, independent noise (a seed-only difference), + shift."""
    base = {f"t{t}": 3 + rng.normal(0, 0.5) for t in range(n_tut)}
    a = {t: np.mean([m + rng.normal(0, seed_noise) for _ in range(per)]) + shift for t, m in base.items()}
    b = {t: np.mean([m + rng.normal(0, seed_noise) for _ in range(per)]) for t, m in base.items()}
    return a, b


def test_seed_only_difference_gives_no_arrow_at_the_nominal_rate():
    rng = np.random.default_rng(3)
    arrows = 0
    tables = 60
    for _ in range(tables):
        results = [paired_compare(*_runs(rng), n_boot=0) for _ in range(8)]  # 8 metrics in one table
        holm(results)
        arrows += any(r.arrow() != "≈" for r in results)
    assert arrows / tables <= 0.1  # family-wise error of Holm at 0.05


def test_a_shifted_copy_gets_the_arrow_with_p_and_effect_size():
    rng = np.random.default_rng(4)
    a, b = _runs(rng, n_tut=20)
    shifted = {t: v + 0.2 for t, v in b.items()}
    results = [paired_compare(shifted, b, n_boot=1000)] + [paired_compare(a, b, n_boot=1000) for _ in range(7)]
    holm(results)
    r = results[0]
    assert r.arrow() == "↑" and r.n == 20
    assert r.diff == pytest.approx(0.2) and r.ci_low == pytest.approx(0.2) and r.ci_high == pytest.approx(0.2)
    assert r.p < 1e-4 and r.p_holm < 0.05
    down = paired_compare(b, shifted)
    holm([down])
    assert down.arrow() == "↓"


def test_identical_runs_and_missing_pairs():
    same = {f"t{i}": 3.0 + i for i in range(5)}
    r = paired_compare(same, dict(same))
    holm([r])
    assert r.p == 1.0 and r.arrow() == "≈" and r.diff == 0
    none = paired_compare({"x": 1.0}, {"y": 2.0})
    assert none.n == 0 and none.arrow() == "–"
    one = paired_compare({"x": 1.0}, {"x": 2.0})
    holm([one])
    assert one.n == 1 and math.isnan(one.p) and one.arrow() == "≈"


def test_holm_matches_the_step_down_definition():
    rs = [Paired(5, 1, 0, 0, p) for p in (0.01, 0.04, 0.03, 0.5)]
    holm(rs)
    # sorted: 0.01*4=0.04, 0.03*3=0.09, 0.04*2=0.08 -> monotone 0.09, 0.5*1 -> 0.5
    assert [r.p_holm for r in rs] == pytest.approx([0.04, 0.09, 0.09, 0.5])


def _simulate_bt(theta, n_tut, per_pair, rng, tie=0.0):
    outcomes = []
    k = len(theta)
    for t in range(n_tut):
        for i in range(k):
            for j in range(i + 1, k):
                p = 1 / (1 + math.exp(theta[j] - theta[i]))
                for _ in range(per_pair):
                    if rng.random() < tie:
                        s = 0.5
                    else:
                        s = 1.0 if rng.random() < p else 0.0
                    outcomes.append(Outcome(f"t{t}", i, j, s))
    return outcomes


def test_bradley_terry_recovers_known_strengths_with_covering_cis():
    truth = np.array([1.0, 0.0, -0.4, -0.6])
    truth = truth - truth.mean()
    rng = np.random.default_rng(5)
    res = bradley_terry(4, _simulate_bt(truth, 60, 3, rng), n_boot=300, seed=1)
    assert [s.rank for s in res] == [1, 2, 3, 4]
    for s, t in zip(res, truth, strict=True):
        assert abs(s.theta - t) < 0.25
        assert s.ci_low <= t <= s.ci_high


def test_bradley_terry_ties_are_half_wins_and_equal_items_come_out_equal():
    rng = np.random.default_rng(6)
    res = bradley_terry(3, _simulate_bt([0.0, 0.0, 0.0], 40, 2, rng, tie=0.5), n_boot=200)
    for s in res:
        assert abs(s.theta) < 0.25 and s.ci_low < 0 < s.ci_high


def test_choix_fit_agrees_with_a_direct_scipy_maximum_likelihood():
    from scipy.optimize import minimize

    rng = np.random.default_rng(7)
    outs = _simulate_bt([0.8, 0.1, -0.9], 30, 2, rng)
    wins = np.zeros((3, 3))
    for o in outs:
        wins[o.a, o.b] += o.score
        wins[o.b, o.a] += 1 - o.score

    def nll(th):
        d = th[:, None] - th[None, :]
        return -(wins * -np.logaddexp(0, -d)).sum()

    ref = minimize(nll, np.zeros(3)).x
    ref -= ref.mean()
    assert fit_bt(wins, alpha=1e-9) == pytest.approx(ref, abs=1e-3)


def test_all_ties_give_equal_strengths_and_a_shared_rank():
    outs = [Outcome(f"t{t}", i, j, 0.5) for t in range(4) for i in range(3) for j in range(i + 1, 3)]
    res = bradley_terry(3, outs, n_boot=50)
    assert [s.rank for s in res] == [1, 1, 1] and all(abs(s.theta) < 1e-9 for s in res)


def test_an_item_that_never_loses_stays_finite_and_first():
    outs = [Outcome(f"t{t}", 0, 1, 1.0) for t in range(5)] + [Outcome(f"t{t}", 1, 2, 1.0) for t in range(5)]
    res = bradley_terry(3, outs, n_boot=50)
    assert all(math.isfinite(s.theta) for s in res) and [s.rank for s in res] == [1, 2, 3]


def test_win_rate_counts_both_directions_and_ties():
    outs = [Outcome("t1", 0, 1, 1.0), Outcome("t2", 1, 0, 1.0), Outcome("t3", 0, 1, 0.5), Outcome("t4", 0, 2, 1.0)]
    w = win_rate(0, 1, outs, n_boot=200)
    assert (w.n, w.wins, w.ties, w.losses) == (3, 1, 1, 1) and w.rate == pytest.approx(0.5)
    assert w.ci_low <= 0.5 <= w.ci_high
    assert win_rate(1, 2, outs).n == 0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", "conversation:x"]),
            st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, width=64)),
        ),
        max_size=30,
    )
)
def test_group_sums_adds_each_groups_numbers_in_row_order(pairs):
    """The sums and counts, and the groups' order, of a plain loop over the rows."""
    expected: dict[str, tuple[float, int]] = {}
    for g, v in pairs:
        if v is not None and v == v:
            s, n = expected.get(g, (0.0, 0))
            expected[g] = (s + v, n + 1)
    got = _sums(pairs)
    assert list(got) == list(expected)
    for g, (s, n) in expected.items():
        assert got[g][1] == n and (got[g][0] == s or (math.isnan(s) and math.isnan(got[g][0])))


@pytest.mark.parametrize("n_runs, per", [(1, 1), (1, 3), (3, 1), (8, 1), (5, 3)])
def test_mean_of_run_means_ci_is_the_plain_gather_of_each_resample(n_runs, per):
    """The CI is that of each resample's run sums gathered as `sums[:, idx].sum(axis=2)` (the same resamples;
    sums taken as one matrix product of the resamples' counts, so equal up to floating-point rounding)."""
    from wikihowagent.stats.bootstrap import percentile_ci, resamples

    rng = np.random.default_rng(n_runs * 10 + per)
    runs = []
    for _ in range(n_runs):
        runs.append(
            {
                f"t{g}": (float(rng.random() * per * 5), int(rng.integers(1, per + 1)))
                for g in range(300)
                if rng.random() < 0.9
            }
        )
    groups = sorted({g for r in runs for g in r})
    sums = np.array([[r.get(g, (0.0, 0))[0] for g in groups] for r in runs])
    counts = np.array([[r.get(g, (0.0, 0))[1] for g in groups] for r in runs], dtype=float)
    stat = []
    for idx in resamples(np.random.default_rng(7), len(groups), 900, n_runs):
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums[:, idx].sum(axis=2) / counts[:, idx].sum(axis=2)
        stat.append(np.nanmean(means, axis=0))
    want = percentile_ci(np.concatenate(stat), 1 - 0.95)
    assert bootstrap_mean_ci(runs, n_boot=900, seed=7) == pytest.approx(want, rel=1e-12, abs=1e-12)
