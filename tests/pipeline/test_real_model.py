"""End to end with the real embedded model (llama.cpp in-process): one short bundled tutorial."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from wikihowagent.cli import app

pytestmark = pytest.mark.slow


def test_generate_with_embedded_model(tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app,
        [
            "generate",
            "--teacher",
            "local",
            "--domain",
            "Home & Garden",
            "--max-tutorials",
            "1",
            "--out",
            str(out),
            "--max-tokens",
            "96",
        ],
    )
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in (out / "conversations.jsonl").read_text().splitlines()]
    assert len(records) == 1
    rec = records[0]
    assert rec["title"] == "How to Water a Houseplant" and rec["error"] is None
    assert rec["stop_reason"] in ("finished", "max_interactions")
    assert rec["conversation"][0] == "Teacher: Let's begin: Watering Your Plant. BEGIN"
    model_turns = [t for t in rec["turns"] if t["kind"] in ("model", "clarification")]
    assert len(model_turns) >= 3
    # Real generations: non-empty text, token counts from the server, measured latency.
    assert all(t["text"].strip() and t["completion_tokens"] > 0 and t["latency_s"] > 0 for t in model_turns)
    teacher_text = " ".join(t["text"] for t in model_turns if t["role"] == "teacher").lower()
    assert "soil" in teacher_text or "water" in teacher_text  # grounded in the tutorial
    info = json.loads((out / "run.json").read_text())
    assert info["resolved"]["teacher"]["provider"] == "local" and info["status"] == "complete"


def test_weighted_judge_with_embedded_model(tmp_path):
    """The embedded server returns top log-probabilities: weighted scores are not integers and their
    distributions sum to 1 (one rubric, the fixture's short conversations)."""
    import shutil
    from pathlib import Path

    run = tmp_path / "run_small"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "evaluation" / "run_small", run)
    res = CliRunner().invoke(
        app, ["evaluate", str(run), "--metrics", "Clarity", "--no-figures", "--judge-scoring", "weighted"]
    )
    assert res.exit_code == 0, res.output
    recs = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    assert recs and all(r["judge"]["scoring"] == "weighted" for r in recs)
    for r in recs:
        v = r["metrics"]["Clarity"]
        assert 1 <= v <= 5 and not float(v).is_integer()
        assert abs(sum(r["judge"]["dist"]["Clarity"]) - 1) < 1e-3


def test_checklist_judge_with_embedded_model(tmp_path):
    """The embedded server answers checklist items with a yes/no token whose top log-probabilities put most
    of their mass on yes/no variants: P(yes) is read from them, never a made-up 0.5 (one rubric, the
    fixture's first short conversation). Checklist is the embedded judge's default: no --judge-scoring."""
    import shutil
    from pathlib import Path

    run = tmp_path / "run_small"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "evaluation" / "run_small", run)
    lines = (run / "conversations.jsonl").read_text().splitlines()
    (run / "conversations.jsonl").write_text(lines[0] + "\n")
    res = CliRunner().invoke(app, ["evaluate", str(run), "--metrics", "Progress", "--no-figures"])
    assert res.exit_code == 0, res.output
    rec = json.loads((run / "scores.jsonl").read_text().splitlines()[-1])
    j = rec["judge"]
    assert j["scoring"] == "checklist" and j["reading"] == "logprobs"
    answered = [i for i in j["items"] if i["p_yes"] is not None]
    assert len(answered) >= len(j["items"]) - 1 and len(j["items"]) >= 3
    assert all(i["mass"] >= 0.5 for i in answered)
    assert 1 <= rec["metrics"]["Progress"] <= 5
