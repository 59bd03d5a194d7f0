"""`wikihowagent report RUN_OR_SWEEP... --out DIR`: registered by `wikihowagent.cli`. Heavy imports
(pandas, matplotlib) happen when the command runs."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wikihowagent.console import CLUSTER, INPUTS, OUTPUT, make_console, print_error, print_labeled
from wikihowagent.layout import INDEX_HTML, PROBLEMS_TXT

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from .core import ReportResult
    from .sources import Problems


Runs = Annotated[
    list[Path],
    typer.Argument(
        metavar="RUN_OR_SWEEP...",
        help="Run directories, or directories of runs (a sweep: every sub-directory is one run).",
    ),
]
Out = Annotated[
    Path,
    typer.Option(
        "--out",
        "-o",
        rich_help_panel=OUTPUT,
        metavar="DIR",
        help="Output directory (replaced as a whole; a directory holding anything but a previous report, "
        "or being, holding or inside an input, is refused).",
    ),
]
Cases = Annotated[
    int | None,
    typer.Option(
        "--cases",
        rich_help_panel=OUTPUT,
        metavar="N",
        min=1,
        help="Also write cases.md/.html: the best and worst N conversations per metric (Table 6 style).",
        show_default=False,
    ),
]
Alignment = Annotated[
    Path | None,
    typer.Option(
        "--alignment",
        rich_help_panel=INPUTS,
        metavar="DIR",
        help="An `align --out` directory: add its correlations and figures (Figs. 6-8).",
        show_default=False,
    ),
]
Calibration = Annotated[
    Path | None,
    typer.Option(
        "--calibration",
        rich_help_panel=INPUTS,
        metavar="FILE",
        help="A calibration.json "
        "of `align --calibrate`: add '<rubric> (cal.)' columns to "
        "the tables and the browser (refused for scores of another "
        "judge or rubric file).",
        show_default=False,
    ),
]
Compare = Annotated[
    Path | None,
    typer.Option(
        "--compare",
        rich_help_panel=INPUTS,
        metavar="DIR",
        help="A `compare --out` directory: "
        "add a 'Head to head' page (Bradley–Terry, win rates, position "
        "consistency, verdicts).",
        show_default=False,
    ),
]
Workers = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=CLUSTER,
        metavar="N",
        help="Runs read at once, each in a process of its own; 1 = in the report process itself. Default: the "
        "cores available to it. The site is the same for any N.",
        show_default=False,
    ),
]


def report(
    runs: Runs,
    out: Out,
    cases: Cases = None,
    alignment: Alignment = None,
    calibration: Calibration = None,
    compare: Compare = None,
    workers: Workers = None,
) -> None:
    """Write a static, offline HTML report of runs: overview, tables, figures, a conversation browser.

    Open DIR/index.html in a browser (file://, no server, no network)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from wikihowagent.outdir import OutputDirError
    from wikihowagent.processes import parse_workers

    from .core import ReportError, build_report
    from .sources import Problems, ReportInputError

    err = make_console()
    problems = Problems()
    try:
        processes = parse_workers(workers)
    except ValueError as exc:
        print_error(str(exc), err)
        raise typer.Exit(2) from None
    try:
        with Progress(
            TextColumn("{task.description}", markup=False, style="bold"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as progress:
            read = progress.add_task("read", total=None)
            write = progress.add_task("write", total=None, visible=False)
            threading.Thread(target=_count, args=(runs, progress, read), name="report-count", daemon=True).start()

            def on_chunk() -> None:
                progress.update(write, advance=1, visible=True)

            result = build_report(
                runs,
                out,
                cases=cases,
                alignment=alignment,
                problems=problems,
                on_record=lambda: progress.advance(read),
                on_chunk=on_chunk,
                calibration=calibration,
                compare=compare,
                workers=processes,
            )
    except KeyboardInterrupt:
        err.print(f"interrupted: nothing written; {out} is as it was")
        raise typer.Exit(130) from None
    except (ReportInputError, ReportError, OutputDirError) as exc:
        for line in problems.lines[:20]:
            print_labeled(err, "warning:", "yellow", line)
        print_error(str(exc), err)
        raise typer.Exit(2 if isinstance(exc, OutputDirError) else 1) from None
    _print_result(result, problems, err)


def _count(runs: list[Path], progress: Progress, task: TaskID) -> None:
    """The records to read, counted beside the reading: the progress bar's total, a few seconds in."""
    from .sources import Problems, count_lines, expand

    try:
        progress.update(task, total=count_lines(expand(runs, Problems())) or None)
    except Exception:  # noqa: BLE001 - the reading itself says what is wrong with the inputs
        return


def _print_result(result: ReportResult, problems: Problems, err: Console) -> None:
    """The first 20 problems as warnings, then the site's one-line summary on stdout."""
    for line in problems.lines[:20]:
        print_labeled(err, "warning:", "yellow", line)
    if len(problems.lines) > 20:
        err.print(f"… {len(problems.lines) - 20} more in {result.out / PROBLEMS_TXT}")
    make_console(stderr=False).print(
        f"{result.out / INDEX_HTML}: {result.runs} run(s), {result.conversations} "
        f"conversations, {result.files} files, "
        + (f"{result.bytes / 1e6:.1f} MB" if result.bytes >= 1e6 else f"{result.bytes / 1e3:.0f} kB")
        + (f"; {len(problems.lines)} problem(s), see {PROBLEMS_TXT}" if problems.lines else ""),
        soft_wrap=True,
    )
