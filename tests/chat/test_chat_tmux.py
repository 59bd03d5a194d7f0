"""`wikihowagent chat` in a real terminal (tmux), as a person would use it: typed lines, /step, /next, Ctrl-C."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fake_servers import FakeOpenAI, scripted_reply

from wikihowagent.jsonlio import iter_jsonl

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed (.ci/run installs it)")


def tmux(sock: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True, check=True).stdout


def wait_for(sock: str, needle: str, count: int = 1, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = tmux(sock, "capture-pane", "-p", "-J", "-S", "-200", "-t", "chat")
        if screen.count(needle) >= count:
            return screen
        time.sleep(0.3)
    raise AssertionError(f"{needle!r} x{count} not on screen:\n{screen}")


def test_chat_in_tmux(tmp_path):
    sock = f"wha-test-{tmp_path.name}"
    out = tmp_path / "chat"
    with FakeOpenAI() as srv:
        cmd = [
            sys.executable,
            "-c",
            "from wikihowagent.cli import main; main()",
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
        ]
        shell = " ".join(f"'{c}'" for c in cmd) + "; echo EXIT=$?; sleep 60"
        tmux(sock, "new-session", "-d", "-s", "chat", "-x", "120", "-y", "50", "-c", str(ROOT), shell)
        try:
            wait_for(sock, "you (learner) >")
            tmux(sock, "send-keys", "-t", "chat", "I'm ready.", "Enter")
            wait_for(sock, "Step 1: do it carefully.")
            tmux(sock, "send-keys", "-t", "chat", "/step", "Enter")
            wait_for(sock, "Step 1 of 4", count=2)  # the panel again
            tmux(sock, "send-keys", "-t", "chat", "Why switched off?", "Enter")
            wait_for(sock, "Step 1: do it carefully.", count=2)  # the clarification
            tmux(sock, "send-keys", "-t", "chat", "/next", "Enter")
            wait_for(sock, "Step 2: do it carefully.")
            tmux(sock, "send-keys", "-t", "chat", "C-c")
            screen = wait_for(sock, "EXIT=")
        finally:
            subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
    assert "EXIT=0" in screen and "saved 7 messages (quit)" in screen and "Traceback" not in screen
    rec = [o for _, o in iter_jsonl(out / "conversations.jsonl")][0]
    learner = [t["text"] for t in rec["turns"] if t["role"] == "learner"]
    assert learner == ["I'm ready.", "Why switched off?", "Thanks, I understand. Let's go to the next step."]
    assert rec["stop_reason"] == "quit" and rec["human"] == "learner"


@pytest.mark.parametrize("role", ["learner", "teacher"])
def test_ctrl_c_while_the_model_replies_saves_a_clean_quit(tmp_path, role):
    """Ctrl-C while the model is writing its reply: no traceback, saved with stop_reason quit."""
    sock = f"wha-test-{tmp_path.name}"
    out = tmp_path / "chat"
    first = "I'm ready." if role == "learner" else "Connect the red clamp first."
    slow = threading.Event()

    def reply(prompt):
        if first in prompt:  # the model's reply to the person's line: slow, so that Ctrl-C lands mid-reply
            slow.set()
            time.sleep(30)
        return scripted_reply(prompt)

    with FakeOpenAI(reply=reply) as srv:
        cmd = [
            sys.executable,
            "-c",
            "from wikihowagent.cli import main; main()",
            "chat",
            "--role",
            role,
            "--model",
            "openai:fake-model",
            "--base-url",
            srv.base_url,
            "--tutorial",
            "4f115a7f59dc20db",
            "--out",
            str(out),
        ]
        shell = " ".join(f"'{c}'" for c in cmd) + "; echo EXIT=$?; sleep 60"
        tmux(sock, "new-session", "-d", "-s", "chat", "-x", "200", "-y", "50", "-c", str(ROOT), shell)
        try:
            wait_for(sock, f"you ({role}) >")
            tmux(sock, "send-keys", "-t", "chat", first, "Enter")
            assert slow.wait(30)
            time.sleep(0.5)
            tmux(sock, "send-keys", "-t", "chat", "C-c")
            screen = wait_for(sock, "EXIT=")
        finally:
            subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
    assert "EXIT=0" in screen and "(quit)" in screen, screen
    for bad in ("Traceback", "RuntimeError", "never awaited", "Error"):
        assert bad not in screen, screen
    rec = [o for _, o in iter_jsonl(out / "conversations.jsonl")][0]
    assert rec["stop_reason"] == "quit" and rec["error"] is None and rec["human"] == role
    assert first in [t["text"] for t in rec["turns"]]
