"""`align --calibrate` and `align --ppi` on an `AlignResult`: which pairs, the tables, the files, the figures.

The statistics are in `calibration.py` and `ppi.py`; this module picks the data out of the alignment
(human means of the rated conversations, the judge's scores and stored p(1..5) of every conversation,
tutorials as fold groups, runs/models as PPI groups) and turns the results into rows, Markdown and PNGs.
What cannot be done is said in one line per rubric (fewer than `MIN_PAIRS` pairs, a rubric no sheet has,
scores without distributions for ridge, scores of several judges), together with what is possible instead.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wikihowagent.judge.prompt_variants import recorded_prompt
from wikihowagent.layout import (
    CALIBRATION_CSV,
    CALIBRATION_JSON,
    CALIBRATION_MD,
    CALIBRATION_PNG,
    CALIBRATION_PREDICTIONS_CSV,
    FIGURES_DIR,
    PPI_CSV,
    PPI_MD,
)
from wikihowagent.markdown import markdown_table
from wikihowagent.records import Calibration
from wikihowagent.records_io import calibration_text
from wikihowagent.runs import source_files

from . import calibration as cal_stats
from . import ppi as ppi_stats
from . import schema
from .csv_dialect import csv_text
from .figures import calibration_curves, ppi_intervals
from .problems import Problems
from .schema import OVERALL

RAW = "raw"


def _f(v: float, nd: int = 3) -> str:
    return "" if v is None or not math.isfinite(v) else f"{v:.{nd}f}"


def _ci(v: float, lo: float, hi: float, nd: int = 3) -> str:
    if not math.isfinite(v):
        return "n/a"
    return f"{v:.{nd}f}" + (f" [{lo:.{nd - 1}f}, {hi:.{nd - 1}f}]" if math.isfinite(lo) else "")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "group"


# --------------------------------------------------------------------------- calibration


@dataclass
class RubricOutcome:
    metric: str
    ids: list[str]
    human: np.ndarray
    predictions: dict[str, np.ndarray]  # "raw", "isotonic", "ridge" (out of fold)
    tutorials: int
    folds: int
    comparison: cal_stats.Comparison | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def compared(self) -> cal_stats.Comparison:
        """`comparison`, set for every rubric in CalibrationOutcome.rubrics (made before it is added there)."""
        assert self.comparison is not None, f"{self.metric}: no comparison yet"
        return self.comparison


@dataclass
class CalibrationOutcome:
    method: str
    rubrics: dict[str, RubricOutcome] = field(default_factory=dict)
    file: Calibration | None = None  # None: not written (see `why_no_file`)
    why_no_file: str = ""
    n_boot: int = 0


def tutorial_keys(res: Any, ids: list[str]) -> tuple[np.ndarray, int]:
    """Fold groups: the tutorial of each conversation (its id, else its title); a conversation with neither
    is its own group (counted)."""
    titles: dict[str, str] = {}
    for j in res.judges:
        for cid, t in j.titles.items():
            titles.setdefault(cid, t)
    keys, unknown = [], 0
    for cid in ids:
        row = res.llm.rows.get(cid)
        key = (row.tutorial_id or row.title) if row else ""
        key = key or titles.get(cid, "")
        if not key:
            unknown += 1
            key = f"conversation:{cid}"
        keys.append(key)
    return np.array(keys, dtype=object), unknown


def _judge_of(res: Any, ids: list[str]) -> tuple[list[tuple[str, str, str, str]], dict]:
    specs: dict[tuple[str, str, str, str], int] = {}
    for cid in ids:
        r = res.llm.rows[cid]
        k = (r.judge, r.scoring, recorded_prompt(r, r.scoring) if r.judge else "", r.rubrics_sha256)
        specs[k] = specs.get(k, 0) + 1
    return sorted(specs, key=lambda k: -specs[k]), specs


def calibrate(
    res: Any, method: str, *, n_boot: int, seed: int, problems: Problems, human_paths: list[Path]
) -> CalibrationOutcome:
    """Out-of-fold raw vs calibrated agreement per rubric, and the calibration file (fitted on all pairs)."""
    if method not in cal_stats.METHODS:
        raise ValueError(f"unknown calibration method {method!r}")
    out = CalibrationOutcome(method=method, n_boot=n_boot)
    all_missing = {m for m in schema.metrics() if res.judges and all(m in j.missing_metrics for j in res.judges)}
    fitted = {}
    paired_ids: set[str] = set()
    for k, metric in enumerate(schema.metrics()):
        if metric in all_missing:
            problems.add(
                "calibration",
                f"calibration: {metric}: no human sheet has a {metric.lower()} column; not calibrated "
                "(only rubrics the sheets rate can be)",
            )
            continue
        rubric = _calibrate_rubric(res, k, metric, method, n_boot=n_boot, seed=seed, problems=problems)
        if rubric is None:
            continue
        ro, fit = rubric
        out.rubrics[metric] = ro
        if fit is not None:
            fitted[metric] = fit
            paired_ids.update(ro.ids)
    if not out.rubrics:
        out.why_no_file = "no rubric could be calibrated"
        return out
    if not fitted:
        out.why_no_file = f"no rubric could be fitted with {method}"
        return out
    out.file = _calibration_file(res, out, fitted, sorted(paired_ids), problems, human_paths)
    return out


def _calibrate_rubric(
    res: Any, k: int, metric: str, method: str, *, n_boot: int, seed: int, problems: Problems
) -> tuple[RubricOutcome, Any] | None:
    """One rubric's out-of-fold comparison (raw vs each calibration) and its fit on all pairs (None where
    `method` cannot be fitted); None, with the reason in `problems`, where the rubric cannot be calibrated."""
    where = f"calibration: {metric}"
    ok = ~np.isnan(res.human[:, k]) & ~np.isnan(res.model[:, k])
    ids = [c for c, o in zip(res.ids, ok, strict=True) if o]
    if len(ids) < cal_stats.MIN_PAIRS:
        problems.add(
            "calibration",
            f"{where}: {len(ids)} paired conversations, calibration needs at least "
            f"{cal_stats.MIN_PAIRS}; only the raw correlation is reported (rate more "
            "conversations to calibrate)",
        )
        return None
    y, raw = res.human[ok, k], res.model[ok, k]
    groups, unknown = tutorial_keys(res, ids)
    n_tut = len(set(groups))
    ro = RubricOutcome(metric, ids, y, {RAW: raw}, n_tut, min(cal_stats.K_FOLDS, n_tut))
    if unknown:
        ro.notes.append(f"{unknown} conversations without a tutorial id or title, each its own fold group")
    if n_tut < 2:
        problems.add(
            "calibration",
            f"{where}: all {len(ids)} paired conversations belong to one tutorial; "
            "out-of-fold calibration needs at least 2 tutorials",
        )
        return None
    dists = [res.llm.rows[c].dist.get(metric) for c in ids]
    has_dist = [d is not None and len(d) == 5 and sum(d) > 0 for d in dists]
    dist = np.array(dists, dtype=float) if all(has_dist) else None
    ro.predictions["isotonic"] = cal_stats.out_of_fold("isotonic", raw, None, y, groups)
    if dist is not None:
        ro.predictions["ridge"] = cal_stats.out_of_fold("ridge", raw, dist, y, groups)
    else:
        lacking = (
            "no paired conversation has"
            if not any(has_dist)
            else (f"{len(ids) - sum(has_dist)} of {len(ids)} paired conversations lack")
        )
        ro.notes.append(f"ridge left out: {lacking} the judge's p(1..5)")
        if method == "ridge":
            problems.add(
                "calibration",
                f"{where}: {lacking} the judge's p(1..5) distribution (json scoring, or "
                "a CSV of scores); ridge is not possible, isotonic on the integer scores "
                "is (--calibration-method isotonic)",
            )
    ro.comparison = cal_stats.compare(y, ro.predictions, n_boot=n_boot, seed=zlib.crc32(f"{seed}/{metric}".encode()))
    fit = cal_stats.fit(method, raw, dist, y, groups) if method == "isotonic" or dist is not None else None
    return ro, fit


def _calibration_file(
    res: Any,
    out: CalibrationOutcome,
    fitted: dict[str, Any],
    paired_ids: list[str],
    problems: Problems,
    human_paths: list[Path],
) -> Calibration | None:
    """calibration.json's content: the fits of one judge's scores with their out-of-fold figures; None (the
    reason in `out.why_no_file` and `problems`) when the paired scores come from several judges."""
    method = out.method
    judges, counts = _judge_of(res, paired_ids)
    if len(judges) > 1:
        listed = ", ".join(
            f"{j[0] or '(unrecorded)'} {j[1]}{' prompt ' + j[2] if j[2] else ''} ({counts[j]})" for j in judges
        )
        out.why_no_file = (
            f"the paired scores come from {len(judges)} judges ({listed}); calibration.json is for "
            "one judge: pass one judge's scores with --scores"
        )
        problems.add("calibration", f"calibration: {out.why_no_file}")
        return None
    judge, scoring, prompt, sha = judges[0]
    if not judge:
        problems.add(
            "calibration",
            "calibration: the scores do not record their judge (a CSV or a paper file): "
            "calibration.json is written but `evaluate --calibration` cannot apply it; "
            "calibrate on the scores.jsonl of `evaluate` to apply it",
        )
    return Calibration(
        method=method,
        judge=judge,
        scoring=scoring,
        prompt=prompt,
        rubrics_sha256=sha,
        rubrics=fitted,
        human_files=source_files(human_paths),
        score_sources=source_files(res.llm.sources),
        out_of_fold={
            m: {
                "n": float(ro.compared.n),
                "raw_r": ro.compared.predictors[RAW]["r"].value,
                "calibrated_r": ro.compared.predictors[method]["r"].value,
                "raw_mae": ro.compared.predictors[RAW]["mae"].value,
                "calibrated_mae": ro.compared.predictors[method]["mae"].value,
            }
            for m, ro in out.rubrics.items()
            if method in ro.predictions
        },
    )


def calibration_rows(oc: CalibrationOutcome) -> tuple[list[str], list[list]]:
    cols = ["metric", "predictor", "n", "tutorials", "folds"]
    for s in cal_stats.STATS:
        cols += [s, f"{s}_ci_low", f"{s}_ci_high"]
    for s in ("r", "mae"):
        cols += [f"delta_{s}", f"delta_{s}_ci_low", f"delta_{s}_ci_high"]
    cols.append("note")
    rows = []
    for metric, ro in oc.rubrics.items():
        for name, est in ro.compared.predictors.items():
            row = [metric, name if name == RAW else f"{name} (out of fold)", ro.compared.n, ro.tutorials, ro.folds]
            for s in cal_stats.STATS:
                row += [est[s].value, est[s].ci_low, est[s].ci_high]
            for s in ("r", "mae"):
                d = ro.compared.deltas.get(name, {}).get(s)
                row += [d.value, d.ci_low, d.ci_high] if d else ["", "", ""]
            row.append("; ".join(ro.notes))
            rows.append(row)
    return cols, rows


def prediction_rows(oc: CalibrationOutcome) -> tuple[list[str], list[list]]:
    cols = ["conversation_id", "metric", "human", "raw", "isotonic_oof", "ridge_oof"]
    rows = []
    for metric, ro in oc.rubrics.items():
        nan = np.full(len(ro.ids), np.nan)
        for i, cid in enumerate(ro.ids):
            rows.append(
                [
                    cid,
                    metric,
                    ro.human[i],
                    ro.predictions[RAW][i],
                    ro.predictions["isotonic"][i],
                    ro.predictions.get("ridge", nan)[i],
                ]
            )
    return cols, rows


def calibration_markdown(oc: CalibrationOutcome) -> str:
    lines = [
        "# Calibrating the judge on the human ratings\n",
        "Per rubric, the judge's score mapped to the mean human rating: isotonic regression on the expected "
        "score, ridge regression on the p(1..5) distribution (when the scores hold one). Every calibrated figure "
        f"is **out of fold**: GroupKFold by tutorial (k = min({cal_stats.K_FOLDS}, tutorials)), each "
        "conversation predicted by a mapping fitted on other tutorials. 95 % bootstrap CIs over conversations "
        f"({oc.n_boot} resamples, the same for every predictor; Δ = calibrated − raw, paired).\n",
    ]
    rows = []
    for metric, ro in oc.rubrics.items():
        for name, est in ro.compared.predictors.items():
            d = ro.compared.deltas.get(name, {})
            rows.append(
                [
                    metric,
                    str(ro.compared.n),
                    str(ro.tutorials),
                    name,
                    *(_ci(est[s].value, est[s].ci_low, est[s].ci_high) for s in cal_stats.STATS),
                    _ci(d["r"].value, d["r"].ci_low, d["r"].ci_high) if d else "",
                    _ci(d["mae"].value, d["mae"].ci_low, d["mae"].ci_high) if d else "",
                    "; ".join(ro.notes),
                ]
            )
    lines.append(
        markdown_table(
            ["Rubric", "n", "Tutorials", "Predictor", "Pearson r", "Spearman ρ", "MAE", "Δ r", "Δ MAE", "Note"], rows
        )
    )
    if oc.file is not None:
        lines.append(
            f"\n`calibration.json`: {oc.method}, judge `{oc.file.judge or '(not recorded)'}`"
            f"{' (' + oc.file.scoring + ')' if oc.file.scoring else ''}, rubric file sha256 "
            f"`{oc.file.rubrics_sha256[:12] or '(not recorded)'}`, rubrics: {', '.join(oc.file.rubrics)}. "
            "Apply it with `wikihowagent evaluate RUN --calibration calibration.json`.\n"
        )
    else:
        lines.append(f"\nNo `calibration.json`: {oc.why_no_file}.\n")
    return "\n".join(lines)


# --------------------------------------------------------------------------- PPI


@dataclass
class PPIRow:
    group: str
    metric: str
    estimate: ppi_stats.PPIEstimate | None
    n_labeled: int
    n_unlabeled: int
    note: str = ""


@dataclass
class PPIOutcome:
    by: str
    rows: list[PPIRow] = field(default_factory=list)


def _overall_judge(values: np.ndarray) -> float:
    return float(np.nanmean(values)) if np.isfinite(values).any() else math.nan


def ppi_estimates(res: Any, by: str, problems: Problems) -> PPIOutcome:
    """Per group (`by`: model, run, domain, persona; plus all conversations) and rubric (+ Overall): PPI of
    the human mean from the rated conversations and the judge's scores of the others."""
    out = PPIOutcome(by=by)
    rated = set(res.ids)
    label = {c: (getattr(res.llm.rows[c], by) or "(none)") for c in res.llm.rows}
    unrated = [c for c in res.llm.rows if c not in rated]
    U = np.array([res.llm.rows[c].values for c in unrated]).reshape(len(unrated), len(schema.metrics()))
    U = (
        np.column_stack([U, [_overall_judge(u) for u in U]])
        if len(unrated)
        else np.empty((0, len(schema.metrics()) + 1))
    )
    u_group = np.array([label[c] for c in unrated], dtype=object)
    r_group = np.array([label.get(c, "") for c in res.ids], dtype=object)
    groups = ["all", *sorted({g for g in label.values()})]
    if not unrated:
        problems.add(
            "ppi",
            "ppi: every judge-scored conversation is rated by humans: nothing to add to the human "
            "mean (give --scores the judge's scores of the unrated conversations too)",
        )
    for g in groups:
        rm = np.ones(len(res.ids), bool) if g == "all" else (r_group == g)
        um = np.ones(len(unrated), bool) if g == "all" else (u_group == g)
        for k, metric in enumerate((*schema.metrics(), OVERALL)):
            ok = rm & ~np.isnan(res.human[:, k]) & ~np.isnan(res.model[:, k])
            uk = U[um, k]
            uk = uk[~np.isnan(uk)]
            y, yhat = res.human[ok, k], res.model[ok, k]
            row = PPIRow(g, metric, None, int(ok.sum()), len(uk))
            if len(y) < 2:
                row.note = f"{len(y)} rated conversation(s) with a judge score; PPI needs 2"
            elif len(uk) == 0:
                row.note = "no unrated conversation with a judge score: only the human mean"
            else:
                row.estimate = ppi_stats.estimate(y, yhat, uk)
            if row.note and row.n_labeled:
                hm = float(np.mean(y)) if len(y) else math.nan
                row.note += f" (human mean {hm:.2f}, n={len(y)})"
            out.rows.append(row)
    return out


def ppi_rows(oc: PPIOutcome) -> tuple[list[str], list[list]]:
    cols = [
        "by",
        "group",
        "metric",
        "n_rated",
        "n_unrated",
        "human_mean",
        "human_ci_low",
        "human_ci_high",
        "judge_mean",
        "judge_ci_low",
        "judge_ci_high",
        "ppi_mean",
        "ppi_ci_low",
        "ppi_ci_high",
        "lambda",
        "ci_width_ratio",
        "judge_bias",
        "note",
    ]
    rows = []
    for r in oc.rows:
        e = r.estimate
        vals = (
            [
                e.human_mean,
                e.human_low,
                e.human_high,
                e.judge_mean,
                e.judge_low,
                e.judge_high,
                e.ppi_mean,
                e.ppi_low,
                e.ppi_high,
                e.lam,
                e.width_ratio,
                e.judge_bias,
            ]
            if e
            else [""] * 12
        )
        rows.append(
            [oc.by if r.group != "all" else "all", r.group, r.metric, r.n_labeled, r.n_unlabeled, *vals, r.note]
        )
    return cols, rows


def ppi_markdown(oc: PPIOutcome) -> str:
    lines = [
        "# Prediction-powered estimates of the human rating\n",
        f"Per {oc.by} and rubric: the human mean of the rated conversations (95 % CI), the judge's mean over "
        "all its conversations (95 % CI of the judge's own mean: what one reports without people), and the "
        "prediction-powered mean of the human rating (PPI++, `ppi_py.ppi_mean_ci`, power-tuned λ; 95 % CI), "
        "which uses the judge's scores of the unrated conversations. Width = PPI CI width / human-only CI "
        "width. Valid only if the rated conversations are a random sample of each group "
        "(`annotate export --select stratified`), not chosen for being uncertain.\n",
    ]
    groups: dict[str, list[PPIRow]] = {}
    for r in oc.rows:
        groups.setdefault(r.group, []).append(r)
    for g, rows in groups.items():
        lines.append(f"\n## {'All conversations' if g == 'all' else f'{oc.by}: {g}'}\n")
        table = []
        for r in rows:
            e = r.estimate
            if e is None:
                table.append([r.metric, str(r.n_labeled), str(r.n_unlabeled), "", "", "", "", "", r.note])
                continue
            table.append(
                [
                    r.metric,
                    str(r.n_labeled),
                    str(r.n_unlabeled),
                    _ci(e.human_mean, e.human_low, e.human_high, 2),
                    _ci(e.judge_mean, e.judge_low, e.judge_high, 2),
                    _ci(e.ppi_mean, e.ppi_low, e.ppi_high, 2),
                    _f(e.judge_bias, 2),
                    _f(e.width_ratio, 2),
                    r.note,
                ]
            )
        lines.append(
            markdown_table(
                ["Rubric", "n rated", "N unrated", "Human only", "Judge only", "PPI", "Judge − PPI", "Width", "Note"],
                table,
            )
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------- writing


def write_calibration_outputs(oc: CalibrationOutcome, st) -> None:
    cols, rows = calibration_rows(oc)
    st.write_text(CALIBRATION_CSV, csv_text(cols, rows))
    cols, rows = prediction_rows(oc)
    st.write_text(CALIBRATION_PREDICTIONS_CSV, csv_text(cols, rows))
    st.write_text(CALIBRATION_MD, calibration_markdown(oc))
    if oc.file is not None:
        st.write_text(CALIBRATION_JSON, calibration_text(oc.file))


def write_ppi_outputs(oc: PPIOutcome, st, figures: bool) -> None:
    cols, rows = ppi_rows(oc)
    st.write_text(PPI_CSV, csv_text(cols, rows))
    st.write_text(PPI_MD, ppi_markdown(oc))
    if figures:
        groups: dict[str, list[PPIRow]] = {}
        for r in oc.rows:
            if r.estimate is not None:
                groups.setdefault(r.group, []).append(r)
        for g, group_rows in groups.items():
            ppi_intervals(
                st.path(f"{FIGURES_DIR}/ppi_{_slug(g)}.png"),
                [(r.metric, r.estimate) for r in group_rows],
                title=f"{'all conversations' if g == 'all' else f'{oc.by}: {g}'}: human rating estimates",
            )


def write_calibration_figure(oc: CalibrationOutcome, st) -> None:

    panels = []
    for metric, ro in oc.rubrics.items():
        curve = None
        if oc.file is not None and metric in oc.file.rubrics:
            lo, hi = float(np.nanmin(ro.predictions[RAW])), float(np.nanmax(ro.predictions[RAW]))
            grid = np.linspace(lo, hi, 100)
            if oc.file.rubrics[metric].method == "isotonic":
                curve = (grid, cal_stats.predict(oc.file.rubrics[metric], grid))
        panels.append((metric, ro.predictions[RAW], ro.human, ro.predictions["isotonic"], curve))
    if panels:
        calibration_curves(st.path(f"{FIGURES_DIR}/{CALIBRATION_PNG}"), panels)


# --------------------------------------------------------------------------- terminal


def render_calibration(oc: CalibrationOutcome, console) -> None:
    from rich.table import Table

    t = Table(title="Calibration on the human ratings (out of fold, GroupKFold by tutorial; CIs in calibration.md)")
    for name in ("Rubric", "n", "Predictor", "Pearson r", "Spearman ρ", "MAE"):
        t.add_column(name, justify="left" if name in ("Rubric", "Predictor") else "right", no_wrap=True)
    for metric, ro in oc.rubrics.items():
        items = list(ro.compared.predictors.items())
        for i, (name, est) in enumerate(items):
            t.add_row(
                metric if i == 0 else "",
                str(ro.compared.n) if i == 0 else "",
                name,
                *(_f(est[s].value) for s in cal_stats.STATS),
                end_section=i == len(items) - 1,
            )
    console.print(t)
    console.print(
        "calibration.json: "
        + ("not written: " + oc.why_no_file if oc.file is None else f"{oc.method} for {', '.join(oc.file.rubrics)}"),
        highlight=False,
        markup=False,
    )


def render_ppi(oc: PPIOutcome, console) -> None:
    from rich.table import Table

    shown = [r for r in oc.rows if r.metric == OVERALL]
    if not any(r.estimate for r in shown):
        console.print(
            f"PPI: no estimate ({shown[0].note if shown else 'no group'}); see ppi.md", highlight=False, markup=False
        )
        return
    t = Table(title=f"Human mean rating per {oc.by}: human only, judge only, prediction-powered (95 % CIs)")
    for name in (oc.by, "Rubric", "n", "N", "Human only", "Judge only", "PPI", "Width"):
        t.add_column(name, justify="left" if name in (oc.by, "Rubric") else "right", no_wrap=True)
    for r in shown:
        e = r.estimate
        cells = (
            [
                _ci(e.human_mean, e.human_low, e.human_high, 2),
                _ci(e.judge_mean, e.judge_low, e.judge_high, 2),
                _ci(e.ppi_mean, e.ppi_low, e.ppi_high, 2),
                _f(e.width_ratio, 2),
            ]
            if e
            else ["", "", r.note, ""]
        )
        t.add_row(r.group, r.metric, str(r.n_labeled), str(r.n_unlabeled), *cells)
    console.print(t)
    console.print("Overall shown; every rubric in ppi.csv / ppi.md", highlight=False, markup=False)
