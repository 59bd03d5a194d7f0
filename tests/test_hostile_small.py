"""The smaller defects of the second hostile round, each with a test that failed before."""

from __future__ import annotations

from pathlib import Path

from helpers import run_copy
from typer.testing import CliRunner

from wikihowagent.cli import app


def flat(res) -> str:
    return " ".join(res.output.split())


def test_empty_shard_is_an_error_not_unsharded(tmp_path):
    run = run_copy(tmp_path, "run_small")
    res = CliRunner().invoke(
        app, ["evaluate", str(run), "--shard", "", "--no-judge", "--no-figures", "--metrics", "BLEU"]
    )
    assert res.exit_code == 2 and "--shard '': expected K/N" in flat(res), res.output
    assert not (run / "scores.jsonl").exists()
    res = CliRunner().invoke(
        app,
        [
            "generate",
            "--teacher",
            "openai:x",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--shard",
            "",
            "--out",
            str(tmp_path / "g"),
        ],
    )
    assert res.exit_code == 2 and "--shard '': expected K/N" in flat(res), res.output


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


def test_evaluate_with_no_scorable_conversation_fails(tmp_path):
    tut = tmp_path / "tutorials.jsonl"
    tut.write_text('{"title": "How to X", "steps": ["a", "b"]}\n{"title": "How to Y", "steps": ["c", "d"]}\n')
    res = CliRunner().invoke(
        app, ["evaluate", str(tut), "--no-judge", "--no-figures", "--metrics", "BLEU", "--out", str(tmp_path / "out")]
    )
    assert res.exit_code == 2, res.output
    assert "nothing to evaluate" in flat(res) and "no scorable conversation (2 unreadable records" in flat(res)
    assert not (tmp_path / "out" / "tutorials" / "summary.csv").exists()


def test_all_rubrics_failed_prints_the_first_failures(tmp_path, monkeypatch):
    from test_evaluation import evaluate_app

    from wikihowagent.testing import ScriptedChatModel

    run = run_copy(tmp_path, "run_small")
    prose = evaluate_app(monkeypatch, lambda spec, *a, **k: ScriptedChatModel(script=lambda p: "Lovely.", prompts=[]))
    res = CliRunner().invoke(
        prose, ["evaluate", str(run), "--judge-scoring", "json", "--no-figures", "--metrics", "Clarity,Depth"]
    )
    assert res.exit_code == 1
    out = flat(res)
    assert out.count("judge failure:") == 3 and "Clarity:" in out, res.output
    assert "3 more in" in out and "see the judge failures above" in out


def test_report_leaves_out_values_no_metric_can_have(tmp_path):
    import json
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "report"))
    from report_builders import make_run

    from wikihowagent.report.core import build_report
    from wikihowagent.report.sources import Problems

    run = make_run(tmp_path / "runs", "T-a_L-a", 4)
    scores = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    scores[0]["metrics"]["Clarity"], scores[1]["metrics"]["Clarity"], scores[2]["metrics"]["BLEU"] = 99, 0, -7
    (run / "scores.jsonl").write_text("".join(json.dumps(s) + "\n" for s in scores))
    problems = Problems()
    res = build_report([run], tmp_path / "site", problems=problems)
    assert f"{run / 'scores.jsonl'}:1: Clarity = 99 is outside 1 to 5 (and 1 more); left out" in problems.lines, (
        problems.lines
    )
    assert f"{run / 'scores.jsonl'}:3: BLEU = -7 is outside 0 to 1; left out" in problems.lines
    page = (res.out / "index.html").read_text().replace(str(tmp_path), "")
    tables = page[: page.index("is outside")]  # the overview and summary tables, before the problems list
    assert "-700" not in tables and "99.0" not in tables and "-7.0" not in tables
    from test_report import _chunk

    chunk = _chunk(res.out, 0)
    assert dict(chunk[scores[0]["conversation_id"]]["metrics"])["Clarity"] is None
    assert dict(chunk[scores[3]["conversation_id"]]["metrics"])["Clarity"] == scores[3]["metrics"]["Clarity"]
