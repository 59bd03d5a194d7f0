"""The command line as click command objects, for the documentation site's generated CLI reference.

`mkdocs-click` (docs/reference/cli.md) reads the attribute `cli` of this module; it is built on access
(module `__getattr__`), so importing this module builds nothing. The reference is rendered from the click
objects (names, options, their help), never from `--help` text, so the site and `--help` cannot disagree.
"""

from __future__ import annotations

from typing import Any


def command() -> Any:
    """The `wikihowagent` click group (Typer's `get_command` on the app)."""
    import typer

    from wikihowagent.cli import app

    return typer.main.get_command(app)


def __getattr__(name: str) -> Any:
    if name == "cli":
        return command()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
