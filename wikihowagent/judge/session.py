"""The judge session `evaluate`, `compare` and `judge-check` share: which judge scores each input and on which
server (`JudgeEndpoints`, built by `judge_endpoints`: the one place a judge spec is resolved), how the judge's
and the post-test learner's chat models are made, and how a command runs its judge jobs (`JudgeLoop`: one
event loop, cancelled and shut down cleanly also after a failure or Ctrl-C; `locked_out`: the output
directory's run lock; `resumable`: a judge, run-file or OS error as the stage's one-line error saying where the
work done so far is kept). The progress bar is `console.progress_bar`.

Which server a run's judge talks to: `generate` records in run.json the provider, model and base URL each spec
resolved to (teacher, learner, evaluator). `evaluate` sends a run's conversations to that same endpoint unless
told otherwise (`--base-url`), and refuses — in one line — when the spec now resolves to another provider or
model than the one recorded: conversations are never sent somewhere the user did not choose (e.g. to OpenAI
with the OPENAI_API_KEY exported for other work, when the run was generated against a local vLLM)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from wikihowagent import backends  # called as backends.<name>: the seam where tests put a fake backend
from wikihowagent.backends import BackendError
from wikihowagent.errors import WikihowagentError
from wikihowagent.jsonlio import RunError, dir_lock

from .rubric_judge import JudgeBackendError


class EvaluateError(WikihowagentError, RuntimeError):
    """A problem that stops `evaluate` (and a judge session of `compare` or `judge-check`); one line."""


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

    def preferred_scoring(self, spec: str) -> str | None:
        """The judge's measured default `--judge-scoring` (backends.preferred_judge_scoring; the embedded model:
        checklist), None where its provider names none or the spec does not resolve (making its model says why)."""
        try:
            return backends.preferred_judge_scoring(spec, self.aliases)
        except BackendError:
            return None

    def learner_factory(self, cfg: Any) -> Callable[[str], Any]:
        """spec -> the post-test learner's chat model (`--posttest-learner`), on the same servers as the judge:
        at temperature 0 as the judge (a test answer is read, not sampled)."""
        return chat_model_factory(cfg, self.base_url, self.aliases, self.urls, *LEARNER_ROLE)


def judge_endpoints(cfg: Any, base_url: str | None) -> JudgeEndpoints:
    aliases = Path(cfg.models) if cfg.models else None
    urls: dict[str, str | None] = {}
    return JudgeEndpoints(chat_model_factory(cfg, base_url, aliases, urls), base_url, aliases, urls)


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
        judge_settings = cfg.model.model_copy(update={"temperature": 0.0})
        url = urls.get(spec, base_url)
        try:
            resolved = backends.resolve_spec(spec, aliases)
            backends.check_backend(resolved, url)
            return backends.make_chat_model(resolved, judge_settings, cfg.local, base_url=url)
        except BackendError as exc:
            raise EvaluateError(f"{role} {spec!r}: {exc} ({hint})") from None

    return make_llm


def cancel_leftover_tasks(loop: asyncio.AbstractEventLoop, rounds: int = 5) -> None:
    """Cancel and await every unfinished task of `loop` (not running). Cancellation handlers may start new
    tasks (LangChain schedules its error callbacks), hence a few bounded rounds."""
    for _ in range(rounds):
        tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
        if not tasks:
            return
        for t in tasks:
            t.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


class JudgeLoop:
    """One event loop for a command's judge calls (async HTTP clients of a judge model are bound to the loop
    they were first used on), run by asyncio's own `Runner`: Ctrl-C cancels the running job at its next await,
    as `asyncio.run` does, and `run` then raises KeyboardInterrupt — never raised from inside an HTTP client's
    code, whose timeouts cannot unwind it. Closing it (the `with` block's end, also after an error or Ctrl-C)
    cancels and awaits the tasks still running, so nothing is left to complain at exit."""

    def __init__(self) -> None:
        self.runner = asyncio.Runner()
        self.loop = self.runner.get_loop()
        self.interrupted = False
        self.loop.set_exception_handler(self._unhandled)

    def _unhandled(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """asyncio's report of what no task awaited. After Ctrl-C (the command says "interrupted: ..." in one
        line) the leftovers of the cut requests ("Unclosed client session", "never awaited", a task's
        "exception was never retrieved") are not printed after it."""
        if self.interrupted or isinstance(context.get("exception"), KeyboardInterrupt):
            return
        loop.default_exception_handler(context)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            return self.runner.run(coro)
        except KeyboardInterrupt:
            self.interrupted = True
            raise

    def close(self) -> None:
        """Cancel and await the tasks still running, shut the async generators and the default executor (the
        metrics' worker thread, `evaluate`) down, close the loop; a second call does nothing."""
        if self.loop.is_closed():
            return
        try:
            cancel_leftover_tasks(self.loop)
        finally:
            self.runner.close()

    def __enter__(self) -> JudgeLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def locked_out(out: Path, what: str, name: str) -> Iterator[Path]:
    """`out` made and locked for one process at a time (RunError naming `what` holds it, at once)."""
    out.mkdir(parents=True, exist_ok=True)
    with dir_lock(out, blocking=False, what=what, name=name):
        yield out


@contextmanager
def resumable(
    error: Callable[[str], Exception], kept: Path, what: str = "judgments", also: tuple[type[Exception], ...] = ()
) -> Iterator[None]:
    """A judge, run-file or OS error (and `also`) inside the block as `error("<message> (<what> so far are in
    <kept>; rerun to resume)")`."""
    caught: tuple[type[Exception], ...] = (JudgeBackendError, RunError, OSError, *also)
    try:
        yield
    except caught as exc:
        raise error(f"{exc} ({what} so far are in {kept}; rerun to resume)") from None


# --------------------------------------------------------------------------- which server judges a run

ROLES = ("evaluator", "teacher", "learner")


def _resolved_of(info: Any) -> dict[str, Any] | None:
    """run.json's `resolved` (role -> provider/model/base_url), from a RunInfo or a dict; None if absent."""
    resolved = info.get("resolved") if isinstance(info, dict) else getattr(info, "resolved", None)
    return resolved if isinstance(resolved, dict) and resolved else None


def recorded_endpoint(info: Any, spec: str) -> dict[str, Any] | None:
    """What `spec` resolved to when the run was generated (run.json `resolved`), or None if not recorded."""
    resolved = _resolved_of(info)
    if resolved is None:
        return None
    for role in ROLES:
        ep = resolved.get(role)
        if isinstance(ep, dict) and ep.get("spec") == spec:
            return ep
    return None


def judge_base_url(spec: str, info: Any, where: str, base_url: str | None, aliases: Path | None) -> str | None:
    """The base URL for the judge `spec` of the run described by `info` (None: the spec's own default).

    `--base-url` (`base_url`) wins; else the endpoint recorded for that spec. EvaluateError if the spec now
    names another provider or model than the recorded one.
    """
    if base_url:
        return base_url
    ep = recorded_endpoint(info, spec)
    legacy = _legacy_openai_base(info) if ep is None else None
    if ep is None and legacy is None:
        return None
    try:
        now = backends.resolve_spec(spec, aliases)
    except BackendError as exc:
        raise EvaluateError(f"evaluator {spec!r}: {exc}") from None
    if ep is None:  # generate's --base-url applied to every openai: role, the evaluator's included
        return legacy if now.provider == "openai" and now.base_url is None else None
    then = f"{ep.get('provider')}:{ep.get('model')}"
    if (ep.get("provider"), ep.get("model")) != (now.provider, now.model):
        at = f" at {ep['base_url']}" if ep.get("base_url") else ""
        raise EvaluateError(
            f"{where}: the run's evaluator {spec!r} was {then}{at} when it was generated but now resolves to "
            f"{now.canonical}; pass --evaluator SPEC (and --base-url URL) to choose the judge explicitly"
        )
    return ep.get("base_url") or None


def _legacy_openai_base(info: Any) -> str | None:
    """For runs recorded before the evaluator's endpoint was: the server their openai: roles used."""
    resolved = _resolved_of(info)
    if resolved is None or "evaluator" in resolved:
        return None
    urls = {ep.get("base_url") for ep in resolved.values() if isinstance(ep, dict) and ep.get("provider") == "openai"}
    urls.discard(None)
    return urls.pop() if len(urls) == 1 else None


def judge_base_urls(
    specs: dict[str, str | None], sources: list[Any], base_url: str | None, aliases: Path | None
) -> dict[str, str | None]:
    """{judge spec: base URL} over all inputs (one judge per spec); EvaluateError if two runs recorded one spec
    at different servers."""
    urls: dict[str, str | None] = {}
    first: dict[str, str] = {}
    for src in sources:
        spec = specs.get(src.name)
        if not spec:
            continue
        url = judge_base_url(spec, src.info, str(src.path), base_url, aliases)
        if spec in urls and urls[spec] != url:
            raise EvaluateError(
                f"{src.path}: evaluator {spec!r} was served at {url or 'its default endpoint'} for this run but at "
                f"{urls[spec] or 'its default endpoint'} for {first[spec]}; evaluate them separately or pass --base-url"
            )
        urls.setdefault(spec, url)
        first.setdefault(spec, str(src.path))
    return urls
