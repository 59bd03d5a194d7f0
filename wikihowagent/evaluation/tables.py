"""The paper's Tables 1 and 2 over a sweep (or any set of runs): Table 1 = the homogeneous runs (teacher =
learner) + Overall (μ±δ of the run means); Table 2 = the heterogeneous runs, each with ↑/↓ against the
homogeneous run of its teacher, + Overall with ↑/↓ against Table 1's Overall."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .summary import RunScores, Summary, summarize


def expand_sweep_dirs(paths: list[Path], warn: Callable[[str], None]) -> tuple[list[Path], bool]:
    """A sweep directory (with sweep.json) -> its cells' run directories. Returns (paths, any sweep given)."""
    from wikihowagent.runs import CONVERSATIONS
    from wikihowagent.sweep.core import SWEEP_INFO

    out: list[Path] = []
    sweep = False
    for p in paths:
        p = Path(p)
        if p.is_dir() and (p / SWEEP_INFO).exists() and not (p / CONVERSATIONS).exists():
            sweep = True
            cells = json.loads((p / SWEEP_INFO).read_text(encoding="utf-8")).get("cells") or []
            for c in cells:
                d = p / str(c.get("run"))
                if (d / CONVERSATIONS).exists():
                    out.append(d)
                else:
                    warn(f"{d}: cell not generated (or not merged) yet; left out of the tables")
        else:
            out.append(p)
    return out, sweep


def _arrow(a: float, b: float) -> str | None:
    if math.isnan(a) or math.isnan(b):
        return None
    return "↑" if a > b + 1e-12 else ("↓" if a < b - 1e-12 else "=")


def paper_tables(runs: list[RunScores], setups: dict[str, tuple[str, str]],
                 rubric_names: list[str]) -> list[tuple[str, str, Summary]]:
    """[(file stem, title, Summary)] for Table 1 and/or Table 2; `setups`: run name -> (teacher, learner)."""
    homo = [r for r in runs if setups[r.name][0] == setups[r.name][1]]
    hetero = [r for r in runs if setups[r.name][0] != setups[r.name][1]]
    out = []
    t1 = summarize(homo, rubric_names) if homo else None
    if t1 is not None:
        out.append(("table1", "Table 1: homogeneous (teacher = learner = evaluator)", t1))
    if hetero:
        t2 = summarize(hetero, rubric_names)
        by_teacher = {setups[r.name][0]: row for r, row in zip(homo, t1.table)} if t1 else {}
        overall1 = next((row for row in t1.table if row["run"] == "Overall"), None) if t1 else None
        for row in t2.table:
            base = overall1 if row["run"] == "Overall" else by_teacher.get(setups.get(row["run"], ("", ""))[0])
            row["arrows"] = {}
            if base is not None:
                for m in t2.columns:
                    if m in base:
                        a = _arrow(row[m][0], base[m][0])
                        if a:
                            row["arrows"][m] = a
        t2.baseline = "the homogeneous run of the same teacher (Overall: Table 1's Overall)"
        out.append(("table2", "Table 2: heterogeneous (learner ≠ teacher)", t2))
    return out
