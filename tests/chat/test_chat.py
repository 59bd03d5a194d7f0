"""`wikihowagent chat`: a person plays one role through the graph's interrupt; scripted stdin, both roles."""

from __future__ import annotations

import json

import pytest
from fake_servers import FakeOpenAI
from typer.testing import CliRunner

from wikihowagent.chat.core import LEARNER_NEXT
from wikihowagent.cli import app
from wikihowagent.jsonlio import iter_jsonl

TUTORIAL = "4f115a7f59dc20db"  # bundled: How to Jump Start a Car, method 2 (4 steps)


def chat(tmp_path, role, stdin, *extra):
    out = tmp_path / f"chat-{role}"
    with FakeOpenAI() as srv:
        res = CliRunner().invoke(
            app,
            [
                "chat",
                "--role",
                role,
                "--model",
                "openai:fake-model",
                "--base-url",
                srv.base_url,
                "--tutorial",
                TUTORIAL,
                "--out",
                str(out),
                *extra,
            ],
            input=stdin,
        )
    assert res.exit_code == 0, res.output
    records = [o for _, o in iter_jsonl(out / "conversations.jsonl")]
    assert len(records) == 1
    return res, records[0], out


def test_human_learner_full_conversation_then_evaluate(tmp_path):
    stdin = "I'm ready.\nWhat is a [bold]clamp[/bold]?\n/step\n/next\n/next\n/next\n/next\nThanks, bye!\n"
    res, rec, out = chat(tmp_path, "learner", stdin)
    assert rec["human"] == "learner" and rec["learner"] == "human" and rec["teacher"] == "openai:fake-model"
    assert rec["finished"] and rec["stop_reason"] == "finished"
    learner = [t["text"] for t in rec["turns"] if t["role"] == "learner"]
    assert learner[:3] == ["I'm ready.", "What is a [bold]clamp[/bold]?", LEARNER_NEXT]  # /step sends nothing
    assert learner[-1] == "Thanks, bye!"
    assert [t["kind"] for t in rec["turns"] if t["role"] == "teacher"][2] == "clarification"
    assert "Step 1 of 4" in res.output and "Step 2: do it carefully." in res.output  # the panel, the model
    info = json.loads((out / "run.json").read_text())
    assert info["learner"] == "human" and info["human"] == "learner"
    ev = CliRunner().invoke(
        app, ["evaluate", str(out), "--no-judge", "--metrics", "Question Ratio,Completion", "--no-figures"]
    )
    assert ev.exit_code == 0, ev.output
    score = json.loads((out / "scores.jsonl").read_text().splitlines()[0])
    assert score["metrics"]["Completion"] == 1.0 and score["metrics"]["Question Ratio"] == pytest.approx(0.2)


def test_human_teacher_with_next_and_quit(tmp_path):
    res, rec, _ = chat(tmp_path, "teacher", "/next\nConnect the red clamp first.\n/quit\n")
    assert rec["human"] == "teacher" and rec["teacher"] == "human"
    teacher = [t for t in rec["turns"] if t["role"] == "teacher"]
    assert teacher[1]["text"].startswith("Step 1: Make sure the jump starter is charged")  # /next = the step
    assert teacher[2]["text"] == "Connect the red clamp first." and teacher[2]["step"] == 1
    assert rec["stop_reason"] == "quit" and rec["error"] is None
    assert rec["turns"][-1]["role"] == "learner"  # the model's answer to the last teaching is kept


def test_end_of_input_keeps_what_was_said(tmp_path):
    _, rec, _ = chat(tmp_path, "learner", "I'm ready.\n")
    assert [t["text"] for t in rec["turns"] if t["role"] == "learner"] == ["I'm ready."]
    assert rec["stop_reason"] == "quit" and len(rec["turns"]) == 3


def test_ctrl_c_keeps_what_was_said(tmp_path, monkeypatch):
    lines = iter(["I'm ready."])

    def fake_input(prompt=""):
        try:
            return next(lines)
        except StopIteration:
            raise KeyboardInterrupt from None

    monkeypatch.setattr("builtins.input", fake_input)
    _, rec, _ = chat(tmp_path, "learner", "")
    assert rec["stop_reason"] == "quit" and rec["turns"][1]["text"] == "I'm ready."


def test_bad_choices_are_one_line(tmp_path):
    r = CliRunner().invoke(app, ["chat", "--role", "student", "--tutorial", TUTORIAL])
    assert r.exit_code == 2 and "--role 'student': expected learner or teacher" in r.output
    r = CliRunner().invoke(app, ["chat", "--tutorial", "nope"])
    assert r.exit_code == 2 and "--tutorial nope: no such tutorial" in r.output
    r = CliRunner().invoke(app, ["chat"])
    assert r.exit_code == 2 and "--tutorial ID or --pick" in r.output


def test_pick_from_the_list(tmp_path):
    res, rec, _ = chat_pick(tmp_path)
    assert rec["tutorial_id"] == TUTORIAL and "tutorial number" in res.output


def chat_pick(tmp_path):
    out = tmp_path / "picked"
    with FakeOpenAI() as srv:
        res = CliRunner().invoke(
            app,
            ["chat", "--model", "openai:fake-model", "--base-url", srv.base_url, "--pick", "--out", str(out)],
            input="2\n/quit\n",
        )
    assert res.exit_code == 0, res.output
    return res, [o for _, o in iter_jsonl(out / "conversations.jsonl")][0], out
