"""Hostile judge specs and rubrics: a panel judge spec never names the parent folder; a custom rubric cannot
be named overall."""

from __future__ import annotations

import json

import pytest
from helpers import _compare_args, one_line_error
from typer.testing import CliRunner

from wikihowagent.cli import app

runner = CliRunner()


def test_a_panel_judge_spec_never_names_the_parent_folder(tmp_path):
    from wikihowagent.judge.panel import judge_scores_path, judge_slug

    for spec in ("..", ".", "./..", "_.._"):
        assert judge_slug(spec) not in ("", ".", ".."), spec
        assert judge_scores_path(tmp_path / "run" / "scores.jsonl", spec).parent.parent == tmp_path / "run" / "judges"


@pytest.mark.parametrize("name", ["overall", "Overall", "OVERALL"])
def test_a_custom_rubric_cannot_be_named_overall(tmp_path, name):
    from wikihowagent.alignment.schema import OVERALL as ALIGN_OVERALL
    from wikihowagent.compare.analysis import OVERALL as COMPARE_OVERALL
    from wikihowagent.judge.rubric_judge import (
        RESERVED_RUBRIC_NAMES,
        RubricError,
        load_rubrics,
    )

    assert {COMPARE_OVERALL.casefold(), ALIGN_OVERALL.casefold()} <= RESERVED_RUBRIC_NAMES
    levels = {k: f"level {k}" for k in "12345"}
    path = tmp_path / "rubrics.json"
    path.write_text(json.dumps({name: {"role": "teacher", "reference": "no", "question": "Good?", "rubric": levels}}))
    with pytest.raises(RubricError, match=f"{path}: rubric '{name}': the name is reserved"):
        load_rubrics(path)
    res = runner.invoke(app, _compare_args(tmp_path, "--rubrics", str(path)))
    assert res.exit_code == 2, res.output
    one_line_error(res, "the name is reserved")
