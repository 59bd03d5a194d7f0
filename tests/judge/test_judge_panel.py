"""A panel of judges: `evaluate --evaluator A --evaluator B` (each judge's own file, the panel mean in the run's
scores), and `align` reporting every judge, the panel and Krippendorff's alpha with the judge as a rater."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_evaluation import FIX, RUBRIC_NAMES, evaluate_app  # noqa: E402

from wikihowagent.metrics import computational as M  # noqa: E402
from wikihowagent.registry import Registry
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

    monkeypatch.setattr(
        M, "REGISTRY", Registry("metric", {k: m for k, m in M.REGISTRY.items() if not m.batch})
    )  # no model load
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


def test_align_reports_every_judge_of_a_panel(tmp_path):
    """Judge A follows the simulated truth, judge B is noise, the run's scores hold their mean: judges.csv has
    all three; A correlates with the humans and leaves Krippendorff's alpha high, B does neither."""
    import csv

    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
    from test_alignment import make_app
    from test_alignment_estimates import RUBRICS, write_study

    runs, sheet, sims = write_study(tmp_path, n_labeled=40)
    rng = np.random.default_rng(0)
    for run in sorted(runs.iterdir()):
        lines = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
        per = {}
        for spec, slug in (("judgeA", "judgeA"), ("ollama:noise", "ollama_noise")):
            d = run / "judges" / slug
            d.mkdir(parents=True)
            recs = []
            for x in lines:
                r = json.loads(json.dumps(x))
                if spec != "judgeA":
                    r["metrics"] = {m: float(rng.uniform(1, 5)) for m in RUBRICS}
                r["judge"] = {"evaluator": spec, "scoring": "weighted", "rubrics_sha256": "f" * 64}
                recs.append(r)
            per[spec] = recs
            (d / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        with open(run / "scores.jsonl", "w") as fh:
            for x, a, b in zip(lines, per["judgeA"], per["ollama:noise"], strict=True):
                x["metrics"] = {m: (a["metrics"][m] + b["metrics"][m]) / 2 for m in RUBRICS}
                x["judge"] = {"evaluator": "panel:judgeA+ollama:noise", "scoring": "weighted"}
                fh.write(json.dumps(x) + "\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(
        make_app(), ["align", "-H", str(sheet), "--scores", str(runs), "--out", str(out), "--bootstrap", "100"]
    )
    assert res.exit_code == 0, res.output
    with open(out / "judges.csv", newline="") as fh:
        rows = {(r["judge"], r["metric"]): r for r in csv.DictReader(fh)}
    assert {j for j, _ in rows} == {"panel:judgeA+ollama:noise", "judgeA", "ollama:noise"}
    for m in RUBRICS:
        good, noise, panel = (rows[(j, m)] for j in ("judgeA", "ollama:noise", "panel:judgeA+ollama:noise"))
        assert int(good["n"]) == 160
        assert float(good["pearson_r"]) > 0.8 and abs(float(noise["pearson_r"])) < 0.25
        assert float(noise["pearson_r"]) < float(panel["pearson_r"]) < float(good["pearson_r"])
        assert float(good["alpha_humans_and_judge_interval"]) > 0.5 > float(noise["alpha_humans_and_judge_interval"])
        assert good["alpha_humans_interval"] == ""  # one human sheet: no alpha among humans alone
    with open(out / "correlations.csv", newline="") as fh:
        clarity = next(r for r in csv.DictReader(fh) if r["metric"] == "Clarity")
    assert float(clarity["pearson_r"]) == pytest.approx(
        float(rows[("panel:judgeA+ollama:noise", "Clarity")]["pearson_r"])
    )
    assert "Every judge and the panel vs the humans" in res.stdout


def test_judge_check_panel(tmp_path):
    """Two judges (the same scripted weighted judge under two model names) and their panel, each analysed."""
    import csv

    from fake_servers import FakeOpenAI
    from test_judge_check import _fake_judge

    from wikihowagent.cli import app

    run = tmp_path / "run_small"
    shutil.copytree(FIX / "run_small", run)
    out = tmp_path / "check"
    with FakeOpenAI(logprobs=_fake_judge, models=("fake-model", "fake-2")) as srv:
        args = [
            "judge-check",
            str(run),
            "--out",
            str(out),
            "--evaluator",
            "openai:fake-model",
            "--evaluator",
            "openai:fake-2",
            "--base-url",
            srv.base_url,
            "--no-figures",
        ]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        asked = len(srv.requests)
        res2 = CliRunner().invoke(app, args)  # resumable
        assert res2.exit_code == 0 and len(srv.requests) == asked, res2.output
    tables = {}
    for d in ("openai_fake-model", "openai_fake-2", "panel"):
        with open(out / d / "sensitivity.csv", newline="") as fh:
            tables[d] = [(r["rubric"], r["perturbation"], r["n"], r["accuracy"]) for r in csv.DictReader(fh)]
    assert tables["panel"] and tables["panel"] == tables["openai_fake-model"] == tables["openai_fake-2"]
    assert (
        (out / "panel" / "summary.md")
        .read_text()
        .startswith("# judge-check: panel:openai:fake-model+openai:fake-2 (weighted)")
    )
    text = " ".join(res.output.split())
    assert "mean accuracy over targeted cells: openai:fake-model " in text and "; panel (mean of 2) " in text


def test_evaluate_refuses_a_calibration_for_another_judge_before_any_call(tmp_path, panel_app):
    from wikihowagent.records import Calibration, RubricCalibration
    from wikihowagent.records_io import calibration_text

    app, calls = panel_app
    run = tmp_path / "run_small"
    shutil.copytree(FIX / "run_small", run)
    cal = tmp_path / "calibration.json"
    iso = RubricCalibration(method="isotonic", n=30, tutorials=10, x=[1.0, 5.0], y=[2.0, 4.0])
    cal.write_text(
        calibration_text(
            Calibration(
                method="isotonic", judge="local", scoring="json", rubrics_sha256="a" * 64, rubrics={"Clarity": iso}
            )
        )
    )
    for extra in (["--evaluator", "judgeA"], ["--evaluator", "judgeA", "--evaluator", "ollama:judge/B"]):
        res = CliRunner().invoke(app, ["evaluate", str(run), *extra, "--calibration", str(cal)])
        assert res.exit_code == 2 and "fitted for judge local" in res.output, res.output
    res = CliRunner().invoke(app, ["evaluate", str(run), "--evaluator", "local", "--calibration", str(cal)])
    assert res.exit_code == 2 and "fitted for the rubric file with sha256 aaaaaaaaaaaa" in " ".join(res.output.split())
    assert calls == {}  # refused before any judge call


def test_judge_check_refuses_a_panel_beside_the_posttest_learner(tmp_path):
    """--posttest-learner with several --evaluator: a one-line refusal before any work (it used to run the judge
    panel and leave the post-test out without a word)."""
    from wikihowagent.cli import app

    run = tmp_path / "run_small"
    shutil.copytree(FIX / "run_small", run)
    res = CliRunner().invoke(
        app,
        [
            "judge-check",
            str(run),
            "--out",
            str(tmp_path / "check"),
            "--evaluator",
            "openai:a",
            "--evaluator",
            "openai:b",
            "--posttest-learner",
            "openai:c",
            "--base-url",
            "http://127.0.0.1:9",
        ],
    )
    assert res.exit_code == 2, res.output
    assert "--posttest-learner measures the post-test's validity and asks no judge" in " ".join(res.output.split())
    assert not (tmp_path / "check").exists()


def test_the_input_scorer_and_every_panel_judge_share_one_event_loop(tmp_path, monkeypatch):
    """evaluate is one judge session: run_evaluation opens one session.JudgeLoop and every runner.Evaluation (the
    input scorer, each judge of a panel) runs on it; each Evaluation made its own loop before."""
    import asyncio

    loops: dict[str, list[asyncio.AbstractEventLoop]] = {}

    def fake_make(spec, settings, local, base_url=None, **kw):
        def script(prompt):
            loops.setdefault(spec, []).append(asyncio.get_running_loop())  # the objects: no id reused
            return json.dumps({n: SCORE[spec] for n in RUBRIC_NAMES})

        return ScriptedChatModel(script=script, prompts=[])

    monkeypatch.setattr(
        M, "REGISTRY", Registry("metric", {k: m for k, m in M.REGISTRY.items() if not m.batch})
    )  # no model load
    app = evaluate_app(monkeypatch, fake_make)
    run = tmp_path / "run_small"
    shutil.copytree(FIX / "run_small", run)
    args = ["evaluate", str(run), "--evaluator", "judgeA", "--evaluator", "ollama:judge/B", "--no-figures"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert set(loops) == set(SCORE)
    seen = [loop for each in loops.values() for loop in each]
    assert all(loop is seen[0] for loop in seen) and seen[0].is_closed()  # one loop, closed by the command
