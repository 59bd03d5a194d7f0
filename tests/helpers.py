"""Shared test helpers: small tutorials, scripted agents, the one-line CLI error check, a copy of the fixture
run and hostile JSON."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from wikihowagent.records import Tutorial

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "evaluation" / "run_small"


def make_tutorial(n_steps: int = 3, tid: str = "t1", title: str = "How to Test") -> Tutorial:
    return Tutorial(
        tutorial_id=tid,
        doc_id=0,
        method_id=0,
        source_tutorial_path=f"{tid}.json",
        title=title,
        method_title="Part 1 of 1:Testing",
        categories=["Categories", "Education"],
        domain="Education",
        summary="A tutorial about testing.",
        steps=[f"Do step number {i + 1}. It matters." for i in range(n_steps)],
    )


def teacher_script(prompt: str) -> str:
    """Echo which step the teacher prompt asked for, so tests can see the step index."""
    m = re.search(r"Step (\d+) of (\d+)", prompt)
    return f"Teaching step {m.group(1)}." if m else "?"


def learner_says(*replies: str):
    """A learner that gives `replies` in order, then always asks for the next step."""
    queue = list(replies)

    def script(prompt: str) -> str:
        return queue.pop(0) if queue else "Got it, please go to the next step."

    return script


def one_line_error(res, *needles: str) -> str:
    """A CLI result that failed with exactly one `error:` line, no traceback, containing every needle; -> it."""
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, res.output
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def run_copy(root: Path, dirname: str = "run", name: str | None = None) -> Path:
    """A copy of the small fixture run under `root` (run.json's name set to `name` if given)."""
    run = root / dirname
    shutil.copytree(FIXTURE_RUN, run)
    if name is not None:
        info = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**info, "name": name}))
    return run


# JSON that the bounded reader (wikihowagent/jsonlio.py) refuses, as one line of a JSONL file or a whole JSON file,
# with the reason it gives: Python's own json fails on each with a RecursionError or a ValueError.
HOSTILE_JSON = [
    pytest.param('{"a": ' * 1000 + "1" + "}" * 1000, "nested more than 100 levels deep", id="nested-1000-deep"),
    pytest.param(
        '{"conversation_id": "x", "metrics": {"BLEU": ' + "1" * 5000 + "}}",
        "an integer 5000 digits long; at most 100 are read",
        id="5000-digit-number",
    ),
]


def append_line(path: Path, line: str) -> int:
    """Append `line` to a JSONL file; -> its line number."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    return len(path.read_text(encoding="utf-8").splitlines())
