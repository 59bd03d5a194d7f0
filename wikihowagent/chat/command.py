"""`wikihowagent chat`: the typer command (registered by wikihowagent/cli.py). It parses, calls the stage
(core.py, imported lazily) and prints."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from wikihowagent.console import INPUTS, MODELS, OUTPUT, make_console, print_error
from wikihowagent.errors import WikihowagentError


def chat(
    role: Annotated[
        str,
        typer.Option(
            rich_help_panel=MODELS, metavar="learner|teacher", help="The role you play; the model plays the other."
        ),
    ] = "learner",
    model: Annotated[
        str,
        typer.Option(
            rich_help_panel=MODELS,
            help="Model spec of the other role: local (default), an alias, ollama:<tag>, openai:<model>.",
        ),
    ] = "local",
    tutorial: Annotated[
        str | None, typer.Option(rich_help_panel=INPUTS, help="Tutorial id (see `wikihowagent tutorials`).")
    ] = None,
    tutorials: Annotated[
        Path | None,
        typer.Option(
            rich_help_panel=INPUTS, help="Article directory tree, JSON or JSONL file (default: the bundled sample)."
        ),
    ] = None,
    pick: Annotated[
        bool, typer.Option("--pick", rich_help_panel=INPUTS, help="Choose the tutorial from a numbered list.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            rich_help_panel=OUTPUT, help="Run directory for the record (default: <runs_dir>/chat-<role>-<tutorial id>)."
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(rich_help_panel=INPUTS, help="YAML config overriding wikihowagent/configs/default.yaml."),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(rich_help_panel=MODELS, help="OpenAI-compatible server URL for openai: specs.")
    ] = None,
) -> None:
    """Play the learner or the teacher yourself against the model, on one tutorial; the conversation is saved as a normal run record (/next, /step, /quit)."""
    from .core import ChatRequest, run_chat

    console = make_console(stderr=False)  # tutorial titles and model output print literally
    request = ChatRequest(
        role=role,
        model=model,
        tutorial=tutorial,
        tutorials=tutorials,
        pick=pick,
        out=out,
        config=config,
        base_url=base_url,
    )
    try:
        summary = run_chat(request, console, read=input)
    except WikihowagentError as exc:  # ChatError, or a config, corpus or backend error as it is
        print_error(str(exc))
        raise typer.Exit(2) from None
    record = summary.record
    console.print(
        f"saved {len(record.turns)} messages ({record.stop_reason}) to {summary.path}; "
        f"score it with: wikihowagent evaluate {shlex.quote(str(summary.path.parent))}",
        soft_wrap=True,
    )
    raise typer.Exit(1 if record.error else 0)
