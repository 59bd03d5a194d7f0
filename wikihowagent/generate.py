"""`wikihowagent generate`: run the conversation graph over tutorials into a resumable run directory.

Conversations stream through a bounded pool of asyncio workers (no lockstep batches: a slow one never
holds up the others). Each finished conversation is appended as one fsynced line, so a killed run loses
at most the conversations in flight; rerunning the same command skips what is done and retries failures.
"""

from __future__ import annotations

import asyncio
import platform
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from wikihowagent.config import Config
from wikihowagent.records import ConversationRecord, Tutorial, TutorialRef, conversation_lines, make_conversation_id
from wikihowagent.runs import (
    CONVERSATIONS,
    RUN_INFO,
    JsonlAppender,
    JsonlError,
    RunError,
    iter_jsonl,
    read_run_info,
    repair_torn_tail,
    rewrite_jsonl,
    write_json_atomic,
)
from wikihowagent.workflow.graph import WorkflowOptions, build_graph, initial_state, recursion_limit
from wikihowagent.workflow.prompts import PromptTemplates

VERSIONED_PACKAGES = ("langgraph", "langchain-core", "langchain-openai", "langchain-ollama", "xllamacpp", "pydantic")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def default_run_name(teacher: str, learner: str, evaluator: str | None) -> str:
    """The paper's run naming, T-<teacher>_L-<learner>_E-<evaluator>, made filesystem-safe."""
    name = f"T-{teacher}_L-{learner}_E-{evaluator or teacher}"
    return re.sub(r"[^A-Za-z0-9._+=-]+", "-", name)


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
    errors: list[str] = field(default_factory=list)


def to_record(tutorial: Tutorial, state: dict[str, Any], run_name: str, teacher: str, learner: str,
              started: str, options: WorkflowOptions) -> ConversationRecord:
    turns = list(state.get("messages", []))
    error = state.get("error")
    finished = bool(state.get("finished"))
    warnings = []
    if error and finished:  # only the learner's goodbye after FINISHED failed: the conversation is complete
        warnings, error = [f"farewell not generated: {error}"], None
    if error:
        stop = "error"
    elif finished:
        stop = "finished"
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
        started_at=started,
        ended_at=now(),
    )


def prepare_run_dir(run_dir: Path, fingerprint: dict[str, Any], retry_failed: bool) -> tuple[set[str], dict[str, Any]]:
    """Check that `run_dir` holds this run (or nothing); return the tutorial ids already done and the
    previous run.json ({} for a new run).

    Failed records are dropped (and later re-run) when `retry_failed`; duplicates from any earlier
    crash are collapsed, keeping the last record per tutorial. The file is rewritten atomically.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    previous = read_run_info(run_dir) if (run_dir / RUN_INFO).exists() else {}
    if previous:
        old = previous.get("fingerprint", {})
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
        records = [obj for _, obj in iter_jsonl(path)]
    except JsonlError as exc:  # damage other than a torn tail: stop rather than drop records
        raise RunError(f"{exc}; fix or remove that line, then rerun") from None
    latest = {str(obj.get("tutorial_id")): obj for obj in records}  # the last record per tutorial wins
    keep = [o for o in latest.values() if not (retry_failed and o.get("error"))]
    if len(keep) != len(records):
        rewrite_jsonl(path, keep)
    return {str(o["tutorial_id"]) for o in keep}, previous


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
) -> RunStats:
    """Run `tutorials` through the graph with at most `concurrency` conversations in flight.

    `stats` (updated in place, so progress displays can read it) defaults to a fresh RunStats.
    """
    graph = build_graph(teacher_model, learner_model, prompts, options)
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
                    state = await graph.ainvoke(initial_state(tutorial), config=config)
                except Exception as exc:  # a graph-level failure still yields a record
                    state = {"messages": [], "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
                record = to_record(tutorial, state, run_name, teacher, learner, started, options)
                # Single-threaded event loop: appends never interleave.
                sink.append(record)
                if record.error:
                    stats.failed += 1
                    stats.errors.append(f"{tutorial.tutorial_id} ({tutorial.title}): {record.error}")
                else:
                    stats.done += 1
                stats.completion_tokens += sum(t.completion_tokens for t in record.turns)
                if on_done is not None:
                    on_done(record)

        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    return stats


def run_info(name: str, fingerprint: dict[str, Any], config: Config, resolved: dict[str, Any],
             tutorials_source: str, started: str, filters: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "teacher": fingerprint["teacher"],
        "learner": fingerprint["learner"],
        "evaluator": fingerprint.get("evaluator"),
        "resolved": resolved,  # provider/model/base_url of each role; never a key
        "fingerprint": fingerprint,
        "config": config.model_dump(mode="json"),
        "tutorials_source": tutorials_source,
        "filters": filters,
        "started_at": started,
        "ended_at": None,
        "status": "running",
        "counts": {},
        "versions": package_versions(),
    }


def count_records(records: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "conversations": len(records),
        "finished": sum(1 for r in records if r.get("stop_reason") == "finished"),
        "max_interactions": sum(1 for r in records if r.get("stop_reason") == "max_interactions"),
        "failed": sum(1 for r in records if r.get("error")),
    }


def finish_run_info(run_dir: Path, info: dict[str, Any], stats: RunStats, interrupted: bool = False) -> None:
    path = run_dir / CONVERSATIONS
    records = [o for _, o in iter_jsonl(path, on_error=lambda _m: None)] if path.exists() else []
    info["ended_at"] = now()
    complete = not stats.failed and len(records) >= stats.total
    info["status"] = "interrupted" if interrupted else "complete" if complete else "incomplete"
    info["counts"] = {
        "tutorials": stats.total,
        **count_records(records),
        "this_invocation": {"done": stats.done, "failed": stats.failed, "skipped_existing": stats.already_done},
    }
    write_json_atomic(run_dir / RUN_INFO, info)


def parse_shard(value: str) -> tuple[int, int]:
    """"K/N" (0-based K, e.g. a SLURM array index) -> (K, N)."""
    try:
        k, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise ValueError(f"--shard {value!r}: expected K/N, e.g. 0/8") from None
    if n < 1 or not 0 <= k < n:
        raise ValueError(f"--shard {value!r}: need 0 <= K < N")
    return k, n


def shard_dir(run_dir: Path, k: int, n: int) -> Path:
    return run_dir / "shards" / f"{k}-of-{n}"


def merge_shards(run_dir: Path) -> dict[str, int]:
    """Merge `run_dir/shards/*/conversations.jsonl` into `run_dir/conversations.jsonl`.

    One record per tutorial: a successful record beats a failed one, otherwise the later one wins.
    Shards share the parent's run name, so conversation ids do not depend on the sharding.
    """
    shard_dirs = sorted(p for p in (run_dir / "shards").glob("*") if (p / RUN_INFO).exists())
    if not shard_dirs:
        raise RunError(f"{run_dir}: no shards to merge (expected {run_dir}/shards/K-of-N/)")
    from wikihowagent.shards import ShardError, check_shards

    try:  # every shard 0..N-1 there, all made with the same settings
        check_shards(shard_dirs, lambda d: read_run_info(d).get("fingerprint"), run_dir)
    except ShardError as exc:
        raise RunError(str(exc)) from None
    sources = [run_dir / CONVERSATIONS] + [d / CONVERSATIONS for d in shard_dirs]
    merged: dict[str, dict[str, Any]] = {}
    for src in sources:
        if not src.exists():
            continue
        repair_torn_tail(src)
        try:
            for _, obj in iter_jsonl(src):
                key = str(obj.get("tutorial_id"))
                if key not in merged or not obj.get("error") or merged[key].get("error"):
                    merged[key] = obj
        except JsonlError as exc:
            raise RunError(str(exc)) from None
    records = list(merged.values())
    rewrite_jsonl(run_dir / CONVERSATIONS, records)
    info = read_run_info(shard_dirs[0])
    info.update(name=run_dir.name, shards=[d.name for d in shard_dirs], ended_at=now())
    info["counts"] = count_records(records)
    info["status"] = "merged"
    write_json_atomic(run_dir / RUN_INFO, info)
    return {"shards": len(shard_dirs), **info["counts"]}
