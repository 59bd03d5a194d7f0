"""Hostile input to `evaluate`: run names read from files that become paths, an empty --shard, no scorable
conversation, every rubric failing, and a tampered calibration file (one line in evaluate and report)."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import FIXTURE_RUN, evaluate_args, flat, one_line_error, run_copy
from typer.testing import CliRunner

from wikihowagent.cli import app

runner = CliRunner()


def _tamper(data: dict, how: str) -> dict:
    data = json.loads(json.dumps(data))
    rc = data["rubrics"]["Clarity"]
    if how == "x shorter":
        rc["x"] = rc["x"][:-1]
    elif how == "empty":
        rc["x"], rc["y"] = [], []
    elif how == "off scale":
        rc["y"][0] = 99
    elif how == "infinite":
        rc["y"][-1] = float("inf")
    elif how == "nan x":
        rc["x"][0] = float("nan")
    elif how == "decreasing x":
        rc["x"] = list(reversed(rc["x"])) if len(rc["x"]) > 1 else [5.0, 1.0]
        rc["y"] = rc["y"] if len(rc["y"]) > 1 else [1.0, 1.0]
    elif how == "ridge short coef":
        data["rubrics"]["Clarity"] = {
            "method": "ridge",
            "n": 60,
            "tutorials": 12,
            "features": ["p1", "p2", "p3", "p4", "p5", "expected", "spread"],
            "coef": [0.1, 0.2],
            "intercept": 1.0,
        }
    elif how == "ridge nan coef":
        data["rubrics"]["Clarity"] = {
            "method": "ridge",
            "n": 60,
            "tutorials": 12,
            "features": ["p1", "p2", "p3", "p4", "p5", "expected", "spread"],
            "coef": [0.1] * 6 + [float("nan")],
            "intercept": 1.0,
        }
    return data


TAMPERED = [
    "x shorter",
    "empty",
    "off scale",
    "infinite",
    "nan x",
    "decreasing x",
    "ridge short coef",
    "ridge nan coef",
]


@pytest.mark.parametrize("hostile", ["../escaped", "/ABS/escaped", "nested/name", "..", ".", "a\nb", "x" * 300])
def test_evaluate_out_refuses_a_run_name_that_is_not_one_folder_name(tmp_path, hostile):
    hostile = hostile.replace("/ABS", str(tmp_path / "abs"))
    run = run_copy(tmp_path, name=hostile)
    out = tmp_path / "work" / "out"
    res = runner.invoke(app, evaluate_args(run, out=out))
    assert res.exit_code == 2, res.output
    one_line_error(res, f"{run / 'run.json'}: field 'name'", "one folder name")
    assert not list(tmp_path.rglob("scores.jsonl")), list(tmp_path.rglob("scores.jsonl"))  # nothing written anywhere


def test_a_run_name_that_is_a_folder_name_still_works_even_when_hostile_to_spreadsheets(tmp_path):
    run = run_copy(tmp_path, name="=HYPERLINK(1) T-a_L-b_P-x+y")
    res = runner.invoke(app, evaluate_args(run, out=tmp_path / "out"))
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out" / "=HYPERLINK(1) T-a_L-b_P-x+y" / "scores.jsonl").is_file()


def test_evaluate_names_a_file_or_directory_whose_name_is_dot_dot_safely(tmp_path):
    # a JSONL file named "..jsonl" has the stem "." (and "...json" the stem ".."): refused, nothing written
    bad = tmp_path / "in" / "..jsonl"
    bad.parent.mkdir()
    shutil.copyfile(FIXTURE_RUN / "conversations.jsonl", bad)
    res = runner.invoke(app, evaluate_args(bad, out=tmp_path / "out"))
    assert res.exit_code == 2, res.output
    one_line_error(res, f"{bad}: its run name '.'")
    assert not (tmp_path / "out" / "scores.jsonl").exists()
    # `evaluate ..` from inside a run directory's child: the run is named after the directory, not ".."
    run = run_copy(tmp_path)
    (run / "run.json").write_text(json.dumps({**json.loads((run / "run.json").read_text()), "name": ""}))
    (run / "sub").mkdir()
    from wikihowagent.scores.inputs import resolve_inputs

    (src,) = resolve_inputs([run / "sub" / ".."], tmp_path)
    assert src.name == "run"


def test_tampered_calibration_is_one_line_in_evaluate_and_report(tmp_path):
    from test_alignment_estimates import evaluated_study

    runs, al, _ = evaluated_study(tmp_path)
    good = json.loads((al / "calibration.json").read_text())
    for how in TAMPERED:
        cal = tmp_path / f"cal-{how.replace(' ', '-')}.json"
        cal.write_text(json.dumps(_tamper(good, how)))
        res = runner.invoke(
            app,
            [
                "evaluate",
                str(runs / "run0"),
                "--no-judge",
                "--metrics",
                "BLEU",
                "--no-figures",
                "--calibration",
                str(cal),
            ],
        )
        assert res.exit_code == 2, (how, res.output)
        line = one_line_error(res, f"{cal}: field 'rubrics.Clarity'")
        assert "isotonic" in line or "ridge" in line, line
        res = runner.invoke(
            app, ["report", str(runs / "run0"), "--out", str(tmp_path / "site"), "--calibration", str(cal)]
        )
        assert res.exit_code == 1, (how, res.output)
        one_line_error(res, f"{cal}: field 'rubrics.Clarity'")
    assert not (runs / "run0" / "calibrated_scores.csv").exists()


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
