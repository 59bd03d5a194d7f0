"""Installing prints no setuptools deprecation wall (project.license is an SPDX string)."""

from __future__ import annotations

import os
import tomllib
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_license_is_an_spdx_string_without_deprecation_warnings(monkeypatch):
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["project"]["license"] == "MIT"
    monkeypatch.chdir(ROOT)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), os.path.join(ROOT, "pyproject.toml"))
    license_warnings = [str(w.message) for w in caught if "license" in str(w.message).lower()]
    assert not license_warnings, license_warnings[0][:300]
    assert dist.metadata.license_expression == "MIT"


def test_make_install_silences_only_the_editable_install_banner(tmp_path):
    """`make install` ended with setuptools' "Editable installation ... Please be careful with
    folders in your working directory" banner. The editable pip step runs with a warnings filter that drops
    that message only: the real setuptools code that emits it prints nothing under the filter, while
    another setuptools warning still prints."""
    import shlex
    import subprocess
    import sys

    venv = tmp_path / "venv"
    dry = subprocess.run(
        ["make", "-n", "install", f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout  # -n: prints the recipe, runs nothing
    line = next(x for x in dry.splitlines() if "--no-deps -e ." in x)
    prefix = line.split(f"{venv}/bin/pip", 1)[0].strip()
    name, _, value = prefix.partition("=")
    assert name == "PYTHONWARNINGS", line
    code = (
        "from setuptools.command.editable_wheel import _TopLevelFinder as F\n"
        "F.__exit__(None, None, None, None)\n"  # where setuptools emits the banner
        "from setuptools.warnings import SetuptoolsDeprecationWarning as W\n"
        "W.emit('Another warning.', 'still shown')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}

    def stderr(extra: dict[str, str]) -> str:
        return subprocess.run(
            [sys.executable, "-c", code], env={**env, **extra}, capture_output=True, text=True, check=True
        ).stderr

    assert "Please be careful with folders" in stderr({})  # the banner, as pip relayed it
    quiet = stderr({"PYTHONWARNINGS": shlex.split(value)[0]})
    assert "Please be careful with folders" not in quiet and "Editable installation" not in quiet
    assert "Another warning." in quiet


def test_make_demo_says_what_it_runs_where_the_run_is_and_what_to_open(tmp_path):
    """`make demo` shows each command as a user would type it, then where the run is and what to
    open; a failing step stops it. Run against a stand-in `wikihowagent` in a fake, already-installed venv
    (never the real install or model on a test machine)."""
    import subprocess

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / ".installed").touch()  # newer than requirements*.txt: `install` is up to date
    fake = venv / "bin" / "wikihowagent"
    fake.write_text('#!/bin/bash\nprintf "ARGS:"; for a in "$@"; do printf " [%s]" "$a"; done; echo\n')
    fake.chmod(0o755)
    out = subprocess.run(
        ["make", "--no-print-directory", "demo", f"VENV={venv}", f"DEMO_OUT={tmp_path / 'demo'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = out.splitlines()
    demo = tmp_path / "demo"
    assert f"$ wikihowagent evaluate {demo}/known {demo}/invented --out {demo}" in lines  # scores in the runs
    assert "[--domain] [Home & Garden]" in out  # the quoted domain reaches the command as one argument
    assert "[--learner-persona] [curious]" in out and "[--tutorials] [wikihowagent/data/validity/counterfactual]" in out
    assert lines[-2:] == [
        f"The runs: {demo}/known/ and {demo}/invented/ (conversations.jsonl, scores.jsonl); the summary: "
        f"{demo}/summary.md",
        f"Open: {demo}/report/index.html",
    ]
    assert not any(line.startswith(str(venv)) for line in lines)  # make's own echo of the recipe is off
    fake.write_text("#!/bin/bash\nexit 3\n")
    failed = subprocess.run(
        ["make", "--no-print-directory", "demo", f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True
    )
    assert failed.returncode != 0 and "Open:" not in failed.stdout
