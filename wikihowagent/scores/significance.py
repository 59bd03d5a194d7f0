"""Confidence intervals and paired arrows for the summary tables (Tables 1/2, `--baseline`, `--by`).

- Every cell: a 95 % bootstrap CI of the mean that resamples *tutorials* (`stats.paired.bootstrap_mean_ci`);
  the Overall row's CI resamples tutorials across every run and recomputes the mean of the run means.
- A run against its baseline (Table 2: the homogeneous run of the same teacher; `--baseline RUN`): paired
  by tutorial (the per-tutorial means of the tutorials both runs have), Wilcoxon signed-rank per metric,
  Holm's correction across the row's metrics; ↑/↓ only where the corrected p < 0.05, else ≈ ("–": no
  shared tutorial). The Overall row pairs the per-tutorial mean over the table's runs with the same over
  the baseline table's runs. The effect size (mean paired difference, its CI) and p go to the CSV.
- `--compat paper` keeps the paper's arrows (the raw difference of the two means, unpaired) exactly.

A row without a tutorial id (e.g. some paper records) is its own cluster for the CIs and is left out of
the pairing.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

from wikihowagent.stats.paired import (
    ALPHA,
    BOOTSTRAP,
    Groups,
    Paired,
    bootstrap_mean_ci,
    group_sums,
    holm,
    paired_compare,
)


@dataclass(frozen=True)
class TableStats:
    """How the tables are qualified: `n_boot` 0 = no CIs; `paired` False = the paper's raw arrows."""

    n_boot: int = BOOTSTRAP
    seed: int = 0
    paired: bool = True


_GROUPS: dict[int, tuple[weakref.ref[Any], Groups]] = {}  # id(table) -> (the table, its rows' clusters)


def _groups(table: Any) -> Groups:
    """Per row: its tutorial id (the bootstrap's cluster), else its own conversation id; factorized once per
    table (a table's cells and tests all group its rows the same way)."""
    key = id(table)
    hit = _GROUPS.get(key)
    if hit is not None and hit[0]() is table:
        return hit[1]
    ids = zip(table.meta["tutorial_id"].tolist(), table.meta["conversation_id"].tolist(), strict=True)
    groups = Groups([t or f"conversation:{c}" for t, c in ids])  # lists: a pandas column read element-wise is slow
    _GROUPS[key] = (weakref.ref(table, lambda _: _GROUPS.pop(key, None)), groups)
    return groups


def run_sums(table: Any, metric: str) -> dict[str, tuple[float, int]]:
    values = table.values[metric].to_numpy(dtype=float) if metric in table.values else table.column(metric)
    return group_sums(_groups(table), values)


def values_ci(table: Any, values: list[float | None], opts: TableStats) -> tuple[float, float]:
    """CI of the mean of per-row `values` of `table` (e.g. each conversation's rubric mean)."""
    return bootstrap_mean_ci([group_sums(_groups(table), values)], n_boot=opts.n_boot, seed=opts.seed)


def cell_ci(tables: list[Any], metric: str, scale: float, opts: TableStats) -> tuple[float, float]:
    """CI of one run's mean (one table) or of the mean of the run means (several), x `scale`."""
    lo, hi = bootstrap_mean_ci([run_sums(t, metric) for t in tables], n_boot=opts.n_boot, seed=opts.seed)
    return lo * scale, hi * scale


def tutorial_means(tables: list[Any], metric: str) -> dict[str, float]:
    """{tutorial: mean over the runs of each run's mean on that tutorial} (tutorials with a value in any run)."""
    if len(tables) == 1:  # one run: its means (a run's rows, one pass)
        return {k: s / n for k, (s, n) in run_sums(tables[0], metric).items() if not k.startswith("conversation:")}
    per: dict[str, list[float]] = {}
    for t in tables:
        for tut, (s, n) in run_sums(t, metric).items():
            if not tut.startswith("conversation:"):
                per.setdefault(tut, []).append(s / n)
    return {k: sum(v) / len(v) for k, v in per.items()}


def compare_rows(
    tables: list[Any], base_tables: list[Any], metrics: list[str], scales: dict[str, float], opts: TableStats
) -> dict[str, Paired]:
    """{metric: Paired (x scale)} of `tables` against `base_tables`, Holm-corrected across `metrics`."""
    out: dict[str, Paired] = {}
    for m in metrics:
        r = paired_compare(
            tutorial_means(tables, m), tutorial_means(base_tables, m), n_boot=opts.n_boot, seed=opts.seed
        )
        s = scales.get(m, 1.0)
        out[m] = Paired(r.n, r.diff * s, r.ci_low * s, r.ci_high * s, r.p)
    holm(list(out.values()))
    return out


def raw_arrow(a: float, b: float) -> str | None:
    """The paper's arrow: the sign of the raw difference of two means (None if either is missing)."""
    if math.isnan(a) or math.isnan(b):
        return None
    return "↑" if a > b + 1e-12 else ("↓" if a < b - 1e-12 else "=")


def qualify(
    row: dict[str, Any],
    base_row: dict[str, Any] | None,
    tables: list[Any],
    base_tables: list[Any],
    metrics: list[str],
    scales: dict[str, float],
    opts: TableStats,
) -> None:
    """Set row["arrows"] (and, paired, row["paired"]) against the baseline."""
    row["arrows"] = {}
    row["paired"] = {}
    if base_row is None:
        return
    if not opts.paired:
        for m in metrics:
            if m in base_row:
                a = raw_arrow(row[m][0], base_row[m][0])
                if a:
                    row["arrows"][m] = a
        return
    present = [m for m in metrics if row[m][2] and base_row.get(m, (math.nan, math.nan, 0))[2]]
    row["paired"] = compare_rows(tables, base_tables, present, scales, opts)
    row["arrows"] = {m: p.arrow() for m, p in row["paired"].items()}


def best_runs(
    rows: list[dict[str, Any]], tables: dict[str, Any], metrics: list[str], better: dict[str, str], opts: TableStats
) -> dict[str, str]:
    """{metric: the run (row["run"]) best on it, significantly}. Per metric the run with the best mean
    (`better[metric]`: "higher" or "lower") is tested against every other run with a value, paired by
    tutorial (Wilcoxon signed-rank); Holm's correction across all the table's tests (metrics x runs); a
    metric names its best run only where each of its tests gives a corrected p < 0.05 in the better
    direction. `rows`: the table's run rows (not Overall); `tables`: run name -> its ScoreTable. Empty with
    fewer than two runs or without paired tests (`opts.paired` False: the paper's view)."""
    runs = [r for r in rows if r["run"] in tables]
    if len(runs) < 2 or not opts.paired:
        return {}
    top: dict[str, str] = {}
    tests: dict[str, list[Paired]] = {}
    for m in metrics:
        have = [r for r in runs if r[m][2] and not math.isnan(r[m][0])]
        if len(have) < 2:
            continue
        sign = -1.0 if better.get(m) == "lower" else 1.0
        best = max(have, key=lambda r: sign * r[m][0])
        top[m] = best["run"]
        means = {r["run"]: tutorial_means([tables[r["run"]]], m) for r in have}  # each run's once
        tests[m] = [
            paired_compare(means[best["run"]], means[r["run"]], n_boot=0, seed=opts.seed) for r in have if r is not best
        ]
    holm([p for ps in tests.values() for p in ps])
    out = {}
    for m, ps in tests.items():
        sign = -1.0 if better.get(m) == "lower" else 1.0
        if all(math.isfinite(p.p_holm) and p.p_holm < ALPHA and sign * p.diff > 0 for p in ps):
            out[m] = top[m]
    return out
