"""Shared test helpers: small tutorials, scripted agents, the one-line CLI error check, a copy of the
fixture run, the CLI run with file permissions that hold (also as root), hostile JSON, and what the hostile-input
tests of several stages share (an unreachable judge URL, evaluate's and compare's arguments, the CLI in a
subprocess, a JSONL file read back whole)."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from wikihowagent.records import Tutorial

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "evaluation" / "run_small"
ROOT = Path(__file__).resolve().parent.parent


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


@functools.cache
def _permissions_prefix() -> tuple[str, ...] | str:
    """A command prefix under which file permissions hold for the command (root bypasses them): nothing when not
    root; as root, util-linux's setpriv (on every Debian) dropping the capabilities that override them from the
    bounding set, checked on a read-only folder. -> the prefix, or why no prefix works."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return "running as root, which ignores file permissions, and setpriv (util-linux) is not on PATH"
    prefix = (setpriv, "--bounding-set=-dac_override,-dac_read_search", "--")
    with tempfile.TemporaryDirectory() as tmp:
        ro = Path(tmp, "ro")
        ro.mkdir()
        ro.chmod(0o555)
        probe = [*prefix, sys.executable, "-c", f"open({str(ro / 'x')!r}, 'w')"]
        res = subprocess.run(probe, capture_output=True, text=True, check=False, timeout=60)
        ro.chmod(0o755)
    if res.returncode == 0 or "PermissionError" not in res.stderr:
        return f"running as root and setpriv cannot drop CAP_DAC_OVERRIDE here: {res.stderr.strip()[-200:]}"
    return prefix


def cli_with_permissions(*args: str, env: dict[str, str | None]) -> subprocess.CompletedProcess[str]:
    """`python -m wikihowagent ARGS` in a subprocess whose file permissions hold even as root (`env`: variables
    to set, None to unset); skips the test, saying why, where that cannot be arranged."""
    prefix = _permissions_prefix()
    if isinstance(prefix, str):
        pytest.skip(prefix)
    full = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for k, v in env.items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    cmd = [*prefix, sys.executable, "-m", "wikihowagent", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=full, check=False, timeout=120)


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


def synthetic_run(root: Path, n: int, seed: int = 0, repeat: int = 1) -> Path:
    """A run directory `root/run` of `n` conversations over the bundled tutorials (real WikiHow steps), each teacher
    turn a step plus a seeded shuffle of its words (`repeat` times: longer lessons), in the record layout of a
    run's conversations.jsonl (lines); the metrics differ from one conversation to the next."""
    import random

    from wikihowagent.corpus.core import load_tutorials

    tutorials = load_tutorials()
    rng = random.Random(seed)
    run = root / "run"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"name": "run", "teacher": "local", "learner": "local"}))
    with (run / "conversations.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(n):
            t = tutorials[i % len(tutorials)]
            lines = [f"Teacher: Let's begin: {t.method_title}. BEGIN", "Learner: Okay, I am ready."]
            for step in t.steps:
                words = step.split()
                extra = []
                for _ in range(repeat):
                    rng.shuffle(words)
                    extra += words[: rng.randint(3, 30)]
                lines += [
                    f"Teacher: {step} {' '.join(extra)}.",
                    rng.choice(["Learner: Why?", "Learner: Next, please."]),
                ]
            lines += ["Teacher: We've reached the end of the tutorial. FINISHED", "Learner: Thank you!"]
            record = {
                "conversation_id": f"c{i}",
                "tutorial_id": f"t{i % len(tutorials)}",
                "title": f"How to {t.method_title}",
                "tutorial": {"title": t.method_title, "steps": list(t.steps)},
                "conversation": lines,
            }
            fh.write(json.dumps(record) + "\n")
    return run


DEAD_URL = "http://127.0.0.1:9/v1"  # nothing listens: a test that reached a judge would fail, not hang


def flat(res) -> str:
    return " ".join(res.output.split())


def evaluate_args(*runs: Path, out: Path | None = None) -> list[str]:
    return ["evaluate", *map(str, runs), "--no-judge", "--metrics", "Completion", "--no-figures"] + (
        ["--out", str(out)] if out is not None else []
    )


def _compare_args(tmp_path: Path, *extra: str) -> list[str]:
    from test_compare import make_run

    a, b = make_run(tmp_path, "a", range(2)), make_run(tmp_path, "b", range(2))
    return [
        "compare",
        str(a),
        str(b),
        "--out",
        str(tmp_path / "cmp"),
        "--evaluator",
        "openai:fake-model",
        "--base-url",
        DEAD_URL,
        "--from-judgments",
        *extra,
    ]


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m wikihowagent ARGS` in a subprocess (its own stdout encoding, its own signals)."""
    full = {**os.environ, **(env or {})}
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-m", "wikihowagent", *args], capture_output=True, env=full, timeout=timeout, check=False
    )


def _jsonl(path: Path) -> list[dict]:
    """Every line of a JSONL file parsed (a torn line fails the test); [] for no file."""
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
