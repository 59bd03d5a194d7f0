"""The `--judge-scoring` modes of `evaluate` and `judge-check`: one registry entry each, the only place a mode's
name is spelled. An entry names its scorer (a class of judge/scoring.py, read when a judge is made, so this
module stays light enough for `--help`) and says what applies to it; every check of a mode reads these flags.

Adding a mode = its scorer class (judge/scoring.py, the `Scorer` interface) + one entry in SCORING_MODES.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikihowagent.registry import Registry


@dataclass(frozen=True)
class ScoringMode:
    scorer: str | type  # the scorer: a class name of judge/scoring.py, or a class (a mode registered elsewhere)
    needs_logprobs: bool = False  # refused for a backend whose replies carry no token log-probabilities
    prompt_variants: bool = False  # a 1-5 rating read from a prompt variant: --judge-prompt / --judge-rationale apply
    paper: bool = False  # the paper's structured-output judge: --compat paper's only mode; a record naming none
    checklist: bool = False  # reads a checklist: --checklist / --checklist-weights apply and ask for it
    default_with_logprobs: bool = False  # the default for a backend with log-probabilities (else the paper's)


SCORING_MODES: Registry[ScoringMode] = Registry(
    "scoring mode",
    {
        "weighted": ScoringMode(
            "WeightedScorer", needs_logprobs=True, prompt_variants=True, default_with_logprobs=True
        ),
        "json": ScoringMode("JsonScorer", paper=True),
        "sampled": ScoringMode("SampledScorer", prompt_variants=True),
        "checklist": ScoringMode("ChecklistScorer", checklist=True),
    },
)


def first_mode(flag: str) -> str:
    """The first registered mode whose `flag` (a ScoringMode field) is set."""
    return next(name for name, mode in SCORING_MODES.items() if getattr(mode, flag))


def mode_of(scorer: str) -> str:
    """The name of the registered mode whose scorer is the class named `scorer` (how a scorer class knows its
    mode's name without spelling it)."""
    return next(name for name, mode in SCORING_MODES.items() if mode.scorer == scorer)


def modes_where(flag: str, value: bool = True) -> list[str]:
    """The registered modes whose `flag` is `value`, in registration order."""
    return [name for name, mode in SCORING_MODES.items() if getattr(mode, flag) is value]


def prompt_variant_modes() -> str:
    """'weighted or sampled': the modes --judge-prompt and --judge-rationale apply to, for a message."""
    return " or ".join(modes_where("prompt_variants"))


def modes_metavar() -> str:
    """`weighted|json|sampled|checklist`: the --judge-scoring choices."""
    return "|".join(SCORING_MODES)
