"""Experiment sweeps: one YAML file names tutorials, filters, the teacher x learner x evaluator cells, the
endpoints of each model and a shard count; `sweep plan|run|status|slurm` turn it into `generate` runs.

Every cell is an ordinary run directory `<out>/T-<teacher>_L-<learner>_E-<evaluator>` (with `shards: N`
its shards are `<cell>/shards/K-of-N`, merged into the cell once all are complete). A *task* is one cell x
shard: it runs the `wikihowagent generate ...` command a user would type (in this process), so a task is
resumable and the same on a laptop (`sweep run`) and in a Slurm array task (`sweep slurm`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from wikihowagent.backends import BackendError, load_aliases, resolve_spec
from wikihowagent.config import Config, ConfigError, load_config, read_yaml
from wikihowagent.corpus.core import TutorialError, default_tutorials_path
from wikihowagent.corpus.sampling import select_tutorials
from wikihowagent.errors import WikihowagentError, validation_line
from wikihowagent.jsonlio import RunError, dir_lock, iter_jsonl, write_json_atomic, write_text_atomic
from wikihowagent.layout import CONVERSATIONS, MERGE_LOCK, RUN_INFO, SHARDS_DIR, SWEEP_CONFIG, SWEEP_INFO, SWEEP_MODELS
from wikihowagent.outdir import check_writable
from wikihowagent.paper_format import default_run_name
from wikihowagent.presets import get_preset
from wikihowagent.runs import name_problem, read_run_info, shard_dir
from wikihowagent.shards import merge_shards

from . import MAX_CELLS


class SweepError(WikihowagentError, ValueError):
    """A bad experiment file or sweep state; one line naming the file."""


class CellSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    teacher: str
    learner: str | None = None  # default: the teacher (homogeneous)
    evaluator: str | None = None  # default: the teacher (the paper: teacher = evaluator)


class Grid(BaseModel):
    model_config = ConfigDict(extra="forbid")

    teachers: list[str]
    learners: list[str] | None = None  # default: the teachers
    evaluators: list[str] | None = None  # default: each cell's teacher


class SweepSpec(BaseModel):
    """The experiment file (an example: configs/paper-sweep.yaml; docs/guides/sweep.md)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    tutorials: str | None = None  # default: the bundled sample
    domains: list[str] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    domains_file: str | None = None  # a topic -> domain CSV replacing wikihowagent/data/domains.csv
    sample: int | None = Field(default=None, ge=1)  # a balanced sample: N tutorials per domain (or topic)
    per: Literal["domain", "topic"] = "domain"
    sample_seed: int = 0
    max_tutorials: int | None = Field(default=None, ge=1)
    out: str | None = None  # default: <runs_dir>/sweeps/<name>
    shards: int = Field(default=1, ge=1)
    concurrency: int | None = Field(default=None, ge=1)
    config: str | None = None  # a --config file for every task (decoding, workflow, prompts)
    preset: str | None = None  # e.g. "paper"
    models: dict[str, str | dict[str, Any]] = Field(
        default_factory=dict
    )  # aliases: name -> spec or {spec, base_url(s)}
    homogeneous: list[str] = Field(default_factory=list)  # teacher = learner = evaluator
    heterogeneous: list[CellSpec] = Field(default_factory=list)
    grid: Grid | None = None
    runs: list[CellSpec] = Field(default_factory=list)
    slurm: dict[str, Any] = Field(default_factory=dict)  # sbatch options: partition, time, gres, cpus, server, ...

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        # A sweep's name is a directory name and the Slurm job's name: the names rule (`runs.name_problem`),
        # shell-safe.
        problem = name_problem(v, shell=True)
        if problem is not None:
            raise ValueError(
                f"{v!r} is not a usable sweep name: it {problem} (it names the sweep's directory and Slurm job)"
            )
        return v

    @field_validator("heterogeneous", "runs", mode="before")
    @classmethod
    def _pairs(cls, v: Any) -> Any:  # [teacher, learner] or [teacher, learner, evaluator] as a short form
        if isinstance(v, list):
            for i, x in enumerate(v):
                if isinstance(x, list) and not 2 <= len(x) <= 3:
                    raise ValueError(
                        f"entry {i}: [teacher, learner] or [teacher, learner, evaluator] expected, got {len(x)} items"
                    )
            return [
                dict(zip(("teacher", "learner", "evaluator"), x, strict=False)) if isinstance(x, list) else x for x in v
            ]
        return v


@dataclass(frozen=True, eq=False)
class Cell:
    teacher: str
    learner: str
    evaluator: str
    out: Path  # the sweep's out directory (shared by every cell: a large grid stays small in memory)
    name: str
    index: int  # its place in the sweep: its tasks are index * shards + K

    @property
    def run_dir(self) -> Path:
        return self.out / self.name

    @property
    def homogeneous(self) -> bool:
        return self.teacher == self.learner


@dataclass(frozen=True)
class Task:
    index: int  # the Slurm array index
    cell: Cell
    shard: int  # K of N (N = the sweep's shards)
    shards: int

    @property
    def run_dir(self) -> Path:
        return shard_dir(self.cell.run_dir, self.shard, self.shards) if self.shards > 1 else self.cell.run_dir

    @property
    def label(self) -> str:
        return self.cell.name + (f" shard {self.shard}/{self.shards}" if self.shards > 1 else "")


@dataclass
class Sweep:
    path: Path  # the experiment file
    spec: SweepSpec
    out: Path
    cells: list[Cell]

    @cached_property
    def tasks(self) -> list[Task]:
        return [t for c in self.cells for t in self.cell_tasks(c)]

    def cell_tasks(self, cell: Cell) -> list[Task]:
        n = self.spec.shards
        return [Task(cell.index * n + k, cell, k, n) for k in range(n)]


def count_cells(spec: SweepSpec) -> int:
    """The cells the file lists, before duplicates are merged (an upper bound; exact for a plain grid)."""
    n = len(spec.homogeneous) + len(spec.heterogeneous) + len(spec.runs)
    if spec.grid is not None:
        g = spec.grid
        n += len(g.teachers) * len(g.learners or g.teachers) * (len(g.evaluators) if g.evaluators else 1)
    return n


def _triples(spec: SweepSpec) -> Iterator[tuple[str, str, str]]:
    for m in spec.homogeneous:
        yield m, m, m
    for c in [*spec.heterogeneous, *spec.runs]:
        yield c.teacher, c.learner or c.teacher, c.evaluator or c.teacher
    if spec.grid is not None:
        for t in spec.grid.teachers:
            for lrn in spec.grid.learners or spec.grid.teachers:
                for e in spec.grid.evaluators or [t]:
                    yield t, lrn, e


def load_sweep(path: Path, runs_dir: str | Path = "runs", max_cells: int = MAX_CELLS) -> Sweep:

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SweepError(f"{path}: experiment file not found") from None
    except UnicodeDecodeError as exc:
        raise SweepError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise SweepError(f"{path}: cannot read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}:" if mark is not None else ""
        raise SweepError(f"{path}:{where} invalid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(data, dict):
        raise SweepError(f"{path}: expected a mapping (name:, tutorials:, homogeneous:/heterogeneous:/grid:/runs:)")
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        raise SweepError(f"{path}: {validation_line(exc).replace(': Value error, ', ': ', 1)}") from None
    n = count_cells(spec)
    if n > max_cells:
        raise SweepError(
            f"{path}: {n:,} cells (teacher x learner x evaluator), over the limit of {max_cells:,}; "
            f"check the grid, or pass --max-cells {n} to allow it"
        )
    out = Path(spec.out) if spec.out else Path(runs_dir) / "sweeps" / spec.name
    cells: list[Cell] = []
    seen: set[str] = set()
    for t, lrn, e in _triples(spec):  # the same cell listed twice (e.g. by a grid and a list) runs once
        name = default_run_name(t, lrn, e)
        if name not in seen:
            seen.add(name)
            cells.append(Cell(t, lrn, e, out, name, len(cells)))
    if not cells:
        raise SweepError(f"{path}: no cells: give homogeneous:, heterogeneous:, grid: or runs:")
    return Sweep(path=path, spec=spec, out=out, cells=cells)


def open_sweep(
    file: Path, config: Path | None, preset: str | None = None, max_cells: int = MAX_CELLS
) -> tuple[Sweep, Config]:
    """The experiment file under the config's runs_dir, with --preset (an unknown name is one error here, not
    one in every task); a bad file, config or preset is a one-line SweepError."""
    try:
        cfg = load_config(config)
        sweep = load_sweep(file, cfg.runs_dir, max_cells)
        if preset is not None:
            get_preset(preset)
            sweep.spec.preset = preset
        return sweep, cfg
    except SweepError:
        raise
    except (ConfigError, ValueError) as exc:
        raise SweepError(str(exc)) from None


def sweep_tutorials(sweep: Sweep, cfg: Config) -> list[Any]:
    """The tutorials each task's `generate` selects (the same filters and seeded sample); SweepError (one line)."""
    s = sweep.spec
    try:
        return list(
            select_tutorials(
                Path(s.tutorials) if s.tutorials else default_tutorials_path(),
                domains=s.domains,
                topics=s.topics,
                domains_file=Path(s.domains_file) if s.domains_file else None,
                sample=s.sample,
                per=s.per,
                seed=s.sample_seed,
                max_tutorials=s.max_tutorials,
                clean_citations=cfg.workflow.strip_citations,
                skip_invalid=True,
            )
        )
    except (TutorialError, ValueError) as exc:
        raise SweepError(str(exc)) from None


def write_task_files(sweep: Sweep) -> Path:
    """The sweep's aliases and config (what every task runs with) + sweep.json; returns the config path.
    outdir.OutputDirError (one line) when the sweep's `out` cannot be written."""
    check_writable(sweep.out, f"{sweep.path}: out")
    sweep.out.mkdir(parents=True, exist_ok=True)
    cfg: dict[str, Any] = read_yaml(Path(sweep.spec.config)) if sweep.spec.config else {}
    if sweep.spec.models:
        base = load_aliases(cfg.get("models") or None)
        aliases = {**base.aliases, **sweep.spec.models}
        models_path = sweep.out / SWEEP_MODELS
        _write_if_changed(
            models_path, yaml.safe_dump({"aliases": aliases, "local_models": base.local_models}, sort_keys=False)
        )
        cfg["models"] = str(models_path.resolve())
    if cfg.get("prompts") and sweep.spec.config:  # a relative prompts path is relative to the user's config
        p = Path(cfg["prompts"])
        cfg["prompts"] = str(p if p.is_absolute() or p.exists() else (Path(sweep.spec.config).parent / p).resolve())
    config_path = sweep.out / SWEEP_CONFIG
    _write_if_changed(config_path, yaml.safe_dump(cfg, sort_keys=False))
    write_json_atomic(
        sweep.out / SWEEP_INFO,
        {
            "name": sweep.spec.name,
            "experiment_file": str(sweep.path.resolve()),
            "shards": sweep.spec.shards,
            "cells": [
                {
                    "run": c.name,
                    "teacher": c.teacher,
                    "learner": c.learner,
                    "evaluator": c.evaluator,
                    "homogeneous": c.homogeneous,
                }
                for c in sweep.cells
            ],
        },
    )
    return config_path


def check_models(sweep: Sweep, config_path: Path) -> None:
    """Every model of every cell resolves with the task config's aliases (`write_task_files`), else a
    one-line SweepError: caught before a Slurm array of tasks that would all fail."""

    aliases = read_yaml(config_path).get("models") or None
    names = dict.fromkeys(m for c in sweep.cells for m in (c.teacher, c.learner, c.evaluator))
    for name in names:
        try:
            resolve_spec(name, Path(aliases) if aliases else None)
        except BackendError as exc:
            raise SweepError(f"{sweep.path}: model {name!r}: {exc}") from None


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        write_text_atomic(path, text)


def generate_argv(sweep: Sweep, task: Task, config_path: Path) -> list[str]:
    """The `generate` command of one task (what a user would type)."""
    s = sweep.spec
    argv = [
        sys.executable,
        "-m",
        "wikihowagent",
        "generate",
        "--teacher",
        task.cell.teacher,
        "--learner",
        task.cell.learner,
        "--evaluator",
        task.cell.evaluator,
        "--out",
        str(task.cell.run_dir),
        "--config",
        str(config_path),
    ]
    if s.tutorials:
        argv += ["--tutorials", s.tutorials]
    if s.max_tutorials:
        argv += ["--max-tutorials", str(s.max_tutorials)]
    for d in s.domains:
        argv += ["--domain", d]
    for t in s.topics:
        argv += ["--topic", t]
    if s.domains_file:
        argv += ["--domains", s.domains_file]
    if s.sample:
        argv += ["--sample", str(s.sample), "--per", s.per, "--sample-seed", str(s.sample_seed)]
    if s.concurrency:
        argv += ["--concurrency", str(s.concurrency)]
    if s.preset:
        argv += ["--preset", s.preset]
    if task.shards > 1:
        argv += ["--shard", f"{task.shard}/{task.shards}"]
    return argv


# --------------------------------------------------------------------------- state


@dataclass
class TaskState:
    task: Task
    status: str  # "done" | "failed" (some conversations failed) | "running/interrupted" | "not started"
    conversations: int = 0
    failed: int = 0
    tutorials: int | None = None


def task_state(task: Task) -> TaskState:
    d = task.run_dir
    if not (d / RUN_INFO).exists():
        return TaskState(task, "not started")
    try:
        info = read_run_info(d)
    except RunError:
        return TaskState(task, "unreadable")
    counts = info.counts or {}
    status = {"complete": "done", "incomplete": "failed", "merged": "done"}.get(info.status, info.status)
    return TaskState(
        task, status, int(counts.get("conversations", 0)), int(counts.get("failed", 0)), counts.get("tutorials")
    )


def cell_merged(cell: Cell, shards: int) -> bool:
    if shards == 1:
        return True
    try:
        info = read_run_info(cell.run_dir)
    except RunError:
        return False
    return info.status == "merged" and len(info.shards or []) == shards


def merge_cell_if_complete(sweep: Sweep, cell: Cell) -> bool:
    """Merge a sharded cell once every shard is done (under a lock: two array tasks may finish together)."""
    n = sweep.spec.shards
    if n == 1:
        return True
    states = [task_state(t) for t in sweep.cell_tasks(cell)]
    if any(s.status != "done" for s in states):
        return False
    with dir_lock(cell.run_dir, blocking=True, name=MERGE_LOCK):
        merge_shards(cell.run_dir)
    return True


def run_task(sweep: Sweep, task: Task, config_path: Path, invoke: Callable[[list[str]], int | None]) -> int:
    """Run one task's `generate` command through `invoke` (the CLI's own entry point, in this process);
    merge its cell when all shards are complete. Returns generate's exit code."""
    code = invoke(generate_argv(sweep, task, config_path)[3:]) or 0
    if code == 0:
        merge_cell_if_complete(sweep, task.cell)
    return code


def estimate(
    sweep: Sweep, tutorials: list[Any], tokens_per_message: float, tokens_per_s: float, max_interactions: int
) -> dict[str, float]:
    """Conversations, expected messages and generated tokens, GPU-hours at `tokens_per_s`.

    Messages per conversation follow the workflow: BEGIN + the learner's acknowledgement, a teacher and a
    learner message per step, FINISHED + the farewell (capped at the interaction limit); clarification
    rounds come on top, so this is a lower bound unless the learner never asks.
    """
    per_cell = sum(min(max_interactions, 2 * len(t.steps) + 4) for t in tutorials)
    model_msgs = sum(min(max_interactions, 2 * len(t.steps) + 4) - 2 for t in tutorials)  # BEGIN/FINISHED are fixed
    n_cells = len(sweep.cells)
    tokens = model_msgs * n_cells * tokens_per_message
    return {
        "cells": n_cells,
        "tasks": len(sweep.tasks),
        "tutorials": len(tutorials),
        "conversations": len(tutorials) * n_cells,
        "messages": per_cell * n_cells,
        "model_messages": model_msgs * n_cells,
        "tokens": tokens,
        "gpu_hours": tokens / tokens_per_s / 3600.0 if tokens_per_s > 0 else float("nan"),
    }


def sampled_tokens_per_message(sweep: Sweep, sample: int = 200) -> float | None:
    """Mean completion tokens per model message over up to `sample` finished conversations of this sweep."""
    tokens = msgs = seen = 0
    for c in sweep.cells:
        for p in [c.run_dir / CONVERSATIONS, *sorted((c.run_dir / SHARDS_DIR).glob(f"*/{CONVERSATIONS}"))]:
            if not p.exists():
                continue
            for _, rec in iter_jsonl(p, on_error=lambda _m: None):
                model = [t for t in rec.get("turns") or [] if t.get("kind") in ("model", "clarification")]
                tokens += sum(int(t.get("completion_tokens") or 0) for t in model)
                msgs += len(model)
                seen += 1
                if seen >= sample:
                    return tokens / msgs if msgs else None
    return tokens / msgs if msgs else None
