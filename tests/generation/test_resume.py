"""Resumable runs: torn lines, failures retried, and a run killed with SIGKILL completing on rerun."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import make_tutorial, teacher_script

from wikihowagent.generation.core import prepare_run_dir, run_conversations
from wikihowagent.jsonlio import RunError, iter_jsonl
from wikihowagent.testing import ScriptedChatModel
from wikihowagent.workflow.graph import WorkflowOptions
from wikihowagent.workflow.prompts import load_prompts

FP = {"teacher": "t", "learner": "l"}


def tutorials(n):
    return [make_tutorial(3, tid=f"tut{i:03d}", title=f"How to {i}") for i in range(n)]


def generate(tuts, out: Path, concurrency=3, teacher=None):
    teacher = teacher or ScriptedChatModel(script=teacher_script)
    learner = ScriptedChatModel(script=lambda p: "Clear, next step please.")
    return asyncio.run(
        run_conversations(
            tuts,
            teacher,
            learner,
            load_prompts(),
            WorkflowOptions(),
            out,
            run_name="r",
            teacher="t",
            learner="l",
            concurrency=concurrency,
        )
    )


def ids_in(path):
    return [o["tutorial_id"] for _, o in iter_jsonl(path)]


def test_rerun_skips_done_and_repairs_torn_line(tmp_path):
    out = tmp_path / "run" / "conversations.jsonl"
    tuts = tutorials(6)
    prepare_run_dir(out.parent, FP, retry_failed=True)
    generate(tuts[:4], out)
    with out.open("ab") as fh:  # a kill during a write leaves a partial line
        fh.write(b'{"conversation_id": "x", "tutorial_id": "tut0')
    done, _ = prepare_run_dir(out.parent, FP, retry_failed=True)
    assert done == {f"tut{i:03d}" for i in range(4)}
    generate([t for t in tuts if t.tutorial_id not in done], out)
    assert sorted(ids_in(out)) == [t.tutorial_id for t in tuts]


def test_failed_conversations_are_recorded_then_retried(tmp_path):
    out = tmp_path / "run" / "conversations.jsonl"
    tuts = tutorials(4)

    def broken_for_tut2(prompt):
        if "tut002" in prompt:
            raise ConnectionError("server closed the connection")
        return teacher_script(prompt)

    tuts[2] = tuts[2].model_copy(update={"summary": "tut002 summary"})  # the teacher prompt shows it
    stats = generate(tuts, out, teacher=ScriptedChatModel(script=broken_for_tut2))
    assert stats.failed == 1 and stats.done == 3
    records = {o["tutorial_id"]: o for _, o in iter_jsonl(out)}
    assert "ConnectionError" in records["tut002"]["error"] and records["tut002"]["stop_reason"] == "error"
    # Rerun: the failure is dropped and done again; nothing is duplicated.
    done, _ = prepare_run_dir(out.parent, FP, retry_failed=True)
    assert "tut002" not in done and len(done) == 3
    generate([t for t in tuts if t.tutorial_id not in done], out)
    assert sorted(ids_in(out)) == sorted(t.tutorial_id for t in tuts)
    assert all(o["error"] is None for _, o in iter_jsonl(out))
    # --no-retry-failed keeps failures as they are.
    assert len(prepare_run_dir(out.parent, FP, retry_failed=False)[0]) == 4


def test_damaged_middle_line_stops_instead_of_dropping(tmp_path):
    run = tmp_path / "run"
    run.mkdir()

    def rec(tid: str) -> str:
        return json.dumps({"conversation_id": tid, "tutorial_id": tid, "tutorial": {"title": "t", "steps": ["s"]}})

    (run / "conversations.jsonl").write_text(f"{rec('a')}\n{{broken\n{rec('b')}\n")
    with pytest.raises(RunError, match=r"conversations\.jsonl:2: malformed JSON"):
        prepare_run_dir(run, FP, retry_failed=True)
    assert (run / "conversations.jsonl").read_text().count("\n") == 3  # untouched
    # A line that is JSON but not a conversation record stops the run too, naming its line.
    (run / "conversations.jsonl").write_text(f'{rec("a")}\n{{"tutorial_id": "b"}}\n')
    with pytest.raises(RunError, match=r"conversations\.jsonl:2: not a conversation record"):
        prepare_run_dir(run, FP, retry_failed=True)


def test_run_dir_with_other_settings_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"fingerprint": {"teacher": "other", "learner": "l"}}))
    with pytest.raises(RunError, match="different teacher"):
        prepare_run_dir(run, FP, retry_failed=True)


KILLABLE = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, {tests!r})
    from helpers import make_tutorial, teacher_script
    from wikihowagent.generation.core import run_conversations
    from wikihowagent.testing import ScriptedChatModel
    from wikihowagent.workflow.graph import WorkflowOptions
    from wikihowagent.workflow.prompts import load_prompts
    tuts = [make_tutorial(3, tid=f"tut{{i:03d}}", title=f"How to {{i}}") for i in range(40)]
    teacher = ScriptedChatModel(script=teacher_script, delay_s=0.01)
    learner = ScriptedChatModel(script=lambda p: "Clear, next step please.", delay_s=0.01)
    asyncio.run(run_conversations(tuts, teacher, learner, load_prompts(), WorkflowOptions(), {out!r},
                run_name="r", teacher="t", learner="l", concurrency=4))
""")


def test_sigkill_midway_then_rerun_completes_without_duplicates(tmp_path):
    out = tmp_path / "run" / "conversations.jsonl"
    out.parent.mkdir()
    code = KILLABLE.format(tests=str(Path(__file__).resolve().parents[1]), out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if out.exists() and out.read_bytes().count(b"\n") >= 5:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = out.read_bytes().count(b"\n")
    assert 5 <= n_before < 40, "the kill should land part-way"
    tuts = tutorials(40)
    done, _ = prepare_run_dir(out.parent, FP, retry_failed=True)
    generate([t for t in tuts if t.tutorial_id not in done], out)
    ids = ids_in(out)
    assert len(ids) == 40 and sorted(ids) == [t.tutorial_id for t in tuts]
