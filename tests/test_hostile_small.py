"""Issue 18 item 14: the smaller defects of the second hostile round, each with a test that failed before."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from wikihowagent.cli import app

FIXTURES = Path(__file__).parent / "fixtures" / "evaluation"


def flat(res) -> str:
    return " ".join(res.output.split())


def run_copy(tmp_path) -> Path:
    run = tmp_path / "run_small"
    shutil.copytree(FIXTURES / "run_small", run)
    return run


def test_empty_shard_is_an_error_not_unsharded(tmp_path):
    run = run_copy(tmp_path)
    res = CliRunner().invoke(app, ["evaluate", str(run), "--shard", "", "--no-judge", "--no-figures", "--metrics", "BLEU"])
    assert res.exit_code == 2 and "--shard '': expected K/N" in flat(res), res.output
    assert not (run / "scores.jsonl").exists()
    res = CliRunner().invoke(app, ["generate", "--teacher", "openai:x", "--base-url", "http://127.0.0.1:9/v1",
                                   "--shard", "", "--out", str(tmp_path / "g")])
    assert res.exit_code == 2 and "--shard '': expected K/N" in flat(res), res.output


def test_negative_temperature_is_refused(tmp_path):
    res = CliRunner().invoke(app, ["generate", "--teacher", "openai:x", "--temperature", "-1", "--out", str(tmp_path / "g")])
    assert res.exit_code == 2 and "--temperature" in flat(res) and "greater than or equal to" in flat(res), res.output
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("model: {temperature: -0.5}\n")
    res = CliRunner().invoke(app, ["generate", "--teacher", "openai:x", "--config", str(cfg), "--out", str(tmp_path / "g")])
    assert res.exit_code == 2 and "model.temperature" in flat(res) and "greater than or equal to 0" in flat(res), res.output
    assert not (tmp_path / "g").exists()
