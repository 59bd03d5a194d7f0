"""Hostile options to `generate`: a negative temperature is refused."""

from __future__ import annotations

from helpers import flat
from typer.testing import CliRunner

from wikihowagent.cli import app


def test_negative_temperature_is_refused(tmp_path):
    res = CliRunner().invoke(
        app, ["generate", "--teacher", "openai:x", "--temperature", "-1", "--out", str(tmp_path / "g")]
    )
    assert res.exit_code == 2 and "--temperature" in flat(res) and "greater than or equal to" in flat(res), res.output
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("model: {temperature: -0.5}\n")
    res = CliRunner().invoke(
        app, ["generate", "--teacher", "openai:x", "--config", str(cfg), "--out", str(tmp_path / "g")]
    )
    assert res.exit_code == 2 and "model.temperature" in flat(res) and "greater than or equal to 0" in flat(res), (
        res.output
    )
    assert not (tmp_path / "g").exists()
