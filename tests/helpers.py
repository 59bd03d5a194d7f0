"""Shared test helpers: small tutorials and scripted agents."""

from __future__ import annotations

import re

from wikihowagent.records import Tutorial


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
