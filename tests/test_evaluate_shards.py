"""`evaluate --shard K/N` + `merge`: merged scores equal the unsharded ones exactly; incomplete or mixed
score shards are refused in one line."""

from __future__ import annotations

import functools
import json

import pytest
from fake_servers import FakeOpenAI, scripted_reply
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.evaluation import core as eval_core
from wikihowagent.evaluation import runner as eval_runner

runner = CliRunner()


def flat(res) -> str:
    """The output with line wrapping undone (rich wraps at 80 columns without a terminal)."""
    return " ".join(res.output.split())


RUBRICS = ["Clarity", "Engagement", "Coherence", "Depth", "Relevance", "Progress", "Naturalness", "Truthfulness"]


def reply(prompt: str) -> str:
    if "Clarity" in prompt or "Truthfulness" in prompt:  # the judge: a score per rubric it was asked about
        return json.dumps({r: 1 + len(prompt) % 5 for r in RUBRICS if r in prompt})
    return scripted_reply(prompt)


def scores(path):
    return {json.loads(line)["conversation_id"]: json.loads(line) for line in path.read_text().splitlines()}


@pytest.mark.slow  # loads the MiniLM embedding model
def test_sharded_scores_merged_equal_unsharded(tmp_path, monkeypatch):
    # blocks of 4 conversations instead of 64, so that 13 conversations make several blocks per shard
    monkeypatch.setattr(
        eval_core, "EvalOptions", functools.partial(eval_runner.EvalOptions, chunk=4)
    )  # where evaluate makes them
    run = tmp_path / "run"
    with FakeOpenAI(reply=reply) as srv:
        res = runner.invoke(
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
                "13",
                "--concurrency",
                "4",
            ],
        )
        assert res.exit_code == 0, res.output
        common = [
            "--judge-scoring",
            "json",
            "--evaluator",
            "openai:fake-model",
            "--base-url",
            srv.base_url,
            "--no-figures",
        ]
        for k in range(3):
            res = runner.invoke(app, ["evaluate", str(run), "--shard", f"{k}/3", *common])
            assert res.exit_code == 0, res.output
        res = runner.invoke(app, ["evaluate", str(run), "--out", str(tmp_path / "whole"), *common])
        assert res.exit_code == 0, res.output
    parts = [scores(run / "score-shards" / f"{k}-of-3" / "scores.jsonl") for k in range(3)]
    assert all(parts) and sum(len(p) for p in parts) == 13
    res = runner.invoke(app, ["merge", str(run)])
    assert res.exit_code == 0 and "merged 3 score shards into 13 score records" in flat(res)
    merged, whole = scores(run / "scores.jsonl"), scores(tmp_path / "whole" / "run" / "scores.jsonl")
    assert merged == whole  # every metric, bit for bit, and the judge's replies
    assert all(r["metrics"]["Embedding Cosine"] is not None and r["metrics"]["Clarity"] for r in merged.values())


def generated(run, n: int):
    """A run of `n` conversations made against the scripted fake server."""
    with FakeOpenAI(reply=reply) as srv:
        res = runner.invoke(
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
                str(n),
            ],
        )
        assert res.exit_code == 0, res.output
    return run


def test_score_merge_refuses_missing_and_mixed_shards(tmp_path):
    run = generated(tmp_path / "run", 3)
    common = ["--no-judge", "--no-figures", "--metrics", "BLEU,Completion"]
    assert runner.invoke(app, ["evaluate", str(run), "--shard", "0/2", *common]).exit_code == 0
    res = runner.invoke(app, ["merge", str(run)])
    assert res.exit_code == 2 and "1 of 2 shards missing (1-of-2)" in flat(res)
    assert not (run / "scores.jsonl").exists()
    res = runner.invoke(
        app, ["evaluate", str(run), "--shard", "1/2", "--no-judge", "--no-figures", "--metrics", "BLEU"]
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["merge", str(run)])
    assert res.exit_code == 2 and "shard 1-of-2 was made with other settings" in flat(res)
    res = runner.invoke(app, ["evaluate", str(run), "--shard", "2/2", *common])
    assert res.exit_code == 2 and "need 0 <= K < N" in flat(res)


def test_score_merge_refuses_shards_of_another_state_of_the_conversations(tmp_path, monkeypatch):
    # shard 0 scored 3 conversations, generate added 2, shard 1 scored the 5: merging would
    # leave the new conversations of shard 0's blocks unscored without a word
    monkeypatch.setattr(eval_core, "EvalOptions", functools.partial(eval_runner.EvalOptions, chunk=1))
    run = tmp_path / "run"
    common = ["--no-judge", "--no-figures", "--metrics", "BLEU,Completion"]
    with FakeOpenAI(reply=reply) as srv:
        gen = ["generate", "--teacher", "openai:fake-model", "--base-url", srv.base_url, "--out", str(run)]
        assert runner.invoke(app, [*gen, "--max-tutorials", "3"]).exit_code == 0
        assert runner.invoke(app, ["evaluate", str(run), "--shard", "0/2", *common]).exit_code == 0
        res = runner.invoke(app, [*gen, "--max-tutorials", "5"])
        assert res.exit_code == 0, res.output
    assert len((run / "conversations.jsonl").read_text().splitlines()) == 5
    assert runner.invoke(app, ["evaluate", str(run), "--shard", "1/2", *common]).exit_code == 0
    res = runner.invoke(app, ["merge", str(run)])
    assert res.exit_code == 2, res.output
    out = flat(res)
    assert "score shard 0-of-2 scored another state of" in out and "(3 records then, 5 now)" in out, out
    assert "--shard 0/2" in out and "1-of-2" not in out
    assert not (run / "scores.jsonl").exists()
    assert runner.invoke(app, ["evaluate", str(run), "--shard", "0/2", *common]).exit_code == 0
    res = runner.invoke(app, ["merge", str(run)])
    assert res.exit_code == 0 and "merged 2 score shards into 5 score records" in flat(res), res.output


def test_score_merge_after_moving_the_run_directory(tmp_path):
    # shards scored on a cluster path, the run directory copied elsewhere, merged there: not stale
    run = generated(tmp_path / "run", 3)
    for k in range(2):
        assert (
            runner.invoke(
                app, ["evaluate", str(run), "--shard", f"{k}/2", "--no-judge", "--no-figures", "--metrics", "BLEU"]
            ).exit_code
            == 0
        )
    moved = tmp_path / "elsewhere" / "run"
    moved.parent.mkdir()
    run.rename(moved)
    res = runner.invoke(app, ["merge", str(moved)])
    assert res.exit_code == 0 and "merged 2 score shards into 3 score records" in flat(res), res.output
