"""The exit-code handling `evaluate`, `compare` and `judge-check` share (their options are declared in
wikihowagent/cli_options.py): a WikihowagentError (the stage's own, or a config, input, rubric or backend error as
it is) is one `error:` line and exit 2; Ctrl-C is one `interrupted:` line saying what was kept and exit 130. typer is imported inside the functions (no module-level work)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def command_errors(console: Any, kept: str) -> Iterator[None]:
    """Exit 2 with one `error:` line on a WikihowagentError, exit 130 on Ctrl-C saying that `kept` (e.g. "scores")
    written so far are kept: the exit codes of `evaluate`, `compare` and `judge-check`."""
    import typer

    from wikihowagent.console import print_error, print_labeled
    from wikihowagent.errors import WikihowagentError

    try:
        yield
    except WikihowagentError as exc:
        print_error(str(exc), console)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        print_labeled(
            console, "interrupted:", "yellow", f"{kept} written so far are kept; rerun the same command to resume"
        )
        raise typer.Exit(130) from None
