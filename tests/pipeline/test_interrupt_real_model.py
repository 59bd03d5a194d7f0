"""Ctrl-C while the embedded model works on a request: `generate` and `evaluate` stop with exit
status 130, run.json "interrupted" (generate), every line written whole and no traceback.

Real model (llama.cpp in-process), so slow-marked. The command runs in a child process with the llama.cpp log
on; SIGINT is sent as soon as its "launch_slot_" line says a request has started (its prompt is being decoded).
STOP_BOUND_S only guards against a hang: the code before the fix also stopped within it (5-19 s on a busy 2-core
machine), so the times are measured by `python -m benchmarks interrupt` (BENCHMARKS.md "interrupt"), and the test that
fails on the old code is tests/backends/test_backends.py::test_embedded_server_decodes_prompts_in_small_steps."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
STOP_BOUND_S = 60.0


def _interrupt(argv: list[str], cwd: Path) -> tuple[int, float, str]:
    env = dict(
        os.environ,
        WIKIHOWAGENT_LLAMA_LOG="1",
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    )
    err_path = cwd / "stderr.txt"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "wikihowagent", *argv],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        start = time.monotonic()
        while "launch_slot_" not in err_path.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() - start > 300:
                proc.kill()
                pytest.fail("no llama.cpp request started: " + err_path.read_text(errors="replace")[-500:])
            time.sleep(0.1)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(timeout=STOP_BOUND_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"still running {STOP_BOUND_S:.0f} s after Ctrl-C")
    return rc, time.monotonic() - t0, err_path.read_text(errors="replace")


def _whole_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_ctrl_c_during_generate_stops_the_embedded_model_at_once(tmp_path):
    out = tmp_path / "run"
    rc, _, err = _interrupt(
        [
            "generate",
            "--teacher",
            "local",
            "--learner",
            "local",
            "--out",
            str(out),
            "--max-tutorials",
            "2",
            "--concurrency",
            "1",
        ],
        tmp_path,
    )
    assert rc == 130, err[-500:]
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"
    _whole_lines(out / "conversations.jsonl")  # whatever was written is whole JSON
    assert "Traceback" not in err


def test_ctrl_c_during_evaluate_stops_the_embedded_model_at_once(tmp_path):
    run = tmp_path / "run_small"
    shutil.copytree(ROOT / "tests" / "fixtures" / "evaluation" / "run_small", run)
    rc, _, err = _interrupt(
        ["evaluate", str(run), "--evaluator", "local", "--no-figures", "--judge-rationale"], tmp_path
    )
    assert rc == 130, err[-500:]
    assert "interrupted: scores written so far are kept" in err
    assert len(_whole_lines(run / "scores.jsonl")) < 6  # stopped before the end; what was written is whole
    assert "Traceback" not in err
