"""Head to head against people (wikihowagent/stats/pair_order.py): known truth by construction and simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from wikihowagent.stats.pair_order import clear_pairs, pair_order


def study(tutorials=12, per=5):
    people, groups = [], []
    for t in range(tutorials):
        for k in range(per):  # within a tutorial people rate 0..4: every pair is >= 1 apart
            people.append(float(k))
            groups.append(f"t{t}")
    return np.array(people), groups


def test_perfect_mirror_flat_and_between_tutorial_judges():
    people, groups = study()
    people[4] = 3.2  # t0: its top two are 0.2 apart now: not a clear pair
    judges = {
        "same": people,
        "mirror": -people,
        "flat": np.full(len(people), 3.0),
        "tutorial": np.array([float(g[1:]) for g in groups]),  # knows only which tutorial: ties within one
    }
    res, diff = pair_order(judges, people, groups, n_boot=300, baseline="mirror")
    assert res["same"].pairs == 12 * 10 - 1 and res["same"].groups == 12
    assert (res["same"].accuracy, res["mirror"].accuracy) == (1.0, 0.0)
    assert res["flat"].accuracy == res["tutorial"].accuracy == 0.5 and res["flat"].ties == 119
    assert diff["same"].diff == diff["same"].ci_low == diff["same"].ci_high == 1.0  # the same resamples
    assert "mirror" not in diff


def test_noisy_judge_lands_on_its_expected_share():
    """Judge = people + N(0, 1): a pair k apart is ordered right with P = Phi(k / sqrt 2); over the 10 pairs
    of 0..4 (4 at 1, 3 at 2, 2 at 3, 1 at 4) that is 0.876. Its CI covers that in most of 40 simulated studies."""
    people, groups = study(tutorials=20)
    expected = sum(c * norm.cdf(k / math.sqrt(2)) for k, c in ((1, 4), (2, 3), (3, 2), (4, 1))) / 10
    assert expected == pytest.approx(0.876, abs=0.001)
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(40):
        res, _ = pair_order({"j": people + rng.normal(0, 1, len(people))}, people, groups, n_boot=400, seed=1)
        covered += res["j"].ci_low <= expected <= res["j"].ci_high
    assert covered >= 34  # nominal 95 %: at least 85 % of 40 (a loose bound for a percentile bootstrap)


def test_missing_scores_drop_the_item_for_every_judge_and_no_pair_is_nan():
    people, groups = study(tutorials=2)
    a, b = people.copy(), people.copy()
    b[0] = math.nan  # t0's worst conversation unscored by b: left out for a too (same pairs)
    res, _ = pair_order({"a": a, "b": b}, people, groups, n_boot=50)
    assert res["a"].pairs == res["b"].pairs == 20 - 4
    none, diff = pair_order({"a": [1.0, 2.0]}, [3.0, 3.2], ["t", "t"], baseline="a")
    assert none["a"].pairs == 0 and math.isnan(none["a"].accuracy) and diff == {}
    assert clear_pairs([1.0, 2.0, math.nan], ["t", "t", "t"]) == {"t": [(1, 0)]}
    no_ci, _ = pair_order({"a": a}, people, groups, n_boot=0)  # --bootstrap 0: the share, no CI
    assert no_ci["a"].accuracy == 1.0 and math.isnan(no_ci["a"].ci_low)
    with pytest.raises(ValueError, match="one value per item"):
        pair_order({"a": [1.0]}, [1.0, 2.0], ["t", "t"])
