"""`wikihowagent chat`: the typer command (registered by wikihowagent/cli.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from wikihowagent.console import print_error


def chat(
    role: Annotated[str, typer.Option(metavar="learner|teacher", help="The role you play; the model plays the other.")] = "learner",
    model: Annotated[str, typer.Option(help="Model spec of the other role: local (default), an alias, ollama:<tag>, openai:<model>.")] = "local",
    tutorial: Annotated[Optional[str], typer.Option(help="Tutorial id (see `wikihowagent tutorials`).")] = None,
    tutorials: Annotated[Optional[Path], typer.Option(help="Article directory tree, JSON or JSONL file (default: the bundled sample).")] = None,
    pick: Annotated[bool, typer.Option("--pick", help="Choose the tutorial from a numbered list.")] = False,
    out: Annotated[Optional[Path], typer.Option(help="Run directory for the record (default: <runs_dir>/chat-<role>-<tutorial id>).")] = None,
    config: Annotated[Optional[Path], typer.Option(help="YAML config overriding configs/default.yaml.")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible server URL for openai: specs.")] = None,
) -> None:
    """Play the learner or the teacher yourself against the model, on one tutorial; the conversation is saved as a normal run record (/next, /step, /quit)."""
    console = Console()
    err = Console(stderr=True)
    try:
        code = _chat(console, err, role, model, tutorial, tutorials, pick, out, config, base_url)
    except typer.Exit:
        raise
    raise typer.Exit(code)


def _fail(err: Console, message: str) -> int:
    print_error(message, err)
    return 2


def _chat(console, err, role, model, tutorial_id, tutorials, pick, out, config, base_url) -> int:
    from rich.table import Table

    from wikihowagent.backends import BackendError, check_backend, make_chat_model, resolve_spec, shutdown_local_servers
    from wikihowagent.config import ConfigError, load_config
    from wikihowagent.generation.core import now, package_versions, to_record
    from wikihowagent.records import make_conversation_id
    from wikihowagent.runs import RunInfo
    from wikihowagent.tutorials import TutorialError, default_tutorials_path, load_tutorials
    from wikihowagent.workflow.graph import WorkflowOptions
    from wikihowagent.workflow.prompts import load_prompts

    from .core import HELP, ROLES, ChatSession, save_chat

    if role not in ROLES:
        return _fail(err, f"--role {role!r}: expected learner or teacher")
    try:
        cfg = load_config(config)
        prompts = load_prompts(cfg.prompts or None)
        items = load_tutorials(tutorials or default_tutorials_path(), clean_citations=cfg.workflow.strip_citations)
    except (ConfigError, TutorialError) as exc:
        return _fail(err, str(exc))
    if not items:
        return _fail(err, f"{tutorials or default_tutorials_path()}: no tutorials with >= 2 steps")
    if tutorial_id:
        chosen = next((t for t in items if t.tutorial_id == tutorial_id), None)
        if chosen is None:
            return _fail(err, f"--tutorial {tutorial_id}: no such tutorial (list them with `wikihowagent tutorials`)")
    elif pick:
        table = Table("#", "tutorial_id", "steps", "title / method")
        for i, t in enumerate(items, 1):
            table.add_row(str(i), t.tutorial_id, str(len(t.steps)), f"{t.title} / {t.method_title}")
        console.print(table)
        try:
            answer = input(f"tutorial number (1-{len(items)}) > ").strip()
        except EOFError:
            return _fail(err, "no tutorial chosen")
        if not answer.isdigit() or not 1 <= int(answer) <= len(items):
            return _fail(err, f"{answer!r}: expected a number from 1 to {len(items)}")
        chosen = items[int(answer) - 1]
    else:
        return _fail(err, "choose a tutorial: --tutorial ID or --pick")
    try:
        resolved = resolve_spec(model, Path(cfg.models) if cfg.models else None)
        url = base_url if resolved.provider == "openai" else None
        check_backend(resolved, url)
    except (BackendError, ConfigError) as exc:
        return _fail(err, str(exc))
    run_dir = out or Path(cfg.runs_dir) / f"chat-{role}-{chosen.tutorial_id}"
    name = run_dir.name
    teacher, learner = ("human", model) if role == "teacher" else (model, "human")
    options = WorkflowOptions(max_interactions=cfg.workflow.max_interactions, history=cfg.workflow.history,
                              learner_farewell=cfg.workflow.learner_farewell,
                              max_clarifications_per_step=cfg.workflow.max_clarifications_per_step,
                              seed=cfg.model.seed, human=role)
    cid = make_conversation_id(name, f"{chosen.tutorial_id}/{now()}")  # one record per session
    started = now()
    console.print(f"You are the {role}; the model ({model}) is the {'learner' if role == 'teacher' else 'teacher'}. "
                  + HELP, markup=False, highlight=False)
    try:
        llm = make_chat_model(model, cfg.model, cfg.local, base_url=url,
                              aliases_path=Path(cfg.models) if cfg.models else None)
        session = ChatSession(chosen, role, llm, prompts, options, cid, console, read=input)
        # Not asyncio.run: its SIGINT handler only cancels the task, which cannot interrupt a blocking
        # input(); with Python's default handler Ctrl-C raises KeyboardInterrupt at the prompt or mid-reply.
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(session.run())
        except KeyboardInterrupt:
            session.quit = True
            console.print("\ninterrupted: saving what was said", markup=False)
        finally:
            loop.close()
        state = session.state()
    except BackendError as exc:
        return _fail(err, str(exc))
    finally:
        shutdown_local_servers()
    record = to_record(chosen, state, name, teacher, learner, started, options).model_copy(
        update={"conversation_id": cid, "human": role})
    info = RunInfo(name=name, teacher=teacher, learner=learner, evaluator=model, human=role,
                   resolved={"teacher" if role == "learner" else "learner":
                             resolved.model_dump() | ({"base_url": url} if url else {})},
                   tutorials_source=str(tutorials or default_tutorials_path()), started_at=started,
                   ended_at=now(), status="complete", versions=package_versions())
    path = save_chat(run_dir, record, info)
    console.print(f"saved {len(record.turns)} messages ({record.stop_reason}) to {path}; "
                  f"score it with: wikihowagent evaluate {run_dir}", markup=False, highlight=False)
    return 1 if record.error else 0
