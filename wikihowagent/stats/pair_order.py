"""Head to head against people: does a judge order two conversations the way people did?

A correlation over all conversations mixes two questions: which tutorials people rated higher, and which of two
lessons of the *same* tutorial teaches better. The second is what a head-to-head verdict (`compare`) claims to
answer. Here: every pair of conversations of one tutorial whose people's mean ratings differ by at least `gap`
points (the people clearly ordered them; closer pairs are left out, as people's own noise), and the share of
these pairs a judge orders the same way — a tie counts half, which is what verdicts from absolute scores at tie
band 0 give (`compare --judge-scoring checklist`). A judge that knows nothing scores 0.5 in expectation.

Pairs of one tutorial share conversations, so the 95 % CI resamples tutorials (a cluster bootstrap) and
recomputes the pooled share; several judges on the same pairs are compared on the same resamples (paired
differences)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .bootstrap import resamples
from .paired import LEVEL

GAP = 0.5  # points on the 1-5 scale: people "clearly" ordered two conversations
EVEN = 1e-9  # a judge's two scores this close are a tie


@dataclass(frozen=True)
class PairOrder:
    """One judge's share of the clear pairs ordered as the people did (ties half), with its 95 % CI."""

    pairs: int  # clear pairs (the same for every judge of a comparison)
    groups: int  # tutorials they come from (the resampling unit)
    accuracy: float  # NaN without a pair
    ci_low: float
    ci_high: float
    ties: int  # pairs the judge scored even


@dataclass(frozen=True)
class PairDifference:
    """A judge's share minus the baseline judge's on the same pairs, with its paired 95 % CI."""

    diff: float
    ci_low: float
    ci_high: float


def clear_pairs(people: Sequence[float], groups: Sequence[str], gap: float = GAP) -> dict[str, list[tuple[int, int]]]:
    """{group: [(i, j)]}: the pairs of items of one group with people[i] - people[j] >= gap (i: preferred)."""
    by: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        if math.isfinite(people[i]):
            by.setdefault(g, []).append(i)
    out = {}
    for g in sorted(by):
        ps = [(i, j) for i in by[g] for j in by[g] if people[i] - people[j] >= gap]
        if ps:
            out[g] = ps
    return out


def pair_order(
    judges: Mapping[str, Any],  # judge -> one score per item (a sequence or an array)
    people: Any,  # one (mean) rating per item
    groups: Sequence[str],
    *,
    gap: float = GAP,
    n_boot: int = 2000,
    seed: int = 0,
    baseline: str | None = None,
) -> tuple[dict[str, PairOrder], dict[str, PairDifference]]:
    """Each judge's share of the clear pairs (same-group pairs the people ordered by >= `gap`) it orders as the
    people did, ties half; only items every judge scored (finite) take part, so all judges answer the same pairs.
    -> ({judge: PairOrder}, {judge: its difference from `baseline`} (none without a baseline))."""
    import numpy as np

    names = list(judges)
    n = len(people)
    if any(len(v) != n for v in judges.values()) or len(groups) != n:
        raise ValueError("pair_order: every judge, the people and the groups need one value per item")
    ok = [all(math.isfinite(float(judges[j][i])) for j in names) for i in range(n)]
    kept = [float(p) if ok[i] else math.nan for i, p in enumerate(people)]
    pairs = clear_pairs(kept, groups, gap)
    nan = math.nan
    if not pairs:
        empty = PairOrder(0, 0, nan, nan, nan, 0)
        return {j: empty for j in names}, {
            j: PairDifference(nan, nan, nan) for j in names if baseline and j != baseline
        }
    scores = np.array([[float(judges[j][i]) for i in range(n)] for j in names])  # judges x items
    wins = np.zeros((len(pairs), len(names)))  # per group: wins of each judge, ties half
    ties = np.zeros(len(names), dtype=int)
    counts = np.array([len(ps) for ps in pairs.values()], dtype=float)
    for k, ps in enumerate(pairs.values()):
        a, b = np.array([p[0] for p in ps]), np.array([p[1] for p in ps])
        d = scores[:, a] - scores[:, b]  # judges x pairs
        even = np.abs(d) <= EVEN
        wins[k] = (d > EVEN).sum(1) + 0.5 * even.sum(1)
        ties += even.sum(1)
    point = wins.sum(0) / counts.sum()
    rng = np.random.default_rng(seed)
    chunks = [wins[idx].sum(1) / counts[idx].sum(1)[:, None] for idx in resamples(rng, len(counts), n_boot, len(names))]
    boot = np.concatenate(chunks) if chunks else np.empty((0, len(names)))  # resamples x judges
    q = [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2]

    def ci(values: Any) -> tuple[float, float]:  # no resample (--bootstrap 0): no CI
        if not len(values):
            return nan, nan
        lo, hi = np.percentile(values, q)
        return float(lo), float(hi)

    out = {
        j: PairOrder(int(counts.sum()), len(counts), float(point[k]), *ci(boot[:, k]), int(ties[k]))
        for k, j in enumerate(names)
    }
    diffs = {}
    if baseline is not None and baseline in names:
        base = names.index(baseline)
        for k, j in enumerate(names):
            if k != base:
                diffs[j] = PairDifference(float(point[k] - point[base]), *ci(boot[:, k] - boot[:, base]))
    return out, diffs
