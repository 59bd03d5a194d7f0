"""Statistics shared by the stages: bootstrap CIs over tutorials, paired tests with Holm's correction
(`paired.py`), Bradley–Terry rankings (`ranking.py`) and applying a judge calibration (`calibration.py`, below
both `evaluate --calibration` and `align --calibrate`). scipy/statsmodels/choix are imported inside the functions.

The bootstrap's command-line options, declared once with their bounds for `evaluate`, `compare` and `align`:
`--bootstrap N` takes 0 (no CIs) to `paired.MAX_BOOTSTRAP` resamples and `--seed S` (numpy's generators take no
negative seed) S >= 0; a value outside is refused by the parser in one line, before any work. Each command
gives its own help text and default."""

from __future__ import annotations

from typing import Any

from .paired import MAX_BOOTSTRAP


def bootstrap_option(help: str) -> Any:
    """`--bootstrap N`: resamples for a bootstrap CI, 0 to MAX_BOOTSTRAP (in `--help`'s Statistics panel)."""
    import typer

    from wikihowagent.console import STATISTICS

    return typer.Option(min=0, max=MAX_BOOTSTRAP, metavar="N", help=help, rich_help_panel=STATISTICS)


def seed_option(help: str) -> Any:
    """`--seed S` of a bootstrap: S >= 0 (in `--help`'s Statistics panel)."""
    import typer

    from wikihowagent.console import STATISTICS

    return typer.Option(min=0, metavar="S", help=help, rich_help_panel=STATISTICS)
