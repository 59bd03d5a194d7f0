"""The judge session (judge/session.py) and the shared judge options (cli_options.py) that
`evaluate`, `compare` and `judge-check` use."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer
import typer.main
from typer.core import TyperOption

from wikihowagent.cli import app
from wikihowagent.cli_options import command_errors
from wikihowagent.compare.request import CompareError
from wikihowagent.jsonlio import RunError
from wikihowagent.judge.session import JudgeEndpoints, JudgeLoop, locked_out, resumable
from wikihowagent.scores.runner import EvaluateError


class _Ev:
    def __init__(self, specs: dict[str, str | None]):
        self.specs = specs

    def evaluator_spec(self, src):
        return self.specs[src.name]


def _sources(*names: str) -> list:
    return [SimpleNamespace(name=n, path=Path(n), info={}) for n in names]


def test_resolve_one_gives_the_one_spec_as_str():
    ep = JudgeEndpoints(make_llm=lambda s: None, base_url=None, aliases=None)
    spec = ep.resolve_one(_Ev({"a": "ollama:x", "b": "ollama:x"}), _sources("a", "b"), lambda m: CompareError("two"))
    assert spec == "ollama:x"


def test_resolve_one_refuses_two_judges_with_the_stage_error():
    ep = JudgeEndpoints(make_llm=lambda s: None, base_url=None, aliases=None)
    with pytest.raises(CompareError, match=r"a: ollama:x; b: ollama:y"):
        ep.resolve_one(
            _Ev({"a": "ollama:x", "b": "ollama:y"}),
            _sources("a", "b"),
            lambda by: CompareError("; ".join(f"{n}: {s}" for n, s in by.items())),
        )


def test_resolve_one_refuses_no_rubric():
    ep = JudgeEndpoints(make_llm=lambda s: None, base_url=None, aliases=None)
    with pytest.raises(EvaluateError, match="no rubric to judge"):
        ep.resolve_one(_Ev({"a": None}), _sources("a"), lambda by: CompareError("x"))


def test_resumable_names_where_the_work_is_kept(tmp_path):
    kept = tmp_path / "pair-judgments.jsonl"
    with pytest.raises(CompareError) as info, resumable(CompareError, kept):
        raise RunError("the judge's file is broken")
    assert str(info.value) == f"the judge's file is broken (judgments so far are in {kept}; rerun to resume)"
    with (
        pytest.raises(CompareError, match=r"\(post-tests so far"),
        resumable(CompareError, kept, "post-tests", also=(EvaluateError,)),
    ):
        raise EvaluateError("learner down")
    with pytest.raises(ValueError), resumable(CompareError, kept):  # anything else passes through as it is
        raise ValueError("not converted")


def test_locked_out_makes_the_directory_and_refuses_a_second_holder(tmp_path):
    out = tmp_path / "new" / "out"
    with locked_out(out, "another 'wikihowagent compare'", ".x.lock"):
        assert out.is_dir()
        with (
            pytest.raises(RunError, match="another 'wikihowagent compare'"),
            locked_out(out, "another 'wikihowagent compare'", ".x.lock"),
        ):
            pass


def test_judge_loop_cancels_what_is_left_on_an_error():
    started: list[asyncio.Task] = []

    async def leave_one_running() -> None:
        started.append(asyncio.ensure_future(asyncio.sleep(3600)))
        await asyncio.sleep(0)
        raise OSError("judge went away")

    with pytest.raises(OSError), JudgeLoop() as loop:
        loop.run(leave_one_running())
    assert started[0].cancelled()
    assert loop.loop.is_closed()


def test_command_errors_exit_codes():
    from wikihowagent.console import make_console

    console = make_console()
    with pytest.raises(typer.Exit) as info, command_errors(console, "scores"):
        raise EvaluateError("bad input")
    assert info.value.exit_code == 2
    with pytest.raises(typer.Exit) as info, command_errors(console, "scores"):
        raise KeyboardInterrupt
    assert info.value.exit_code == 130


SHARED = (
    "evaluator",
    "base_url",
    "retries",
    "concurrency",
    "judge_scoring",
    "judge_prompt",
    "judge_rationale",
    "posttest_learner",
    "posttest_prompt",
    "pairwise_reading",
    "tie_band",
    "checklist",
    "checklist_weights",
    "retry_failed",
)


def test_judge_options_are_declared_alike_in_every_command():
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    seen: dict[str, set] = {}
    for name in ("evaluate", "compare", "judge-check"):
        for p in commands[name].params:
            if isinstance(p, TyperOption) and p.name in SHARED:
                bounds = getattr(p, "type", None)
                kind = (tuple(p.opts), p.rich_help_panel, getattr(bounds, "min", None), getattr(bounds, "max", None))
                seen.setdefault(p.name, set()).add(kind)
    assert {"evaluator", "base_url", "retries", "concurrency", "judge_scoring", "pairwise_reading"} <= set(seen)
    assert {n: k for n, k in seen.items() if len(k) != 1} == {}


def test_judge_loop_close_waits_for_the_default_executor_and_is_idempotent():
    """evaluate computes a chunk's metrics on the loop's default executor while judge calls are in flight; closing
    the session waits for that worker (as runner.Evaluation's own loop did before it moved onto JudgeLoop)."""
    import time

    finished = []

    def metrics_batch() -> None:
        time.sleep(0.3)  # still working when the block ends
        finished.append(True)

    async def start_and_leave() -> None:
        asyncio.get_running_loop().run_in_executor(None, metrics_batch)  # not awaited

    with JudgeLoop() as loop:
        loop.run(start_and_leave())
    assert finished == [True]
    loop.close()  # a second close does nothing
    assert loop.loop.is_closed()


@pytest.fixture
def python_ctrl_c():
    """Python's own SIGINT handler (KeyboardInterrupt), whatever an earlier test in this process left installed
    (a worker that ignores Ctrl-C, a terminal test's handler); restored afterwards."""
    import signal

    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize("inside_anyio_timeout", [False, True])
def test_ctrl_c_cancels_the_job_at_its_next_await_and_is_raised_by_run(inside_anyio_timeout, python_ctrl_c):
    """Ctrl-C during a judge job is never raised in the middle of a job's (or an HTTP client's) code, where an
    anyio timeout scope turns it into "RuntimeError: Attempted to exit a cancel scope ...": the job is cancelled
    at its next await and `run` raises KeyboardInterrupt (the commands' exit 130)."""
    import signal
    from contextlib import nullcontext

    import anyio

    seen: list[str] = []

    async def job() -> None:
        scope = anyio.fail_after(30) if inside_anyio_timeout else nullcontext()
        try:
            with scope:
                signal.raise_signal(signal.SIGINT)
                seen.append("went on to the next await")
                await asyncio.sleep(5)
                seen.append("not reached")
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    with pytest.raises(KeyboardInterrupt), JudgeLoop() as loop:
        loop.run(job())
    assert seen == ["went on to the next await", "cancelled"]
    assert loop.interrupted
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Python's own handler back
