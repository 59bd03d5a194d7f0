"""`judge-check --metrics`: every computational metric against the perturbations, with no model call.

Each conversation and each of its perturbed copies (`data/perturbations.json`) is scored with the computational
metrics of evaluate's default mode that read only the conversation and its tutorial (not the post-test's,
which need a learner model; conversation length, `Words`, is among them as the baseline). Per metric and
perturbation: the share of conversations where the metric prefers the original to the copy, in the metric's
own direction (the registry's `better`: for Echo Rate lower is preferred), a tie half (0.5 = blind to the
damage), with a 95 % bootstrap CI over conversations: `metric_sensitivity.csv`, `metric_sensitivity.md` and
the heatmap `metric_sensitivity.png` in --out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wikihowagent.console import progress_bar
from wikihowagent.csvcells import people_csv
from wikihowagent.figures import annotated_heatmap
from wikihowagent.layout import METRIC_SENSITIVITY_CSV, METRIC_SENSITIVITY_MD, METRIC_SENSITIVITY_PNG
from wikihowagent.markdown import markdown_table
from wikihowagent.metrics.computational import LIKELIHOOD_GAIN, Scorers, better, metrics_of
from wikihowagent.records import Conversation

from .accuracy import ORIGINAL, bootstrap_ci, win
from .perturbations import Perturbation, perturb

CHUNK = 32  # conversations scored per embedding pass


def check_metrics() -> list[str]:
    """The default-mode metrics `judge-check --metrics` scores: all but those that need a post-test."""
    return [m.name for m in metrics_of("default") if m.batch != "posttest" and m.name != LIKELIHOOD_GAIN]


@dataclass
class Cell:
    metric: str
    perturbation: str
    n: int  # conversations with both values
    accuracy: float
    ci_low: float
    ci_high: float
    ties: int
    not_applicable: int  # conversations the perturbation cannot change


def score_variants(
    convs: list[Conversation],
    perts: list[Perturbation],
    metrics: list[str],
    console: Any,
    batch_size: int = 32,
    device: str = "auto",
) -> tuple[dict[tuple[str, str], dict[str, float | None]], dict[str, int]]:
    """{(conversation's position, variant): metric values} for the originals and every applicable copy, and per
    perturbation the number of conversations it cannot change."""
    jobs: list[tuple[str, str, Conversation]] = []
    not_applicable = {p.name: 0 for p in perts}
    for i, c in enumerate(convs):  # keyed by position: two runs may share a conversation id
        jobs.append((str(i), ORIGINAL, c))
        for p in perts:
            pc = perturb(p, c, convs)
            if pc is None:
                not_applicable[p.name] += 1
            else:
                jobs.append((str(i), p.name, pc))
    scorers = Scorers("default", metrics=metrics, batch_size=batch_size, device=device)
    out: dict[tuple[str, str], dict[str, float | None]] = {}
    with progress_bar(console, len(jobs), "scoring originals and copies") as advance:
        for start in range(0, len(jobs), CHUNK):
            part = jobs[start : start + CHUNK]
            for (cid, variant, _), res in zip(part, scorers.score([j[2] for j in part]), strict=True):
                out[(cid, variant)] = res.metrics
            advance(len(part))
    return out, not_applicable


def cells(
    scores: dict[tuple[str, str], dict[str, float | None]],
    ids: list[str],
    perts: list[Perturbation],
    metrics: list[str],
    not_applicable: dict[str, int],
    n_boot: int = 2000,
    seed: int = 0,
) -> list[Cell]:
    out = []
    for m in metrics:
        lower = better(m) == "lower"
        for p in perts:
            wins, ties = [], 0
            for cid in ids:
                o = scores.get((cid, ORIGINAL), {}).get(m)
                q = scores.get((cid, p.name), {}).get(m)
                if o is None or q is None or not (math.isfinite(o) and math.isfinite(q)):
                    continue
                w = win(-o, -q) if lower else win(o, q)
                ties += w == 0.5
                wins.append(w)
            lo, hi = bootstrap_ci(wins, n_boot, seed) if n_boot > 0 else (math.nan, math.nan)
            acc = sum(wins) / len(wins) if wins else math.nan
            out.append(Cell(m, p.name, len(wins), acc, lo, hi, ties, not_applicable.get(p.name, 0)))
    return out


def _f(v: float) -> str:
    return "—" if not math.isfinite(v) else f"{v:.2f}"


def markdown(cs: list[Cell], perts: list[Perturbation], n_convs: int, sources: str) -> str:
    metrics = list(dict.fromkeys(c.metric for c in cs))
    by = {(c.metric, c.perturbation): c for c in cs}
    rows = []
    for m in metrics:
        accs = [by[(m, p.name)].accuracy for p in perts if math.isfinite(by[(m, p.name)].accuracy)]
        mean = sum(accs) / len(accs) if accs else math.nan
        row = [m + (" ↓" if better(m) == "lower" else "")]
        for p in perts:
            c = by[(m, p.name)]
            row.append(_f(c.accuracy) + (f" [{_f(c.ci_low)}, {_f(c.ci_high)}]" if math.isfinite(c.ci_low) else ""))
        rows.append((mean, [*row, _f(mean)]))
    rows.sort(key=lambda r: -r[0] if math.isfinite(r[0]) else math.inf)
    return (
        "# Every metric against the perturbations\n\n"
        f"{n_convs} conversations ({sources}). Share of conversations where the metric prefers the original to "
        "its perturbed copy in the metric's own direction (↓: lower is better), a tie half (0.50 = blind to "
        "the damage); 95 % bootstrap CI over conversations. No model call: evaluate's default-mode metrics that "
        "need no post-test; Words (conversation length) is the baseline.\n\n"
        + markdown_table(["Metric", *(p.name for p in perts), "mean"], [r for _, r in rows])
    )


def write(
    cs: list[Cell], perts: list[Perturbation], out: Path, n_convs: int, sources: str, figures: bool
) -> list[Path]:
    import numpy as np
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame([c.__dict__ for c in cs])
    df.insert(1, "better", [better(c.metric) for c in cs])
    written = [out / METRIC_SENSITIVITY_CSV, out / METRIC_SENSITIVITY_MD]
    people_csv(df, written[0])
    written[1].write_text(markdown(cs, perts, n_convs, sources), encoding="utf-8")
    if figures:
        metrics = list(dict.fromkeys(c.metric for c in cs))
        by = {(c.metric, c.perturbation): c.accuracy for c in cs}
        grid = np.array([[by[(m, p.name)] for p in perts] for m in metrics], dtype=float)
        written.append(
            annotated_heatmap(
                grid,
                [p.name for p in perts],
                metrics,
                out / METRIC_SENSITIVITY_PNG,
                title="Metric prefers the original (ties half)",
                colorbar="share of conversations",
                figsize=(1.0 * len(perts) + 3.5, 0.35 * len(metrics) + 1.8),
            )
        )
    return written


def run_metric_check(
    console: Any,
    convs: list[Conversation],
    perts: list[Perturbation],
    out: Path,
    sources: str,
    figures: bool,
    device: str = "auto",
) -> list[Cell]:
    metrics = check_metrics()
    scores, na = score_variants(convs, perts, metrics, console, device=device)
    cs = cells(scores, [str(i) for i in range(len(convs))], perts, metrics, na)
    written = write(cs, perts, out, len(convs), sources, figures)
    console.print("wrote " + ", ".join(str(p) for p in written), highlight=False, markup=False)
    return cs
