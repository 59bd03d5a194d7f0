"""scripts/bench_posttest.py's statistics, with known truth."""

from __future__ import annotations

import numpy as np
from helpers import load_script


def bench():
    return load_script("bench_posttest")


def test_cluster_ci_covers_the_true_mean_of_clustered_data():
    """10 tutorials x 7 conversations with a tutorial effect (what the paper's study looks like): the CI that
    resamples tutorials covers the true mean about 95 % of the time; one that ignores the clusters would not."""
    b = bench()
    rng = np.random.default_rng(0)
    clusters = [f"t{k}" for k in range(10) for _ in range(7)]
    hits, naive_hits = 0, 0
    for sim in range(300):
        effect = rng.normal(0, 0.2, 10)  # between tutorials
        values = [0.1 + effect[k] + rng.normal(0, 0.1) for k in range(10) for _ in range(7)]
        lo, hi = b.cluster_ci(values, clusters, seed=sim, boot=400)
        hits += lo <= 0.1 <= hi
        nlo, nhi = b.boot_ci(values, seed=sim)  # conversations as if independent
        naive_hits += nlo <= 0.1 <= nhi
    assert 0.85 <= hits / 300 <= 0.99
    assert naive_hits / 300 < 0.7  # far too narrow for clustered data
    assert np.isnan(b.cluster_ci([0.1, 0.2], ["t0", "t0"])[0])  # one tutorial: no CI
