"""The judge's and the post-test's command-line options, declared once for `evaluate`, `compare` and
`judge-check` (as `stats.bootstrap_option` is for the bootstrap): each factory fixes an option's name, help panel
(console.PANELS), metavar and bounds; each command gives its own help text, which says what the option does there.

`command_errors` is the exit-code handling the three commands share: a WikihowagentError (the stage's own, or a
config, input, rubric or backend error as it is) is one `error:` line and exit 2; Ctrl-C is one `interrupted:`
line saying what was kept and exit 130. typer is imported inside the functions (no module-level work)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from .modes import modes_metavar

Device = Literal["auto", "cpu", "cuda", "mps"]  # --device: metrics.DEVICES


def _option(panel: str, help: str, *names: str, **kw: Any) -> Any:
    import typer

    return typer.Option(*names, rich_help_panel=panel, help=help, **kw)


def _models(help: str, *names: str, **kw: Any) -> Any:
    from wikihowagent.console import MODELS

    return _option(MODELS, help, *names, **kw)


def _posttest(help: str, *names: str, **kw: Any) -> Any:
    from wikihowagent.console import POSTTEST

    return _option(POSTTEST, help, *names, **kw)


def _cluster(help: str, *names: str, **kw: Any) -> Any:
    from wikihowagent.console import CLUSTER

    return _option(CLUSTER, help, *names, **kw)


def rubrics_option(panel: str) -> Any:
    """`--rubrics FILE`: the rubric JSON file (its panel is the command's: Inputs or Metrics)."""
    return _option(panel, "Rubric JSON file (default: wikihowagent/data/rubrics.json).")


def evaluator_option(help: str) -> Any:
    """`--evaluator SPEC`: the judge model spec (repeatable where a panel is allowed: the parameter's type says)."""
    return _models(help, metavar="SPEC")


def base_url_option(help: str) -> Any:
    """`--base-url URL`: the judge's server."""
    return _models(help)


def retries_option(help: str) -> Any:
    """`--retries N` (N >= 0): re-asks of the judge when its reply cannot be read."""
    return _models(help, min=0)


def concurrency_option(help: str) -> Any:
    """`--concurrency N` (N >= 1): judge passes in flight."""
    return _cluster(help, min=1)


def retry_failed_option(help: str) -> Any:
    """`--retry-failed/--no-retry-failed`: ask again what failed in an earlier pass."""
    return _cluster(help)


def judge_scoring_option(help: str, metavar: str | None = None) -> Any:
    """`--judge-scoring MODE` (the modes of evaluation/modes.py; `compare` takes checklist or pairwise)."""
    return _models(help, metavar=metavar or modes_metavar())


def judge_prompt_option(help: str) -> Any:
    """`--judge-prompt NAME`: a prompt variant of wikihowagent/data/judge_prompts.json."""
    return _models(help, metavar="NAME")


def judge_rationale_option(help: str) -> Any:
    """`--judge-rationale`: the judge writes its analysis before the score."""
    return _models(help, "--judge-rationale")


def checklist_option(help: str) -> Any:
    """`--checklist FILE`: the checklist judge's items file."""
    return _models(help, metavar="FILE")


def checklist_weights_option(help: str) -> Any:
    """`--checklist-weights FILE`: item weights of `align --fit-checklist`."""
    return _models(help, metavar="FILE")


def pairwise_reading_option(help: str) -> Any:
    """`--pairwise-reading logprobs|answer`: how a head-to-head verdict is read."""
    return _models(help, metavar="logprobs|answer")


def tie_band_option(help: str) -> Any:
    """`--tie-band B` (0 <= B <= 0.499): the `average` verdict rule's tie band."""
    return _models(help, min=0.0, max=0.499)


def posttest_learner_option(help: str) -> Any:
    """`--posttest-learner SPEC`: the learner model that takes the post-test."""
    return _posttest(help, metavar="SPEC")


def posttest_likelihood_option(help: str) -> Any:
    """`--posttest-likelihood`: with --posttest-learner, also the likelihood post-test (workflow/likelihood.py)."""
    return _posttest(help, "--posttest-likelihood")


def posttest_prompt_option(help: str) -> Any:
    """`--posttest-prompt NAME`: the post-/pre-test's wording (v2, v3)."""
    return _posttest(help, metavar="NAME")


@contextmanager
def command_errors(console: Any, kept: str) -> Iterator[None]:
    """Exit 2 with one `error:` line on a WikihowagentError, exit 130 on Ctrl-C saying that `kept` (e.g. "scores")
    written so far are kept: the exit codes of `evaluate`, `compare` and `judge-check`."""
    import typer

    from wikihowagent.console import print_error, print_labeled
    from wikihowagent.errors import WikihowagentError

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
