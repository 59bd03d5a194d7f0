"""scripts/bench_alignment.py's choice of the default judge prompt: the paired Δr and the rule, on simulations
with a known truth."""

from __future__ import annotations

import math

import numpy as np
from helpers import load_script


def bench():
    return load_script("bench_alignment")


def judged(human: np.ndarray, judge: np.ndarray) -> dict[str, tuple[float, float]]:
    return {f"c{i}": (float(h), float(j)) for i, (h, j) in enumerate(zip(human, judge, strict=False))}


def test_delta_r_finds_a_better_judge_and_not_a_copy():
    b = bench()
    rng = np.random.default_rng(1)
    human = rng.normal(3, 1, 60)
    noise = judged(human, rng.normal(0, 1, 60))  # r ~ 0
    good = judged(human, human + rng.normal(0, 0.5, 60))  # r ~ 0.9
    d, lo, hi, n = b.delta_r(noise, good)
    assert n == 60 and lo > 0.4 and d > 0.6
    d, lo, hi, n = b.delta_r(noise, dict(noise))  # the same scores: no difference, no width
    assert d == 0 and lo == 0 and hi == 0
    # Another pure-noise judge: the CI covers 0 (no evidence), whatever its point estimate.
    d, lo, hi, n = b.delta_r(noise, judged(human, rng.normal(0, 1, 60)))
    assert lo < 0 < hi


def test_delta_r_needs_shared_conversations():
    b = bench()
    a = {"x": (1.0, 2.0), "y": (2.0, 3.0)}
    d, lo, hi, n = b.delta_r(a, {"z": (1.0, 1.0)})
    assert n == 0 and math.isnan(d)


def test_rule_changes_the_default_only_on_evidence():
    b = bench()
    acc = {
        "base": (0.70, 0.60, 0.80, 4),
        "better": (0.68, 0.5, 0.8, 4),
        "blind": (0.40, 0.3, 0.5, 4),
        "noisy": (0.75, 0.6, 0.9, 4),
    }
    deltas = {
        "base": (0.0, 0.0, 0.0, 30),
        "better": (0.3, 0.1, 0.5, 30),
        "blind": (0.5, 0.3, 0.7, 30),
        "noisy": (0.4, -0.1, 0.8, 30),
    }
    out = b.decision(list(acc), deltas, acc, "base")
    assert "`better`" in out and "becomes the default" in out  # "blind" fails judge-check, "noisy" has no evidence
    deltas["better"] = (0.3, -0.05, 0.5, 30)
    out = b.decision(list(acc), deltas, acc, "base")
    assert "the default stays" in out and "`noisy`" in out and "`blind`" not in out
    assert "not applicable" in b.decision(list(acc), deltas, {**acc, "base": (math.nan, math.nan, math.nan, 0)}, "base")
