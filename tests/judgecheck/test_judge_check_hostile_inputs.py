"""`judge-check` reads its named files before the unreachable judge."""

from __future__ import annotations

import pytest
from helpers import DEAD_URL, one_line_error, run_copy
from typer.testing import CliRunner

from wikihowagent.cli import app

runner = CliRunner()


@pytest.mark.parametrize("option", ["--rubrics", "--perturbations", "--config", "--tutorials"])
def test_judge_check_reads_its_named_files_before_the_unreachable_judge(tmp_path, option):
    run = run_copy(tmp_path)
    bad = tmp_path / ("bad.yaml" if option == "--config" else "bad.json")
    bad.write_text("{not: [valid" if option == "--config" else "{not json")
    if option == "--tutorials":
        bad = tmp_path / "missing-set"
    extra = ["--posttest-learner", "openai:m"] if option == "--tutorials" else []
    res = runner.invoke(
        app,
        ["judge-check", str(run), "--out", str(tmp_path / "o"), "--evaluator", "openai:m", "--base-url", DEAD_URL]
        + [option, str(bad), *extra],
    )
    assert res.exit_code != 0, res.output
    line = one_line_error(res, str(bad))
    assert "not reachable" not in line
    assert not (tmp_path / "o" / "judgments.jsonl").exists()
