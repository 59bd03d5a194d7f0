"""`evaluate --workers N`: the option is checked in one line; worker processes give the scores one process gives;
Ctrl-C with workers keeps every line whole, leaves no process behind, and the rerun completes to the same scores."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from helpers import one_line_error, synthetic_run
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.metrics import computational as M
from wikihowagent.scores.inputs import resolve_inputs

ROOT = Path(__file__).resolve().parents[2]
TEXT_METRICS = [m for m in M.computational_metrics("default") if m not in M.embedding_metrics()]  # no model loaded
runner = CliRunner()


def lines(path: Path) -> list[dict]:
    """Every line of a JSONL file parsed (a torn line fails the test); [] for no file."""
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def metrics_by_id(path: Path) -> dict[str, dict]:
    return {r["conversation_id"]: r["metrics"] for r in lines(path)}


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5", " ", "2 workers"])
def test_a_bad_workers_value_is_one_line(value):
    res = runner.invoke(app, ["evaluate", "tests/fixtures/evaluation/run_small", "--no-judge", "--workers", value])
    assert res.exit_code == 2
    line = one_line_error(res, "--workers", "1 or more")
    assert repr(value) in line


def test_the_workers_default_is_the_cores_available():
    from wikihowagent.processes import available_cores, parse_workers

    assert parse_workers(None) == available_cores() >= 1
    assert parse_workers("3") == 3 and parse_workers(" 1 ") == 1


def test_worker_processes_score_as_one_process(tmp_path):
    """The pool starts for a chunk of at least two conversations per worker; its scores equal the in-process ones
    and come back in the chunk's order."""
    from wikihowagent.metrics.workers import ScorerPool, make_scorers

    run = synthetic_run(tmp_path, 9)
    convs = list(resolve_inputs([run], tmp_path)[0].conversations(on_error=pytest.fail))
    alone = M.Scorers("default", TEXT_METRICS).score(convs)
    pool = make_scorers("default", TEXT_METRICS, 32, "cpu", workers=2)
    assert isinstance(pool, ScorerPool)
    try:
        small = pool.score(convs[:3])  # fewer than 2 per worker and no worker yet: scored in this process
        assert pool._pool is None
        pooled = pool.score(convs)
        assert pool._pool is not None
    finally:
        pool.close()
    assert [s.metrics for s in small] == [s.metrics for s in alone[:3]]
    assert [s.metrics for s in pooled] == [s.metrics for s in alone]
    assert [s.notes for s in pooled] == [s.notes for s in alone]
    assert len({s.metrics[M.METEOR] for s in alone}) > 1  # the conversations differ: the order is checked


def test_evaluate_with_workers_writes_the_scores_of_one_process(tmp_path):
    run = synthetic_run(tmp_path, 12)
    common = [
        "evaluate",
        str(run),
        "--no-judge",
        "--no-figures",
        "--bootstrap",
        "0",
        "--metrics",
        ",".join(TEXT_METRICS),
    ]
    one = runner.invoke(app, [*common, "--workers", "1", "--out", str(tmp_path / "one")])
    two = runner.invoke(app, [*common, "--workers", "2", "--out", str(tmp_path / "two")])
    assert one.exit_code == 0 and two.exit_code == 0, one.output + two.output
    a, b = lines(tmp_path / "one" / "run" / "scores.jsonl"), lines(tmp_path / "two" / "run" / "scores.jsonl")
    assert [r["conversation_id"] for r in a] == [r["conversation_id"] for r in b] == [f"c{i}" for i in range(12)]
    assert [r["metrics"] for r in a] == [r["metrics"] for r in b]


def _marked(mark: str) -> list[int]:
    """The processes whose environment holds `mark` (the command and every process it started)."""
    pids = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and mark.encode() in (p / "environ").read_bytes():
                pids.append(int(p.name))
        except OSError:
            continue
    return pids


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc to find the worker processes")
def test_ctrl_c_with_workers_keeps_every_line_and_the_rerun_gives_the_same_scores(tmp_path):
    run = synthetic_run(tmp_path, 320, repeat=4)  # five chunks of 64: Ctrl-C lands while workers are busy
    args = ["evaluate", str(run), "--no-judge", "--no-figures", "--bootstrap", "0", "--metrics", ",".join(TEXT_METRICS)]
    mark = f"WIKIHOWAGENT_TEST_MARK_{uuid.uuid4().hex}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), mark: "1"}
    out = tmp_path / "interrupted"
    err = tmp_path / "stderr.txt"
    proc = subprocess.Popen(
        [sys.executable, "-m", "wikihowagent", *args, "--workers", "2", "--out", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err.open("w"),
        start_new_session=True,  # its own process group, as a terminal's foreground job: Ctrl-C reaches it all
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    scores = out / "run" / "scores.jsonl"
    try:
        deadline = time.monotonic() + 600
        while len(lines(scores)) < 64 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, err.read_text()[-2000:]
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the command, its fork server and its workers
        rc = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = err.read_text(errors="replace")
    assert rc == 130, text
    assert "interrupted:" in text and "Traceback" not in text, text
    kept = lines(scores)  # every line whole
    assert 64 <= len(kept) < 320, len(kept)
    for _ in range(50):  # the workers and their fork server exit with the command
        if not _marked(mark):
            break
        time.sleep(0.2)
    assert not _marked(mark)
    res = runner.invoke(app, [*args, "--workers", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert f"{len(kept)} already scored" in " ".join(res.output.split())
    resumed = lines(scores)
    assert resumed[: len(kept)] == kept and len(resumed) == 320  # nothing lost, nothing scored twice
    whole = runner.invoke(app, [*args, "--workers", "1", "--out", str(tmp_path / "whole")])
    assert whole.exit_code == 0, whole.output
    assert metrics_by_id(scores) == metrics_by_id(tmp_path / "whole" / "run" / "scores.jsonl")
