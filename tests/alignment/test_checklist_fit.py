"""align --fit-checklist: non-negative item weights shrunk toward uniform, out of fold by tutorial; the
weights file and evaluate --checklist-weights (refused for another judge or checklist)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from wikihowagent.alignment.checklist_fit import fit_weights, out_of_fold, predict
from wikihowagent.judge.checklist import load_checklist
from wikihowagent.judge.rubric_judge import load_rubrics
from wikihowagent.records import ChecklistItemScore, JudgeProvenance, ScoreRecord

RUBRICS = list(load_rubrics())
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation"


def test_weights_find_the_informative_item_and_stay_non_negative():
    rng = np.random.default_rng(0)
    n = 80
    truth = rng.uniform(0, 1, n)
    x = np.column_stack([truth + rng.normal(0, 0.05, n), rng.uniform(0, 1, n), rng.uniform(0, 1, n)]).clip(0, 1)
    y = 1 + 4 * truth
    w = fit_weights(x, y, shrinkage=0.1)
    assert (w >= 0).all() and w.mean() == pytest.approx(1.0)
    assert w[0] > 2 * max(w[1], w[2])
    strong = fit_weights(x, y, shrinkage=100.0)  # strong shrinkage: close to uniform
    assert np.abs(strong - 1).max() < np.abs(w - 1).max()
    assert predict(x[:1], np.ones(3))[0] == pytest.approx(1 + 4 * x[0].mean())
    assert np.isnan(predict(np.array([[np.nan, np.nan, np.nan]]), np.ones(3))[0])


def test_random_labels_give_nothing_out_of_fold():
    rng = np.random.default_rng(3)
    n = 120
    x = rng.uniform(0, 1, (n, 4))
    y = rng.uniform(1, 5, n)
    groups = np.repeat(np.arange(12), 10)
    oof = out_of_fold(x, y, groups, shrinkage=1.0)
    assert abs(np.corrcoef(oof, y)[0, 1]) < 0.2


# ---------------------------------------------------------------------------- align end to end


def _study(tmp_path, judge="local", n=48, tutorials=8):
    """A scores.jsonl of checklist scores (item 1 of every rubric tracks the people, the others are noise)
    and two human sheets."""
    cl = load_checklist(None, RUBRICS)
    rng = np.random.default_rng(1)
    run = tmp_path / "run"
    run.mkdir()
    humans = [[], []]
    lines = []
    for i in range(n):
        quality = rng.uniform(0, 1)
        items, metrics = [], {}
        for r, its in cl.rubric_items.items():
            goods = []
            for k, it in enumerate(its):
                g = float(np.clip(quality + rng.normal(0, 0.05), 0, 1)) if k == 0 else float(rng.uniform(0, 1))
                p_yes = g if it.polarity == "yes-good" else 1 - g
                items.append(
                    ChecklistItemScore(
                        id=f"rubric:{r}:{it.id}",
                        rubrics=[r],
                        polarity=it.polarity,
                        p_yes=round(p_yes, 4),
                        mass=1.0,
                        good=round(g, 4),
                    )
                )
                goods.append(g)
            metrics[r] = 1 + 4 * float(np.mean(goods))
        cid = f"c{i}"
        rec = ScoreRecord(
            conversation_id=cid,
            run="run",
            tutorial_id=f"t{i % tutorials}",
            title=f"T{i % tutorials}",
            metrics=metrics,
            judge=JudgeProvenance(
                evaluator=judge,
                scoring="checklist",
                prompt=f"checklist {cl.ident}",
                checklist=cl.ident,
                checklist_weights="uniform",
                items=items,
            ),
        )
        lines.append(rec.model_dump_json())
        for h in (0, 1):
            humans[h].append([cid] + [int(np.clip(round(1 + 4 * quality + rng.normal(0, 0.3)), 1, 5)) for _ in RUBRICS])
    (run / "scores.jsonl").write_text("\n".join(lines) + "\n")
    paths = []
    for h in (0, 1):
        p = tmp_path / f"judge_{h + 1}.csv"
        with p.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["conversation_id", *RUBRICS])
            w.writerows(humans[h])
        paths.append(p)
    return run, paths, cl


def test_align_fit_checklist_writes_weights_that_evaluate_applies_or_refuses(tmp_path):
    from wikihowagent.cli import app

    run, humans, cl = _study(tmp_path)
    out = tmp_path / "align"
    res = CliRunner().invoke(
        app,
        [
            "align",
            "-H",
            str(humans[0]),
            "-H",
            str(humans[1]),
            "--scores",
            str(run),
            "--out",
            str(out),
            "--no-figures",
            "--fit-checklist",
            "--bootstrap",
            "200",
        ],
    )
    assert res.exit_code == 0, res.output
    w = json.loads((out / "checklist_weights.json").read_text())
    assert w["kind"] == "wikihowagent-checklist-weights" and w["judge"] == "local" and w["checklist"] == cl.ident
    first = {r: its[0].id for r, its in cl.rubric_items.items()}
    for r, ws in w["weights"].items():
        assert all(v >= 0 for v in ws.values())
        top = max(ws, key=ws.get)
        assert top == f"rubric:{r}:{first[r]}", (r, ws)
    rows = {r["rubric"]: r for r in csv.DictReader((out / "checklist_fit.csv").open())}
    assert float(rows["Overall"]["fitted_r"]) > float(rows["Overall"]["uniform_r"])
    assert "out of fold" in (out / "checklist_fit.md").read_text()

    # evaluate --checklist-weights: refused for another judge, or another checklist
    from fake_servers import FakeOpenAI

    conv = tmp_path / "run_small"
    shutil.copytree(FIXTURES / "run_small", conv)
    base = ["evaluate", str(conv), "--judge-scoring", "checklist", "--metrics", "Clarity", "--no-figures"]
    other = dict(w, checklist="0@000000000000", judge="openai:fake-model")
    (tmp_path / "other.json").write_text(json.dumps(other))
    mine = dict(w, judge="openai:fake-model")
    (tmp_path / "mine.json").write_text(json.dumps(mine))

    def judge(prompt):
        q = prompt.split("Question: ")[1].split("\n")[0]
        p = 0.9 if q == cl.rubric_items["Clarity"][0].text else 0.5
        return [("Yes", {"Yes": p, "No": 1 - p})]

    with FakeOpenAI(logprobs=judge) as srv:
        res = CliRunner().invoke(
            app,
            base
            + [
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--checklist-weights",
                str(out / "checklist_weights.json"),
            ],
        )
        assert res.exit_code == 2 and "fitted for judge 'local', not 'openai:fake-model'" in " ".join(
            res.output.split()
        )
        res = CliRunner().invoke(
            app,
            base
            + [
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--checklist-weights",
                str(tmp_path / "other.json"),
            ],
        )
        assert res.exit_code == 2 and "fitted for checklist '0@000000000000'" in " ".join(res.output.split())
        assert not (conv / "scores.jsonl").exists()
        res = CliRunner().invoke(app, base + ["--evaluator", "openai:fake-model", "--base-url", srv.base_url])
        assert res.exit_code == 0, res.output
        uniform = {
            json.loads(x)["conversation_id"]: json.loads(x) for x in (conv / "scores.jsonl").read_text().splitlines()
        }
        n_requests = len(srv.requests)
        res = CliRunner().invoke(
            app,
            base
            + [
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--checklist-weights",
                str(tmp_path / "mine.json"),
            ],
        )
        assert res.exit_code == 0, res.output
        assert len(srv.requests) == n_requests  # weighed again from the stored items: no model call
        assert "weighed again from their stored items" in " ".join(res.output.split())
    fitted = {json.loads(x)["conversation_id"]: json.loads(x) for x in (conv / "scores.jsonl").read_text().splitlines()}
    for cid, rec in fitted.items():
        assert rec["judge"]["checklist_weights"].startswith("fitted:")
        assert uniform[cid]["judge"]["checklist_weights"] == "uniform"
        assert rec["metrics"]["Clarity"] != pytest.approx(uniform[cid]["metrics"]["Clarity"])
        ws = mine["weights"]["Clarity"]
        goods = [(i["id"], i["good"]) for i in rec["judge"]["items"] if "Clarity" in i["rubrics"]]
        want = 1 + 4 * sum(ws[k] * g for k, g in goods) / sum(ws[k] for k, _ in goods)
        assert rec["metrics"]["Clarity"] == pytest.approx(want, abs=1e-3)


@pytest.mark.parametrize(
    "mutate, expect",
    [
        (lambda w: w.update(kind="x"), "not a checklist weights file"),
        (lambda w: w["weights"]["Clarity"].update({"rubric:Clarity:x": -1}), "weight must be a number >= 0"),
        (lambda w: w["weights"].update(Clarity={k: 0 for k in w["weights"]["Clarity"]}), "every weight is 0"),
    ],
)
def test_bad_weights_files_are_one_line_errors(tmp_path, mutate, expect):
    from wikihowagent.judge.checklist import ChecklistError, load_weights

    w = {
        "kind": "wikihowagent-checklist-weights",
        "judge": "local",
        "checklist": "1@x",
        "weights": {"Clarity": {"rubric:Clarity:a": 1.0, "rubric:Clarity:b": 0.5}},
    }
    mutate(w)
    p = tmp_path / "w.json"
    p.write_text(json.dumps(w))
    with pytest.raises(ChecklistError, match=expect):
        load_weights(p)
