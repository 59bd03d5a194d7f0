"""Verbatim full lessons of a tutorial set, no model: the input of the checks that need a lesson whose
teaching is known (the post-test's validity, every metric against the perturbations on the bundled tutorials).

    python -m benchmarks lessons --tutorials wikihowagent/data/tutorials --out lessons.jsonl
    wikihowagent judge-check --metrics lessons.jsonl --out jc-bundled

For each tutorial one conversation where the teacher states each step word for word ("Step k: <step>", the
step recorded on the turn, so `skip_steps` can remove it) and the learner answers "OK, got it."; then FINISHED.
Written as conversation records (`judge-check` and `evaluate` read them): a measure's own yardstick, free of
how well a model teaches.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from wikihowagent.corpus.core import default_tutorials_path, load_tutorials
from wikihowagent.generation.core import now, to_record
from wikihowagent.jsonlio import JsonlAppender
from wikihowagent.records import Turn
from wikihowagent.workflow.graph import WorkflowOptions


def write_lessons(tutorials: Path, out: Path) -> int:
    """One verbatim lesson per tutorial of `tutorials` into `out` (replaced); the number written."""
    out.unlink(missing_ok=True)
    n = 0
    with JsonlAppender(out, fsync=False) as sink:
        for t in load_tutorials(tutorials):
            turns = [
                x
                for k, step in enumerate(t.steps)
                for x in (
                    Turn(role="teacher", text=f"Step {k + 1}: {step}", step=k),
                    Turn(role="learner", text="OK, got it.", step=k),
                )
            ]
            turns.append(Turn(role="teacher", text="FINISHED", kind="finish"))
            state = {"messages": turns, "finished": True}  # what a finished generated conversation carries
            run = f"lessons-{tutorials.name}"
            sink.append(to_record(t, state, run, "verbatim", "verbatim", now(), WorkflowOptions(), ""))
            n += 1
    return n


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks lessons", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--tutorials", type=Path, default=default_tutorials_path(), help="a tutorial set (default: the bundled)"
    )
    ap.add_argument("--out", type=Path, required=True, help="the JSONL of conversation records to write")
    args = ap.parse_args(argv)
    n = write_lessons(args.tutorials, args.out)
    print(f"lessons: {n} verbatim lessons -> {args.out}")
