"""A panel of judges: `evaluate --evaluator A --evaluator B` (each judge's own file, the panel mean in the run's
scores), and `align` reporting every judge, the panel and Krippendorff's alpha with the judge as a rater."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from test_evaluation import FIX, RUBRIC_NAMES, evaluate_app  # noqa: E402

from wikihowagent.evaluation import metrics as M  # noqa: E402
from wikihowagent.runs import read_scores  # noqa: E402
from wikihowagent.testing import ScriptedChatModel  # noqa: E402

SCORE = {"judgeA": 3, "ollama:judge/B": 5}


@pytest.fixture
def panel_app(monkeypatch):
    calls: dict[str, int] = {}

    def fake_make(spec, settings, local, base_url=None, **kw):
        def script(prompt):
            calls[spec] = calls.get(spec, 0) + 1
            return json.dumps({n: SCORE[spec] for n in RUBRIC_NAMES})

        return ScriptedChatModel(script=script, prompts=[])

    monkeypatch.setattr(M, "REGISTRY", tuple(m for m in M.REGISTRY if not m.batch))  # no model load
    return evaluate_app(monkeypatch, fake_make), calls


def test_evaluate_panel_keeps_each_judge_and_the_mean(tmp_path, panel_app):
    app, calls = panel_app
    run = tmp_path / "run_small"
    shutil.copytree(FIX / "run_small", run)
    args = ["evaluate", str(run), "--evaluator", "judgeA", "--evaluator", "ollama:judge/B", "--no-figures"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    a = read_scores(run / "judges" / "judgeA" / "scores.jsonl")
    b = read_scores(run / "judges" / "ollama_judge_B" / "scores.jsonl")
    main = read_scores(run / "scores.jsonl")
    assert a and set(a) == set(b) == set(main)
    for cid, rec in main.items():
        assert a[cid].evaluator == "judgeA" and a[cid].metrics["Clarity"] == 3
        assert b[cid].evaluator == "ollama:judge/B" and b[cid].metrics["Clarity"] == 5
        assert rec.evaluator == "panel:judgeA+ollama:judge/B"
        assert all(rec.metrics[n] == 4 for n in RUBRIC_NAMES)
        assert rec.judge.dist["Clarity"] == [0, 0, 0.5, 0, 0.5]  # the two json judges' scores as a mixture
        assert rec.judge.spread["Clarity"] == 1.0
        assert "BLEU" in rec.metrics and "BLEU" not in a[cid].metrics  # computed once, in the run's file
    assert "panel of 2 judges (judgeA, ollama:judge/B)" in res.output
    assert "4.00 ± 0.00" in (run / "summary.md").read_text()
    asked = dict(calls)
    res = CliRunner().invoke(app, args)  # resumable: nothing asked again, the same panel
    assert res.exit_code == 0, res.output
    assert calls == asked
    assert read_scores(run / "scores.jsonl") == main
    # one of them alone afterwards: its scores replace the panel's (another evaluator)
    res = CliRunner().invoke(app, ["evaluate", str(run), "--evaluator", "judgeA", "--no-figures"])
    assert res.exit_code == 0 and "re-judged because the evaluator changed" in res.output
    assert all(r.metrics["Clarity"] == 3 for r in read_scores(run / "scores.jsonl").values())


def test_panel_bad_combinations_are_one_line(tmp_path, panel_app):
    app, _ = panel_app
    run = tmp_path / "run_small"
    shutil.copytree(FIX / "run_small", run)
    res = CliRunner().invoke(app, ["evaluate", str(run), "--evaluator", "judgeA", "--evaluator", "x", "--no-judge"])
    assert res.exit_code == 2 and "a panel of judges" in res.output and "--no-judge" in res.output
    res = CliRunner().invoke(app, ["evaluate", str(run), "--evaluator", "judgeA", "--evaluator", "x", "--shard", "0/2"])
    assert res.exit_code == 2 and "--shard" in res.output
