"""The `wikihowagent` command line (typer). Commands stay thin: each parses, calls one function of its stage
(corpus/, generation/, evaluation/, alignment/) and prints."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from wikihowagent.console import HelpCommand, HelpGroup, degrade_streams, disk_full_message, make_console, print_error

app = typer.Typer(
    help="Simulate teacher-learner conversations grounded in WikiHow tutorials, evaluate their pedagogic "
    "quality, and align LLM judges with human ratings.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=HelpGroup,  # --help that never cuts an option's name (console.py)
)
console = make_console()


def _print_version(value: bool) -> None:
    if value:
        from wikihowagent import __version__

        typer.echo(f"wikihowagent {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    pass


# Each stage registers its own commands (their modules import the stage's core lazily).
from wikihowagent.alignment.command import align, annotate_export  # noqa: E402
from wikihowagent.chat.command import chat  # noqa: E402
from wikihowagent.compare.command import compare  # noqa: E402
from wikihowagent.corpus.command import stats, tutorials  # noqa: E402
from wikihowagent.evaluation.command import evaluate  # noqa: E402
from wikihowagent.generation.command import generate, merge  # noqa: E402
from wikihowagent.judgecheck.command import judge_check  # noqa: E402
from wikihowagent.model.command import model_app  # noqa: E402
from wikihowagent.report.command import report  # noqa: E402
from wikihowagent.sweep.command import sweep_app  # noqa: E402

app.command("generate", cls=HelpCommand)(generate)
app.command("merge", cls=HelpCommand)(merge)
app.command("evaluate", cls=HelpCommand)(evaluate)

annotate_app = typer.Typer(help="Annotation sheets for the human alignment study.", no_args_is_help=True, cls=HelpGroup)
annotate_app.command("export", cls=HelpCommand)(annotate_export)
app.add_typer(annotate_app, name="annotate")
app.command("align", cls=HelpCommand)(align)
app.command("judge-check", cls=HelpCommand)(judge_check)
app.command("compare", cls=HelpCommand)(compare)
app.command("tutorials", cls=HelpCommand)(tutorials)
app.command("stats", cls=HelpCommand)(stats)
app.command("report", cls=HelpCommand)(report)
app.command("chat", cls=HelpCommand)(chat)
app.add_typer(sweep_app, name="sweep")
app.add_typer(model_app, name="model")


@app.command(cls=HelpCommand)
def graph(
    max_interactions: Annotated[int, typer.Option(min=2)] = 40,
) -> None:
    """Print the conversation graph as a Mermaid diagram."""
    from wikihowagent.workflow.graph import WorkflowOptions, mermaid

    typer.echo(mermaid(WorkflowOptions(max_interactions=max_interactions)))


def main() -> None:
    degrade_streams()  # a console that cannot print "±" or a box gets ASCII, not a traceback after the work
    try:
        app()
    except BrokenPipeError:  # `wikihowagent graph | head`
        sys.exit(0)
    except OSError as exc:  # a full disk anywhere else (summaries, figures, alignment outputs): one line
        message = disk_full_message(exc.filename or ".", None, exc)
        if message is None:
            raise
        print_error(message, console)
        sys.exit(1)


if __name__ == "__main__":
    main()
