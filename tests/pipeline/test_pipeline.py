"""The whole pipeline through the CLI, chained: generate -> evaluate -> annotate export -> align, every model
call answered by one scripted OpenAI-compatible server on loopback (teacher, learner and judge)."""

from __future__ import annotations

import csv
import json
import re
import zlib

from fake_servers import FakeOpenAI, scripted_reply
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.judge.rubric_judge import load_rubrics
from wikihowagent.layout import CONVERSATIONS, RUN_INFO, SCORES
from wikihowagent.runs import read_conversations, read_run_info, read_scores

RUBRICS = list(load_rubrics())


def judge_score(prompt: str) -> int:
    """A deterministic 1-5 score that differs between conversations (so correlations are defined)."""
    convo = prompt.split("Evaluate the following", 1)[-1]
    return 1 + zlib.crc32(convo.encode()) % 5


def reply(prompt: str) -> str:
    if "Evaluate the following" in prompt:  # the judge: every rubric the prompt names, as the JSON asked for
        named = [r for r in RUBRICS if re.search(rf"\b{r}\b", prompt)]
        return json.dumps({r: judge_score(prompt + r) for r in named})
    return scripted_reply(prompt)


def test_generate_evaluate_export_align_chained(tmp_path):
    runner = CliRunner()
    env = {"OPENAI_COMPATIBLE_API_KEY": "sk-test-compat"}
    run, study = tmp_path / "runs" / "T-fake_L-fake_E-fake", tmp_path / "study"
    with FakeOpenAI(reply=reply) as srv:
        res = runner.invoke(
            app,
            [
                "generate",
                "--teacher",
                "openai:fake-model",
                "--evaluator",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--out",
                str(run),
                "--max-tutorials",
                "8",
                "--concurrency",
                "2",
                "--retries",
                "0",
            ],
            env=env,
        )
        assert res.exit_code == 0, res.output
        n_generate = len(srv.requests)
        res = runner.invoke(
            app,
            [
                "evaluate",
                str(run),
                "--base-url",
                srv.base_url,
                "--metrics",
                "rubric,BLEU",
                "--judge-scoring",
                "json",
                "--retries",
                "0",
                "--no-figures",
            ],
            env=env,
        )
        assert res.exit_code == 0, res.output
        judge_calls = len(srv.requests) - n_generate
    info = read_run_info(run)
    assert info.evaluator == "openai:fake-model" and info.counts["conversations"] == 8 and info.status == "complete"
    convs = list(read_conversations(run, info.name))
    scores = read_scores(run / SCORES)
    assert len(convs) == 8 and set(scores) == {c.conversation_id for c in convs}
    assert judge_calls >= 8  # every conversation judged by the run's evaluator, through the server
    for s in scores.values():
        assert s.judge is not None and s.judge.evaluator == "openai:fake-model" and not s.judge.failures
        assert set(RUBRICS) | {"BLEU"} == set(s.metrics) and all(1 <= s.metrics[r] <= 5 for r in RUBRICS)

    # the (blind) annotation sheet: the 6 best tutorials of this run (one conversation each), and its key
    sheet = study / "sheet.csv"
    res = runner.invoke(app, ["annotate", "export", str(run), "--top", "6", "--out", str(sheet)])
    assert res.exit_code == 0, res.output
    assert sheet.with_suffix(".html").exists()
    with sheet.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    with (study / "sheet.key.csv").open(newline="") as fh:
        key = {r["blind_id"]: r["conversation_id"] for r in csv.DictReader(fh)}
    assert len(rows) == 6 and {r["filename"] for r in rows} == {""}  # blind: no run name
    assert set(key) == {r["conversation_id"] for r in rows} and set(key.values()) <= set(scores)

    # two judges fill in copies: Alice agrees with the LLM judge, Bob is one point harsher except on Depth
    for name, shift in (("alice", 0), ("bob", -1)):
        with (study / f"{name}.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            for r in rows:
                llm = scores[key[r["conversation_id"]]].metrics
                filled = {m.lower(): str(max(1, int(llm[m]) + (0 if m == "Depth" else shift))) for m in RUBRICS}
                w.writerow({**r, **filled})
    out = study / "alignment"
    res = runner.invoke(
        app,
        [
            "align",
            "-H",
            str(study / "alice.csv"),
            "-H",
            str(study / "bob.csv"),
            "--runs-dir",
            str(run.parent),
            "--out",
            str(out),
            "--bootstrap",
            "50",
            "--no-figures",
        ],
    )
    assert res.exit_code == 0, res.output
    with (out / "correlations.csv").open(newline="") as fh:
        corr = {r["metric"]: r for r in csv.DictReader(fh)}
    assert set(RUBRICS) <= set(corr) and all(int(corr[m]["n"]) == 6 for m in RUBRICS)
    # Depth: both judges gave the LLM's score, so human mean == LLM exactly
    assert float(corr["Depth"]["pearson_r"]) == 1.0
    assert (out / "agreement.csv").exists() and (out / "paired_scores.csv").exists()
    assert not list(run.glob(f"{CONVERSATIONS}*.tmp")) and (run / RUN_INFO).exists()
