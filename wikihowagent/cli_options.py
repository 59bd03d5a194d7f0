"""The command-line options more than one command takes, declared once.

An option whose whole declaration (name, help panel of console.PANELS, metavar, bounds and help text) is the same
in several commands is one `Annotated` alias here (`Config`, `JudgeBaseUrl`, ...): a command's parameter is then
`config: Config = None`. An option whose help text each command words for itself is one factory here that fixes
everything but the help (`seed_option`, `evaluator_option`, ...); the command declares its alias with its own
help beside its function (`Seed = Annotated[int, seed_option("Bootstrap seed.")]`). A new shared option: one
alias (or factory) in this module.

Bounds checked by the parser, before any work: `--bootstrap N` takes 0 (no CIs) to `stats.paired.MAX_BOOTSTRAP`
resamples, `--seed S` (numpy's generators take no negative seed) S >= 0, `--retries N` N >= 0, `--concurrency N`
N >= 1, `--tie-band B` 0 <= B <= 0.499."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from wikihowagent.console import CLUSTER, INPUTS, MODELS, OUTPUT, POSTTEST, STATISTICS, print_error, print_labeled
from wikihowagent.errors import WikihowagentError
from wikihowagent.stats.paired import MAX_BOOTSTRAP

Device = Literal["auto", "cpu", "cuda", "mps"]  # --device: metrics.DEVICES


# --------------------------------------------------------------------------- factories: each command words the help
def bootstrap_option(help: str) -> Any:
    """`--bootstrap N`: resamples for a bootstrap CI, 0 to MAX_BOOTSTRAP (in `--help`'s Statistics panel)."""
    return typer.Option(min=0, max=MAX_BOOTSTRAP, metavar="N", help=help, rich_help_panel=STATISTICS)


def seed_option(help: str) -> Any:
    """`--seed S` of a bootstrap: S >= 0 (in `--help`'s Statistics panel)."""
    return typer.Option(min=0, metavar="S", help=help, rich_help_panel=STATISTICS)


def rubrics_option(panel: str) -> Any:
    """`--rubrics FILE`: the rubric JSON file (its panel is the command's: Inputs or Metrics)."""
    return typer.Option(rich_help_panel=panel, help="Rubric JSON file (default: wikihowagent/data/rubrics.json).")


def evaluator_option(help: str) -> Any:
    """`--evaluator SPEC`: the judge model spec (repeatable where a panel is allowed: the parameter's type says)."""
    return typer.Option(rich_help_panel=MODELS, help=help, metavar="SPEC")


def base_url_option(help: str) -> Any:
    """`--base-url URL`: the judge's server."""
    return typer.Option(rich_help_panel=MODELS, help=help)


def retries_option(help: str) -> Any:
    """`--retries N` (N >= 0): re-asks of the judge when its reply cannot be read."""
    return typer.Option(rich_help_panel=MODELS, help=help, min=0)


def concurrency_option(help: str) -> Any:
    """`--concurrency N` (N >= 1): judge passes in flight."""
    return typer.Option(rich_help_panel=CLUSTER, help=help, min=1)


def retry_failed_option(help: str) -> Any:
    """`--retry-failed/--no-retry-failed`: ask again what failed in an earlier pass."""
    return typer.Option(rich_help_panel=CLUSTER, help=help)


def judge_scoring_option(help: str, metavar: str) -> Any:
    """`--judge-scoring MODE`: `metavar` lists the modes (judge/modes.py's `modes_metavar()`; `compare`
    takes checklist or pairwise)."""
    return typer.Option(rich_help_panel=MODELS, help=help, metavar=metavar)


def judge_prompt_option(help: str) -> Any:
    """`--judge-prompt NAME`: a prompt variant of wikihowagent/data/judge_prompts.json."""
    return typer.Option(rich_help_panel=MODELS, help=help, metavar="NAME")


def judge_rationale_option(help: str) -> Any:
    """`--judge-rationale`: the judge writes its analysis before the score."""
    return typer.Option("--judge-rationale", rich_help_panel=MODELS, help=help)


def checklist_option(help: str) -> Any:
    """`--checklist FILE`: the checklist judge's items file."""
    return typer.Option(rich_help_panel=MODELS, help=help, metavar="FILE")


def checklist_weights_option(help: str) -> Any:
    """`--checklist-weights FILE`: item weights of `align --fit-checklist`."""
    return typer.Option(rich_help_panel=MODELS, help=help, metavar="FILE")


def pairwise_reading_option(help: str) -> Any:
    """`--pairwise-reading logprobs|answer`: how a head-to-head verdict is read."""
    return typer.Option(rich_help_panel=MODELS, help=help, metavar="logprobs|answer")


def tie_band_option(help: str) -> Any:
    """`--tie-band B` (0 <= B <= 0.499): the `average` verdict rule's tie band."""
    return typer.Option(rich_help_panel=MODELS, help=help, min=0.0, max=0.499)


def posttest_learner_option(help: str) -> Any:
    """`--posttest-learner SPEC`: the learner model that takes the post-test."""
    return typer.Option(rich_help_panel=POSTTEST, help=help, metavar="SPEC")


def posttest_likelihood_option(help: str) -> Any:
    """`--posttest-likelihood`: with --posttest-learner, also the likelihood post-test (workflow/likelihood.py)."""
    return typer.Option("--posttest-likelihood", rich_help_panel=POSTTEST, help=help)


def posttest_prompt_option(help: str) -> Any:
    """`--posttest-prompt NAME`: the post-/pre-test's wording (v2, v3)."""
    return typer.Option(rich_help_panel=POSTTEST, help=help, metavar="NAME")


# --------------------------------------------------------------------------- aliases: the same in every command
Config = Annotated[
    Path | None,
    typer.Option(rich_help_panel=INPUTS, help="YAML config overriding wikihowagent/configs/default.yaml."),
]
InputRubrics = Annotated[Path | None, rubrics_option(INPUTS)]
JudgeBaseUrl = Annotated[str | None, base_url_option("Ollama host / OpenAI-compatible base URL for the evaluator.")]
JudgeRetries = Annotated[int, retries_option("Re-asks of the judge when a reply cannot be parsed.")]
NoHeatmap = Annotated[bool, typer.Option("--no-figures", rich_help_panel=OUTPUT, help="Skip the heatmap.")]


@contextmanager
def command_errors(console: Any, kept: str) -> Iterator[None]:
    """Exit 2 with one `error:` line on a WikihowagentError (the stage's own, or a config, input, rubric or backend
    error as it is), exit 130 on Ctrl-C saying that `kept` (e.g. "scores") written so far are kept: the exit codes
    of `evaluate`, `compare` and `judge-check`."""
    try:
        yield
    except WikihowagentError as exc:
        print_error(str(exc), console)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        print_labeled(
            console, "interrupted:", "yellow", f"{kept} written so far are kept; rerun the same command to resume"
        )
        raise typer.Exit(130) from None
