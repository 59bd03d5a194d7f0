"""End to end: `align --calibrate --ppi` on simulated runs whose scores carry the weighted judge's p(1..5), and
the bad inputs the issue names (too few pairs, a rubric no sheet has, scores without distributions)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
from builders import write_sheet  # noqa: E402
from simulate import simulate  # noqa: E402
from test_alignment import assert_png, make_app  # noqa: E402

RUBRICS = ("Clarity", "Depth")
SHA = "f" * 64


def write_study(
    root: Path,
    *,
    n_runs: int = 4,
    n_tutorials: int = 60,
    n_labeled: int = 25,
    dist: bool = True,
    judge: str = "local",
    sheet_columns=None,
) -> tuple[Path, Path, dict]:
    """Runs with scores.jsonl (Clarity and Depth from two simulated studies) and one human sheet rating a random
    n_labeled conversations per run. Returns (runs dir, sheet, truth)."""
    sims = {
        m: simulate(seed=i + 11, n_runs=n_runs, n_tutorials=n_tutorials, n_labeled=n_labeled)
        for i, m in enumerate(RUBRICS)
    }
    s0 = sims[RUBRICS[0]]
    runs = root / "runs"
    rows = []
    for r in range(n_runs):
        name = f"run{r}"
        d = runs / name
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps({"name": name, "teacher": f"model{r}", "learner": f"model{r}"}))
        with open(d / "scores.jsonl", "w") as fh:
            for i in np.flatnonzero(s0.run == r):
                cid = f"{name}-t{s0.tutorial[i]:03d}"
                rec = {
                    "conversation_id": cid,
                    "run": name,
                    "tutorial_id": f"t{s0.tutorial[i]:03d}",
                    "title": f"How to {s0.tutorial[i]}",
                    "teacher": f"model{r}",
                    "learner": f"model{r}",
                    "metrics": {m: round(float(sims[m].expected[i]), 4) for m in RUBRICS},
                    "judge": {
                        "evaluator": judge,
                        "rubrics_sha256": SHA,
                        "scoring": "weighted" if dist else "json",
                        "dist": {m: [round(float(p), 5) for p in sims[m].dist[i]] for m in RUBRICS} if dist else {},
                    },
                }
                fh.write(json.dumps(rec) + "\n")
                if s0.labeled[i]:
                    rows.append(
                        {
                            "conversation_id": cid,
                            "filename": name,
                            "title": f"How to {s0.tutorial[i]}",
                            **{m.lower(): round(float(np.clip(sims[m].human[i], 1, 5)), 2) for m in RUBRICS},
                        }
                    )
    kw = {"columns": sheet_columns} if sheet_columns else {}
    sheet = write_sheet(root / "human.csv", rows, **kw)
    return runs, sheet, sims


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_align_calibrate_and_ppi_end_to_end(tmp_path):
    runs, sheet, sims = write_study(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        make_app(),
        [
            "align",
            "-H",
            str(sheet),
            "--scores",
            str(runs),
            "--out",
            str(out),
            "--bootstrap",
            "200",
            "--calibrate",
            "--calibration-method",
            "ridge",
            "--ppi",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = read_csv(out / "calibration.csv")
    by = {(r["metric"], r["predictor"]): r for r in rows}
    assert set(by) == {(m, p) for m in RUBRICS for p in ("raw", "isotonic (out of fold)", "ridge (out of fold)")}
    for m in RUBRICS:
        raw, iso = by[(m, "raw")], by[(m, "isotonic (out of fold)")]
        assert int(raw["n"]) == 100 and int(raw["tutorials"]) > 40 and int(raw["folds"]) == 5
        assert float(iso["mae"]) < float(raw["mae"]) and float(iso["delta_mae_ci_high"]) < 0
        assert float(iso["r_ci_low"]) < float(iso["r"]) < float(iso["r_ci_high"])
    cal = json.loads((out / "calibration.json").read_text())
    assert cal["method"] == "ridge" and cal["judge"] == "local" and cal["scoring"] == "weighted"
    assert cal["rubrics_sha256"] == SHA and set(cal["rubrics"]) == set(RUBRICS)
    assert cal["prompt"] == "tutorial-first"  # a weighted line without a recorded prompt variant: the old layout
    assert cal["rubrics"]["Clarity"]["features"] == ["p1", "p2", "p3", "p4", "p5", "expected", "spread"]
    assert len(read_csv(out / "calibration_predictions.csv")) == 200
    ppi = read_csv(out / "ppi.csv")
    clar = {r["group"]: r for r in ppi if r["metric"] == "Clarity"}
    assert set(clar) == {"all", "model0", "model1", "model2", "model3"}
    m0 = clar["model0"]
    assert (int(m0["n_rated"]), int(m0["n_unrated"])) == (25, 35)
    assert float(m0["ppi_ci_low"]) < float(m0["ppi_mean"]) < float(m0["ppi_ci_high"])
    assert float(m0["ci_width_ratio"]) < 1
    s = sims["Clarity"]
    assert float(m0["judge_mean"]) == pytest.approx(s.expected[s.run == 0].mean(), abs=1e-3)
    for name in ("calibration.png", "ppi_all.png", "ppi_model0.png"):
        assert_png(out / "figures" / name)
    assert "Calibration on the human ratings" in result.stdout and "prediction-powered" in result.stdout
    md = (out / "ppi.md").read_text()
    assert "## model: model3" in md and "random sample" in md
    # the output directory may be replaced by the next align (every file is align's own)
    again = CliRunner().invoke(
        make_app(), ["align", "-H", str(sheet), "--scores", str(runs), "--out", str(out), "--bootstrap", "0"]
    )
    assert again.exit_code == 0, again.output
    assert not (out / "calibration.json").exists()


def test_calibrate_bad_inputs_say_what_is_possible(tmp_path):
    # json-mode scores (no distributions) and ridge asked: one line per rubric, isotonic still reported
    runs, sheet, _ = write_study(tmp_path / "a", dist=False)
    out = tmp_path / "a" / "out"
    result = CliRunner().invoke(
        make_app(),
        [
            "align",
            "-H",
            str(sheet),
            "--scores",
            str(runs),
            "--out",
            str(out),
            "--bootstrap",
            "0",
            "--calibrate",
            "--calibration-method",
            "ridge",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (
        "calibration: Clarity: no paired conversation has the judge's p(1..5) distribution (json scoring, or a "
        "CSV of scores); ridge is not possible, isotonic on the integer scores is (--calibration-method "
        "isotonic)"
    ) in result.stderr
    assert not (out / "calibration.json").exists()
    assert "No `calibration.json`: no rubric could be fitted with ridge" in (out / "calibration.md").read_text()
    assert {r["predictor"] for r in read_csv(out / "calibration.csv")} == {"raw", "isotonic (out of fold)"}

    # fewer than 20 pairs, and a rubric that no sheet has a column for
    cols = ("conversation_id", "filename", "title", "clarity", "comment")
    runs, sheet, _ = write_study(tmp_path / "b", n_runs=2, n_labeled=8, sheet_columns=cols)
    result = CliRunner().invoke(
        make_app(),
        [
            "align",
            "-H",
            str(sheet),
            "--scores",
            str(runs),
            "--out",
            str(tmp_path / "b" / "out"),
            "--bootstrap",
            "0",
            "--calibrate",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (
        "calibration: Clarity: 16 paired conversations, calibration needs at least 20; only the raw correlation "
        "is reported (rate more conversations to calibrate)"
    ) in result.stderr
    assert "calibration: Depth: no human sheet has a depth column; not calibrated" in result.stderr


def test_calibration_of_several_judges_is_refused(tmp_path):
    runs, sheet, _ = write_study(tmp_path)
    p = runs / "run1" / "scores.jsonl"
    p.write_text(p.read_text().replace('"evaluator": "local"', '"evaluator": "ollama:qwen2:7b"'))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        make_app(),
        ["align", "-H", str(sheet), "--scores", str(runs), "--out", str(out), "--bootstrap", "0", "--calibrate"],
    )
    assert result.exit_code == 0, result.output
    assert (
        "the paired scores come from 2 judges (local weighted prompt tutorial-first (75), ollama:qwen2:7b weighted "
        "prompt tutorial-first (25))"
    ) in result.stderr
    assert not (out / "calibration.json").exists()


def test_ppi_without_unrated_conversations_says_so(tmp_path):
    runs, sheet, _ = write_study(tmp_path, n_runs=2, n_tutorials=20, n_labeled=20)
    result = CliRunner().invoke(
        make_app(),
        ["align", "-H", str(sheet), "--scores", str(runs), "--out", str(tmp_path / "out"), "--bootstrap", "0", "--ppi"],
    )
    assert result.exit_code == 0, result.output
    assert "ppi: every judge-scored conversation is rated by humans" in result.stderr
    row = read_csv(tmp_path / "out" / "ppi.csv")[0]
    assert row["ppi_mean"] == "" and row["note"].startswith("no unrated conversation")


def evaluated_study(tmp_path):
    """write_study plus conversations for run0 and a computational metric already scored, so that `evaluate
    --no-judge --metrics BLEU` has nothing to compute and only summarises."""
    from builders import make_run

    runs, sheet, sims = write_study(tmp_path)
    lines = [json.loads(x) for x in (runs / "run0" / "scores.jsonl").read_text().splitlines()]
    make_run(tmp_path / "tmp", "run0", [x["tutorial_id"] for x in lines])
    (runs / "run0" / "conversations.jsonl").write_text((tmp_path / "tmp" / "run0" / "conversations.jsonl").read_text())
    with open(runs / "run0" / "scores.jsonl", "w") as fh:
        for x in lines:
            x["metrics"]["BLEU"] = 0.1
            fh.write(json.dumps(x) + "\n")
    out = tmp_path / "al"
    result = CliRunner().invoke(
        make_app(),
        [
            "align",
            "-H",
            str(sheet),
            "--scores",
            str(runs),
            "--out",
            str(out),
            "--bootstrap",
            "0",
            "--calibrate",
            "--ppi",
        ],
    )
    assert result.exit_code == 0, result.output
    return runs, out, sims


def test_evaluate_and_report_with_calibration(tmp_path):
    from wikihowagent.cli import app

    runs, al, sims = evaluated_study(tmp_path)
    cal_file = al / "calibration.json"
    result = CliRunner().invoke(
        app,
        [
            "evaluate",
            str(runs / "run0"),
            "--no-judge",
            "--metrics",
            "BLEU",
            "--no-figures",
            "--calibration",
            str(cal_file),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Clarity (cal.)" in result.stdout and "Depth (cal.)" in result.stdout
    summary = read_csv(runs / "run0" / "summary.csv")
    assert summary and any("Clarity (cal.)" in k for k in summary[0])
    rows = read_csv(runs / "run0" / "calibrated_scores.csv")
    assert len(rows) == 60 and list(rows[0])[:5] == [
        "run",
        "conversation_id",
        "tutorial_id",
        "Clarity",
        "Clarity (cal.)",
    ]
    # the calibrated score is the isotonic map of the stored score, close to the simulated truth
    from wikihowagent.records_io import read_calibration
    from wikihowagent.stats.calibration import predict

    cal = read_calibration(cal_file)
    x = np.array([float(r["Clarity"]) for r in rows])
    np.testing.assert_allclose(
        [float(r["Clarity (cal.)"]) for r in rows], predict(cal.rubrics["Clarity"], x), atol=1e-4
    )
    s = sims["Clarity"]
    assert np.abs(np.array([float(r["Clarity (cal.)"]) for r in rows]) - s.truth[s.run == 0]).mean() < 0.3

    site = tmp_path / "site"
    result = CliRunner().invoke(
        app, ["report", str(runs / "run0"), "--out", str(site), "--alignment", str(al), "--calibration", str(cal_file)]
    )
    assert result.exit_code == 0, result.output
    index = (site / "index.html").read_text()
    assert "Calibration on the human ratings" in index and "Prediction-powered estimates" in index
    assert "Every judge beside the humans" in index
    assert "alignment/calibration.png" in index and "alignment/ppi_model0.png" in index
    assert '"Clarity (cal.)"' in (site / "data" / "index.js").read_text()


def test_calibration_for_another_judge_or_rubric_file_is_refused(tmp_path):
    from wikihowagent.cli import app

    runs, al, _ = evaluated_study(tmp_path)
    cal_file = al / "calibration.json"
    p = runs / "run0" / "scores.jsonl"
    p.write_text(p.read_text().replace('"evaluator": "local"', '"evaluator": "ollama:qwen2:7b"'))
    result = CliRunner().invoke(
        app,
        [
            "evaluate",
            str(runs / "run0"),
            "--no-judge",
            "--metrics",
            "BLEU",
            "--no-figures",
            "--calibration",
            str(cal_file),
        ],
    )
    assert result.exit_code == 2
    assert (
        f"error: {cal_file}: fitted for judge local (weighted, prompt tutorial-first), rubric file ffffffffffff; "
        f"{p} has 60 scores from judge ollama:qwen2:7b (weighted, prompt tutorial-first), rubric file "
        "ffffffffffff"
    ) in " ".join(result.stderr.split())
    assert not (runs / "run0" / "calibrated_scores.csv").exists()
    p.write_text(p.read_text().replace('"evaluator": "ollama:qwen2:7b"', '"evaluator": "local"').replace(SHA, "e" * 64))
    result = CliRunner().invoke(
        app, ["report", str(runs / "run0"), "--out", str(tmp_path / "site"), "--calibration", str(cal_file)]
    )
    assert result.exit_code == 1 and "rubric file eeeeeeeeeeee" in " ".join(result.stderr.split())
    # a calibration fitted on a CSV of scores (no judge recorded) cannot be applied
    data = json.loads(cal_file.read_text())
    cal_file.write_text(json.dumps(data | {"judge": ""}))
    result = CliRunner().invoke(
        app, ["evaluate", str(runs / "run0"), "--no-judge", "--metrics", "BLEU", "--calibration", str(cal_file)]
    )
    assert result.exit_code == 2 and "do not record their judge" in result.stderr
    cal_file.write_text("{}")
    result = CliRunner().invoke(app, ["evaluate", str(runs / "run0"), "--no-judge", "--calibration", str(cal_file)])
    assert result.exit_code == 2 and "not a calibration file" in result.stderr


def test_annotate_export_select_uncertain_and_stratified(tmp_path):
    from wikihowagent.alignment.export import select, uncertainty
    from wikihowagent.alignment.problems import Problems
    from wikihowagent.alignment.sources import read_llm_scores

    runs, _, sims = write_study(tmp_path)
    llm = read_llm_scores([runs], Problems())
    # uncertain: per run the n conversations with the highest mean normalised entropy of p(1..5)
    sel = select([runs], Problems(), mode="uncertain", n=7)
    assert len(sel.conversations) == 28 and sel.qualifying == 240
    for run in ("run0", "run1", "run2", "run3"):
        mine = {c.conversation_id for c in sel.conversations if c.run == run}
        ranked = sorted(
            (c for c in llm.rows.values() if c.run == run), key=lambda r: (-uncertainty(r), r.conversation_id)
        )
        assert mine == {r.conversation_id for r in ranked[:7]}
        assert min(uncertainty(llm.rows[c]) for c in mine) >= max(uncertainty(r) for r in ranked[7:])
    peaked, flat = llm.rows["run0-t000"], llm.rows["run0-t001"]
    peaked.dist, flat.dist = {"Clarity": [0, 0, 1, 0, 0]}, {}
    assert uncertainty(peaked) == 0 and np.isnan(uncertainty(flat))
    peaked.dist = {"Clarity": [0.2] * 5}
    assert uncertainty(peaked) == pytest.approx(1.0)
    # stratified: n per run at random, reproducible by seed
    a = select([runs], Problems(), mode="stratified", n=10, seed=3)
    b = select([runs], Problems(), mode="stratified", n=10, seed=3)
    c = select([runs], Problems(), mode="stratified", n=10, seed=4)
    ids = lambda s: sorted(x.conversation_id for x in s.conversations)  # noqa: E731
    assert ids(a) == ids(b) != ids(c)
    assert [sum(x.run == r for x in a.conversations) for r in ("run0", "run1", "run2", "run3")] == [10] * 4
    big = select([runs], p := Problems(), mode="stratified", n=100)
    assert len(big.conversations) == 240 and "only 60 conversations qualify" in "\n".join(p.lines())
    # the command: a sheet of those conversations; json scores: one line saying what works instead
    out = tmp_path / "sheet.csv"
    result = CliRunner().invoke(
        make_app(), ["annotate", "export", str(runs), "--select", "uncertain", "5", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "Selected 20 of 240 scored conversations (uncertain 5 per run) from 4 run(s)" in result.stdout
    assert len(read_csv(out)) == 20
    json_runs, _, _ = write_study(tmp_path / "json", dist=False)
    result = CliRunner().invoke(
        make_app(),
        ["annotate", "export", str(json_runs), "--select", "uncertain", "5", "--out", str(tmp_path / "s2.csv")],
    )
    assert result.exit_code == 1
    assert (
        "error: the given runs: no p(1..5) distribution in the scores (json scoring); --select uncertain needs the "
        "weighted judge's (evaluate --judge-scoring weighted); --select stratified works without"
    ) in " ".join(result.stderr.split())
    result = CliRunner().invoke(
        make_app(),
        [
            "annotate",
            "export",
            str(runs),
            "--select",
            "uncertain",
            "5",
            "--top",
            "3",
            "--out",
            str(tmp_path / "s3.csv"),
        ],
    )
    assert result.exit_code == 2


def test_calibration_for_another_prompt_variant_is_refused(tmp_path):
    from wikihowagent.cli import app

    runs, al, _ = evaluated_study(tmp_path)
    p = runs / "run0" / "scores.jsonl"
    p.write_text(p.read_text().replace('"scoring": "weighted"', '"scoring": "weighted", "prompt": "plain"'))
    result = CliRunner().invoke(
        app,
        [
            "evaluate",
            str(runs / "run0"),
            "--no-judge",
            "--metrics",
            "BLEU",
            "--no-figures",
            "--calibration",
            str(al / "calibration.json"),
        ],
    )
    assert result.exit_code == 2
    assert "has 60 scores from judge local (weighted, prompt plain)" in " ".join(result.stderr.split())
