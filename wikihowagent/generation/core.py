"""`wikihowagent generate`: run the conversation graph over tutorials into a resumable run directory.

`run_generation(GenerateRequest) -> GenerateSummary` owns the whole stage: config, tutorial selection and
sharding, backend checks, the run fingerprint, the run-directory lock and run.json.

Conversations stream through a bounded pool of asyncio workers (no lockstep batches: a slow one never
holds up the others). Each finished conversation is appended as one fsynced line, so a killed run loses
at most the conversations in flight; rerunning the same command skips what is done and retries failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from wikihowagent.backends import resolve_spec, shutdown_local_servers
from wikihowagent.backends.replicas import check_replicas, make_pooled_chat_model, role_endpoints
from wikihowagent.config import Config, load_config
from wikihowagent.corpus.core import (
    LoadReport,
    TutorialError,
    default_tutorials_path,
    empty_message,
    print_load_warnings,
)
from wikihowagent.corpus.sampling import Per, select_tutorials
from wikihowagent.errors import WikihowagentError
from wikihowagent.jsonlio import DiskFullError, JsonlAppender, JsonlError, RunError, dir_lock, repair_torn_tail
from wikihowagent.layout import CONVERSATIONS, RUN_INFO
from wikihowagent.paper_format import default_run_name
from wikihowagent.presets import preset_config
from wikihowagent.records import ConversationRecord, Tutorial, TutorialRef, conversation_lines, make_conversation_id
from wikihowagent.records_io import read_records, rewrite_records
from wikihowagent.runs import RunInfo, count_records, now, read_run_info, shard_dir, write_run_info
from wikihowagent.shards import shard_option
from wikihowagent.workflow.graph import WorkflowOptions, build_graph, initial_state, recursion_limit
from wikihowagent.workflow.manager import MANAGERS, Manager
from wikihowagent.workflow.personas import Persona, select_personas
from wikihowagent.workflow.posttest import PostTester, get_prompt, post_tester
from wikihowagent.workflow.prompts import PromptTemplates, load_prompts

VERSIONED_PACKAGES = ("langgraph", "langchain-core", "langchain-openai", "langchain-ollama", "xllamacpp", "pydantic")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("wikihowagent", *VERSIONED_PACKAGES):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


@dataclass
class RunStats:
    total: int = 0  # tutorials selected
    already_done: int = 0  # finished in an earlier invocation
    done: int = 0  # finished now (ok)
    failed: int = 0  # finished now with an error
    completion_tokens: int = 0
    turn_warnings: int = 0  # turns kept with a turn-check warning (echo, wrong role)
    turn_retries: int = 0  # replies retried after a turn check
    manager_fallbacks: int = 0  # learner turns the llm manager could not classify (the rules decided)
    posttests: int = 0  # post-tests taken
    posttest_failures: int = 0  # post-tests without a usable answer (failed call, not a step list)
    errors: list[str] = field(default_factory=list)


def to_record(
    tutorial: Tutorial,
    state: dict[str, Any],
    run_name: str,
    teacher: str,
    learner: str,
    started: str,
    options: WorkflowOptions,
    manager: str = "rules",
) -> ConversationRecord:
    turns = list(state.get("messages", []))
    for index, label, fell_back in state.get("labels", []):
        turns[index] = turns[index].model_copy(update={"manager_label": label, "manager_fallback": fell_back})
    error = state.get("error")
    finished = bool(state.get("finished"))
    warnings = [f"turn {i} ({t.role}): {w}" for i, t in enumerate(turns) for w in t.warnings]
    if error and finished:  # only the learner's goodbye after FINISHED failed: the conversation is complete
        warnings, error = [*warnings, f"farewell not generated: {error}"], None
    if error:
        stop = "error"
    elif finished:
        stop = "finished"
    elif state.get("stopped"):
        stop = "learner_stopped"
    elif state.get("quit"):
        stop = "quit"
    elif len(turns) >= options.max_interactions:
        stop = "max_interactions"
    else:  # cannot happen with the graph's routing; say so rather than guess
        stop, error = "error", "conversation ended without FINISHED or the interaction limit"
    return ConversationRecord(
        conversation_id=make_conversation_id(run_name, tutorial.tutorial_id),
        tutorial_id=tutorial.tutorial_id,
        doc_id=tutorial.doc_id,
        method_id=tutorial.method_id,
        source_tutorial_path=tutorial.source_tutorial_path,
        title=tutorial.title,
        categories=tutorial.categories,
        topic=tutorial.topic,
        domain=tutorial.domain,
        summary=tutorial.summary,
        tutorial=TutorialRef(title=tutorial.method_title, steps=tutorial.steps),
        conversation=conversation_lines(turns),
        turns=turns,
        finished=finished,
        stop_reason=stop,
        error=error,
        warnings=warnings,
        teacher=teacher,
        learner=learner,
        persona=persona.name if (persona := state.get("persona")) is not None else "",
        manager=manager,
        posttest=state.get("posttest"),
        started_at=started,
        ended_at=now(),
    )


def prepare_run_dir(run_dir: Path, fingerprint: dict[str, Any], retry_failed: bool) -> tuple[set[str], RunInfo | None]:
    """Check that `run_dir` holds this run (or nothing); return the tutorial ids already done and the
    previous run.json (None for a new run).

    Failed records are dropped (and later re-run) when `retry_failed`; duplicates from any earlier
    crash are collapsed, keeping the last record per tutorial. The file is rewritten atomically.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    previous = read_run_info(run_dir) if (run_dir / RUN_INFO).exists() else None
    if previous is not None:
        old = previous.fingerprint
        changed = [k for k in fingerprint if k in old and old[k] != fingerprint[k]]
        if changed:
            raise RunError(
                f"{run_dir}: holds a run with different {', '.join(changed)}; "
                "use --out for a new run directory (or remove this one)"
            )
    path = run_dir / CONVERSATIONS
    if not path.exists():
        return set(), previous
    repair_torn_tail(path)  # a conversation cut mid-write by a kill is simply run again
    try:
        records = [rec for _, rec in read_records(path)]
    except JsonlError as exc:  # damage other than a torn tail: stop rather than drop records
        raise RunError(f"{exc}; fix or remove that line, then rerun") from None
    latest = {rec.tutorial_id: rec for rec in records}  # the last record per tutorial wins
    keep = [r for r in latest.values() if not (retry_failed and r.error)]
    if len(keep) != len(records):
        rewrite_records(path, keep)
    return {r.tutorial_id for r in keep}, previous


async def run_conversations(
    tutorials: list[Tutorial],
    teacher_model: BaseChatModel,
    learner_model: BaseChatModel,
    prompts: PromptTemplates,
    options: WorkflowOptions,
    out_path: Path,
    *,
    run_name: str,
    teacher: str,
    learner: str,
    concurrency: int,
    on_done: Callable[[ConversationRecord], None] | None = None,
    stats: RunStats | None = None,
    personas: Mapping[str, Persona] | None = None,
    manager: Manager | None = None,
    manager_spec: str = "rules",
    posttest: PostTester | None = None,
) -> RunStats:
    """Run `tutorials` through the graph with at most `concurrency` conversations in flight.

    `stats` (updated in place, so progress displays can read it) defaults to a fresh RunStats.
    `personas` maps a tutorial id to its learner persona (default: the prompts file's learner); `manager`
    classifies learner messages (default: the rules), recorded as `manager_spec`; `posttest` gives each
    conversation the learner's post-test (None: none).
    """
    graph = build_graph(teacher_model, learner_model, prompts, options, manager, posttest=posttest)
    stats = stats if stats is not None else RunStats(total=len(tutorials))
    queue: asyncio.Queue[Tutorial] = asyncio.Queue()
    for t in tutorials:
        queue.put_nowait(t)
    config = {"recursion_limit": recursion_limit(options)}

    with JsonlAppender(out_path) as sink:

        async def worker() -> None:
            while True:
                try:
                    tutorial = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                started = now()
                try:
                    cid = make_conversation_id(run_name, tutorial.tutorial_id)
                    persona = (personas or {}).get(tutorial.tutorial_id)
                    state = await graph.ainvoke(initial_state(tutorial, cid, persona), config=config)
                except Exception as exc:  # a graph-level failure still yields a record
                    state = {"messages": [], "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
                record = to_record(tutorial, state, run_name, teacher, learner, started, options, manager_spec)
                # Single-threaded event loop: appends never interleave.
                sink.append(record)
                if record.error:
                    stats.failed += 1
                    stats.errors.append(f"{tutorial.tutorial_id} ({tutorial.title}): {record.error}")
                else:
                    stats.done += 1
                stats.completion_tokens += sum(t.completion_tokens for t in record.turns)
                stats.turn_warnings += sum(len(t.warnings) for t in record.turns)
                stats.turn_retries += sum(len(t.retried) for t in record.turns)
                stats.manager_fallbacks += sum(t.manager_fallback for t in record.turns)
                if record.posttest is not None:
                    stats.posttests += 1
                    stats.posttest_failures += record.posttest.post.error is not None
                if on_done is not None:
                    on_done(record)

        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    return stats


def run_info(
    name: str,
    fingerprint: dict[str, Any],
    config: Config,
    resolved: dict[str, Any],
    tutorials_source: str,
    started: str,
    filters: dict[str, Any],
) -> RunInfo:
    return RunInfo(
        name=name,
        teacher=fingerprint["teacher"],
        learner=fingerprint["learner"],
        evaluator=fingerprint.get("evaluator"),
        resolved=resolved,  # provider/model/base_url of each role; never a key
        fingerprint=fingerprint,
        config=config.model_dump(mode="json"),
        tutorials_source=tutorials_source,
        filters=filters,
        started_at=started,
        versions=package_versions(),
    )


def _readable_records(path: Path) -> list[ConversationRecord]:
    """The records of a conversations file for counting; a damaged line is left out here (resume reports it)."""
    if not path.exists():
        return []
    out = []
    try:
        for _, rec in read_records(path):
            out.append(rec)
    except JsonlError:
        pass
    return out


def finish_run_info(run_dir: Path, info: RunInfo, stats: RunStats, interrupted: bool = False) -> None:
    records = _readable_records(run_dir / CONVERSATIONS)
    info.ended_at = now()
    complete = not stats.failed and len(records) >= stats.total
    info.status = "interrupted" if interrupted else "complete" if complete else "incomplete"
    info.counts = {
        "tutorials": stats.total,
        **count_records(records),
        "this_invocation": {"done": stats.done, "failed": stats.failed, "skipped_existing": stats.already_done},
    }
    write_run_info(run_dir, info, in_place_if_full=True)


# --------------------------------------------------------------------------- the stage


class GenerateError(WikihowagentError, RuntimeError):
    """A problem that stops `generate` before or around the work (config, tutorials, backend, run dir); one line."""


@dataclass(frozen=True)
class GenerateRequest:
    """What `wikihowagent generate` was asked to do (None = the config's value)."""

    teacher: str = "local"
    learner: str | None = None  # default: the teacher (homogeneous)
    evaluator: str | None = None  # recorded for `evaluate` (default: the teacher)
    config: Path | None = None
    tutorials: Path | None = None  # default: the bundled sample
    out: Path | None = None  # default: <runs_dir>/T-<teacher>_L-<learner>_E-<evaluator>
    max_tutorials: int | None = None
    domains: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    domains_file: Path | None = None  # topic -> domain CSV replacing wikihowagent/data/domains.csv
    sample: int | None = None  # a balanced sample: N tutorials per `per` (domain | topic)
    per: Per = "domain"
    sample_seed: int = 0
    shard: str | None = None  # "K/N"
    retry_failed: bool = True
    skip_invalid: bool = False
    base_url: str | tuple[str, ...] | None = None  # for openai: specs only; several = replicas
    concurrency: int | None = None
    max_interactions: int | None = None
    history: int | None = None
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    retries: int | None = None
    learner_personas: tuple[str, ...] = ()  # wikihowagent/configs/personas.yaml names; () = the config's (paper)
    max_clarifications: int | None = None
    manager: str | None = None  # workflow/manager.py MANAGERS: rules | llm
    manager_model: str | None = None  # the llm manager's spec (default: the teacher's)
    preset: str | None = None  # presets.py: a config layer under --config and the flags
    posttest: bool | None = None  # the learner's post-test after each conversation (None: the config's, on)
    posttest_prompt: str | None = None  # workflow/posttest.py PROMPTS (None: the config's, v2)

    def config_overrides(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "model": {
                "temperature": self.temperature,
                "seed": self.seed,
                "max_tokens": self.max_tokens,
                "timeout_s": self.timeout,
                "max_retries": self.retries,
            },
            "workflow": {
                "max_interactions": self.max_interactions,
                "history": self.history,
                "learner_personas": list(self.learner_personas) or None,
                "max_clarifications_per_step": self.max_clarifications,
                "manager": self.manager,
                "manager_model": self.manager_model,
                "posttest": self.posttest,
                "posttest_prompt": self.posttest_prompt,
            },
        }


@dataclass
class GenerateSummary:
    run_dir: Path
    stats: RunStats
    counts: dict[str, Any] = field(default_factory=dict)  # run.json's counts (whole run, not just this call)
    max_interactions: int = 0
    interrupted: bool = False
    disk_full: str | None = None  # the one-line message when the disk filled up (the run is "interrupted")
    llm_manager: bool = False

    @property
    def exit_code(self) -> int:
        if self.disk_full:
            return 1
        if self.interrupted:
            return 130
        return 1 if self.counts.get("failed") else 0


def _select_tutorials(req: GenerateRequest, cfg: Config, console: Any) -> tuple[list[Tutorial], str]:
    source = req.tutorials or default_tutorials_path()
    report = LoadReport()
    try:
        with console.status("reading tutorials", spinner="dots"):  # a 20,000-article crawl takes ~15 s
            selected = list(
                select_tutorials(
                    source,
                    domains=req.domains,
                    topics=req.topics,
                    domains_file=req.domains_file,
                    sample=req.sample,
                    per=req.per,
                    seed=req.sample_seed,
                    max_tutorials=req.max_tutorials,
                    clean_citations=cfg.workflow.strip_citations,
                    skip_invalid=req.skip_invalid,
                    report=report,
                )
            )
    except (TutorialError, ValueError) as exc:
        raise GenerateError(str(exc)) from None
    print_load_warnings(console, report)
    if not selected:
        raise GenerateError(empty_message(source, req.domains, req.topics))
    return selected, str(source)


def run_generation(req: GenerateRequest, console: Any) -> GenerateSummary:
    """Run (or resume) one run directory. `console` (rich) shows the plan, skipped articles and the progress
    bar. Raises a WikihowagentError (one line: GenerateError, or the config, corpus, backend or run error as
    it is) for anything that stops the stage; a conversation's failure does not. The steps: the config and the
    tutorials (`_plan`), then, under the run directory's lock, the conversations (`_run`)."""
    plan = _plan(req, console)
    with dir_lock(plan.run_dir, blocking=False, what="another 'wikihowagent generate'"):
        try:
            return _run(plan, req.retry_failed, console)
        finally:
            shutdown_local_servers()


@dataclass
class RoleModels:
    """The run's roles (teacher, learner and the llm manager's) -> their spec, what it resolved to and its
    endpoint(s) (--base-url is for openai: specs; an Ollama or local role keeps its own); `model(role)` makes a
    role's chat model once (one for roles of the same spec: homogeneous)."""

    specs: dict[str, str]
    resolved: dict[str, Any]
    urls: dict[str, list[str] | None]
    cfg: Config
    console: Any
    made: dict[str, BaseChatModel] = field(default_factory=dict)

    def model(self, role: str) -> BaseChatModel:
        spec = self.specs[role]
        if spec not in self.made:
            self.made[spec] = make_pooled_chat_model(  # replicas, least-busy routing, outage pause
                self.resolved[role],
                self.cfg.model,
                self.cfg.local,
                self.urls[role],
                pool_settings=self.cfg.replicas,
                on_event=lambda m: self.console.print(f"note: {m}", highlight=False, markup=False),
            )
        return self.made[spec]


@dataclass
class GenerationPlan:
    """What `run_generation` settled before taking the run directory's lock: everything `_run` needs."""

    cfg: Config
    name: str  # the run's name (conversation ids depend on it, not on the shard)
    run_dir: Path
    fingerprint: dict[str, Any]  # what the conversations depend on (a resume must match it)
    endpoints: dict[str, Any]  # run.json's `resolved`: each role's model and server, the evaluator's included
    selected: list[Tutorial]
    source: str  # the tutorials' path
    filters: dict[str, Any]
    options: WorkflowOptions
    prompts: PromptTemplates
    roles: RoleModels
    personas: Mapping[str, Persona]


def _plan(req: GenerateRequest, console: Any) -> GenerationPlan:
    """The config, the tutorials (of this shard), the roles' models checked, the run directory and its
    fingerprint; a one-line error for anything that stops the stage before any conversation."""
    learner = req.learner or req.teacher
    cfg = load_config(req.config, req.config_overrides(), preset=preset_config(req.preset))
    selected, source = _select_tutorials(req, cfg, console)
    personas = assign_personas(selected, select_personas(cfg.workflow.learner_personas, cfg.personas or None))
    if cfg.workflow.manager not in MANAGERS:
        raise GenerateError(f"--manager {cfg.workflow.manager!r}: expected one of {', '.join(MANAGERS)}")
    get_prompt(cfg.workflow.posttest_prompt)  # an unknown name: one line, before any model loads
    shard_kn = shard_option(req.shard, GenerateError)
    if shard_kn is not None:
        selected = selected[shard_kn[0] :: shard_kn[1]]
    prompts = load_prompts(cfg.prompts or None)
    roles, endpoints = _roles(req, cfg, learner, console)
    name = (
        req.out.name
        if req.out
        else default_run_name(req.teacher, learner, req.evaluator, cfg.workflow.learner_personas)
    )
    run_dir = req.out or Path(cfg.runs_dir) / name
    if shard_kn is not None:  # shards keep the run's name, so conversation ids do not depend on sharding
        run_dir = shard_dir(run_dir, *shard_kn)
    return GenerationPlan(
        cfg=cfg,
        name=name,
        run_dir=run_dir,
        fingerprint=_fingerprint(req, cfg, learner, prompts, source, personas, roles),
        endpoints=endpoints,
        selected=selected,
        source=source,
        filters=_filters(req),
        options=WorkflowOptions.from_config(cfg),
        prompts=prompts,
        roles=roles,
        personas=personas,
    )


def _filters(req: GenerateRequest) -> dict[str, Any]:
    """run.json's record of how the tutorials were selected."""
    return {
        "max_tutorials": req.max_tutorials,
        "domains": list(req.domains),
        "shard": req.shard,
        "topics": list(req.topics),
        "domains_file": str(req.domains_file) if req.domains_file else None,
        "sample": {"n": req.sample, "per": req.per, "seed": req.sample_seed} if req.sample else None,
    }


def _roles(req: GenerateRequest, cfg: Config, learner: str, console: Any) -> tuple[RoleModels, dict[str, Any]]:
    """Each role's spec resolved and its replicas checked (one check per spec and servers: a dead replica is
    warned about once) -> (the roles, run.json's `resolved`, which records the evaluator's endpoint too so that
    `evaluate` asks the same server; not checked: it is not used here)."""
    aliases = Path(cfg.models) if cfg.models else None
    specs = {"teacher": req.teacher, "learner": learner}
    if cfg.workflow.manager == "llm":
        specs["manager"] = cfg.workflow.manager_model or req.teacher
    resolved: dict[str, Any] = {}
    urls: dict[str, list[str] | None] = {}
    given = [req.base_url] if isinstance(req.base_url, str) else list(req.base_url or ())
    checked: set[tuple[str, tuple[str, ...]]] = set()
    for role, spec in specs.items():
        resolved[role] = resolve_spec(spec, aliases)
        urls[role] = role_endpoints(resolved[role], given, aliases)
        key = (resolved[role].spec, tuple(urls[role] or ()))
        if key not in checked:  # teacher = learner: one check, one warning per dead replica
            checked.add(key)
            check_replicas(
                resolved[role], urls[role], lambda m: console.print(f"warning: {m}", highlight=False, markup=False)
            )
    judge = resolve_spec(req.evaluator or req.teacher, aliases)
    endpoints = {k: _endpoint(v, urls[k]) for k, v in resolved.items()}
    endpoints["evaluator"] = _endpoint(judge, role_endpoints(judge, given, aliases))
    return RoleModels(specs, resolved, urls, cfg, console), endpoints


def _fingerprint(
    req: GenerateRequest,
    cfg: Config,
    learner: str,
    prompts: PromptTemplates,
    source: str,
    personas: Mapping[str, Persona],
    roles: RoleModels,
) -> dict[str, Any]:
    """What the conversations depend on; transport settings (timeout, retries, slots, concurrency) may change
    between invocations, e.g. a longer --timeout to finish the conversations that timed out."""
    fingerprint = {
        "teacher": req.teacher,
        "learner": learner,
        "evaluator": req.evaluator or req.teacher,
        "model": cfg.model.model_dump(
            exclude={"timeout_s", "max_retries"}
        ),  # The post-test does not change the conversations: a run resumes with or without it.
        "workflow": cfg.workflow.model_dump(exclude={"posttest", "posttest_prompt"}),
        "prompts": prompts.model_dump(),
        "tutorials_source": source,
        "personas": {p.name: p.model_dump() for p in personas.values()},
    }
    if any(r.provider == "local" for r in roles.resolved.values()):
        local = cfg.local.model_dump(include={"max_tokens", "n_ctx"})
        if cfg.local.cache_prompt:  # replies then depend on the slots' history; only when on: older runs resume
            local["cache_prompt"] = True
        fingerprint["local"] = local
    return fingerprint


def _run(plan: GenerationPlan, retry_failed: bool, console: Any) -> GenerateSummary:
    """The run directory prepared (resume), the plan printed, the models made, run.json written, the
    conversations still to do run, and run.json finished (also after Ctrl-C or a full disk)."""
    done_ids, previous = prepare_run_dir(plan.run_dir, plan.fingerprint, retry_failed)
    todo = [t for t in plan.selected if t.tutorial_id not in done_ids]
    stats = RunStats(total=len(plan.selected), already_done=len(plan.selected) - len(todo))
    roles = plan.roles.specs
    console.print(
        Text.assemble(
            "run ",
            (str(plan.run_dir), "bold"),
            f": {len(plan.selected)} tutorials, {stats.already_done} "
            f"already done, {len(todo)} to go (teacher={roles['teacher']}, "
            f"learner={roles['learner']}, concurrency={plan.cfg.concurrency})",
        )
    )
    teacher_model, learner_model = (plan.roles.model("teacher"), plan.roles.model("learner")) if todo else (None, None)
    llm_manager = "manager" in roles
    manager = MANAGERS[plan.cfg.workflow.manager](plan.roles.model("manager") if llm_manager and todo else None)
    manager_spec = f"llm:{roles['manager']}" if llm_manager else plan.cfg.workflow.manager
    started = (previous and previous.started_at) or now()
    info = run_info(plan.name, plan.fingerprint, plan.cfg, plan.endpoints, plan.source, started, plan.filters)
    if previous is not None:
        info.resumed_at = now()
    write_run_info(plan.run_dir, info)
    summary = GenerateSummary(
        run_dir=plan.run_dir, stats=stats, max_interactions=plan.options.max_interactions, llm_manager=llm_manager
    )
    try:
        if todo:
            assert teacher_model is not None and learner_model is not None  # made above whenever there is work
            _converse(plan, todo, stats, console, teacher_model, learner_model, manager, manager_spec)
    except KeyboardInterrupt:
        summary.interrupted = True
    except DiskFullError as exc:  # the records written so far are whole; a rerun resumes
        summary.interrupted, summary.disk_full = True, str(exc)
    finally:
        # Also after Ctrl-C, a full disk or an unexpected error: run.json never stays "running".
        try:
            finish_run_info(plan.run_dir, info, stats, interrupted=summary.interrupted)
        except DiskFullError as exc:
            summary.disk_full = summary.disk_full or str(exc)
    summary.counts = info.counts
    return summary


def _converse(
    plan: GenerationPlan,
    todo: list[Tutorial],
    stats: RunStats,
    console: Any,
    teacher_model: BaseChatModel,
    learner_model: BaseChatModel,
    manager: Manager,
    manager_spec: str,
) -> None:
    """The conversations of `todo` (each with the learner's post-test when the config asks for one) under a
    progress bar; `stats` is updated as each one finishes."""
    progress = Progress(
        TextColumn("[bold]generate"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("ok {task.fields[ok]} · failed {task.fields[failed]} · {task.fields[tokens]} tokens"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
    )
    cfg, roles = plan.cfg, plan.roles.specs
    with progress:
        task = progress.add_task("generate", total=len(todo), ok=0, failed=0, tokens=0)

        def on_done(record: ConversationRecord) -> None:  # `stats` is updated in place before this is called
            progress.update(task, advance=1, ok=stats.done, failed=stats.failed, tokens=stats.completion_tokens)

        test_prompt = get_prompt(cfg.workflow.posttest_prompt)
        with (
            post_tester(learner_model, roles["learner"], plan.run_dir, test_prompt)
            if cfg.workflow.posttest
            else contextlib.nullcontext()
        ) as tester:
            asyncio.run(
                run_conversations(
                    todo,
                    teacher_model,
                    learner_model,
                    plan.prompts,
                    plan.options,
                    plan.run_dir / CONVERSATIONS,
                    run_name=plan.name,
                    teacher=roles["teacher"],
                    learner=roles["learner"],
                    concurrency=cfg.concurrency,
                    on_done=on_done,
                    stats=stats,
                    personas=plan.personas,
                    manager=manager,
                    manager_spec=manager_spec,
                    posttest=tester,
                )
            )


def _endpoint(resolved: Any, urls: list[str] | None) -> dict[str, Any]:
    """run.json's record of one role's model: the resolved spec, its endpoint and any further replicas."""
    return (
        resolved.model_dump()
        | ({"base_url": urls[0]} if urls else {})
        | ({"base_urls": urls} if urls and len(urls) > 1 else {})
    )


def assign_personas(tutorials: list[Tutorial], personas: list[Persona]) -> dict[str, Persona]:
    """Round-robin over the selected tutorials (before sharding), so a resume or a shard assigns alike."""
    return {t.tutorial_id: personas[i % len(personas)] for i, t in enumerate(tutorials)}
