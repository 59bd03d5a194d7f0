"""The judge check's analysis of absolute judgments: sensitivity to each perturbation (win rate, bootstrap CI),
consistency of repeated judgments, the heatmap and the summary.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from wikihowagent.csvcells import people_csv
from wikihowagent.figures import annotated_heatmap
from wikihowagent.layout import CONSISTENCY_CSV, JUDGMENTS, SENSITIVITY_CSV, SENSITIVITY_PNG, SUMMARY_MD
from wikihowagent.markdown import frame_table

from .accuracy import (
    ORIGINAL,
    ORIGINAL_2,
    bootstrap_ci,
    paired_wins,
    win,
)
from .judgments import CheckResult, CheckStats, read_judgments
from .perturbations import Perturbation


def sensitivity_table(
    records: dict[tuple[str, str], dict[str, Any]], perturbations: list[Perturbation], rubric_names: list[str]
) -> Any:
    import pandas as pd

    rows = []
    for p in perturbations:
        for rubric in p.targets:
            if rubric not in rubric_names:
                continue
            wins, o_scores, p_scores, failed = paired_wins(_score_pairs(records, p, rubric).values())
            lo, hi = bootstrap_ci(wins)
            rows.append(
                {
                    "rubric": rubric,
                    "perturbation": p.name,
                    "n": len(wins),
                    "accuracy": round4(sum(wins) / len(wins)) if wins else None,
                    "ci_low": round4(lo),
                    "ci_high": round4(hi),
                    "mean_original": round4(mean_or_nan(o_scores)),
                    "mean_perturbed": round4(mean_or_nan(p_scores)),
                    "ties": sum(w == 0.5 for w in wins),
                    "failed": failed,
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "rubric",
            "perturbation",
            "n",
            "accuracy",
            "ci_low",
            "ci_high",
            "mean_original",
            "mean_perturbed",
            "ties",
            "failed",
        ],
    )


def _score_pairs(
    records: dict[tuple[str, str], dict[str, Any]], p: Perturbation, rubric: str
) -> dict[str, tuple[float | None, float | None]]:
    """{conversation id: (original's score, perturbed copy's score)} on one cell."""
    originals = {cid: r for (cid, v), r in records.items() if v == ORIGINAL}
    return {
        cid: ((originals[cid].get("scores") or {}).get(rubric), (rec.get("scores") or {}).get(rubric))
        for (cid, v), rec in records.items()
        if v == p.name and cid in originals
    }


def cell_wins(
    records: dict[tuple[str, str], dict[str, Any]], perturbations: list[Perturbation], rubric_names: list[str]
) -> dict[tuple[str, str], dict[str, float]]:
    """{(rubric, perturbation): {conversation id: win}} of the absolute judge on every targeted cell."""
    return {
        (rubric, p.name): {
            cid: win(o, q)
            for cid, (o, q) in _score_pairs(records, p, rubric).items()
            if o is not None and q is not None
        }
        for p in perturbations
        for rubric in p.targets
        if rubric in rubric_names
    }


def consistency_table(records: dict[tuple[str, str], dict[str, Any]], rubric_names: list[str]) -> Any:
    import krippendorff
    import numpy as np
    import pandas as pd

    first = {cid: r.get("scores") or {} for (cid, v), r in records.items() if v == ORIGINAL}
    second = {cid: r.get("scores") or {} for (cid, v), r in records.items() if v == ORIGINAL_2}
    rows = []
    for rubric in rubric_names:
        both = [(first[c].get(rubric), second[c].get(rubric)) for c in first if c in second]
        pairs: list[tuple[float, float]] = [(a, b) for a, b in both if a is not None and b is not None]
        scores: list[float] = [v for s in first.values() if (v := s.get(rubric)) is not None]
        alpha = math.nan
        if len(pairs) >= 2:
            data = np.array(pairs, dtype=float).T
            if np.ptp(data) > 0:
                alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))
        rows.append(
            {
                "rubric": rubric,
                "n": len(pairs),
                "alpha": round4(alpha),
                "mean_abs_diff": round4(mean_or_nan([abs(a - b) for a, b in pairs])),
                "mean": round4(mean_or_nan(scores)),
                "sd_across_conversations": round4(_sd(scores)),
                "distinct_scores": len({round(s, 4) for s in scores}),
            }
        )
    return pd.DataFrame(rows)


def mean_or_nan(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


def _sd(xs: list[float]) -> float:
    if len(xs) < 2:
        return math.nan
    m = mean_or_nan(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def round4(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 4)


def heatmap(sens: Any, rubric_names: list[str], perturbations: list[Perturbation], path: Path, title: str) -> Path:
    import numpy as np

    rubrics = [r for r in rubric_names if r in set(sens["rubric"])]
    cols = [p.name for p in perturbations]
    grid = np.full((len(rubrics), len(cols)), np.nan)
    for _, row in sens.iterrows():
        if row["accuracy"] is not None and not (isinstance(row["accuracy"], float) and math.isnan(row["accuracy"])):
            grid[rubrics.index(row["rubric"]), cols.index(row["perturbation"])] = row["accuracy"]
    return annotated_heatmap(
        grid,
        cols,
        rubrics,
        path,
        title=title,
        colorbar="P(original scores higher)",
        figsize=(1.2 * len(cols) + 2.5, 0.55 * len(rubrics) + 1.8),
        xrotation=35,
    )


def markdown_summary(
    sens: Any, cons: Any, perturbations: list[Perturbation], judge_desc: str, stats: CheckStats, n_convs: int
) -> str:

    acc = [a for a in sens["accuracy"] if a is not None and not (isinstance(a, float) and math.isnan(a))]
    mean_acc = mean_or_nan(acc)
    lines = [
        f"# judge-check: {judge_desc}",
        "",
        f"{n_convs} conversations; mean accuracy over the {len(acc)} targeted rubric x perturbation cells: "
        f"**{mean_acc:.3f}** (1 = the judge always scores the original higher, 0.5 = chance).",
        "",
        f"Judge failures (calls, parse failures, rubrics below the digit-probability threshold): {stats.failures} "
        f"of {stats.rubric_scores} rubric scores asked in this invocation; {stats.not_applicable} perturbed "
        "copies not applicable (nothing to change).",
        "",
        "## Sensitivity",
        "",
    ]
    lines.append(frame_table(sens))
    lines += ["", "## Self-consistency (originals judged twice: rubric order reversed, seed + 1)", ""]
    lines.append(frame_table(cons))
    lines += ["", "## Perturbations", ""]
    lines += [f"- `{p.name}` ({', '.join(p.targets)}): {p.description}" for p in perturbations]
    return "\n".join(lines) + "\n"


def analyse(
    out_dir: Path,
    perturbations: list[Perturbation],
    rubric_names: list[str],
    evaluator: str,
    scoring: str,
    conv_ids: set[str],
    stats: CheckStats,
    figures: bool = True,
    prompt: str = "",
) -> CheckResult:
    records = {
        k: v for k, v in read_judgments(out_dir / JUDGMENTS, evaluator, scoring, prompt).items() if k[0] in conv_ids
    }
    sens = sensitivity_table(records, perturbations, rubric_names)
    cons = consistency_table(records, rubric_names)
    written = []
    written.append(people_csv(sens, out_dir / SENSITIVITY_CSV))
    written.append(people_csv(cons, out_dir / CONSISTENCY_CSV))
    desc = f"{evaluator} ({scoring}" + (f", prompt {prompt})" if prompt else ")")
    p = out_dir / SUMMARY_MD
    p.write_text(markdown_summary(sens, cons, perturbations, desc, stats, len(conv_ids)), encoding="utf-8")
    written.append(p)
    if figures and len(sens):
        written.append(heatmap(sens, rubric_names, perturbations, out_dir / SENSITIVITY_PNG, f"judge-check: {desc}"))
    acc = [a for a in sens["accuracy"] if a is not None and not (isinstance(a, float) and math.isnan(a))]
    return CheckResult(sensitivity=sens, consistency=cons, written=written, mean_accuracy=mean_or_nan(acc))
