"""`chat` with piped output: the saved line prints the path whole."""

from __future__ import annotations

import shlex

from typer.testing import CliRunner

from wikihowagent.cli import app

runner = CliRunner()


def test_chat_saved_line_prints_the_path_whole_when_piped(tmp_path):
    from fake_servers import FakeOpenAI

    out = tmp_path / ("a-long-directory-name-for-the-chat-run-" * 3) / "chat run"
    with FakeOpenAI() as srv:
        res = runner.invoke(
            app,
            [
                "chat",
                "--role",
                "learner",
                "--model",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--tutorial",
                "4f115a7f59dc20db",
                "--out",
                str(out),
            ],
            input="I'm ready.\n",
        )
    assert res.exit_code == 0, res.output
    saved = [ln[ln.index("saved ") :] for ln in res.output.splitlines() if "saved " in ln]  # after the prompt
    assert len(saved) == 1 and f"to {out / 'conversations.jsonl'}; score it with: wikihowagent evaluate" in saved[0]
    assert saved[0].endswith(f"evaluate {shlex.quote(str(out))}")
