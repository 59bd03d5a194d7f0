"""Pairwise outcomes -> win rates and a Bradley–Terry ranking, with bootstrap CIs over tutorials.

An outcome is one comparison of item `a` with item `b` on one tutorial: score 1 (a better), 0 (b better)
or 0.5 (a tie, counted as half a win each way). Bradley–Terry: P(i beats j) = s_i / (s_i + s_j); the
strengths are fitted by maximum likelihood with `choix.ilsr_pairwise_dense` (a small regulariser `alpha`
keeps an item that never loses finite) and reported as log-strengths θ centred on their mean (θ_i − θ_j =
the log-odds that i beats j). CIs resample tutorials with replacement and refit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .bootstrap import resamples
from .paired import BOOTSTRAP, LEVEL

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

REGULARISER = 0.01


@dataclass(frozen=True)
class Outcome:
    group: str  # the tutorial
    a: int
    b: int
    score: float  # 1 = a better, 0.5 = tie, 0 = b better


def _matrices(n_items: int, outcomes: Sequence[Outcome]) -> tuple[list[str], NDArray[np.float64]]:
    """(groups, array G x n x n): per tutorial, wins[i, j] = how often i beat j (ties half)."""
    import numpy as np

    groups = sorted({o.group for o in outcomes})
    pos = {g: k for k, g in enumerate(groups)}
    mats = np.zeros((len(groups), n_items, n_items))
    for o in outcomes:
        mats[pos[o.group], o.a, o.b] += o.score
        mats[pos[o.group], o.b, o.a] += 1.0 - o.score
    return groups, mats


def fit_bt(wins: ArrayLike, alpha: float = REGULARISER) -> NDArray[np.float64]:
    """Log-strengths (mean 0) from a win matrix (wins[i, j] = i's wins over j)."""
    import choix
    import numpy as np

    params: NDArray[np.float64] = np.asarray(
        choix.ilsr_pairwise_dense(np.asarray(wins, dtype=float), alpha=alpha), dtype=float
    )
    centred: NDArray[np.float64] = params - params.mean()
    return centred


@dataclass
class Strength:
    item: int
    theta: float  # log-strength, mean 0 over the items
    ci_low: float
    ci_high: float
    rank: int  # 1 = strongest


def bradley_terry(
    n_items: int,
    outcomes: Sequence[Outcome],
    n_boot: int = BOOTSTRAP,
    seed: int = 0,
    level: float = LEVEL,
    alpha: float = REGULARISER,
) -> list[Strength]:
    """One Strength per item (in item order). Items without any comparison get nan."""
    import numpy as np

    groups, mats = _matrices(n_items, outcomes)
    if not groups:
        return [Strength(i, math.nan, math.nan, math.nan, 0) for i in range(n_items)]
    total = mats.sum(axis=0)
    seen = (total + total.T).sum(axis=1) > 0
    theta = fit_bt(total, alpha)
    lo = np.full(n_items, np.nan)
    hi = np.full(n_items, np.nan)
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        boots = np.empty((n_boot, n_items))
        for k in range(n_boot):
            idx = rng.integers(0, len(groups), size=len(groups))
            boots[k] = fit_bt(mats[idx].sum(axis=0), alpha)
        lo, hi = np.percentile(boots, [50 * (1 - level), 100 - 50 * (1 - level)], axis=0)
    # 1 = strongest; equal strengths (e.g. every comparison a tie) share a rank
    rank = {
        i: 1 + sum(1 for j in range(n_items) if seen[j] and theta[j] > theta[i] + 1e-9)
        for i in range(n_items)
        if seen[i]
    }
    return [
        Strength(
            i,
            float(theta[i]) if seen[i] else math.nan,
            float(lo[i]) if seen[i] else math.nan,
            float(hi[i]) if seen[i] else math.nan,
            rank.get(i, 0),
        )
        for i in range(n_items)
    ]


@dataclass
class WinRate:
    a: int
    b: int
    n: int  # comparisons
    wins: int  # a better
    ties: int
    losses: int
    rate: float  # (wins + ties / 2) / n
    ci_low: float
    ci_high: float


def win_rate(
    a: int, b: int, outcomes: Sequence[Outcome], n_boot: int = BOOTSTRAP, seed: int = 0, level: float = LEVEL
) -> WinRate:
    """How often `a` beats `b` (ties half), CI resampling tutorials."""
    import numpy as np

    per: dict[str, list[float]] = {}
    for o in outcomes:
        if (o.a, o.b) == (a, b):
            per.setdefault(o.group, []).append(o.score)
        elif (o.a, o.b) == (b, a):
            per.setdefault(o.group, []).append(1.0 - o.score)
    scores = [s for v in per.values() for s in v]
    if not scores:
        return WinRate(a, b, 0, 0, 0, 0, math.nan, math.nan, math.nan)
    lo = hi = math.nan
    if n_boot > 0:
        groups = sorted(per)
        sums = np.array([sum(per[g]) for g in groups])
        counts = np.array([len(per[g]) for g in groups], dtype=float)
        boots = np.concatenate(
            [
                sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
                for idx in resamples(np.random.default_rng(seed), len(groups), n_boot)
            ]
        )
        lo, hi = (float(x) for x in np.percentile(boots, [50 * (1 - level), 100 - 50 * (1 - level)]))
    return WinRate(
        a,
        b,
        len(scores),
        sum(s == 1.0 for s in scores),
        sum(s == 0.5 for s in scores),
        sum(s == 0.0 for s in scores),
        sum(scores) / len(scores),
        lo,
        hi,
    )
