"""Hostile sweep files and paths: the Slurm script runs nothing injected,
bad names and values are one-line errors, huge grids are refused, piped output prints paths whole."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wikihowagent.cli import app

runner = CliRunner()


def flat(res) -> str:
    return " ".join(res.output.split())


def sweep_file(path: Path, name: str = "grid", **extra: str) -> Path:
    lines = [
        f"name: {name}",
        "max_tutorials: 2",
        "grid: {teachers: [a, b]}",
        "models: {a: 'openai:fake-model', b: 'openai:fake-model'}",
        *[f"{k}: {v}" for k, v in extra.items()],
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def shim(tmp_path, monkeypatch) -> Path:
    """A stand-in for the Python the array script calls (`sys.executable` while the script is written):
    it records its arguments in argv.txt and does nothing else."""
    record = tmp_path / "argv.txt"
    path = tmp_path / "shim-python"
    path.write_text(f"#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" > {shlex.quote(str(record))}\n")
    path.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(path))
    return path


def run_script_harmlessly(script: Path, tmp_path: Path) -> tuple[list[str], str]:
    """Run the array script under bash as Slurm would (the array index set); the Python it calls is the
    `shim`. Returns (the shim's argv, bash's stderr)."""
    record = tmp_path / "argv.txt"
    text = script.read_text(encoding="utf-8")
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_ID": "1"}
    res = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert text == script.read_text(encoding="utf-8")
    return (record.read_text().splitlines() if record.exists() else []), res.stderr


HOSTILE_NAMES = ['"x\\ntouch MARK\\n#"', '"../../x"', '"a/b"', '""', '".."', '"x;touch MARK"', '"$(touch MARK)"']


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_sweep_name_is_refused_and_runs_nothing(tmp_path, monkeypatch, shim, name):
    monkeypatch.chdir(tmp_path)
    f = sweep_file(tmp_path / "s.yaml", name=name)
    out = tmp_path / "slurm"
    res = runner.invoke(app, ["sweep", "slurm", str(f), "--out", str(out)])
    if (out / "sweep.sbatch").exists():  # before the fix: written; it must at least run nothing injected
        run_script_harmlessly(out / "sweep.sbatch", tmp_path)
    assert not (tmp_path / "MARK").exists()
    assert res.exit_code == 2, res.output
    assert "s.yaml: name:" in flat(res) and len(res.output.strip().splitlines()) == 1
    assert not (out / "sweep.sbatch").exists() and not (tmp_path / "runs").exists()
    assert not (tmp_path.parent / "x").exists()


@pytest.mark.parametrize(
    "key,value",
    [
        ("partition", '"gpu\\ntouch MARK"'),
        ("partition", '"gpu;touch MARK"'),
        ("time", '"1:00\\ntouch MARK"'),
        ("max_parallel", '"4\\ntouch MARK"'),
        ("cpus", '"4 $(touch MARK)"'),
        ("gres", '"gpu:1\\ntouch MARK"'),
        ("mem", '"16G`touch MARK`"'),
        ("account", '"x y"'),
        ("qos", "[a, b]"),
        ("cpus", "0"),
        ("max_parallel", "true"),
    ],
)
def test_hostile_slurm_values_are_refused_by_type(tmp_path, monkeypatch, shim, key, value):
    monkeypatch.chdir(tmp_path)
    f = sweep_file(tmp_path / "s.yaml", slurm=f"{{{key}: {value}}}")
    out = tmp_path / "slurm"
    res = runner.invoke(app, ["sweep", "slurm", str(f), "--out", str(out)])
    if (out / "sweep.sbatch").exists():
        run_script_harmlessly(out / "sweep.sbatch", tmp_path)
    assert not (tmp_path / "MARK").exists()
    assert res.exit_code == 2, res.output
    assert f"s.yaml: slurm.{key}:" in flat(res) and len(res.output.strip().splitlines()) == 1
    assert not (out / "sweep.sbatch").exists()


def test_slurm_script_quotes_paths_and_runs_only_the_sweep(tmp_path, monkeypatch, shim):
    """Paths with quotes, spaces, `$(...)` and `;` (the working directory, the experiment file and --out) are
    quoted: the script under bash calls Python with exactly the sweep-run arguments, and nothing else ran."""
    from wikihowagent.sweep.core import load_sweep
    from wikihowagent.sweep.slurm import write_slurm

    odd = tmp_path / "it's $(touch MARK1) ;touch MARK2; `touch MARK3`"
    odd.mkdir()
    monkeypatch.chdir(odd)
    f = sweep_file(
        odd / "s $(touch MARK4).yaml",
        slurm='{partition: "gpu,debug", time: "1-12:00:00", gres: "gpu:a100:1", cpus: 4, mem: 16G, '
        "max_parallel: 8, qos: normal, account: proj_1}",
    )
    sweep = load_sweep(f, odd / "runs")
    out = odd / "slurm 'out'"
    script, *_ = write_slurm(sweep, out, python=str(shim))
    argv, stderr = run_script_harmlessly(script, tmp_path)
    assert argv == ["-m", "wikihowagent", "sweep", "run", str(f.resolve()), "--task", "0"], stderr
    assert not list(tmp_path.rglob("MARK*"))
    sbatch = {}
    for line in script.read_text().splitlines():
        if line.startswith("#SBATCH "):
            (opt,) = shlex.split(line[len("#SBATCH ") :])  # one argument per directive, quoted where needed
            k, _, v = opt.partition("=")
            sbatch[k] = v
    assert sbatch["--output"] == f"{(out / 'logs').resolve()}/%A_%a.out"
    assert sbatch["--partition"] == "gpu,debug" and sbatch["--time"] == "1-12:00:00" and sbatch["--mem"] == "16G"
    assert sbatch["--array"] == "0-3%8" and sbatch["--cpus-per-task"] == "4" and sbatch["--job-name"] == "wha-grid"


def test_slurm_out_with_a_newline_is_refused(tmp_path, monkeypatch, shim):
    """An #SBATCH line cannot hold a newline (the rest would be a shell command): refused, nothing written."""
    monkeypatch.chdir(tmp_path)
    f = sweep_file(tmp_path / "s.yaml")
    out = tmp_path / "x\ntouch MARK\n"
    res = runner.invoke(app, ["sweep", "slurm", str(f), "--out", str(out)])
    if (out / "sweep.sbatch").exists():
        run_script_harmlessly(out / "sweep.sbatch", tmp_path)
    assert not (tmp_path / "MARK").exists()
    assert res.exit_code == 2 and "--out" in flat(res) and "control character" in flat(res)
    assert not out.exists()


def test_sweep_file_validation(tmp_path):
    """Item 11: a 4-item heterogeneous entry, unknown models for `sweep slurm`, a non-UTF-8 file."""
    four = sweep_file(tmp_path / "four.yaml", heterogeneous="[[a, b, a, b]]")
    res = runner.invoke(app, ["sweep", "plan", str(four)])
    assert res.exit_code == 2 and "four.yaml: heterogeneous: entry 0:" in flat(res) and "4 items" in flat(res)
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("name: u\nhomogeneous: [a, nosuchmodel]\nmodels: {a: 'openai:fake-model'}\n")
    res = runner.invoke(app, ["sweep", "slurm", str(unknown), "--out", str(tmp_path / "sl")])
    assert res.exit_code == 2 and "unknown.yaml: model 'nosuchmodel'" in flat(res)
    assert not (tmp_path / "sl" / "sweep.sbatch").exists()
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("name: caf\xe9\nhomogeneous: [a]\n".encode("latin-1"))
    res = runner.invoke(app, ["sweep", "plan", str(latin)])
    assert res.exit_code == 2 and "latin.yaml: not UTF-8 text" in flat(res)
    assert len(res.output.strip().splitlines()) == 1


def cube_file(path: Path, k: int, tmp_out: Path) -> Path:
    models = ", ".join(f"m{i}" for i in range(k))
    path.write_text(
        f"name: cube\nout: {tmp_out}\nmax_tutorials: 1\ngrid: {{teachers: [{models}], evaluators: [{models}]}}\n",
        encoding="utf-8",
    )
    return path


def test_a_grid_over_the_limit_is_refused_with_its_cell_count(tmp_path):
    """Item 7: 30 x 30 x 30 = 27,000 cells is over the default limit (10,000): one line with the count and
    the flag that allows it; --max-cells lets a (small) grid through exactly at its size."""
    res = runner.invoke(app, ["sweep", "plan", str(cube_file(tmp_path / "cube.yaml", 30, tmp_path / "o"))])
    assert res.exit_code == 2 and "cube.yaml: 27,000 cells" in flat(res) and "--max-cells 27000" in flat(res)
    assert len(res.output.strip().splitlines()) == 1
    small = cube_file(tmp_path / "small.yaml", 3, tmp_path / "o")
    for cmd in ("plan", "status"):
        res = runner.invoke(app, ["sweep", cmd, str(small), "--max-cells", "26"])
        assert res.exit_code == 2 and "27 cells" in flat(res) and "--max-cells 27" in flat(res)
        res = runner.invoke(app, ["sweep", cmd, str(small), "--max-cells", "27"])
        assert res.exit_code == 0 and "27 tasks" in flat(res) and "27 cells" in flat(res)


def test_status_reads_each_task_once_and_builds_each_task_once(tmp_path, monkeypatch):
    """Item 7: `sweep status` is linear in the tasks: every task is built and its state read once (it
    rebuilt the task list for every cell: 2,500 cells took 13.7 s, 10,000 took 260 s)."""
    import wikihowagent.sweep.core as core

    built, read = [0], [0]
    real_task, real_state = core.Task, core.task_state

    def counting_task(*a, **k):
        built[0] += 1
        return real_task(*a, **k)

    def counting_state(t):
        read[0] += 1
        return real_state(t)

    monkeypatch.setattr(core, "Task", counting_task)
    monkeypatch.setattr(core, "task_state", counting_state)
    f = cube_file(tmp_path / "c.yaml", 5, tmp_path / "o")  # 5 x 5 x 5 = 125 cells
    f.write_text(f.read_text() + "shards: 2\n")
    res = runner.invoke(app, ["sweep", "status", str(f)])
    assert res.exit_code == 0 and "250 tasks: 250 not started; 0/125 cells complete" in flat(res)
    assert built[0] == 250 and read[0] == 250


def test_piped_plan_status_and_slurm_print_paths_whole(tmp_path, monkeypatch, shim):
    """Item 13: without a terminal, rows are tab-separated lines with whole run directories (no '…'), and
    `sweep slurm`'s "wrote"/"submit" lines are not wrapped at 80 columns."""
    monkeypatch.chdir(tmp_path)
    deep = tmp_path / ("a-rather-long-directory-name-" * 4) / "sweeps out"
    f = sweep_file(tmp_path / "s.yaml", out=f"'{deep}'", shards="2")
    res = runner.invoke(app, ["sweep", "plan", str(f)])
    assert res.exit_code == 0 and "…" not in res.output
    lines = res.output.splitlines()
    assert lines[0].split("\t") == ["#", "teacher", "learner", "evaluator", "setup", "run directory"]
    assert lines[1].split("\t") == ["0", "a", "a", "a", "homogeneous", str(deep / "T-a_L-a_E-a")]
    assert len(lines) == 6 and lines[-1] == "4 cells x 2 shards = 8 tasks; 2 tutorials per cell"
    res = runner.invoke(app, ["sweep", "status", str(f)])
    lines = res.output.splitlines()
    assert lines[1].split("\t") == ["0", "T-a_L-a_E-a", "0/2", "not started", "0", "0"]
    assert lines[-1] == "8 tasks: 8 not started; 0/4 cells complete"
    out = deep / "slurm"
    res = runner.invoke(app, ["sweep", "slurm", str(f), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert f"submit: sbatch {shlex.quote(str(out / 'sweep.sbatch'))}" in res.output.splitlines()[1]
    assert res.output.splitlines()[0].startswith(f"wrote {out / 'sweep.sbatch'}, ")
    assert len(res.output.splitlines()) == 2


def test_sweep_cells_read_from_sweep_json_must_be_folder_names(tmp_path):
    from wikihowagent.jsonlio import RunError
    from wikihowagent.runs import sweep_cell_dirs

    (tmp_path / "sweep.json").write_text(json.dumps({"cells": [{"run": "T-a_L-a_E-a"}, {"run": "../../victim"}]}))
    with pytest.raises(RunError, match=r"sweep.json: cells\[1\]: run '../../victim' contains '/'"):
        sweep_cell_dirs(tmp_path)


def test_one_name_rule_for_runs_and_sweeps():
    """The sweep's rule is the runs' rule (runs.name_problem) plus what a Slurm job name and shell need."""
    from wikihowagent.runs import name_problem
    from wikihowagent.sweep.core import SweepSpec

    for bad in ("..", "a/b", "a\tb", ""):
        assert name_problem(bad) is not None and name_problem(bad, shell=True) is not None
    assert name_problem("T-a_L-b_P-x+y") is None and name_problem("T-a_L-b_P-x+y", shell=True) is not None
    with pytest.raises(ValueError, match="contains '/'"):
        SweepSpec(name="../x", homogeneous=["a"])
