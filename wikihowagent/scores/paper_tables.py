"""The paper's Tables 1 and 2 over a sweep (or any set of runs): Table 1 = the homogeneous runs (teacher =
learner) + Overall (μ±δ of the run means); Table 2 = the heterogeneous runs, each with ↑/↓ against the
homogeneous run of its teacher, + Overall with ↑/↓ against Table 1's Overall."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from wikihowagent.metrics.computational import percent_metrics
from wikihowagent.runs import resolve_runs

from .significance import TableStats, qualify
from .summary import RunScores, Summary, summarize


def expand_sweep_dirs(paths: list[Path], warn: Callable[[str], None]) -> tuple[list[Path], bool]:
    """A sweep directory (with sweep.json) -> its cells' run directories (`runs.resolve_runs`). Returns (paths,
    any sweep given)."""
    out: list[Path] = []
    sweep = False
    for rp in resolve_runs(paths):
        if rp.kind != "cell":
            out.append(rp.path)
            continue
        sweep = True
        if rp.generated:
            out.append(rp.path)
        else:
            warn(f"{rp.path}: cell not generated (or not merged) yet; left out of the tables")
    return out, sweep


def paper_tables(
    runs: list[RunScores], setups: dict[str, tuple[str, str]], rubric_names: list[str], stats: Any = None
) -> list[tuple[str, str, Summary]]:
    """[(file stem, title, Summary)] for Table 1 and/or Table 2; `setups`: run name -> (teacher, learner).

    `stats` (significance.TableStats): CIs in every cell and Table 2's arrows from a paired test by tutorial
    with Holm's correction; with `stats.paired` False (or no `stats`) the paper's raw arrows."""
    homo = [r for r in runs if setups[r.name][0] == setups[r.name][1]]
    hetero = [r for r in runs if setups[r.name][0] != setups[r.name][1]]
    out = []
    t1 = summarize(homo, rubric_names, stats=stats) if homo else None
    if t1 is not None:
        out.append(("table1", "Table 1: homogeneous (teacher = learner = evaluator)", t1))
    if hetero:
        t2 = summarize(hetero, rubric_names, stats=stats)
        by_teacher = {setups[r.name][0]: (row, r) for r, row in zip(homo, t1.table, strict=False)} if t1 else {}
        overall1 = next((row for row in t1.table if row["run"] == "Overall"), None) if t1 else None
        opts = t2.stats if t2.stats is not None else _raw()
        scales = {m: 100.0 if m in percent_metrics() else 1.0 for m in t2.columns}
        for row, r in zip(t2.table, [*hetero, None], strict=False):
            if r is None:  # Overall: the table's runs against Table 1's runs
                base, tables, base_tables = overall1, [x.table for x in hetero], [x.table for x in homo]
            else:
                base, base_run = by_teacher.get(setups.get(r.name, ("", ""))[0], (None, None))
                tables, base_tables = [r.table], [base_run.table] if base_run is not None else []
            qualify(row, base, tables, base_tables, t2.columns, scales, opts)
        t2.baseline = "the homogeneous run of the same teacher (Overall: Table 1's Overall)"
        out.append(("table2", "Table 2: heterogeneous (learner ≠ teacher)", t2))
    return out


def _raw() -> Any:
    return TableStats(n_boot=0, paired=False)
