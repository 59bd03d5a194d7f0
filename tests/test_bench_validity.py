"""scripts/bench_validity.py's model-free tables: validity per tutorial set, the likelihood post-test, and the
human yardstick read pooled and within tutorials (known truth)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import bench_validity as BV  # noqa: E402


def test_human_rows_separate_pooled_from_within_tutorial(tmp_path):
    """Learning Gain that follows only which tutorial people liked: pooled r high, within-tutorial r ~ 0."""
    rng = np.random.default_rng(0)
    recs, people = [], []
    for t in range(10):
        liked = rng.normal()
        for k in range(7):
            cid = f"t{t}c{k}"
            recs.append(
                {
                    "conversation_id": cid,
                    "title": f"How to {t}",
                    "metrics": {
                        "Learning Gain": float(np.clip(0.2 * liked + rng.normal() * 0.01, -1, 1)),
                        "Likelihood Gain": float(rng.normal()),  # noise: no r pooled or within
                    },
                }
            )
            people.append(
                {
                    "conversation_id": cid,
                    "human_Overall": 3 + liked + rng.normal() * 0.3,
                    "human_Progress": 3 + rng.normal(),
                    "human_Clarity": 3 + rng.normal(),
                }
            )
    (tmp_path / "scores" / "run").mkdir(parents=True)
    (tmp_path / "scores" / "run" / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "align").mkdir()
    import pandas as pd

    pd.DataFrame(people).to_csv(tmp_path / "align" / "paired_scores.csv", index=False)
    rows = BV.human_rows(tmp_path / "scores", tmp_path / "align", ["Learning Gain"])
    overall = next(r for r in rows if r[1] == "Overall")
    assert overall[2:4] == ["70", "10"]
    pooled, within = float(overall[4].split()[0]), float(overall[5].split()[0])
    assert pooled > 0.8 and abs(within) < 0.3
    assert [r[:2] for r in rows] == [
        [m, h] for m in ("Learning Gain", "Likelihood Gain") for h in ("Overall", "Progress", "Clarity")
    ]
    noise = next(r for r in rows if r[:2] == ["Likelihood Gain", "Overall"])  # carried by the score files: added
    assert abs(float(noise[4].split()[0])) < 0.35


def test_validity_and_likelihood_rows_read_judge_check_outputs(tmp_path):
    import pandas as pd

    from wikihowagent.records import LikelihoodTest, PostTest, TestAnswer

    pd.DataFrame(
        [
            {
                "tutorials": "counterfactual",
                "perturbation": "skip_steps",
                "n": 20,
                "accuracy": 0.9,
                "ci_low": 0.8,
                "ci_high": 1.0,
                "lower": 17,
                "ties": 2,
                "mean_recall_original": 0.8,
                "mean_recall_perturbed": 0.5,
                "failed": 0,
                "abstained_original": None,
                "abstained_perturbed": None,
                "coverage_original": 0.9,
                "coverage_perturbed": 0.55,
            }
        ]
    ).to_csv(tmp_path / "posttest_validity_by_set.csv", index=False)
    pd.DataFrame(
        [
            {
                "perturbation": "skip_steps",
                "n": 20,
                "accuracy": 0.95,
                "ci_low": 0.85,
                "ci_high": 1.0,
                "lower": 19,
                "ties": 0,
                "mean_recall_original": 1.2,
                "mean_recall_perturbed": 0.4,
                "failed": 0,
                "judge_accuracy": None,
                "abstained_original": None,
                "abstained_perturbed": None,
            }
        ]
    ).to_csv(tmp_path / "posttest_likelihood_validity.csv", index=False)
    lines = [
        {
            "conversation_id": f"c{i}",
            "variant": "original",
            "posttest": PostTest(
                post=TestAnswer(steps=["x"]),
                likelihood=LikelihoodTest(
                    post=[-1.0, -1.0],
                    pre=[-2.0, -3.0],
                    post_tokens=[5, 5],
                    latency_s=10.0,
                    pre_latency_s=4.0 if i else 0.0,
                ),
            ).model_dump(mode="json"),
        }
        for i in range(3)
    ]
    (tmp_path / "posttests.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (row,) = BV.validity_rows(tmp_path)
    assert row[:4] == ["counterfactual", "skip_steps", "20", "0.900 [0.800, 1.000]"]
    assert row[-1] == "90.0 → 55.0"
    assert BV.coverage_cell(None, 0.5) == BV.coverage_cell(float("nan"), 0.5) == "–"  # written before it was recorded
    vrows, crow = BV.likelihood_rows(tmp_path)
    assert vrows[0][:4] == ["all", "skip_steps", "20", "0.950 [0.850, 1.000]"]
    assert crow == [["3", crow[0][1], "10.0", "4.0", "10"]] and crow[0][1].startswith("1.500 [")
    assert BV.likelihood_rows(tmp_path / "nowhere") == ([], [])


def test_likelihood_rows_read_evaluate_outputs(tmp_path):
    """Likelihood Gain per run from `evaluate --posttest-likelihood` (scores.jsonl + posttests.jsonl beside it),
    and two runs on the same tutorials paired by tutorial."""
    from fake_servers import FakeOpenAI
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    def seen(token, before):
        w = token.strip().lower().strip(".,")
        return -0.5 if w and w in before.lower() else -4.0

    runs = [tmp_path / "a", tmp_path / "b"]
    with FakeOpenAI(text_logprob=seen) as srv:
        for run in runs:
            gen = ["generate", "--teacher", "openai:fake-model", "--base-url", srv.base_url, "--no-posttest"]
            res = CliRunner().invoke(app, [*gen, "--out", str(run), "--max-tutorials", "3", "--retries", "0"])
            assert res.exit_code == 0, res.output
            ev = ["evaluate", str(run), "--no-judge", "--no-figures", "--bootstrap", "0", "--base-url", srv.base_url]
            res = CliRunner().invoke(app, [*ev, "--posttest-learner", "openai:fake-model", "--posttest-likelihood"])
            assert res.exit_code == 0, res.output
    rows, prows = BV.run_likelihood_rows(runs)
    assert [r[:2] for r in rows] == [["a", "3"], ["b", "3"]]
    assert float(rows[0][2].split()[0]) > 0  # the lesson states the steps
    assert prows and prows[0][:2] == ["a − b", "3"]


def test_verbatim_lessons_are_records_judge_check_reads(tmp_path):
    """`lessons`: one verbatim full lesson per validity tutorial; judge-check's post-test validity runs on it
    (here with a learner that recalls exactly what it was taught: skip_steps and off_topic always lower)."""
    import re

    import pandas as pd
    from fake_servers import FakeOpenAI
    from typer.testing import CliRunner

    from wikihowagent.cli import app
    from wikihowagent.runs import read_conversations

    assert BV.lessons(BV.VALIDITY_SET, tmp_path / "cf.jsonl") == 22
    convs = list(read_conversations(tmp_path / "cf.jsonl"))
    assert len(convs) == 22 and all(c.completed for c in convs)
    c = convs[0]
    assert [t.step for t in c.turns if t.role == "teacher" and t.kind == "model"] == list(range(len(c.steps)))

    def learner(prompt):
        if "This was your lesson" in prompt:
            return "\n".join(f"{i}. {t}" for i, t in enumerate(re.findall(r"Teacher: Step \d+: (.*)", prompt), 1))
        return "I have no idea."

    with FakeOpenAI(reply=learner) as srv:
        res = CliRunner().invoke(
            app,
            [
                "judge-check",
                str(tmp_path / "cf.jsonl"),
                "--out",
                str(tmp_path / "check"),
                "--posttest-learner",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--tutorials",
                str(BV.VALIDITY_SET),
            ],
        )
    assert res.exit_code == 0, res.output
    t = pd.read_csv(tmp_path / "check" / "posttest_validity_by_set.csv").set_index("perturbation")
    assert set(t["tutorials"]) == {"counterfactual"} and (t["n"] >= 20).all()
    assert t.loc["skip_steps", "accuracy"] == 1.0 and t.loc["off_topic", "accuracy"] > 0.9

    # Learning Gain of the full lessons: a title-only pre-test that knew the first step only -> recall 1/k before,
    # 1 after (the learner above writes every step it was taught): the gain is known per tutorial.
    from wikihowagent.corpus.core import load_tutorials
    from wikihowagent.records import TestAnswer
    from wikihowagent.runs import PretestCache
    from wikihowagent.workflow.posttest import get_prompt

    tuts = load_tutorials(BV.VALIDITY_SET)
    with PretestCache(tmp_path / "premise") as cache:
        for tut in tuts[:-2]:  # two tutorials without a pre-test: left out, not counted
            cache.put("openai:fake-model", tut.tutorial_id, get_prompt(None).version, TestAnswer(steps=tut.steps[:1]))
    rows = BV.lesson_gain_rows(tmp_path / "premise", tmp_path / "check", "openai:fake-model", [BV.VALIDITY_SET])
    expected = 100 * float(np.mean([1 - 1 / len(tut.steps) for tut in tuts[:-2]]))
    assert [r[:2] for r in rows] == [["counterfactual", "20"]]
    assert abs(float(rows[0][4].split()[0]) - expected) < 0.1 and float(rows[0][3]) == 100.0


def test_scores_rows(tmp_path):
    recs = [
        {"conversation_id": f"c{i}", "metrics": {"Learning Gain": 0.1 * i, "Detail Gain": None, "Step Recall": 0.5}}
        for i in range(4)
    ]
    (tmp_path / "s" / "cf").mkdir(parents=True)
    (tmp_path / "s" / "cf" / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (row,) = BV.scores_rows(tmp_path / "s")
    assert row[:2] == ["cf", "4"] and row[2].startswith("15.0 [") and row[2].endswith("(n=4)")
    assert row[3].startswith("–") and row[3].endswith("(n=0)") and row[4].startswith("50.0 [")


def test_kind_cost_rows_per_post_test_kind(tmp_path):
    """The recall post-test's and the likelihood post-test's seconds and tokens, from posttests.jsonl files in
    the run directories under a folder; a failed answer or an unread likelihood post-test is not a cost row."""
    from wikihowagent.records import LikelihoodTest, PostTest, TestAnswer
    from wikihowagent.runs import POSTTESTS

    def line(cid, post_s, lik):
        t = PostTest(
            model="local",
            post=TestAnswer(text="1. a", steps=["a"], prompt_tokens=1000, completion_tokens=50, latency_s=post_s),
            likelihood=lik,
        )
        return json.dumps({"conversation_id": cid, "posttest": t.model_dump()}) + "\n"

    read = LikelihoodTest(transport="grammar", post=[-1.0], pre=[-2.0], post_tokens=[300], pre_tokens=[290])
    run = tmp_path / "scores" / "run-a"
    run.mkdir(parents=True)
    (run / POSTTESTS).write_text(
        line("c1", 20.0, read.model_copy(update={"latency_s": 100.0, "pre_latency_s": 80.0}))
        + line("c2", 40.0, read.model_copy(update={"latency_s": 200.0, "pre_latency_s": 0.0}))  # title read reused
        + line("c3", 30.0, LikelihoodTest(transport="grammar", error="no log-probabilities"))
        + line("c4", 0.0, None)  # no timing: left out
    )
    recall, lesson, title = BV.kind_cost_rows([tmp_path / "scores", run])  # a file found twice counts once
    assert recall[0].startswith("recall") and recall[1:] == ["3", "30.0 [20, 40]", "prompt 1000, answer 50"]
    assert "lesson" in lesson[0] and lesson[1:] == ["2", "150.0 [100, 200]", "forced 300"]
    assert "title" in title[0] and title[1:] == ["1", "80.0 [80, 80]", "forced 290"]
