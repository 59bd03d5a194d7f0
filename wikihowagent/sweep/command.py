"""`wikihowagent sweep plan|run|status|slurm FILE` (registered by wikihowagent/cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from wikihowagent.console import make_console
from rich.table import Table

sweep_app = typer.Typer(help="Experiment sweeps over a YAML file: teacher x learner x evaluator cells, shards, Slurm.",
                        no_args_is_help=True)
FileArg = Annotated[Path, typer.Argument(help="Experiment file (YAML), e.g. configs/sweeps/paper.yaml.", metavar="FILE")]
ConfigOpt = Annotated[Optional[Path], typer.Option(help="YAML config (for runs_dir).")]
PresetOpt = Annotated[Optional[str], typer.Option(help="'paper': the paper's settings for every task (overrides the file's preset:).")]


def _err() -> Console:
    return make_console()


def _fail(message: str) -> None:
    """One error line, printed literally (paths and messages may contain [brackets])."""
    from wikihowagent.console import print_error

    print_error(message, _err())
    raise typer.Exit(2)


def _load(file: Path, config: Path | None, preset: str | None = None):
    from wikihowagent.config import ConfigError, load_config

    from .core import SweepError, load_sweep

    try:
        cfg = load_config(config)
        sweep = load_sweep(file, cfg.runs_dir)
        if preset is not None:
            from wikihowagent.presets import get_preset

            get_preset(preset)  # an unknown name is a one-line error here, not in every task
            sweep.spec.preset = preset
        return sweep, cfg
    except (SweepError, ConfigError, ValueError) as exc:
        _fail(str(exc))


def _tutorials(sweep, cfg):
    from wikihowagent.corpus.core import TutorialError, default_tutorials_path
    from wikihowagent.corpus.sampling import select_tutorials

    s = sweep.spec
    try:  # what each task's `generate` selects (the same filters and seeded sample)
        return list(select_tutorials(
            Path(s.tutorials) if s.tutorials else default_tutorials_path(), domains=s.domains, topics=s.topics,
            domains_file=Path(s.domains_file) if s.domains_file else None, sample=s.sample, per=s.per,
            seed=s.sample_seed, max_tutorials=s.max_tutorials, clean_citations=cfg.workflow.strip_citations,
            skip_invalid=True))
    except (TutorialError, ValueError) as exc:
        _fail(str(exc))


@sweep_app.command("plan")
def plan(
    file: FileArg,
    estimate: Annotated[bool, typer.Option("--estimate", help="Also print conversations, messages, tokens and GPU-hours.")] = False,
    tokens_per_s: Annotated[float, typer.Option(help="Generated tokens/s of one GPU (for --estimate's GPU-hours).")] = 1000.0,
    tokens_per_message: Annotated[Optional[float], typer.Option(help="Tokens per model message (default: measured on this sweep's finished conversations, else 150).")] = None,
    config: ConfigOpt = None,
) -> None:
    """List the cells, their run directories and the tasks (cell x shard) the file defines."""
    sweep, cfg = _load(file, config)
    tutorials = _tutorials(sweep, cfg)
    table = Table("#", "teacher", "learner", "evaluator", "setup", "run directory", title=f"sweep {sweep.spec.name}")
    for i, c in enumerate(sweep.cells):
        table.add_row(str(i), c.teacher, c.learner, c.evaluator, "homogeneous" if c.homogeneous else "heterogeneous",
                      str(c.run_dir))
    make_console(stderr=False).print(table)
    out = make_console(stderr=False)
    out.print(f"{len(sweep.cells)} cells x {sweep.spec.shards} shards = {len(sweep.tasks)} tasks; "
              f"{len(tutorials)} tutorials per cell", highlight=False, markup=False)
    if estimate:
        from .core import estimate as est
        from .core import sampled_tokens_per_message

        measured = sampled_tokens_per_message(sweep)
        tpm = tokens_per_message or measured or 150.0
        how = "given" if tokens_per_message else ("measured on this sweep" if measured else "assumed")
        e = est(sweep, tutorials, tpm, tokens_per_s, cfg.workflow.max_interactions)
        out.print(f"estimate: {e['conversations']:,} conversations, {e['messages']:,} messages "
                  f"({e['model_messages']:,} generated), {e['tokens']:,.0f} tokens at {tpm:.0f} tokens/message ({how}); "
                  f"{e['gpu_hours']:.2f} GPU-hours at {tokens_per_s:g} tokens/s", highlight=False, markup=False)


@sweep_app.command("status")
def status(file: FileArg, config: ConfigOpt = None) -> None:
    """Done / failed / remaining per cell and shard."""
    from .core import cell_merged, task_state

    sweep, _ = _load(file, config)
    table = Table("task", "cell", "shard", "status", "conversations", "failed", title=f"sweep {sweep.spec.name}")
    counts: dict[str, int] = {}
    for t in sweep.tasks:
        s = task_state(t)
        counts[s.status] = counts.get(s.status, 0) + 1
        table.add_row(str(t.index), t.cell.name, f"{t.shard}/{t.shards}", s.status, str(s.conversations), str(s.failed))
    make_console(stderr=False).print(table)
    merged = sum(cell_merged(c, sweep.spec.shards) and all(
        task_state(t).status == "done" for t in sweep.tasks if t.cell == c) for c in sweep.cells)
    make_console(stderr=False).print(f"{len(sweep.tasks)} tasks: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
                    + f"; {merged}/{len(sweep.cells)} cells complete", highlight=False, markup=False)


@sweep_app.command("run")
def run(
    ctx: typer.Context,
    file: FileArg,
    task: Annotated[Optional[int], typer.Option(min=0, help="Run only this task (cell x shard; the Slurm array index).")] = None,
    config: ConfigOpt = None,
    preset: PresetOpt = None,
) -> None:
    """Run every task (or one, --task) locally, one after another; resumable (done tasks are skipped)."""
    from .core import run_task, task_state, write_task_files

    sweep, _ = _load(file, config, preset)
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
            from .core import merge_cell_if_complete

            merge_cell_if_complete(sweep, t.cell)
            err.print(f"[{i}/{len(tasks)}] {t.label}: already done", highlight=False, markup=False)
            continue
        err.print(f"[{i}/{len(tasks)}] {t.label} -> {t.run_dir}", highlight=False, markup=False)
        code = run_task(sweep, t, config_path, invoke)
        if code in (2, 130):  # a problem that stops this task before any work (one line printed above), Ctrl-C
            raise typer.Exit(code)
        if code:
            failed += 1
    err.print(f"sweep {sweep.spec.name}: {len(tasks) - failed} of {len(tasks)} tasks complete; "
              f"`wikihowagent sweep status {file}` for details; `wikihowagent evaluate {sweep.out}` for Tables 1-2",
              highlight=False, markup=False)
    raise typer.Exit(1 if failed else 0)


@sweep_app.command("slurm")
def slurm(
    file: FileArg,
    out: Annotated[Path, typer.Option(help="Directory for sweep.sbatch, the server templates and logs/.")],
    config: ConfigOpt = None,
    preset: PresetOpt = None,
) -> None:
    """Write an sbatch array script (one task per cell x shard, resubmittable as it is) + server templates."""
    from .core import SweepError, write_task_files
    from .slurm import write_slurm

    sweep, _ = _load(file, config, preset)
    try:
        write_task_files(sweep)
        files = write_slurm(sweep, out, preset=preset)
    except SweepError as exc:
        _fail(str(exc))
    make_console(stderr=False).print(f"wrote {', '.join(str(p) for p in files)}\nsubmit: sbatch {files[0]}   "
                    f"(then: wikihowagent sweep status {file})", highlight=False, markup=False)
