"""Issue 7: reliability defects found by a hostile tester, each reproduced here (fake servers on 127.0.0.1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from fake_servers import FakeOpenAI
from wikihowagent.cli import app

runner = CliRunner()
FIX = Path(__file__).parent / "fixtures"
# Rich would read these as a closing tag, a style and an emoji code.
HOSTILE = "a[/b] [old] :100:"


def one_line(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------ 1. outside text is printed literally


def test_error_paths_print_literally_and_never_raise_markup_errors(tmp_path):
    missing = tmp_path / "drafts [old]" / "a[/b]" / "c.json"
    res = runner.invoke(app, ["generate", "--teacher", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                              "--tutorials", str(missing)])
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert f"{missing}: " in res.output


def test_jsonl_line_number_is_not_an_emoji(tmp_path):
    bad = tmp_path / "t [x].jsonl"
    bad.write_text("".join(json.dumps({"title": "x", "methods": []}) + "\n" for _ in range(99)) + "{broken\n")
    res = runner.invoke(app, ["tutorials", "--tutorials", str(bad)])
    assert f"{bad}:" in res.output and "💯" not in res.output


def test_server_error_with_brackets_keeps_the_final_summary(tmp_path):
    out = tmp_path / "run [1]"
    message = "no route [/v1/chat/completions] :100:"
    with FakeOpenAI(fail_when=lambda p: "Step 2 of" in p, error_message=message) as srv:
        res = runner.invoke(app, ["generate", "--teacher", "openai:fake-model", "--base-url", srv.base_url,
                                  "--out", str(out), "--max-tutorials", "2", "--retries", "0"],
                            env={"OPENAI_COMPATIBLE_API_KEY": "k"})
    assert res.exit_code == 1, res.output
    assert not isinstance(res.exception, Exception) or isinstance(res.exception, SystemExit), res.exception
    assert "[/v1/chat/completions] :100:" in res.output  # the server's words, as sent
    assert f"{out / 'conversations.jsonl'}: 2 conversations" in one_line(res.output)  # the summary is printed


def test_console_labels_style_only_the_label():
    from wikihowagent.console import labeled, make_console

    console = make_console()
    with console.capture() as cap:
        console.print(labeled("error:", "red", HOSTILE))
        console.print(HOSTILE)
    assert cap.get() == f"error: {HOSTILE}\n{HOSTILE}\n"


# ------------------------------------------------------------------ 10. no wrapping of long lines on a pipe


def test_long_skipped_lines_are_not_wrapped_when_stderr_is_not_a_terminal(tmp_path):
    tutorials = tmp_path / "t.jsonl"
    long_title = "How to " + "Very " * 40 + "Long"
    good = {"title": "How to Be Good", "categories": ["Categories", "Education"],
            "methods": [{"title": "Method", "steps": ["Do one thing.", "Do another thing."]}]}
    tutorials.write_text(json.dumps({"title": long_title}) + "\n" + json.dumps(good) + "\n")
    res = runner.invoke(app, ["generate", "--teacher", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                              "--tutorials", str(tutorials), "--skip-invalid", "--out", str(tmp_path / "r")])
    skipped = [line for line in res.output.splitlines() if line.startswith("skipped:")]
    assert skipped and len(skipped[0]) > 100, res.output
    assert f"{tutorials}:1:" in skipped[0]


def test_evaluate_prints_bad_lines_and_run_names_literally(tmp_path):
    src = FIX / "evaluation" / "run_small" / "conversations.jsonl"
    good = []
    for line in src.read_text().splitlines():
        try:
            good.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    lines = []
    for i in range(99):
        lines.append(json.dumps({**good[0], "conversation_id": f"c{i}", "error": None}))
    bad = tmp_path / "runs [old] :100:.jsonl"
    bad.write_text("\n".join(lines) + "\n{broken\n")
    res = runner.invoke(app, ["evaluate", str(bad), "--no-judge", "--metrics", "BLEU", "--no-figures",
                              "--out", str(tmp_path / "out [x]")])
    assert res.exit_code == 0, res.output
    assert f"{bad}:100: malformed JSON" in res.output and "💯" not in res.output
    assert "runs [old] :100:" in res.output  # the run's name in the summary table
