"""Every judge beside the humans (`align`): `judges.csv` / `judges.md`.

The judge whose scores `align` compares is the one in the runs' scores files — a single judge, or the mean
of a panel (`evaluate --evaluator A --evaluator B`, evaluator `panel:A+B`). A panel's judges keep their own
files (`<scores dir>/judges/<judge>/scores.jsonl`); `align` finds them beside the score files it reads and
reports, per rubric, each judge and the panel: n, Pearson r (bootstrap 95 % CI) and Spearman rho with the
human mean, and Krippendorff's alpha (interval: the judges' scores are not integers) among the human raters
alone and with that judge counted as one more rater. A judge that agrees with the people as well as they
agree with each other leaves alpha where it was; one that does not lowers it.
"""

from __future__ import annotations

import math
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wikihowagent.layout import JUDGES_CSV, JUDGES_DIR, JUDGES_MD
from wikihowagent.markdown import markdown_table

from .agreement import CorrelationResult, correlate
from .csv_dialect import csv_text
from .problems import Problems
from .schema import METRICS
from .sources import LLMScores, llm_matrix, read_llm_scores, resolve_score_paths


def judge_files(score_paths: list[Path]) -> dict[str, list[Path]]:
    """The panel judges' score files beside the given score files: judge directory name -> files."""
    out: dict[str, list[Path]] = {}
    try:
        resolved = resolve_score_paths(score_paths, Problems())  # unusable paths: already reported by the main read
    except OSError:
        return out
    for p in resolved:
        d = Path(p).parent / JUDGES_DIR
        if Path(p).suffix != ".jsonl" or not d.is_dir():
            continue
        for sub in sorted(d.iterdir()):
            f = sub / Path(p).name
            if f.is_file():
                out.setdefault(sub.name, []).append(f)
    return out


def _alpha(R: np.ndarray) -> float:
    """Krippendorff's alpha (interval) of raters x conversations (NaN = not rated); NaN if undefined."""
    import krippendorff

    keep = (~np.isnan(R)).sum(axis=0) >= 2
    data = R[:, keep]
    if data.shape[1] == 0 or np.unique(data[~np.isnan(data)]).size < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return float(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))
        except (ValueError, ZeroDivisionError):
            return math.nan


@dataclass
class JudgeRow:
    judge: str
    metric: str
    correlation: CorrelationResult
    alpha_humans: float
    alpha_with_judge: float


@dataclass
class JudgesOutcome:
    judges: list[str] = field(default_factory=list)
    rows: list[JudgeRow] = field(default_factory=list)
    n_humans: int = 0


def _main_name(llm: LLMScores) -> str:
    names = [r.judge for r in llm.rows.values() if r.judge]
    return max(set(names), key=names.count) if names else "LLM judge (scores file)"


def compare_judges(res: Any, score_paths: list[Path], *, n_boot: int, seed: int) -> JudgesOutcome:
    """The main judge (the panel mean, or the only judge) and each panel judge found beside the score files."""
    matrices: list[tuple[str, np.ndarray]] = [(_main_name(res.llm), res.model[:, : len(METRICS)])]
    for name, files in judge_files(score_paths).items():
        llm = read_llm_scores(files, Problems(), frozenset(res.ids))  # their problems: the main file's, reported
        label = _main_name(llm) if any(r.judge for r in llm.rows.values()) else name
        matrices.append((label, llm_matrix(llm, res.ids)))
    out = JudgesOutcome(judges=[m for m, _ in matrices], n_humans=len(res.judges))
    for k, metric in enumerate(METRICS):
        humans = res.H[:, :, k] if len(res.judges) else np.empty((0, len(res.ids)))
        a_h = _alpha(humans) if len(res.judges) >= 2 else math.nan
        for i, (name, M) in enumerate(matrices):
            x, y = res.human[:, k], M[:, k]
            ok = ~np.isnan(x) & ~np.isnan(y)
            cr = (
                res.groups[0].correlations[metric]
                if i == 0
                else correlate(  # the main judge: as correlations.csv
                    x[ok], y[ok], n_boot=n_boot, seed=[seed, zlib.crc32(name.encode()), zlib.crc32(metric.encode())]
                )
            )
            out.rows.append(JudgeRow(name, metric, cr, a_h, _alpha(np.vstack([humans, M[None, :, k]]))))
    return out


def _f(v: float, nd: int = 3) -> str:
    return "" if v is None or not math.isfinite(v) else f"{v:.{nd}f}"


def judges_rows(oc: JudgesOutcome) -> tuple[list[str], list[list]]:
    cols = [
        "judge",
        "metric",
        "n",
        "pearson_r",
        "pearson_ci_low",
        "pearson_ci_high",
        "spearman_rho",
        "alpha_humans_interval",
        "alpha_humans_and_judge_interval",
    ]
    rows = []
    for r in oc.rows:
        p, s = r.correlation.coefs["pearson"], r.correlation.coefs["spearman"]
        rows.append(
            [
                r.judge,
                r.metric,
                r.correlation.n,
                p.value,
                p.ci_low,
                p.ci_high,
                s.value,
                r.alpha_humans,
                r.alpha_with_judge,
            ]
        )
    return cols, rows


def judges_markdown(oc: JudgesOutcome) -> str:
    lines = [
        "# Every judge beside the humans\n",
        f"Judges: {', '.join(f'`{j}`' for j in oc.judges)}. Per rubric: Pearson r with the human mean "
        "(95 % bootstrap CI), Spearman ρ, and Krippendorff's α (interval) among the "
        f"{oc.n_humans} human rater(s) alone and with the judge counted as one more rater.\n",
    ]
    rows = []
    for r in oc.rows:
        p, s = r.correlation.coefs["pearson"], r.correlation.coefs["spearman"]
        ci = f" [{p.ci_low:.2f}, {p.ci_high:.2f}]" if math.isfinite(p.ci_low) else ""
        rows.append(
            [
                r.metric,
                r.judge,
                str(r.correlation.n),
                (_f(p.value) + ci) if math.isfinite(p.value) else "n/a",
                _f(s.value),
                _f(r.alpha_humans),
                _f(r.alpha_with_judge),
            ]
        )
    lines.append(
        markdown_table(["Rubric", "Judge", "n", "Pearson r", "Spearman ρ", "α humans", "α humans + judge"], rows)
    )
    return "\n".join(lines)


def write_judges_outputs(oc: JudgesOutcome, st) -> None:
    cols, rows = judges_rows(oc)
    st.write_text(JUDGES_CSV, csv_text(cols, rows))
    st.write_text(JUDGES_MD, judges_markdown(oc))


def render_judges(oc: JudgesOutcome, console) -> None:
    from rich.table import Table

    if len(oc.judges) < 2:
        return  # one judge: correlations.md says it all; its alpha is in judges.md
    t = Table(title="Every judge and the panel vs the humans (Pearson r; α with the judge as a rater: judges.md)")
    t.add_column("Rubric")
    for j in oc.judges:
        t.add_column(j, justify="right", overflow="fold")
    by = {(r.judge, r.metric): r for r in oc.rows}
    for m in METRICS:
        t.add_row(m, *(_f(by[(j, m)].correlation.coefs["pearson"].value) for j in oc.judges))
    console.print(t)
