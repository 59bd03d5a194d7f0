"""A panel of judges: `evaluate --evaluator A --evaluator B ...` (Verga et al. 2024, "Replacing Judges with
Juries").

Each judge scores the rubrics into its own file, `<scores dir>/judges/<judge>/scores.jsonl` (resumable, as
any scores file; a judge is asked only what it has not scored yet). The run's own scores file then holds
the computational metrics and, per rubric, the **panel mean** of the judges' available scores, with the
provenance `evaluator = "panel:A+B"`: the summary, the tables, the report, `align` and `annotate export` read
the panel like one judge; `align` also finds the judges' own files and reports each of them.

The panel's p(1..5) is the mixture of the judges' distributions: a weighted judge's stored p(1..5), a json
judge's integer score as a point mass. Its entropy (`annotate export --select uncertain`) therefore grows
both with each judge's uncertainty and with their disagreement.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from wikihowagent.layout import JUDGES_DIR
from wikihowagent.records import JudgeProvenance, ScoreRecord
from wikihowagent.records_io import rewrite_records
from wikihowagent.runs import read_scores

from .modes import first_mode

PANEL_PREFIX = "panel:"


def panel_spec(specs: list[str]) -> str:
    return PANEL_PREFIX + "+".join(specs)


def judge_slug(spec: str) -> str:
    """A judge's directory name: its spec with anything but letters, digits, `.`, `-` and `_` as `_`, and no
    leading or trailing `.` or `_` (a spec `..` must not name the parent folder)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("_.") or "judge"


def judge_scores_path(main: Path, spec: str) -> Path:
    """Where a panel judge's scores of the run whose scores file is `main` go."""
    return Path(main).parent / JUDGES_DIR / judge_slug(spec) / Path(main).name


def _as_dist(value: float, rec: ScoreRecord, rubric: str) -> list[float] | None:
    d = rec.judge.dist.get(rubric) if rec.judge else None
    if d is not None and len(d) == 5:
        return [float(p) for p in d]
    if float(value).is_integer() and 1 <= value <= 5:  # a json judge: its score as a point mass
        return [1.0 if k == int(value) else 0.0 for k in range(1, 6)]
    return None


def panel_record(
    base: ScoreRecord, judged: dict[str, ScoreRecord], rubric_names: list[str], specs: list[str], rubrics_hash: str
) -> ScoreRecord:
    """`base` (the run's own line: computational metrics) with each rubric's panel mean over `judged`
    (spec -> that judge's line for this conversation)."""
    metrics = {k: v for k, v in base.metrics.items() if k not in rubric_names}
    dist: dict[str, list[float]] = {}
    spread: dict[str, float] = {}
    failures: list[str] = []
    notes = [f"panel of {len(specs)} judges ({', '.join(specs)}); each one's scores in judges/<judge>/"]
    for r in rubric_names:
        asked = [(s, rec) for s, rec in judged.items() if r in rec.metrics]
        if not asked:
            continue
        vals = [(s, rec, v) for s, rec in asked if (v := rec.metrics[r]) is not None]
        if not vals:
            metrics[r] = None
            failures.append(r)
            continue
        metrics[r] = round(sum(v for _, _, v in vals) / len(vals), 4)
        ds = [d for _, rec, v in vals if (d := _as_dist(v, rec, r)) is not None]
        if len(ds) == len(vals):  # every judge gave a distribution
            mix = [sum(d[k] for d in ds) / len(ds) for k in range(5)]
            dist[r] = [round(p, 4) for p in mix]
            mean = sum((k + 1) * p for k, p in enumerate(mix))
            spread[r] = round(math.sqrt(max(0.0, sum(p * (k + 1 - mean) ** 2 for k, p in enumerate(mix)))), 4)
        if len(vals) < len(asked):
            notes.append(f"{r}: {len(asked) - len(vals)} of {len(asked)} judges failed; mean of the others")
    scorings = sorted({(rec.judge.scoring or first_mode("paper")) for rec in judged.values() if rec.judge})
    judge = JudgeProvenance(
        evaluator=panel_spec(specs),
        rubrics_sha256=rubrics_hash,
        failures=failures,
        notes=notes,
        scoring=",".join(scorings),
        dist=dist,
        spread=spread,
    )
    return base.model_copy(update={"metrics": metrics, "judge": judge})


def combine(main: Path, specs: list[str], rubric_names: list[str], rubrics_hash: str) -> int:
    """Rewrite the run's scores file `main` with the panel means of the judges' files (atomically); a
    conversation only the judges scored gets a line too. Returns the number of conversations written."""
    base = read_scores(main)
    per = {s: read_scores(judge_scores_path(main, s)) for s in specs}
    order = list(base) + [c for s in specs for c in per[s] if c not in base]
    seen: set[str] = set()
    out = []
    for cid in order:
        if cid in seen:
            continue
        seen.add(cid)
        judged = {s: per[s][cid] for s in specs if cid in per[s]}
        first = base.get(cid) or next(iter(judged.values()))
        if cid not in base:  # only the judges scored it (e.g. --metrics rubric): no computational metric
            first = first.model_copy(update={"metrics": {}, "judge": None})
        out.append(panel_record(first, judged, rubric_names, specs, rubrics_hash) if judged else first)
    Path(main).parent.mkdir(parents=True, exist_ok=True)
    rewrite_records(main, out)
    return len(out)
