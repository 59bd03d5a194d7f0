"""Tables 1/2 and --baseline with statistics: bootstrap CIs over tutorials in every cell, Table 2's arrows
from a paired test by tutorial with Holm's correction (≈ otherwise), the paper's raw arrows in paper mode."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from wikihowagent.scores.paper_tables import paper_tables
from wikihowagent.scores.significance import TableStats
from wikihowagent.scores.summary import by_domain, load_run_scores, summarize, write_summary

METRICS = ("BLEU", "Clarity", "Depth", "Engagement")
RUBRICS = ["Clarity", "Depth", "Engagement"]


def _truth(n_tut: int, rng) -> dict[str, dict[str, float]]:
    return {
        f"tut-{t}": {
            "BLEU": rng.uniform(0.1, 0.4),
            "Clarity": rng.uniform(2.5, 4.5),
            "Depth": rng.uniform(2, 4),
            "Engagement": rng.uniform(2, 4.5),
        }
        for t in range(n_tut)
    }


def _scores(
    path: Path, run: str, truth, rng, per: int = 2, shift: dict[str, float] | None = None, noise: float = 0.3
) -> Path:
    """A scores file: every tutorial's truth + independent noise (a seed-only difference between runs)."""
    rows = []
    for t, vals in truth.items():
        for k in range(per):
            m = {
                name: v + (0.05 if name == "BLEU" else 1) * noise * rng.normal() + (shift or {}).get(name, 0.0)
                for name, v in vals.items()
            }
            rows.append(
                {"conversation_id": f"{run}-{t}-{k}", "tutorial_id": t, "run": run, "domain": "Health", "metrics": m}
            )
    path.mkdir(parents=True, exist_ok=True)
    (path / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path / "scores.jsonl"


def _runs(tmp_path, shift=None, n_tut=15, seed=0):
    rng = np.random.default_rng(seed)
    truth = _truth(n_tut, rng)
    homo = load_run_scores("T-a_L-a", "T-a L-a", _scores(tmp_path / "aa", "T-a_L-a", truth, rng))
    hetero = load_run_scores("T-a_L-b", "T-a L-b", _scores(tmp_path / "ab", "T-a_L-b", truth, rng, shift=shift))
    return homo, hetero, {"T-a_L-a": ("a", "a"), "T-a_L-b": ("a", "b")}


def test_table2_on_runs_differing_only_in_seed_is_approx_everywhere(tmp_path):
    for seed in range(5):
        homo, hetero, setups = _runs(tmp_path / str(seed), seed=seed)
        tables = dict((stem, s) for stem, _, s in paper_tables([homo, hetero], setups, RUBRICS, TableStats(n_boot=200)))
        for row in tables["table2"].table:
            assert set(row["arrows"].values()) == {"≈"}, (seed, row["run"], row["arrows"])
            assert set(row["arrows"]) == set(METRICS)


def test_a_copy_shifted_on_one_metric_gets_the_arrow_with_p_and_effect_size(tmp_path):
    homo, hetero, setups = _runs(tmp_path, shift={"Clarity": 0.5})
    t2 = next(
        s for stem, _, s in paper_tables([homo, hetero], setups, RUBRICS, TableStats(n_boot=500)) if stem == "table2"
    )
    row = t2.table[0]
    assert row["arrows"]["Clarity"] == "↑"
    assert {m: a for m, a in row["arrows"].items() if m != "Clarity"} == {"BLEU": "≈", "Depth": "≈", "Engagement": "≈"}
    p = row["paired"]["Clarity"]
    assert p.n == 15 and p.p_holm < 0.05 and p.ci_low < 0.5 < p.ci_high and p.diff == pytest.approx(0.5, abs=0.2)
    write_summary(t2, tmp_path / "t2")
    rec = next(csv.DictReader((tmp_path / "t2" / "summary.csv").open()))
    assert rec["Clarity vs baseline"] == "↑" and int(rec["Clarity pairs"]) == 15
    assert float(rec["Clarity diff"]) == pytest.approx(p.diff, abs=1e-4)
    assert float(rec["Clarity diff ci_low"]) < float(rec["Clarity diff"]) < float(rec["Clarity diff ci_high"])
    assert float(rec["Clarity p"]) <= float(rec["Clarity p_holm"]) < 0.05
    assert float(rec["BLEU (%) p_holm"]) >= 0.05
    md = (tmp_path / "t2" / "summary.md").read_text()
    assert "paired by tutorial" in md and "Holm" in md


def test_paper_mode_keeps_the_papers_raw_arrows(tmp_path):
    homo, hetero, setups = _runs(tmp_path)
    raw = dict(
        (stem, s) for stem, _, s in paper_tables([homo, hetero], setups, RUBRICS, TableStats(n_boot=0, paired=False))
    )
    none = dict((stem, s) for stem, _, s in paper_tables([homo, hetero], setups, RUBRICS))
    for tables in (raw, none):
        base = tables["table1"].table[0]
        row = tables["table2"].table[0]
        for m in METRICS:
            a, b = row[m][0], base[m][0]
            assert row["arrows"][m] == ("↑" if a > b + 1e-12 else "↓" if a < b - 1e-12 else "=")
        assert "ci" not in row or row["ci"] == {}
    assert {a for row in raw["table2"].table for a in row["arrows"].values()} <= {"↑", "↓", "="}


def test_every_cell_and_by_table_has_a_ci_over_tutorials(tmp_path):
    homo, hetero, _ = _runs(tmp_path)
    s = summarize([homo, hetero], RUBRICS, stats=TableStats(n_boot=300, seed=1))
    for row in s.table:
        for m in METRICS:
            lo, hi = row["ci"][m]
            assert lo <= row[m][0] <= hi
    over = s.table[-1]
    assert over["run"] == "Overall" and over["ci"]["BLEU"][1] - over["ci"]["BLEU"][0] > 0
    again = summarize([homo, hetero], RUBRICS, stats=TableStats(n_boot=300, seed=1))
    assert again.table[0]["ci"] == s.table[0]["ci"]  # the seed fixes the resamples
    df = by_domain([homo], RUBRICS, stats=TableStats(n_boot=300))
    r = df.iloc[0]
    assert r["Clarity ci_low"] <= r["Clarity"] <= r["Clarity ci_high"]
    assert r["Rubric mean ci_low"] <= r["Rubric mean"] <= r["Rubric mean ci_high"]
    assert "Clarity ci_low" not in by_domain([homo], RUBRICS)


def test_evaluate_baseline_cli_pairs_by_tutorial(tmp_path):
    """`evaluate A B --baseline A` on two copies of a run: identical scores, ≈ everywhere, CIs in the CSV."""
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation" / "run_small"
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        shutil.copytree(fixture, d)
        info = json.loads((d / "run.json").read_text())
        (d / "run.json").write_text(json.dumps({**info, "name": d.name}))
    res = CliRunner().invoke(
        app,
        [
            "evaluate",
            str(a),
            str(b),
            "--baseline",
            str(a),
            "--no-judge",
            "--no-figures",
            "--metrics",
            "Question Ratio,Completion",
            "--out",
            str(tmp_path / "out"),
            "--bootstrap",
            "100",
            "--seed",
            "3",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = {r["run"]: r for r in csv.DictReader((tmp_path / "out" / "summary.csv").open())}
    assert rows["b"]["Question (%) vs baseline"] == "≈" and float(rows["b"]["Question (%) p"]) == 1.0
    assert float(rows["b"]["Question (%) diff"]) == 0.0 and rows["a"].get("Question (%) vs baseline", "") == ""
    assert (
        float(rows["a"]["Question (%) ci_low"])
        <= float(rows["a"]["Question (%) mean"])
        <= float(rows["a"]["Question (%) ci_high"])
    )
    assert math.isfinite(float(rows["Overall"]["Completion (%) ci_low"]))


def _three(tmp_path, shifts: dict[str, dict[str, float]], n_tut: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    truth = _truth(n_tut, rng)
    for vals in truth.values():
        vals["Echo Rate"] = rng.uniform(0.2, 0.5)
    return [
        load_run_scores(name, name, _scores(tmp_path / name, name, truth, rng, shift=shifts.get(name)))
        for name in ("a", "b", "c")
    ]


def test_best_run_is_named_only_where_a_paired_test_beats_every_other_run(tmp_path):
    """The report marks the best run per metric only where the difference is significant: Holm
    across the table's tests; "lower" metrics (Echo Rate) pick the lowest mean."""
    from wikihowagent.metrics.computational import better
    from wikihowagent.scores.significance import best_runs

    runs = _three(tmp_path, {"b": {"Clarity": 1.0}, "c": {"Echo Rate": -1.0}})
    s = summarize(runs, RUBRICS, stats=TableStats(n_boot=0))
    rows = [r for r in s.table if r["run"] != "Overall"]
    tables = {r.name: r.table for r in runs}
    direction = {m: better(m) for m in s.columns}
    assert direction["Echo Rate"] == "lower" and direction["Clarity"] == direction["BLEU"] == "higher"
    assert best_runs(rows, tables, s.columns, direction, TableStats()) == {"Clarity": "b", "Echo Rate": "c"}
    # read the other way round, the lowest Echo Rate is no longer best: nothing beats both others upwards
    flipped = {**direction, "Echo Rate": "higher"}
    assert "Echo Rate" not in best_runs(rows, tables, s.columns, flipped, TableStats())
    # seed-only differences: nothing marked; the paper's view and a single run: nothing to compare
    same = _three(tmp_path / "same", {})
    s2 = summarize(same, RUBRICS, stats=TableStats(n_boot=0))
    assert (
        best_runs(
            [r for r in s2.table if r["run"] != "Overall"],
            {r.name: r.table for r in same},
            s2.columns,
            direction,
            TableStats(),
        )
        == {}
    )
    assert best_runs(rows, tables, s.columns, direction, TableStats(paired=False)) == {}
    assert best_runs(rows[:1], tables, s.columns, direction, TableStats()) == {}


def test_a_best_run_must_beat_every_other_run_not_only_the_worst(tmp_path):
    """b and c both far above a on Clarity but not different from each other: no best run."""
    from wikihowagent.scores.significance import best_runs

    runs = _three(tmp_path, {"b": {"Clarity": 1.0}, "c": {"Clarity": 1.0}})
    s = summarize(runs, RUBRICS, stats=TableStats(n_boot=0))
    got = best_runs(
        [r for r in s.table if r["run"] != "Overall"],
        {r.name: r.table for r in runs},
        s.columns,
        {m: "higher" for m in s.columns},
        TableStats(),
    )
    assert "Clarity" not in got
