"""`wikihowagent sweep plan|run|status|slurm FILE` (registered by wikihowagent/cli.py)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Column, Table

from wikihowagent.console import HelpCommand, HelpGroup, make_console, print_error

from . import MAX_CELLS

sweep_app = typer.Typer(
    help="Experiment sweeps over a YAML file: teacher x learner x evaluator cells, shards, Slurm.",
    no_args_is_help=True,
    cls=HelpGroup,
)
FileArg = Annotated[Path, typer.Argument(help="Experiment file (YAML), e.g. configs/paper-sweep.yaml.", metavar="FILE")]
ConfigOpt = Annotated[Path | None, typer.Option(help="YAML config (for runs_dir).")]
PresetOpt = Annotated[
    str | None, typer.Option(help="'paper': the paper's settings for every task (overrides the file's preset:).")
]
MaxCellsOpt = Annotated[
    int, typer.Option(min=1, metavar="N", help="Refuse a file with more cells than this (a typo in a grid multiplies).")
]
TABLE_ROWS = 200  # up to this many rows on a terminal: a table; more, or output not a terminal: tab-separated lines


def _print_rows(title: str, heads: Sequence[str], rows: Iterable[Sequence[str]], n: int) -> None:
    """`rows` (n of them) as a table on a terminal, else as tab-separated lines written as they come (a
    large sweep streams; a pipe gets every path whole, never cut with '…' or wrapped)."""
    if sys.stdout.isatty() and n <= TABLE_ROWS:
        table = Table(*(Column(h, overflow="fold") for h in heads), title=title)
        for r in rows:
            table.add_row(*r)
        make_console(stderr=False).print(table)
        return
    write = sys.stdout.write
    write("\t".join(heads) + "\n")
    for r in rows:
        write("\t".join(" ".join(c.split()) if any(x in c for x in "\t\r\n") else c for c in r) + "\n")
    sys.stdout.flush()


def _say(text: str) -> None:
    """One line on stdout, never wrapped (paths a user copies print whole)."""
    make_console(stderr=False).print(text, soft_wrap=True)


def _err() -> Console:
    return make_console()


def _fail(message: str) -> NoReturn:
    """One error line, printed literally (paths and messages may contain [brackets])."""
    print_error(message, _err())
    raise typer.Exit(2)


def _load(file: Path, config: Path | None, preset: str | None = None, max_cells: int = MAX_CELLS) -> Any:
    from .core import SweepError, open_sweep

    try:
        return open_sweep(file, config, preset, max_cells)
    except SweepError as exc:
        _fail(str(exc))


def _tutorials(sweep: Any, cfg: Any) -> list[Any]:
    from .core import SweepError, sweep_tutorials

    try:
        return sweep_tutorials(sweep, cfg)
    except SweepError as exc:
        _fail(str(exc))


@sweep_app.command("plan", cls=HelpCommand)
def plan(
    file: FileArg,
    estimate: Annotated[
        bool, typer.Option("--estimate", help="Also print conversations, messages, tokens and GPU-hours.")
    ] = False,
    tokens_per_s: Annotated[
        float, typer.Option(help="Generated tokens/s of one GPU (for --estimate's GPU-hours).")
    ] = 1000.0,
    tokens_per_message: Annotated[
        float | None,
        typer.Option(
            help="Tokens per model message (default: measured on this sweep's finished conversations, else 150)."
        ),
    ] = None,
    config: ConfigOpt = None,
    max_cells: MaxCellsOpt = MAX_CELLS,
) -> None:
    """List the cells, their run directories and the tasks (cell x shard) the file defines."""
    from .core import estimate as est
    from .core import sampled_tokens_per_message

    sweep, cfg = _load(file, config, max_cells=max_cells)
    tutorials = _tutorials(sweep, cfg)
    _print_rows(
        f"sweep {sweep.spec.name}",
        ("#", "teacher", "learner", "evaluator", "setup", "run directory"),
        (
            (
                str(c.index),
                c.teacher,
                c.learner,
                c.evaluator,
                "homogeneous" if c.homogeneous else "heterogeneous",
                str(c.run_dir),
            )
            for c in sweep.cells
        ),
        len(sweep.cells),
    )
    _say(
        f"{len(sweep.cells)} cells x {sweep.spec.shards} shards = {len(sweep.cells) * sweep.spec.shards} tasks; "
        f"{len(tutorials)} tutorials per cell"
    )
    if estimate:
        measured = sampled_tokens_per_message(sweep)
        tpm = tokens_per_message or measured or 150.0
        how = "given" if tokens_per_message else ("measured on this sweep" if measured else "assumed")
        e = est(sweep, tutorials, tpm, tokens_per_s, cfg.workflow.max_interactions)
        _say(
            f"estimate: {e['conversations']:,} conversations, {e['messages']:,} messages "
            f"({e['model_messages']:,} generated), {e['tokens']:,.0f} tokens at {tpm:.0f} tokens/message ({how}); "
            f"{e['gpu_hours']:.2f} GPU-hours at {tokens_per_s:g} tokens/s"
        )


@sweep_app.command("status", cls=HelpCommand)
def status(file: FileArg, config: ConfigOpt = None, max_cells: MaxCellsOpt = MAX_CELLS) -> None:
    """Done / failed / remaining per cell and shard."""
    from .core import cell_merged, task_state

    sweep, _ = _load(file, config, max_cells=max_cells)
    counts: dict[str, int] = {}
    merged = 0

    def rows():  # one pass: each task's state read once, a cell's tasks are consecutive
        nonlocal merged
        for c in sweep.cells:
            states = [task_state(t) for t in sweep.cell_tasks(c)]
            merged += all(s.status == "done" for s in states) and cell_merged(c, sweep.spec.shards)
            for s in states:
                counts[s.status] = counts.get(s.status, 0) + 1
                t = s.task
                yield str(t.index), c.name, f"{t.shard}/{t.shards}", s.status, str(s.conversations), str(s.failed)

    n_tasks = len(sweep.cells) * sweep.spec.shards
    _print_rows(
        f"sweep {sweep.spec.name}", ("task", "cell", "shard", "status", "conversations", "failed"), rows(), n_tasks
    )
    _say(
        f"{n_tasks} tasks: "
        + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        + f"; {merged}/{len(sweep.cells)} cells complete"
    )


@sweep_app.command("run", cls=HelpCommand)
def run(
    ctx: typer.Context,
    file: FileArg,
    task: Annotated[
        int | None, typer.Option(min=0, help="Run only this task (cell x shard; the Slurm array index).")
    ] = None,
    config: ConfigOpt = None,
    preset: PresetOpt = None,
    max_cells: MaxCellsOpt = MAX_CELLS,
) -> None:
    """Run every task (or one, --task) locally, one after another; resumable (done tasks are skipped)."""
    from .core import merge_cell_if_complete, run_task, task_state, write_task_files

    sweep, _ = _load(file, config, preset, max_cells)
    err = _err()
    tasks = sweep.tasks
    if task is not None:
        if task >= len(tasks):
            _fail(f"--task {task}: {file} defines tasks 0..{len(tasks) - 1}")
        tasks = [tasks[task]]
    config_path = write_task_files(sweep)
    root = ctx.find_root().command  # the `wikihowagent` command itself

    def invoke(args: list[str]) -> int | None:
        return root.main(args, prog_name="wikihowagent", standalone_mode=False)

    failed = 0
    for i, t in enumerate(tasks, 1):
        if task_state(t).status == "done":
            merge_cell_if_complete(sweep, t.cell)
            err.print(f"[{i}/{len(tasks)}] {t.label}: already done", highlight=False, markup=False)
            continue
        err.print(f"[{i}/{len(tasks)}] {t.label} -> {t.run_dir}", highlight=False, markup=False)
        code = run_task(sweep, t, config_path, invoke)
        if code in (2, 130):  # a problem that stops this task before any work (one line printed above), Ctrl-C
            raise typer.Exit(code)
        if code:
            failed += 1
    err.print(
        f"sweep {sweep.spec.name}: {len(tasks) - failed} of {len(tasks)} tasks complete; "
        f"`wikihowagent sweep status {file}` for details; `wikihowagent evaluate {sweep.out}` for Tables 1-2",
        highlight=False,
        markup=False,
    )
    raise typer.Exit(1 if failed else 0)


@sweep_app.command("slurm", cls=HelpCommand)
def slurm(
    file: FileArg,
    out: Annotated[Path, typer.Option(help="Directory for sweep.sbatch, the server templates and logs/.")],
    config: ConfigOpt = None,
    preset: PresetOpt = None,
    max_cells: MaxCellsOpt = MAX_CELLS,
) -> None:
    """Write an sbatch array script (one task per cell x shard, resubmittable as it is) + server templates."""
    from .core import SweepError, check_models, write_task_files
    from .slurm import check_slurm, write_slurm

    sweep, _ = _load(file, config, preset, max_cells)
    try:
        check_slurm(sweep, out)  # before anything is written
        check_models(sweep, write_task_files(sweep))
        files = write_slurm(sweep, out, preset=preset)
    except SweepError as exc:
        _fail(str(exc))
    _say(f"wrote {', '.join(str(p) for p in files)}")
    _say(f"submit: sbatch {shlex.quote(str(files[0]))}   (then: wikihowagent sweep status {shlex.quote(str(file))})")
