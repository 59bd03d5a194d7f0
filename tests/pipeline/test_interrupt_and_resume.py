"""Cancellation and failure mid-run: Ctrl-C during evaluate, judge-check and compare keeps every line whole and
the rerun resumes; a second evaluate on one run folder is refused; a judge server failing mid-run keeps the scores."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_servers import FakeOpenAI
from helpers import ROOT, _jsonl, cli, run_copy
from typer.testing import CliRunner

from wikihowagent.cli import app

runner = CliRunner()


class Gate:
    """Wraps a fake server's reply functions: the `at`-th request (1-based) waits until `release` is set, after
    setting `reached`, so a test can act (Ctrl-C, a second process) while a request is in flight."""

    def __init__(self, at: int):
        import threading

        self.at, self.n = at, 0
        self.lock = threading.Lock()
        self.reached, self.release = threading.Event(), threading.Event()

    def __call__(self, fn):
        def wrapped(*args):
            with self.lock:
                self.n += 1
                mine = self.n
            if mine == self.at:
                self.reached.set()
                self.release.wait(30)
            return fn(*args)

        return wrapped


def _spawn(args: list[str], err: Path) -> subprocess.Popen:
    import signal

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", "wikihowagent", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err.open("w"),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _ctrl_c_at(gate: Gate, args: list[str], tmp_path: Path) -> tuple[int, str]:
    """Runs the command in a child process, sends SIGINT while its `gate.at`-th request is in flight, then lets
    the request go on; -> (exit status, stderr)."""
    import signal

    err = tmp_path / f"stderr-{gate.at}.txt"
    proc = _spawn(args, err)
    try:
        while not gate.reached.wait(0.2):
            if proc.poll() is not None:
                pytest.fail(f"ended (status {proc.returncode}) before request {gate.at}: {err.read_text()[-2000:]}")
        proc.send_signal(signal.SIGINT)
        gate.release.set()
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return rc, err.read_text(errors="replace")


def _generated(tmp_path: Path, srv, n: int = 3, name: str = "run") -> Path:
    from fake_servers import scripted_reply  # noqa: F401  (the server's default reply teaches every step)

    out = tmp_path / name
    res = runner.invoke(
        app,
        ["generate", "--teacher", "openai:fake-model", "--base-url", srv.base_url, "--max-tutorials", str(n)]
        + ["--out", str(out), "--retries", "0", "--no-posttest"],
    )
    assert res.exit_code == 0, res.output
    return out


def _posttest_reply(prompt: str) -> str:
    import re

    if "This was your lesson" in prompt or "steps" in prompt.lower() and "list" in prompt.lower():
        return "\n".join(f"{i}. Step {i}: do it carefully." for i in range(1, 4))
    m = re.search(r"Step (\d+) of (\d+)", prompt)
    return f"Step {m.group(1)}: do it carefully." if m else "Understood, please go to the next step."


def _seen_model(token, before):
    word = token.strip().lower().strip(".,")
    return -0.5 if word and word in before.lower() else -4.0


@pytest.mark.parametrize("at", [1, 3, 6])
def test_ctrl_c_during_evaluate_posttest_learner_keeps_every_line_whole_and_resumes(tmp_path, at):
    gate = Gate(at)
    with FakeOpenAI(reply=_posttest_reply) as srv:
        run = _generated(tmp_path, srv)
        srv.reply = gate(_posttest_reply)
        args = ["evaluate", str(run), "--no-judge", "--no-figures", "--base-url", srv.base_url, "--bootstrap", "0"]
        args += ["--metrics", "Step Recall,Learning Gain", "--posttest-learner", "openai:fake-model"]
        rc, err = _ctrl_c_at(gate, args, tmp_path)
        assert rc == 130, err
        assert "interrupted:" in err and "rerun the same command to resume" in err and "Traceback" not in err, err
        kept = {p.name: _jsonl(p) for p in run.glob("*.jsonl")}  # every line whole
        srv.reply = _posttest_reply
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    scores = _jsonl(run / "scores.jsonl")
    ids = [r["conversation_id"] for r in scores]
    assert sorted(set(ids)) == sorted({c["conversation_id"] for c in _jsonl(run / "conversations.jsonl")})
    assert len(ids) == len(set(ids)), ids  # nothing scored twice
    assert all(r["metrics"]["Step Recall"] is not None for r in scores)
    tests = _jsonl(run / "posttests.jsonl")
    assert len({t["conversation_id"] for t in tests}) == len(tests) == len(ids), tests  # nothing asked twice
    for name, lines in kept.items():  # nothing written before the Ctrl-C was lost
        assert _jsonl(run / name)[: len(lines)] == lines, name


@pytest.mark.parametrize("at", [1, 5, 14])
def test_ctrl_c_during_judge_check_posttest_likelihood_keeps_every_line_whole_and_resumes(tmp_path, at):
    gate = Gate(at)
    with FakeOpenAI(reply=_posttest_reply, text_logprob=_seen_model) as srv:
        run = _generated(tmp_path, srv, n=3)
        srv.reply, srv.text_logprob = gate(_posttest_reply), gate(_seen_model)
        out = tmp_path / "check"
        args = ["judge-check", str(run), "--out", str(out), "--posttest-learner", "openai:fake-model"]
        args += ["--base-url", srv.base_url, "--posttest-likelihood", "--no-figures"]
        rc, err = _ctrl_c_at(gate, args, tmp_path)
        assert rc == 130, err
        assert "interrupted:" in err and "Traceback" not in err, err
        kept = {p.name: _jsonl(p) for p in out.glob("*.jsonl")}
        srv.reply, srv.text_logprob = _posttest_reply, _seen_model
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    tests = _jsonl(out / "posttests.jsonl")
    keys = [(t["conversation_id"], t.get("variant")) for t in tests]
    assert len(keys) == len(set(keys)) == 3 * 3, keys  # 3 originals + 6 copies, each once
    for name, lines in kept.items():
        assert _jsonl(out / name)[: len(lines)] == lines, name
    assert (out / "posttest_likelihood_validity.csv").is_file()


@pytest.mark.parametrize("at", [1, 4, 9])
def test_ctrl_c_during_compare_keeps_every_judgment_whole_and_resumes(tmp_path, at):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from test_compare import fake_pair_judge, make_run

    runs = [make_run(tmp_path, name, range(4)) for name in ("weak", "strong")]
    gate = Gate(at)
    judge = fake_pair_judge()
    with FakeOpenAI(logprobs=gate(judge)) as srv:
        out = tmp_path / "cmp"
        args = ["compare", *map(str, runs), "--out", str(out), "--evaluator", "openai:fake-model"]
        args += ["--base-url", srv.base_url, "--bootstrap", "0", "--metrics", "Clarity,Depth", "--no-figures"]
        rc, err = _ctrl_c_at(gate, args, tmp_path)
        assert rc == 130, err
        assert "interrupted:" in err and "Traceback" not in err, err
        kept = _jsonl(out / "pair-judgments.jsonl")
        srv.logprobs = judge
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    lines = _jsonl(out / "pair-judgments.jsonl")
    assert lines[: len(kept)] == kept
    keys = [(r["tutorial_id"], r["first"], r["second"]) for r in lines]
    assert len(keys) == len(set(keys)) == 4 * 2, keys  # each tutorial in both orders, once


def test_two_evaluates_on_one_run_folder_at_once_the_second_is_refused(tmp_path):
    gate = Gate(1)
    with FakeOpenAI(reply=_posttest_reply) as srv:
        run = _generated(tmp_path, srv)
        srv.reply = gate(_posttest_reply)
        args = ["evaluate", str(run), "--no-judge", "--no-figures", "--base-url", srv.base_url, "--bootstrap", "0"]
        args += ["--metrics", "Step Recall", "--posttest-learner", "openai:fake-model"]
        first = _spawn(args, tmp_path / "first.txt")
        try:
            assert gate.reached.wait(120), (tmp_path / "first.txt").read_text()
            second = cli(*args)  # while the first holds the scores file
            gate.release.set()
            assert first.wait(timeout=120) == 0, (tmp_path / "first.txt").read_text()
        finally:
            gate.release.set()
            if first.poll() is None:
                first.kill()
                first.wait()
    err = second.stderr.decode()
    assert second.returncode == 2 and "Traceback" not in err, err
    assert [ln for ln in err.splitlines() if ln.startswith("error:")] and "another" in err, err
    ids = [r["conversation_id"] for r in _jsonl(run / "scores.jsonl")]
    assert len(ids) == len(set(ids)) == 3


@pytest.mark.parametrize("trouble", ["500", "reset", "hang"])
def test_a_judge_server_that_fails_mid_run_keeps_the_scores_and_a_rerun_completes(tmp_path, trouble):
    """A server that answers 500, resets the connection mid-reply or hangs past the request timeout: the
    command stops with one line naming the server's failure, keeps the scores made before, and the same
    command against a sound server completes them, each once."""
    import threading

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from test_checklist import _yes_no_judge

    run = run_copy(tmp_path)
    cfg = tmp_path / "fast.yaml"
    cfg.write_text("model: {timeout_s: 1, max_retries: 0}\n")
    calls = []
    stop = threading.Event()

    def failing(prompt):  # called first for every request: the 5th and later answer 500
        calls.append(prompt)
        return trouble == "500" and len(calls) > 4 and not stop.is_set()

    def judge(prompt):
        if len(calls) > 4 and not stop.is_set():
            if trouble == "hang":
                stop.wait(5)
            if trouble == "reset":
                raise ConnectionResetError  # the connection closes with no reply (kept in srv.server.errors)
        return _yes_no_judge(prompt)

    with FakeOpenAI(logprobs=judge, fail_when=failing) as srv:
        args = ["evaluate", str(run), "--evaluator", "openai:fake-model", "--base-url", srv.base_url, "--no-figures"]
        args += ["--judge-scoring", "checklist", "--metrics", "Clarity", "--config", str(cfg), "--retries", "0"]
        res = runner.invoke(app, args)
        stop.set()
        assert res.exit_code != 0, res.output
        assert "Traceback" not in res.output and "rerun" in res.output, res.output
        kept = _jsonl(run / "scores.jsonl")
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    lines = _jsonl(run / "scores.jsonl")
    assert lines[: len(kept)] == kept
    ids = [r["conversation_id"] for r in lines]
    assert len(ids) == len(set(ids)) == 3 and all(r["metrics"]["Clarity"] is not None for r in lines)
