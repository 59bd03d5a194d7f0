"""The console and help: a console that cannot print Unicode gets an ASCII table and help, the ASCII fallback
of a character and a styled text, help at any terminal width shows every option whole."""

from __future__ import annotations

import pytest
from helpers import cli, run_copy

from wikihowagent.cli import app


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_evaluate_on_a_non_utf8_console_prints_an_ascii_table_and_succeeds(tmp_path, encoding):
    run = run_copy(tmp_path)
    res = cli(
        "evaluate", str(run), "--no-judge", "--metrics", "Completion,BLEU", "--no-figures",
        env={"PYTHONIOENCODING": encoding, "COLUMNS": "100"},
    )  # fmt: skip
    out, err = res.stdout.decode(encoding), res.stderr.decode(encoding)
    assert res.returncode == 0, err
    assert "Traceback" not in err and "UnicodeEncodeError" not in err
    assert out.isascii() and err.isascii()
    assert "+/-" in out and "Evaluation summary" in out  # the mean +/- sd, not a '?'
    widths = {len(line) for line in out.splitlines() if line.startswith(("|", "+"))}
    assert len(widths) == 1, out  # "+/-" is measured before the table is laid out: its columns line up
    assert (run / "summary.csv").is_file() and "wrote" in err


@pytest.mark.parametrize("command", ["compare", "evaluate", "judge-check", "align", "report"])
def test_help_on_a_non_utf8_console(command):
    res = cli(command, "--help", env={"PYTHONIOENCODING": "ascii", "COLUMNS": "80"})
    assert res.returncode == 0, res.stderr.decode("ascii", "replace")
    out = res.stdout.decode("ascii")
    assert "Usage:" in out and "Traceback" not in res.stderr.decode("ascii")


def test_the_ascii_fallback_of_a_character_and_a_styled_text():
    from rich.text import Text

    from wikihowagent.console import _ascii_rich_text, ascii_text

    assert ascii_text("45.2 ± 3.1 ↑ – café Ｙｅｓ …") == "45.2 +/- 3.1 ^ - cafe Yes ..."
    assert ascii_text("中文") == "??" and ascii_text("plain") == "plain"
    t = Text.assemble("1.0 ± 2 ", ("↑", "green"))
    a = _ascii_rich_text(t)
    assert a.plain == "1.0 +/- 2 ^" and [(s.start, s.end, str(s.style)) for s in a.spans] == [(10, 11, "green")]


@pytest.mark.parametrize("columns", [1, 20, 10_000])
@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_help_at_any_terminal_width_shows_every_option_whole(command, columns):
    """COLUMNS=1 printed only the panels' corners and COLUMNS=20 cut the help into 2-letter columns; help is now
    laid out at least 60 wide (and at most 100), every option name whole."""
    import typer

    res = cli(command, "--help", env={"COLUMNS": str(columns)})
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode()
    lines = out.splitlines()
    assert "Usage:" in out and max(len(ln) for ln in lines) == min(100, max(60, columns)), out[:2000]
    click_cmd = typer.main.get_command(app).commands[command]
    for p in click_cmd.params:
        for name in p.opts if p.param_type_name == "option" else []:
            if name.startswith("--"):
                assert any(name in ln.split() or f"{name}," in ln for ln in lines) or name in out, name
