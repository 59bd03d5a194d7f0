"""The post-test's learner option: an empty --posttest-learner is refused by evaluate and judge-check."""

from __future__ import annotations

import pytest
from helpers import evaluate_args, one_line_error, run_copy
from typer.testing import CliRunner

from wikihowagent.cli import app

runner = CliRunner()


@pytest.mark.parametrize("spec", ["", "  "])
@pytest.mark.parametrize("command", ["evaluate", "judge-check"])
def test_an_empty_posttest_learner_is_refused(tmp_path, spec, command):
    run = run_copy(tmp_path)
    if command == "evaluate":
        args = evaluate_args(run, out=tmp_path / "out") + ["--metrics", "Step Recall,Learning Gain"]
    else:
        args = ["judge-check", str(run), "--out", str(tmp_path / "out")]
    res = runner.invoke(app, args + ["--posttest-learner", spec])
    assert res.exit_code != 0, res.output
    one_line_error(res, "--posttest-learner: empty model spec")
    assert not (tmp_path / "out").exists()
