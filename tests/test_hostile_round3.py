"""The third hostile round: names read from files that become paths, the
bootstrap's bounds, tampered calibration files and stored pair judgments, and the report's range check taken
from the metric registry. Every test here failed on the code before the fix."""

from __future__ import annotations

import csv
import json
import shutil
import sys
import tracemalloc
from pathlib import Path

import pytest
from helpers import FIXTURE_RUN, one_line_error, run_copy
from typer.testing import CliRunner

from wikihowagent.cli import app

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "report"))

DEAD_URL = "http://127.0.0.1:9/v1"  # nothing listens: a test that reached a judge would fail, not hang
runner = CliRunner()


def flat(res) -> str:
    return " ".join(res.output.split())


def evaluate_args(*runs: Path, out: Path | None = None) -> list[str]:
    return ["evaluate", *map(str, runs), "--no-judge", "--metrics", "Completion", "--no-figures"] + (
        ["--out", str(out)] if out is not None else []
    )


# ------------------------------------------------------------------ item 1: names read from files -> paths


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


def test_report_reports_a_hostile_run_name_and_still_builds(tmp_path):
    run = run_copy(tmp_path, name="../../elsewhere")
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    problems = (tmp_path / "site" / "problems.txt").read_text()
    assert f"{run / 'run.json'}: field 'name': '../../elsewhere'" in problems


def test_sweep_cells_read_from_sweep_json_must_be_folder_names(tmp_path):
    from wikihowagent.jsonlio import RunError
    from wikihowagent.runs import sweep_cell_dirs

    (tmp_path / "sweep.json").write_text(json.dumps({"cells": [{"run": "T-a_L-a_E-a"}, {"run": "../../victim"}]}))
    with pytest.raises(RunError, match=r"sweep.json: cells\[1\]: run '../../victim' contains '/'"):
        sweep_cell_dirs(tmp_path)


def test_one_name_rule_for_runs_and_sweeps():
    """The sweep's rule is the runs' rule (runs.name_problem) plus what a Slurm job name and shell need."""
    from wikihowagent.runs import name_problem
    from wikihowagent.sweep.core import SweepSpec

    for bad in ("..", "a/b", "a\tb", ""):
        assert name_problem(bad) is not None and name_problem(bad, shell=True) is not None
    assert name_problem("T-a_L-b_P-x+y") is None and name_problem("T-a_L-b_P-x+y", shell=True) is not None
    with pytest.raises(ValueError, match="contains '/'"):
        SweepSpec(name="../x", homogeneous=["a"])


def test_a_panel_judge_spec_never_names_the_parent_folder(tmp_path):
    from wikihowagent.judge.panel import judge_scores_path, judge_slug

    for spec in ("..", ".", "./..", "_.._"):
        assert judge_slug(spec) not in ("", ".", ".."), spec
        assert judge_scores_path(tmp_path / "run" / "scores.jsonl", spec).parent.parent == tmp_path / "run" / "judges"


# ------------------------------------------------------------------ items 2, 3: --seed and --bootstrap bounds


def _compare_args(tmp_path: Path, *extra: str) -> list[str]:
    from test_compare import make_run

    a, b = make_run(tmp_path, "a", range(2)), make_run(tmp_path, "b", range(2))
    return [
        "compare",
        str(a),
        str(b),
        "--out",
        str(tmp_path / "cmp"),
        "--evaluator",
        "openai:fake-model",
        "--base-url",
        DEAD_URL,
        "--from-judgments",
        *extra,
    ]


def _align_args(tmp_path: Path, *extra: str) -> list[str]:
    sheet = tmp_path / "h.csv"
    sheet.write_text("conversation_id,Clarity\nx,3\n")
    return ["align", "-H", str(sheet), "--scores", str(tmp_path), "--out", str(tmp_path / "al"), *extra]


@pytest.mark.parametrize("command", ["compare", "align", "evaluate"])
@pytest.mark.parametrize("option,value", [("--seed", "-1"), ("--bootstrap", "100001"), ("--bootstrap", "-1")])
def test_seed_and_bootstrap_out_of_bounds_are_refused_by_the_parser(tmp_path, command, option, value):
    # (not the 1,000,000,000: on a regression that would ask numpy for tens of GiB on a shared machine)
    args = {
        "compare": lambda: _compare_args(tmp_path, option, value),
        "align": lambda: _align_args(tmp_path, option, value),
        "evaluate": lambda: evaluate_args(run_copy(tmp_path), out=tmp_path / "out") + [option, value],
    }[command]()
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert f"Invalid value for '{option}'" in flat(res) and "Traceback" not in res.output
    assert not (tmp_path / "out").exists() and not (tmp_path / "al").exists()


def test_the_bounds_themselves_are_accepted(tmp_path):
    run = run_copy(tmp_path)
    res = runner.invoke(app, evaluate_args(run, out=tmp_path / "out") + ["--seed", "0", "--bootstrap", "100000"])
    assert res.exit_code == 0, res.output


def test_bootstrap_memory_does_not_grow_with_the_resamples(monkeypatch):
    """100,000 resamples of 50 tutorials x 2 runs: the resample matrix alone would be 40 MB (and its gathered
    sums 80 MB); drawn in chunks the peak stays a few MB, and the CI is the same as unchunked."""
    from wikihowagent.stats import bootstrap, paired

    runs = [{f"t{g}": (float(g % 7 + r), 1 + g % 3) for g in range(50)} for r in range(2)]
    tracemalloc.start()
    try:
        ci = paired.bootstrap_mean_ci(runs, n_boot=100_000, seed=3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 25e6, peak
    monkeypatch.setattr(bootstrap, "CHUNK_ELEMENTS", 10**12)  # one chunk: the draws of one rng.integers call
    assert paired.bootstrap_mean_ci(runs, n_boot=100_000, seed=3) == ci


def test_chunked_resamples_are_the_draws_of_one_call(monkeypatch):
    import numpy as np

    from wikihowagent.stats import bootstrap

    monkeypatch.setattr(bootstrap, "CHUNK_ELEMENTS", 7)
    got = np.concatenate(list(bootstrap.resamples(np.random.default_rng(1), 3, 1001)))
    assert (got == np.random.default_rng(1).integers(0, 3, size=(1001, 3))).all()


# ------------------------------------------------------------------ items 4, 5: tampered calibration.json


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


def test_calibrated_columns_have_the_rubric_range_in_the_report():
    import pandas as pd

    from wikihowagent.metrics.computational import value_range
    from wikihowagent.report.sources import Problems, drop_out_of_range
    from wikihowagent.scoretable import ScoreTable

    assert value_range("Clarity (cal.)", ["Clarity"]) == (1.0, 5.0)
    assert value_range("Nonsense (cal.)", ["Clarity"]) is None
    table = ScoreTable.from_rows(
        [
            ({"run": "r", "conversation_id": f"c{i}", "where": f"f:{i}"}, {"Clarity": 3.0, "Clarity (cal.)": v})
            for i, v in enumerate([2.5, 99.0])
        ]
    )
    problems = Problems()
    drop_out_of_range(table, problems, ["Clarity (cal.)"])
    assert problems.lines == ["f:1: Clarity (cal.) = 99 is outside 1 to 5; left out"]
    assert pd.isna(table.values["Clarity (cal.)"][1]) and table.values["Clarity (cal.)"][0] == 2.5


# ------------------------------------------------------------------ items 6, 7, 13: compare


def _judged(tmp_path: Path, n: int = 6) -> tuple[list[Path], Path, list[str]]:
    """Two runs judged head to head on `n` tutorials (Clarity) against the fake server; -> runs, out, args."""
    from fake_servers import FakeOpenAI
    from test_compare import fake_pair_judge, make_run

    runs = [make_run(tmp_path, name, range(n)) for name in ("weak", "strong")]
    out = tmp_path / "cmp"
    with FakeOpenAI(logprobs=fake_pair_judge()) as srv:
        args = [
            "compare",
            *map(str, runs),
            "--out",
            str(out),
            "--evaluator",
            "openai:fake-model",
            "--base-url",
            srv.base_url,
            "--bootstrap",
            "100",
            "--metrics",
            "Clarity",
        ]
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    return runs, out, [a if a != srv.base_url else DEAD_URL for a in args] + ["--from-judgments"]


def test_compare_leaves_out_stored_values_that_are_not_probabilities(tmp_path):
    _, out, args = _judged(tmp_path)
    path = out / "pair-judgments.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    bad = [7.0, -3, float("inf"), float("nan"), True]
    tampered = {}
    for rec in lines:
        t = int(rec["tutorial_id"].split("-")[1])
        if rec["first"] == "weak" and t < len(bad):
            rec["p_first"]["Clarity"] = bad[t]
            tampered[t] = rec
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))  # Infinity, NaN, true as Python writes them
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    text = flat(res)
    for shown in (
        "= 7.0 is not a probability",
        "= -3 is not a probability",
        "= Infinity is not a probability",
        "= NaN is not a probability",
        "= true is not a probability",
    ):
        assert text.count(shown) == 1, (shown, text)
    assert "5 stored P(A better) values were not probabilities in [0, 1]" in text
    assert "5 stored P(A better) values were not probabilities in [0, 1]" in " ".join(
        (out / "summary.md").read_text().split()
    )
    rows = list(csv.DictReader((out / "pairwise.csv").open()))
    assert [r["tutorial_id"] for r in rows] == ["tut-5"]  # the only tutorial judged with probabilities both ways
    assert all(0.0 <= float(r[k]) <= 1.0 for r in rows for k in ("p_ab", "p_ba"))


def test_compare_from_judgments_with_a_directory_named_like_a_judgments_file(tmp_path):
    _, out, args = _judged(tmp_path, n=2)
    (out / "pair-judgments-0-of-2.jsonl").mkdir()
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    one_line_error(res, f"{out / 'pair-judgments-0-of-2.jsonl'}: not a file")


def test_compare_refuses_one_run_given_twice_by_two_paths(tmp_path):
    from test_compare import make_run

    a = make_run(tmp_path, "a", range(2))
    (tmp_path / "link").symlink_to(a)
    for second in (a / "conversations.jsonl", tmp_path / "link"):
        res = runner.invoke(
            app,
            [
                "compare",
                str(a),
                str(second),
                "--out",
                str(tmp_path / "o"),
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                DEAD_URL,
            ],
        )
        assert res.exit_code == 2, res.output
        one_line_error(res, f"{a} and {second} are the same run")
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ item 8: report --compare, a non-UTF-8 table


def test_report_compare_with_a_non_utf8_table_is_a_problem_not_a_traceback(tmp_path):
    cmp = tmp_path / "cmp"
    cmp.mkdir()
    (cmp / "pairwise.csv").write_text("tutorial_id,run_a,run_b,rubric,p_ab,p_ba,verdict\nt,a,b,Clarity,0.7,0.2,A\n")
    (cmp / "position.csv").write_bytes(b"rubric,n,position_consistency\nClarity\xff,1,1.0\n")
    (cmp / "summary.md").write_bytes(b"# Head to head: caf\xe9\n")
    res = runner.invoke(app, ["report", str(FIXTURE_RUN), "--out", str(tmp_path / "site"), "--compare", str(cmp)])
    assert res.exit_code == 0, res.output
    problems = (tmp_path / "site" / "problems.txt").read_text()
    assert f"{cmp / 'position.csv'}: not UTF-8 text" in problems
    assert f"{cmp / 'summary.md'}: not UTF-8 text" in problems
    page = (tmp_path / "site" / "head-to-head.html").read_text()
    assert "<td>0.7</td>" in page  # the readable verdicts are still shown


# ------------------------------------------------------------------ item 9: the rubric name "overall"


@pytest.mark.parametrize("name", ["overall", "Overall", "OVERALL"])
def test_a_custom_rubric_cannot_be_named_overall(tmp_path, name):
    from wikihowagent.alignment.schema import OVERALL as ALIGN_OVERALL
    from wikihowagent.compare.analysis import OVERALL as COMPARE_OVERALL
    from wikihowagent.judge.rubric_judge import (
        RESERVED_RUBRIC_NAMES,
        RubricError,
        load_rubrics,
    )

    assert {COMPARE_OVERALL.casefold(), ALIGN_OVERALL.casefold()} <= RESERVED_RUBRIC_NAMES
    levels = {k: f"level {k}" for k in "12345"}
    path = tmp_path / "rubrics.json"
    path.write_text(json.dumps({name: {"role": "teacher", "reference": "no", "question": "Good?", "rubric": levels}}))
    with pytest.raises(RubricError, match=f"{path}: rubric '{name}': the name is reserved"):
        load_rubrics(path)
    res = runner.invoke(app, _compare_args(tmp_path, "--rubrics", str(path)))
    assert res.exit_code == 2, res.output
    one_line_error(res, "the name is reserved")


# ------------------------------------------------------------------ item 10: --posttest-learner ""


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


# ------------------------------------------------------------------ item 14: ranges from the metric registry


def test_every_metric_range_comes_from_its_registry_entry():
    from wikihowagent.metrics import computational as M

    for name in (M.LEARNING_GAIN, M.DETAIL_GAIN, M.ORDER):
        assert M.value_range(name) == (-1.0, 1.0), name
    assert M.value_range(M.STEP_RECALL) == (0.0, 1.0) and M.value_range(M.BERTSCORE) == (-1.0, 1.0)
    for m in M.REGISTRY:
        assert M.value_range(m.name)[0] <= m.low and M.value_range(m.name)[1] >= m.high


def test_report_keeps_negative_gains_and_leaves_out_impossible_ones(tmp_path):
    from report_builders import make_run

    run = make_run(tmp_path / "runs", "demo", 4)
    lines = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    gains = [(-0.0909091, -0.5, -0.25), (0.2, 0.1, 1.0), (-1.5, 0.0, 0.5), (0.0, 0.0, 0.0)]
    for rec, (dg, lg, order) in zip(lines, gains, strict=True):
        rec["metrics"].update({"Detail Gain": dg, "Learning Gain": lg, "Order": order})
    (run / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    problems = (tmp_path / "site" / "problems.txt").read_text()
    assert "Learning Gain" not in problems and "Order" not in problems
    assert problems.count("Detail Gain") == 1 and "Detail Gain = -1.5 is outside -1 to 1; left out" in problems
