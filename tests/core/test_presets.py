"""`--preset paper`: the paper's prompts and decoding for generate, --compat paper for evaluate."""

from __future__ import annotations

from fake_servers import FakeOpenAI
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.runs import read_run_info

runner = CliRunner()


def test_preset_paper_changes_prompts_decoding_and_metrics(tmp_path):
    run = tmp_path / "run"
    with FakeOpenAI() as srv:
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
                "1",
                "--preset",
                "paper",
            ],
        )
        assert res.exit_code == 0, res.output
        body = srv.requests[0]
    assert body["max_completion_tokens"] == 4096 and body["temperature"] == 0
    # Table 3 verbatim: one user message, no system message
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert read_run_info(run).config["model"]["max_tokens"] == 4096
    res = runner.invoke(
        app, ["evaluate", str(run), "--preset", "paper", "--no-judge", "--no-figures", "--metrics", "BLEU,Completion"]
    )
    assert res.exit_code == 0, res.output
    assert (run / "scores-paper.jsonl").exists() and not (run / "scores.jsonl").exists()


def test_flags_and_config_win_over_the_preset(tmp_path):
    with FakeOpenAI() as srv:
        res = runner.invoke(
            app,
            [
                "generate",
                "--teacher",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--out",
                str(tmp_path / "r"),
                "--max-tutorials",
                "1",
                "--preset",
                "paper",
                "--max-tokens",
                "64",
            ],
        )
        assert res.exit_code == 0, res.output
        assert srv.requests[0]["max_completion_tokens"] == 64


def test_unknown_preset_is_one_line():
    res = runner.invoke(app, ["generate", "--preset", "nope"])
    assert res.exit_code == 2 and "unknown preset; known: paper" in " ".join(res.output.split())
