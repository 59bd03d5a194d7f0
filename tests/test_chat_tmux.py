"""`wikihowagent chat` in a real terminal (tmux), as a person would use it: typed lines, /step, /next, Ctrl-C."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_servers import FakeOpenAI
from wikihowagent.runs import iter_jsonl

ROOT = Path(__file__).resolve().parent.parent
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
        cmd = [sys.executable, "-c", "from wikihowagent.cli import main; main()", "chat", "--role", "learner",
               "--model", "openai:fake-model", "--base-url", srv.base_url, "--tutorial", "4f115a7f59dc20db",
               "--out", str(out)]
        shell = " ".join(f"'{c}'" for c in cmd) + f"; echo EXIT=$?; sleep 60"
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
