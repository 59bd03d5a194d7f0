"""One format for the commands' error lines (stderr, one line, no stack trace)."""

from __future__ import annotations

from rich.console import Console


def print_error(message: str, console: Console | None = None) -> None:
    (console or Console(stderr=True)).print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
