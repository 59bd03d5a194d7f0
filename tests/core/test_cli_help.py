"""`--help` of every command keeps every option's name and metavar whole, at 80 columns and piped.

Typer's own layout cut `--posttest-learner` to `--posttest-learn…` at 80 columns (Rich assumes 80 when
the help is piped), so `wikihowagent evaluate --help | grep posttest-learner` found nothing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.main
from typer.core import TyperArgument, TyperGroup, TyperOption
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.console import PANELS

ROOT = Path(__file__).resolve().parents[2]


def _commands(cmd, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    out = [(path, cmd)]
    if isinstance(cmd, TyperGroup):
        for name in cmd.list_commands(typer.Context(cmd)):
            out += _commands(cmd.commands[name], (*path, name))
    return out


COMMANDS = _commands(typer.main.get_command(app))


def _help(path: tuple[str, ...], columns: int = 80) -> str:
    # CliRunner: output is not a terminal (as when piped); Rich reads COLUMNS when it makes its console
    res = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(columns), "TERMINAL_WIDTH": None})
    assert res.exit_code == 0, res.output
    return res.output


def _whole(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])")


def test_every_command_is_enumerated():
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {
        "generate",
        "evaluate",
        "compare",
        "judge-check",
        "align",
        "annotate export",
        "sweep run",
        "report",
        "graph",
    } <= names


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=[" ".join(p) or "wikihowagent" for p, _ in COMMANDS])
def test_every_option_name_and_metavar_whole_at_80_columns(path, cmd):
    out = _help(path)
    assert "…" not in out, out  # nothing shortened: neither a name nor a word of help
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    ctx = typer.Context(cmd)
    for param in cmd.params:
        if getattr(param, "hidden", False):
            continue
        for name in [*param.opts, *param.secondary_opts]:
            if isinstance(param, TyperArgument):
                name = param.display_name_raw
            hits = [line for line in lines if _whole(name).search(line)]
            assert hits, f"{' '.join(path)}: {name} not whole in\n{out}"
            shown = param.display_type_rich(ctx=ctx) if hasattr(param, "display_type_rich") else None
            if shown and not getattr(param, "is_flag", False) and name in param.opts:
                # the metavar on the name's own line, whole
                assert any(shown.replace(" range>", ">") in line for line in hits), f"{name} {shown}\n{out}"


def test_help_text_wraps_at_a_readable_width():
    out = _help(("evaluate",))
    # the help column of an option beside a short name: 40+ characters, not Typer's 17 of the old layout
    line = next(line for line in out.splitlines() if "--evaluator SPEC" in line)
    help_part = line.split("SPEC", 1)[1].strip(" │")
    assert len(help_part) >= 40, line
    wide = _help(("evaluate",), columns=200)
    assert max(len(line) for line in wide.splitlines()) <= 100  # a wide terminal: still readable lines


@pytest.mark.parametrize("command", ["generate", "evaluate", "compare", "judge-check", "align"])
def test_many_options_are_grouped_into_panels(command):
    cmd = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    loose = [
        p.name
        for p in cmd.params
        if isinstance(p, TyperOption) and p.name != "help" and getattr(p, "rich_help_panel", None) not in PANELS
    ]
    assert not loose, f"{command}: options without a panel: {loose}"
    out = _help((command,))
    shown = [t for t in re.findall(r"╭─ (.+?) ─", out)]
    assert shown[-1] == "Options" and len(shown) >= 4, shown
    want = [p for p in PANELS if p in shown]
    assert [t for t in shown if t in PANELS] == want  # the fixed order


def test_piped_help_is_greppable():
    """The user's check from the issue, through a real pipe (not a terminal, no COLUMNS)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TERMINAL_WIDTH")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-m", "wikihowagent", "evaluate", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=ROOT,
    ).stdout
    assert [line for line in out.splitlines() if "--posttest-learner SPEC" in line]
    assert [line for line in out.splitlines() if "--retry-failed / --no-retry-failed" in line]
