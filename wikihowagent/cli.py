"""The `wikihowagent` command line (typer). Commands stay thin: each parses, calls one function of its stage
(generation/, evaluation/, alignment/) and prints."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from wikihowagent.console import print_error

app = typer.Typer(
    help="Simulate teacher-learner conversations grounded in WikiHow tutorials, evaluate their pedagogic "
    "quality, and align LLM judges with human ratings.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console(stderr=True)

# Each stage registers its own commands (their modules import the stage's core lazily).
from wikihowagent.alignment.command import align, annotate_export  # noqa: E402
from wikihowagent.evaluation.command import evaluate  # noqa: E402
from wikihowagent.generation.command import generate, merge  # noqa: E402

app.command("generate")(generate)
app.command("merge")(merge)
app.command("evaluate")(evaluate)

annotate_app = typer.Typer(help="Annotation sheets for the human alignment study.", no_args_is_help=True)
annotate_app.command("export")(annotate_export)
app.add_typer(annotate_app, name="annotate")
app.command("align")(align)

from wikihowagent.sweep.command import sweep_app  # noqa: E402

app.add_typer(sweep_app, name="sweep")


def fail(message: str, code: int = 2) -> None:
    """Print one clear line and exit (no stack trace for expected problems)."""
    print_error(message, console)
    raise typer.Exit(code)


@app.command()
def graph(
    max_interactions: Annotated[int, typer.Option(min=2)] = 40,
) -> None:
    """Print the conversation graph as a Mermaid diagram."""
    from wikihowagent.workflow.graph import WorkflowOptions, mermaid

    typer.echo(mermaid(WorkflowOptions(max_interactions=max_interactions)))


@app.command("tutorials")
def list_tutorials(
    tutorials: Annotated[Optional[Path], typer.Option(help="Article directory tree, JSON or JSONL file.")] = None,
    domain: Annotated[Optional[list[str]], typer.Option(help="Only this domain (repeatable).")] = None,
    max_tutorials: Annotated[Optional[int], typer.Option(min=1)] = None,
) -> None:
    """List the tutorials an input yields (id, domain, steps, title)."""
    from rich.table import Table

    from wikihowagent.tutorials import LoadReport, TutorialError, load_tutorials

    report = LoadReport()
    try:
        items = load_tutorials(tutorials, domains=domain or (), max_tutorials=max_tutorials, report=report)
    except TutorialError as exc:
        fail(str(exc))
    table = Table("tutorial_id", "domain", "steps", "title / method")
    for t in items:
        table.add_row(t.tutorial_id, t.domain, str(len(t.steps)), f"{t.title} / {t.method_title}")
    Console().print(table)
    console.print(f"{len(items)} tutorials from {report.articles} articles ({report.methods} methods; "
                  f"{report.skipped_short} with < 2 steps skipped)", highlight=False)


def main() -> None:
    try:
        app()
    except BrokenPipeError:  # `wikihowagent graph | head`
        sys.exit(0)


if __name__ == "__main__":
    main()
