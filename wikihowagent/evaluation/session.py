"""The judge session `evaluate`, `compare` and `judge-check` share: which judge scores each input and on which
server (`JudgeEndpoints`, built by `judge_endpoints`: the one place a judge spec is resolved), how the judge's
and the post-test learner's chat models are made, and how a command runs its judge jobs (`JudgeLoop`: one
event loop, cancelled and shut down cleanly also after a failure or Ctrl-C; `locked_out`: the output
directory's run lock; `resumable`: a judge, run-file or OS error as the stage's one-line error saying where the
work done so far is kept). The progress bar is `console.progress_bar`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .runner import EvaluateError

T = TypeVar("T")

JUDGE_HINT = "choose another with --evaluator SPEC, or --no-judge"
LEARNER_ROLE = ("--posttest-learner", "choose another model spec")  # chat_model_factory's role + hint for it


@dataclass
class JudgeEndpoints:
    """Which judge scores each input and on which server, and how its chat model is made (built by
    `judge_endpoints`)."""

    make_llm: Callable[[str], Any]  # spec -> the judge's chat model (EvaluateError naming the spec)
    base_url: str | None  # --base-url
    aliases: Path | None  # --config's model alias file, as for generate
    urls: dict[str, str | None] = field(default_factory=dict)  # spec -> base URL (run.json's unless --base-url)

    def resolve(self, ev: Any, sources: list[Any]) -> dict[str, str | None]:
        """{input name: judge spec} of `ev` (an Evaluation; None: it judges no rubric), and the server each spec
        is asked on."""
        from .endpoints import judge_base_urls

        specs = {s.name: ev.evaluator_spec(s) for s in sources}
        self.urls.update(judge_base_urls(specs, sources, self.base_url, self.aliases))
        return specs

    def resolve_one(self, ev: Any, sources: list[Any], refuse: Callable[[dict[str, str]], Exception]) -> str:
        """The one judge spec all `sources` name (`compare`, `judge-check`: every conversation by one judge);
        `refuse({input name: spec})` is raised when they name several."""
        by_source: dict[str, str] = {}
        for name, spec in self.resolve(ev, sources).items():
            if spec is None:
                raise EvaluateError("no rubric to judge: the rubric file or --metrics selects none")
            by_source[name] = spec
        if len(set(by_source.values())) != 1:
            raise refuse(by_source)
        return next(iter(by_source.values()))

    def learner_factory(self, cfg: Any) -> Callable[[str], Any]:
        """spec -> the post-test learner's chat model (`--posttest-learner`), on the same servers as the judge:
        at temperature 0 as the judge (a test answer is read, not sampled)."""
        return chat_model_factory(cfg, self.base_url, self.aliases, self.urls, *LEARNER_ROLE)


def judge_endpoints(cfg: Any, base_url: str | None) -> JudgeEndpoints:
    aliases = Path(cfg.models) if cfg.models else None
    urls: dict[str, str | None] = {}
    return JudgeEndpoints(chat_model_factory(cfg, base_url, aliases, urls), base_url, aliases, urls)


def posttest_learner_factory(cfg: Any, base_url: str | None = None) -> Callable[[str], Any]:
    """spec -> the post-test learner's chat model outside a judge session (bench scripts)."""
    return judge_endpoints(cfg, base_url).learner_factory(cfg)


def chat_model_factory(
    cfg: Any,
    base_url: str | None,
    aliases: Path | None = None,
    judge_urls: dict[str, str | None] | None = None,
    role: str = "evaluator",
    hint: str = JUDGE_HINT,
) -> Callable[[str], Any]:
    """spec -> the chat model (temperature 0) on `judge_urls[spec]` (else `base_url`); EvaluateError naming the
    spec (as `role`, with `hint`) if it cannot be made. The judge's (role evaluator) and the post-test
    learner's (LEARNER_ROLE)."""
    urls = judge_urls if judge_urls is not None else {}

    def make_llm(spec: str) -> Any:
        from wikihowagent.backends import BackendError, check_backend, make_chat_model, resolve_spec

        judge_settings = cfg.model.model_copy(update={"temperature": 0.0})
        url = urls.get(spec, base_url)
        try:
            resolved = resolve_spec(spec, aliases)
            check_backend(resolved, url)
            return make_chat_model(resolved, judge_settings, cfg.local, base_url=url)
        except BackendError as exc:
            raise EvaluateError(f"{role} {spec!r}: {exc} ({hint})") from None

    return make_llm


class JudgeLoop:
    """One event loop for a command's judge calls (async HTTP clients of a judge model are bound to the loop
    they were first used on). Closing it (the `with` block's end, also after an error or Ctrl-C) cancels and
    awaits the tasks still running, so nothing is left to complain at exit."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        from .runner import cancel_leftover_tasks

        try:
            cancel_leftover_tasks(self.loop)
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()

    def __enter__(self) -> JudgeLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def locked_out(out: Path, what: str, name: str) -> Iterator[Path]:
    """`out` made and locked for one process at a time (RunError naming `what` holds it, at once)."""
    from wikihowagent.runs import dir_lock

    out.mkdir(parents=True, exist_ok=True)
    with dir_lock(out, blocking=False, what=what, name=name):
        yield out


@contextmanager
def resumable(
    error: Callable[[str], Exception], kept: Path, what: str = "judgments", also: tuple[type[Exception], ...] = ()
) -> Iterator[None]:
    """A judge, run-file or OS error (and `also`) inside the block as `error("<message> (<what> so far are in
    <kept>; rerun to resume)")`."""
    from wikihowagent.runs import RunError

    from .judge import JudgeBackendError

    caught: tuple[type[Exception], ...] = (JudgeBackendError, RunError, OSError, *also)
    try:
        yield
    except caught as exc:
        raise error(f"{exc} ({what} so far are in {kept}; rerun to resume)") from None
