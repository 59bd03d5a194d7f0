"""The people-calibrated estimate applied to scores (`evaluate --people-estimate FILE`).

`align` fits it on a human study (`people_estimate.json`, `records.PeopleEstimate`): the people's Overall
rating from a few cheap metrics. Applied to a score table it adds the column `Estimated Overall (people)` (on
the 1-5 scale; NaN where a conversation lacks a predictor), which the summary shows with its bootstrap CI over
tutorials like every other column. Refused in one line when the scores were computed in another metric mode
than the fit's, or lack one of its predictor metrics altogether.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from wikihowagent.errors import WikihowagentError
from wikihowagent.records import ESTIMATE_NAME, RUBRIC_SCALE, PeopleEstimate
from wikihowagent.runs import RunError, read_people_estimate
from wikihowagent.stats.people_estimate import apply

if TYPE_CHECKING:  # pragma: no cover
    from wikihowagent.scoretable import ScoreTable


class EstimateMismatch(WikihowagentError, ValueError):
    """The estimate cannot be applied to these scores; one line naming the file and what differs."""


def load(path: Path) -> PeopleEstimate:
    try:
        return read_people_estimate(path)
    except RunError as exc:
        raise EstimateMismatch(str(exc)) from None


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
