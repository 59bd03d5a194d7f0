"""Out-of-fold predictions by tutorial (wikihowagent/stats/folds.py): folds that keep a tutorial out of its own
fit, a closed-form case, a simulation with known truth, and what each caller does with too few tutorials."""

from __future__ import annotations

import numpy as np
import pytest

from wikihowagent.stats.folds import TooFewGroups, group_folds, out_of_fold


def test_each_group_is_tested_once_and_never_in_its_own_training_fold():
    groups = [f"t{i % 7}" for i in range(40)]
    folds = group_folds(groups, 5)
    assert len(folds) == 5  # min(5, 7 groups)
    tested = np.concatenate([test for _, test in folds])
    assert sorted(tested.tolist()) == list(range(40))
    for train, test in folds:
        assert not {groups[i] for i in train} & {groups[i] for i in test}
    assert len(group_folds(groups[:9], 5)) == 5 and len(group_folds(["a", "b", "a"], 5)) == 2
    assert group_folds(["a"] * 6) == []


def test_out_of_fold_mean_is_the_mean_of_the_other_tutorials():
    """Closed form: predicting with the training mean gives each item the mean of the items of the other
    folds — with 3 tutorials (3 folds), the mean of the two other tutorials' items."""
    groups = ["a"] * 2 + ["b"] * 3 + ["c"] * 5
    y = np.array([1.0, 1.0, 2.0, 2.0, 2.0, 4.0, 4.0, 4.0, 4.0, 4.0])
    pred = out_of_fold(lambda train, test: np.full(len(test), y[train].mean()), groups, on_too_few="raise")
    assert pred[:2] == pytest.approx([(3 * 2 + 5 * 4) / 8] * 2)
    assert pred[2:5] == pytest.approx([(2 * 1 + 5 * 4) / 7] * 3)
    assert pred[5:] == pytest.approx([(2 * 1 + 3 * 2) / 5] * 5)


def test_out_of_fold_least_squares_recovers_a_line_and_not_a_tutorial_effect():
    rng = np.random.default_rng(2)
    groups = np.repeat([f"t{i}" for i in range(12)], 6)
    x = rng.normal(size=72)
    y = 2.0 * x + rng.normal(0, 0.3, 72)
    fit = lambda tr, te: np.polyval(np.polyfit(x[tr], y[tr], 1), x[te])  # noqa: E731
    pred = out_of_fold(fit, groups, on_too_few="raise")
    assert np.corrcoef(pred, y)[0, 1] > 0.95
    # a pure tutorial effect (y constant within a tutorial, unrelated to x): nothing carries to a new tutorial
    u = np.repeat(rng.normal(size=12), 6)
    pred = out_of_fold(lambda tr, te: np.full(len(te), u[tr].mean()), groups, on_too_few="raise")
    assert np.corrcoef(pred, u)[0, 1] < 0  # leaving a tutorial out moves the training mean away from it


def test_too_few_tutorials_nan_or_raise_as_the_caller_asks():
    never = lambda tr, te: pytest.fail("no fold to fit")  # noqa: E731
    assert np.isnan(out_of_fold(never, ["a"] * 4, on_too_few="nan")).all()
    with pytest.raises(TooFewGroups):
        out_of_fold(never, ["a"] * 4, on_too_few="raise")


def test_the_callers_keep_their_behaviour_with_one_tutorial():
    from wikihowagent.alignment import calibration, checklist_fit
    from wikihowagent.stats import people_estimate

    one = np.array(["t"] * 8)
    x = np.linspace(1, 5, 8)
    with pytest.raises(calibration.CalibrationError, match="one tutorial"):
        calibration.out_of_fold("isotonic", x, None, x, one)
    with pytest.raises(ValueError):  # the caller says "one tutorial only" before it gets here
        checklist_fit.out_of_fold(x[:, None], x, one, 1.0)
    assert np.isnan(people_estimate.out_of_fold(x[:, None], x, list(one))).all()
