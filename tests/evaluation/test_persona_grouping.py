"""`evaluate --by persona` and `align --by persona` group conversations by the learner persona."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
from builders import make_run, sheet_rows, write_sheet  # noqa: E402
from fake_servers import FakeOpenAI  # noqa: E402

from wikihowagent.cli import app  # noqa: E402


def test_evaluate_by_persona(tmp_path):
    run = tmp_path / "run"

    def reply(prompt):
        if "Reply with the question only" in prompt:
            return "Why do we do that?"
        if "Step" in prompt and "teach" in prompt.lower():
            return "Here is how to do this step."
        return "Okay, next step please."

    with FakeOpenAI(reply=reply) as srv:
        res = CliRunner().invoke(
            app,
            [
                "generate",
                "--teacher",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--out",
                str(run),
                "--max-tutorials",
                "4",
                "--learner-persona",
                "curious",
                "--learner-persona",
                "passive",
            ],
        )
        assert res.exit_code == 0, res.output
    records = [json.loads(x) for x in (run / "conversations.jsonl").read_text().splitlines()]
    assert sorted(r["persona"] for r in records) == ["curious", "curious", "passive", "passive"]
    assert json.loads((run / "run.json").read_text())["fingerprint"]["personas"].keys() == {"curious", "passive"}
    res = CliRunner().invoke(
        app,
        [
            "evaluate",
            str(run),
            "--no-judge",
            "--metrics",
            "Question Ratio,Completion",
            "--no-figures",
            "--by",
            "persona",
        ],
    )
    assert res.exit_code == 0, res.output
    lines = (run / "by_persona.csv").read_text().splitlines()
    assert lines[0].startswith("run,label,persona,n,Question (%)")
    rows = {line.split(",")[2]: float(line.split(",")[4]) for line in lines[1:]}
    assert rows["passive"] == 0.0 and rows["curious"] > 30.0
    assert "Per persona" in res.output
    bad = CliRunner().invoke(app, ["evaluate", str(run), "--no-judge", "--by", "colour"])
    assert bad.exit_code == 2 and "'domain' or 'persona'" in bad.output


def test_align_by_persona(tmp_path):
    runs = tmp_path / "runs"
    tuts = [f"t{i}" for i in range(20)]
    ids = make_run(runs, "r", tuts, rng=np.random.default_rng(1))
    scores = runs / "r" / "scores.jsonl"
    recs = [json.loads(x) for x in scores.read_text().splitlines()]
    for i, rec in enumerate(recs):
        rec["persona"] = "curious" if i % 2 else "passive"
    scores.write_text("".join(json.dumps(r) + "\n" for r in recs))
    llm = np.array(
        [
            [
                r["metrics"][m]
                for m in (
                    "Clarity",
                    "Truthfulness",
                    "Engagement",
                    "Coherence",
                    "Depth",
                    "Relevance",
                    "Progress",
                    "Naturalness",
                )
            ]
            for r in recs
        ]
    )
    sheet = write_sheet(tmp_path / "h.csv", sheet_rows([ids[t] for t in tuts], np.clip(llm + 1, 1, 5)))
    out = tmp_path / "out"
    res = CliRunner().invoke(
        app,
        [
            "align",
            "-H",
            str(sheet),
            "--runs-dir",
            str(runs),
            "--out",
            str(out),
            "--bootstrap",
            "0",
            "--by",
            "persona",
            "--no-figures",
        ],
    )
    assert res.exit_code == 0, res.output
    text = (out / "correlations.csv").read_text()
    assert "persona,curious,Clarity,10," in text and "persona,passive,Clarity,10," in text
