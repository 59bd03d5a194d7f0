"""Calibrated rubric columns (`evaluate --calibration FILE`, `report --calibration FILE`).

A calibration file (`align --calibrate`, `records.Calibration`) maps one judge's rubric scores to the human
mean rating. Applied to a score table it adds one column per calibrated rubric, named `Clarity (cal.)`, from
the stored score (isotonic) or the stored p(1..5) (ridge). It is refused in one line when the table's scores
come from another judge, scoring mode or rubric file than the one it was fitted for (or do not say which).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from wikihowagent.errors import WikihowagentError
from wikihowagent.jsonlio import RunError
from wikihowagent.records import CAL_SUFFIX, Calibration
from wikihowagent.records_io import read_calibration
from wikihowagent.stats.calibration import predict

from .prompt_variants import recorded_prompt

if TYPE_CHECKING:  # pragma: no cover
    from wikihowagent.scoretable import ScoreTable


class CalibrationMismatch(WikihowagentError, ValueError):
    """The calibration does not fit these scores; one line naming the file and what differs."""


def calibrated_name(metric: str) -> str:
    return f"{metric}{CAL_SUFFIX}"


def load(path: Path) -> Calibration:
    """The calibration file, checked to be applicable at all (its judge recorded)."""
    try:
        cal = read_calibration(path)
    except RunError as exc:
        raise CalibrationMismatch(str(exc)) from None
    if not cal.judge or not cal.rubrics_sha256:
        raise CalibrationMismatch(
            f"{path}: fitted on scores that do not record their judge or rubric file (a CSV "
            "or a paper file); calibrate on this judge's scores.jsonl (`wikihowagent align "
            "--calibrate --scores RUN`) to apply it"
        )
    return cal


def _judge_text(judge: str, scoring: str, prompt: str, sha: str) -> str:
    return (
        f"judge {judge or '(not recorded)'} ({scoring or 'scoring not recorded'}"
        + (f", prompt {prompt}" if prompt else "")
        + f"), rubric file {sha[:12] or '(not recorded)'}"
    )


def check(cal: Calibration, path: Path, table: ScoreTable, what: str) -> None:
    """CalibrationMismatch unless every judged row of `table` that has a calibrated rubric comes from the
    calibration's judge, scoring mode and rubric file. `what` names the scores (a run, a file)."""
    if not len(table):
        return
    meta = table.meta
    has = np.zeros(len(table), dtype=bool)
    for m in cal.rubrics:
        if m in table.present:
            has |= table.present[m].to_numpy(dtype=bool)
    if not has.any():
        return
    from types import SimpleNamespace

    scoring = meta["scoring"].to_numpy()[has]
    prompts = np.array(
        [
            recorded_prompt(SimpleNamespace(prompt=p), sc)
            for p, sc in zip(meta["prompt"].to_numpy()[has], scoring, strict=True)
        ],
        dtype=object,
    )
    key = (meta["evaluator"].to_numpy()[has], scoring, prompts, meta["rubrics_sha256"].to_numpy()[has])
    want = (cal.judge, cal.scoring, cal.prompt, cal.rubrics_sha256)
    bad = ~np.logical_and.reduce([k == w for k, w in zip(key, want, strict=True)])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        got = tuple(str(k[i]) for k in key)
        raise CalibrationMismatch(
            f"{path}: fitted for {_judge_text(*want)}; {what} has {int(bad.sum())} scores "
            f"from {_judge_text(*got)}: calibrate this judge (`wikihowagent align --calibrate`) "
            f"or score with --evaluator {cal.judge}"
        )


def add_calibrated(table: ScoreTable, cal: Calibration) -> ScoreTable:
    """The table with a `<rubric> (cal.)` column per calibrated rubric it has (NaN where the score, or for
    ridge the stored distribution, is missing)."""
    values, present = table.values.copy(), table.present.copy()
    records = table.meta["record"].tolist()
    for metric, rc in cal.rubrics.items():
        if metric not in values:
            continue
        expected = values[metric].to_numpy(dtype=float)
        dist = None
        if rc.method == "ridge":
            rows = [(r.judge.dist.get(metric) if r is not None and r.judge else None) for r in records]
            dist = np.array([d if d is not None and len(d) == 5 else [np.nan] * 5 for d in rows], dtype=float)
        values[calibrated_name(metric)] = predict(rc, expected, dist)
        present[calibrated_name(metric)] = present[metric].to_numpy(dtype=bool)
    return type(table)(meta=table.meta, values=values, present=present)
