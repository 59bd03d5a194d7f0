"""`--device auto|cpu|cuda|mps` of evaluate and judge-check: where the metric encoders (sentence embeddings,
BERTScore, the post-test's step matching) run, recorded with every score line that used them; an absent device
is one line naming it; the CPU's numbers are the same as without the option."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.metrics.computational import MetricError, resolve_device

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation"


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_resolve_device_auto_prefers_cuda_then_mps_and_an_absent_one_is_named(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu" and resolve_device("cpu") == "cpu"
    for asked in ("cuda", "mps"):
        with pytest.raises(MetricError) as ei:
            resolve_device(asked)
        assert str(ei.value).startswith(f"--device {asked}:") and "\n" not in str(ei.value)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert resolve_device("auto") == "mps" and resolve_device("mps") == "mps"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda" and resolve_device("cuda") == "cuda"
    with pytest.raises(MetricError):
        resolve_device("tpu")


@pytest.mark.parametrize("command", ["evaluate", "judge-check"])
def test_an_absent_device_is_one_line_before_any_work(tmp_path, monkeypatch, command):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    run = tmp_path / "run_small"
    shutil.copytree(FIX / "run_small", run)
    args = [command, str(run), "--device", "cuda"]
    args += ["--no-judge", "--no-figures"] if command == "evaluate" else ["--out", str(tmp_path / "check")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --device cuda:") and "CUDA" in lines[0], res.output
    assert not (run / "scores.jsonl").exists() and not (tmp_path / "check").exists()


@pytest.mark.slow  # loads the real sentence encoder (all-MiniLM-L6-v2)
def test_cpu_scores_equal_the_default_and_the_device_is_recorded(tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # auto = cpu on any machine
    metrics = "BERTScore,Embedding Cosine,BLEU"
    scores = {}
    for name, extra in (("plain", []), ("cpu", ["--device", "cpu"]), ("auto", ["--device", "auto"])):
        run = tmp_path / name / "run_small"
        shutil.copytree(FIX / "run_small", run)
        res = CliRunner().invoke(
            app, ["evaluate", str(run), "--no-judge", "--no-figures", "--metrics", metrics, *extra]
        )
        assert res.exit_code == 0, res.output
        scores[name] = _lines(run / "scores.jsonl")
    assert [r["metrics"] for r in scores["cpu"]] == [r["metrics"] for r in scores["plain"]]
    assert [r["metrics"] for r in scores["auto"]] == [r["metrics"] for r in scores["plain"]]
    assert all(r["metrics"]["BERTScore"] is not None for r in scores["cpu"])
    assert {r["metrics_device"] for r in scores["cpu"]} == {"cpu"}
    run = tmp_path / "bleu" / "run_small"  # no encoder used: nothing recorded (the line is as before)
    shutil.copytree(FIX / "run_small", run)
    res = CliRunner().invoke(app, ["evaluate", str(run), "--no-judge", "--no-figures", "--metrics", "BLEU"])
    assert res.exit_code == 0 and all("metrics_device" not in r for r in _lines(run / "scores.jsonl"))
