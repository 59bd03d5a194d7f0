"""The scoring options of `evaluate`, `compare` and `judge-check` as the command was given them (ScoringRequest):
a light module (dataclasses only), so a command builds its request without loading the stage."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ScoringRequest:
    """The judge's, post-test's and output options a command was given, as given: the requests of `evaluate`,
    `compare` and `judge-check` hold them and every runner.Evaluation reads them (EvalOptions.asked), never
    copied field by field."""

    evaluator: str | None = None  # --evaluator (each judge of a panel: core.EvaluationPlan.judge_opts)
    base_url: str | None = None
    rubrics: Path | None = None
    out: Path | None = None
    concurrency: int | None = None  # conversations at the judge at once (--concurrency); None = judge_concurrency()
    retries: int = 2
    batch_size: int = 32  # texts per forward pass
    judge_scoring: str | None = None  # None = scoring.default_mode (the provider's, else by logprobs)
    judge_rationale: bool = False
    judge_prompt: str | None = None  # a variant of wikihowagent/data/judge_prompts.json; None = the default
    retry_failed: bool = True  # judge rubrics that failed in an earlier pass again
    posttest_learner: str | None = None  # take the post-test of conversations without one with this model
    posttest_prompt: str | None = None  # workflow/posttest.py PROMPTS; None = the default
    posttest_likelihood: bool = False  # also the likelihood post-test of each conversation (workflow/likelihood.py)
    checklist: Path | None = None  # the items file of --judge-scoring checklist (None = bundled)
    checklist_weights: Path | None = None  # fitted item weights (align --fit-checklist)
