"""The judge-check's unit of accuracy: does the original beat its perturbed copy (`win`), with a bootstrap CI;
the variant names of the originals. Shared by the judge's check (core.py) and the post-test's (posttest_check.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

ORIGINAL, ORIGINAL_2 = "original", "original-2"  # the original, judged twice (rubric order reversed, seed + 1)
BOOTSTRAP = 2000


def win(orig: float, pert: float) -> float:
    """1 if the original scores higher, 0.5 for a tie, 0 if the perturbed copy scores higher."""
    if abs(orig - pert) <= 1e-9:
        return 0.5
    return 1.0 if orig > pert else 0.0


def paired_wins(pairs: Iterable[tuple[float | None, float | None]]) -> tuple[list[float], list[float], list[float], int]:
    """(original, perturbed) score pairs -> (wins, original scores, perturbed scores, pairs with a missing side)."""
    wins: list[float] = []
    orig: list[float] = []
    pert: list[float] = []
    failed = 0
    for o, q in pairs:
        if o is None or q is None:
            failed += 1
            continue
        wins.append(win(o, q))
        orig.append(o)
        pert.append(q)
    return wins, orig, pert, failed


def bootstrap_ci(values: list[float], n_boot: int = BOOTSTRAP, seed: int = 0) -> tuple[float, float]:
    import numpy as np

    if not values:
        return math.nan, math.nan
    arr = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, len(arr), size=(n_boot, len(arr)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)
