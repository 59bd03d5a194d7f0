"""The people-calibrated estimate applied to scores (`evaluate --people-estimate FILE`).

`align` fits it on a human study (`people_estimate.json`, `records.PeopleEstimate`): the people's Overall
rating from a few cheap metrics. Applied to a score table it adds the column `Estimated Overall (people)` (on
the 1-5 scale; NaN where a conversation lacks a predictor), which the summary shows with its bootstrap CI over
tutorials like every other column, widened by the estimate's own residual spread into a prediction interval
(`widen`). Refused in one line when the scores were computed in another metric mode than the fit's, or lack
one of its predictor metrics altogether. The file is checked field by field when read (`check_estimate`):
strict types, finite numbers within what a 1-5 rating scale and each metric's range make sensible.
"""

from __future__ import annotations

import math
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wikihowagent.errors import WikihowagentError
from wikihowagent.jsonlio import RunError
from wikihowagent.records import ESTIMATE_NAME, RUBRIC_SCALE, EstimatePredictor, PeopleEstimate
from wikihowagent.runs import read_people_estimate
from wikihowagent.stats.people_estimate import apply

from .computational import metrics_of

if TYPE_CHECKING:  # pragma: no cover
    from wikihowagent.scoretable import ScoreTable


class EstimateMismatch(WikihowagentError, ValueError):
    """The estimate cannot be applied to these scores; one line naming the file and what differs."""


SD_FLOOR = 1e-4  # a predictor's sd: at least this share of its metric's range (the paper mode keeps 4 digits)
# out-of-fold figures of the file: correlations in [-1, 1], shares in [0, 1], pairs a count
R_FIGURES = ("pooled_r", "within_r", "within_r_ci_low", "within_r_ci_high")
SHARE_FIGURES = ("pair_share", "pair_share_ci_low", "pair_share_ci_high")


def load(path: Path) -> PeopleEstimate:
    try:
        return read_people_estimate(path, check=check_estimate)
    except RunError as exc:
        raise EstimateMismatch(str(exc)) from None


def check_estimate(data: Any) -> PeopleEstimate:
    """A parsed people-estimate file as a PeopleEstimate: strict types (a number is a JSON number, not a string
    or a boolean), then every value within sensible bounds (`predictor_problem`, the out-of-fold figures);
    ValueError (pydantic's names the field) in one line naming the field otherwise."""
    mode = data.get("mode") if isinstance(data, dict) else None
    mode = mode if mode in ("default", "paper") else "default"  # another mode: refused by the model below
    known = metrics_of(mode)
    preds = data.get("predictors") if isinstance(data, dict) else None
    if isinstance(preds, list) and len(preds) > len(known):
        raise ValueError(
            f"field 'predictors': {len(preds):,} predictors; evaluate's {mode} mode has {len(known)} metrics"
        )
    est = PeopleEstimate.model_validate(data, strict=True)
    seen: set[str] = set()
    for i, p in enumerate(est.predictors):
        problem = "named twice" if p.name in seen else predictor_problem(p, est.mode)
        if problem:
            raise ValueError(f"field 'predictors.{i}' ({p.name!r}): {problem}")
        seen.add(p.name)
    for key in ("residual_sd", "residual_sd_between_runs"):
        v = getattr(est, key)
        if v is not None and not 0 <= v <= RUBRIC_SCALE[1] - RUBRIC_SCALE[0]:
            raise ValueError(f"field '{key}': {v:g} is not a spread of ratings on the 1-5 scale")
    for key, v in est.out_of_fold.items():
        lo, hi = (-1.0, 1.0) if key in R_FIGURES else (0.0, 1.0) if key in SHARE_FIGURES else (0.0, math.inf)
        if v is not None and not (math.isfinite(v) and lo <= v <= hi):
            raise ValueError(f"field 'out_of_fold.{key}': {v:g} is outside {lo:g} to {hi:g}")
    return est


def spread_floor(name: str, mode: str) -> float:
    """The least sd a predictor may have: SD_FLOOR of its metric's range (`align` leaves out a metric with less)."""
    m = next(m for m in metrics_of(mode) if m.name == name)
    return SD_FLOOR * (m.high - m.low)


def predictor_problem(p: EstimatePredictor, mode: str) -> str | None:
    """Why predictor `p` cannot be one of an estimate in `mode` (None: it can): a metric of that mode, in its
    direction, its mean within the metric's range (negated where lower is better), its sd between SD_FLOOR of
    that range and the range itself (the weight's bounds are the record's own)."""
    m = next((m for m in metrics_of(mode) if m.name == p.name), None)
    if m is None:
        return f"not a metric of evaluate's {mode} mode"
    if p.better != m.better:
        return f"better = {p.better!r}, but {m.name} is better {m.better}"
    lo, hi = (m.low, m.high) if m.better == "higher" else (-m.high, -m.low)
    if not lo <= p.mean <= hi:
        return f"mean = {p.mean:g} is outside {lo:g} to {hi:g}, the values {m.name} takes{' (negated)' if m.better == 'lower' else ''}"
    floor, width = spread_floor(m.name, mode), m.high - m.low
    if not floor <= p.sd <= width:
        return f"sd = {p.sd:g} is outside {floor:g} to {width:g} (a standard deviation of {m.name}'s values)"
    return None


def check_request(est: PeopleEstimate, path: Path, mode: str, metrics: list[str]) -> None:
    """Before any scoring: EstimateMismatch when evaluate would compute in another mode or leave out a predictor."""
    if mode != est.mode:
        raise EstimateMismatch(
            f"{path}: fitted on metrics of evaluate's {est.mode} mode; this evaluate computes them in {mode} mode"
            + (" (--compat paper)" if mode == "paper" else "")
        )
    left_out = [p.name for p in est.predictors if p.name not in metrics]
    if left_out:
        raise EstimateMismatch(
            f"{path}: needs {', '.join(p.name for p in est.predictors)}; --metrics leaves out {', '.join(left_out)}"
        )


def check(est: PeopleEstimate, path: Path, table: ScoreTable, what: str) -> None:
    """EstimateMismatch unless `table`'s metrics were computed in the estimate's mode and it has every predictor."""
    if not len(table):
        return
    modes = table.modes()
    if modes != [est.mode]:
        got = f"in {' and '.join(modes)} mode" if modes else "without a recorded metric mode"
        raise EstimateMismatch(
            f"{path}: fitted on metrics of evaluate's {est.mode} mode; {what} was scored {got}: score it "
            f"{'with --compat paper' if est.mode == 'paper' else 'without --compat'} or fit the estimate on such scores"
        )
    have = set(table.metric_names())
    lacking = [p.name for p in est.predictors if p.name not in have or not table.values[p.name].notna().any()]
    if lacking:
        raise EstimateMismatch(
            f"{path}: needs {', '.join(p.name for p in est.predictors)}; {what} lacks {', '.join(lacking)} "
            f"(score it with `wikihowagent evaluate --metrics {shlex.quote(','.join(p.name for p in est.predictors))}`)"
        )


def add_estimate(table: ScoreTable, est: PeopleEstimate) -> ScoreTable:
    """The table with the column ESTIMATE_NAME (clipped to the rating scale; NaN where a predictor is missing)."""
    values, present = table.values.copy(), table.present.copy()
    X = np.column_stack(
        [
            -values[p.name].to_numpy(dtype=float) if p.better == "lower" else values[p.name].to_numpy(dtype=float)
            for p in est.predictors
        ]
    )
    pred = apply(
        X,
        est.intercept,
        [p.mean for p in est.predictors],  # of the oriented (negated where lower is better) metric
        [p.sd for p in est.predictors],
        [p.weight for p in est.predictors],
    )
    values[ESTIMATE_NAME] = np.clip(pred, *RUBRIC_SCALE)
    present[ESTIMATE_NAME] = np.ones(len(table), dtype=bool)
    return type(table)(meta=table.meta, values=values, present=present)


Z95 = 1.959963984540054  # the normal 97.5 % quantile


def widen(summary: Any, est: PeopleEstimate) -> None:
    """Each row's bootstrap CI of ESTIMATE_NAME (the sampling CI of the mean over tutorials) widened into a 95 %
    prediction interval of the people's mean Overall: its half-widths combined with Z95 times the estimate's own
    error of a mean, sqrt(between-runs sd^2 + residual sd^2 / n) for a run of n conversations (the Overall row,
    a mean of R run means: the runs' variances summed over R^2), clipped to the scale. A row without a CI
    (`--bootstrap 0`) stays without one."""
    if est.residual_sd is None:
        return
    sd_run, sd_conv = est.residual_sd_between_runs or 0.0, est.residual_sd
    runs = [r for r in summary.table if r["run"] != "Overall"]

    def var_of_mean(row: dict[str, Any]) -> float:
        n = row[ESTIMATE_NAME][2]
        return sd_run**2 + sd_conv**2 / n if n else math.nan

    for row in summary.table:
        lo, hi = row.get("ci", {}).get(ESTIMATE_NAME, (math.nan, math.nan))
        mean = row[ESTIMATE_NAME][0]
        if not (math.isfinite(lo) and math.isfinite(hi) and math.isfinite(mean)):
            continue
        parts = [var_of_mean(r) for r in runs] if row["run"] == "Overall" else [var_of_mean(row)]
        extra = Z95 * math.sqrt(sum(parts)) / len(parts)
        if not math.isfinite(extra):
            continue
        row["ci"][ESTIMATE_NAME] = (
            max(mean - math.hypot(mean - lo, extra), RUBRIC_SCALE[0]),
            min(mean + math.hypot(hi - mean, extra), RUBRIC_SCALE[1]),
        )


def _fig(v: float | None, lo: float | None, hi: float | None, fmt: str) -> str:
    if v is None:
        return "not recorded"
    return format(v, fmt) + (f" [{format(lo, fmt)}, {format(hi, fmt)}]" if lo is not None and hi is not None else "")


def figures(est: PeopleEstimate, path: Path) -> tuple[str, str]:
    """(the estimate's out-of-fold figures as recorded in its file, one line; a warning line when they are
    weak: the within-tutorial r's CI reaches 0, or the clear-pair share's CI reaches 0.5, or either is not
    recorded; else "")."""
    o = est.out_of_fold
    within = _fig(o.get("within_r"), o.get("within_r_ci_low"), o.get("within_r_ci_high"), "+.2f")
    share = _fig(o.get("pair_share"), o.get("pair_share_ci_low"), o.get("pair_share_ci_high"), ".3f")
    what = (
        "METEOR alone (the fit did not beat it)" if est.basis == "METEOR alone" else f"{len(est.predictors)} metric(s)"
    )
    pairs = o.get("pairs")
    line = (
        f"{ESTIMATE_NAME} ({path.name}): {what} fitted on {est.conversations} rated conversations of "
        f"{est.tutorials} tutorials; out of fold, within-tutorial r {within}, clear pairs ordered as the people did "
        f"{share}" + (f" of {pairs:.0f}" if pairs is not None else "")
    )
    w_low, s_low = o.get("within_r_ci_low"), o.get("pair_share_ci_low")
    weak = [
        *(["the within-tutorial r's CI reaches 0"] if w_low is not None and w_low <= 0 else []),
        *(["the clear-pair share's CI reaches 0.5"] if s_low is not None and s_low <= 0.5 else []),
        *(["its out-of-fold figures are not recorded"] if w_low is None or s_low is None else []),
    ]
    warning = (
        f"{ESTIMATE_NAME}: {'; '.join(weak)}: it does not reliably order conversations as the people of its study "
        "did; do not read it as their rating"
        if weak
        else ""
    )
    return line, warning
