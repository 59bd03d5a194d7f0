"""`wikihowagent judge-check`: the typer command (registered by wikihowagent/cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wikihowagent.cli_options import (
    Config,
    Device,
    InputRubrics,
    JudgeBaseUrl,
    JudgeRetries,
    NoHeatmap,
    command_errors,
    concurrency_option,
    evaluator_option,
    judge_prompt_option,
    judge_rationale_option,
    judge_scoring_option,
    pairwise_reading_option,
    posttest_learner_option,
    posttest_likelihood_option,
    posttest_prompt_option,
    tie_band_option,
)
from wikihowagent.console import INPUTS, METRICS, MODELS, OUTPUT, POSTTEST, make_console
from wikihowagent.judge.modes import modes_metavar
from wikihowagent.judge.request import ScoringRequest

Runs = Annotated[
    list[Path],
    typer.Argument(help="Run directories, paper run files or JSONL of records.", show_default=False, metavar="RUN"),
]
Out = Annotated[
    Path,
    typer.Option(
        rich_help_panel=OUTPUT,
        help="Output directory: judgments.jsonl, sensitivity.csv, consistency.csv, summary.md, sensitivity.png.",
    ),
]
Evaluator = Annotated[
    list[str] | None,
    evaluator_option(
        "Judge model spec (default: as `evaluate`: the run's evaluator, else its teacher). Repeatable: a panel; each judge is checked into OUT/<judge>/ and the panel (the mean of their scores) into OUT/panel/."
    ),
]
JudgeScoring = Annotated[
    str | None,
    judge_scoring_option(
        "Scoring mode (default: as `evaluate`; checklist: yes/no items, wikihowagent/data/checklists.json).",
        modes_metavar(),
    ),
]
JudgeRationale = Annotated[bool, judge_rationale_option("The judge writes its analysis first (weighted/sampled).")]
JudgePrompt = Annotated[
    str | None,
    judge_prompt_option("Judge prompt variant of wikihowagent/data/judge_prompts.json (default: as `evaluate`)."),
]
Perturbations = Annotated[
    Path | None,
    typer.Option(rich_help_panel=INPUTS, help="Perturbation file (default: wikihowagent/data/perturbations.json)."),
]
MaxConversations = Annotated[
    int | None, typer.Option(rich_help_panel=INPUTS, min=2, help="Use the first N conversations.")
]
Concurrency = Annotated[
    int | None,
    concurrency_option(
        "Judge passes (or --posttest-learner tests) in flight (default: the embedded model's server slots, local.n_parallel; else the config's concurrency)."
    ),
]
Pairwise = Annotated[
    bool,
    typer.Option(
        "--pairwise",
        rich_help_panel=MODELS,
        help="Judge each perturbed copy against its original head to head, in both orders (the `compare` judge), on the perturbation's target rubrics: pairwise_sensitivity.csv, pairwise_summary.md, next to the absolute judge's accuracy when judgments.jsonl has it.",
    ),
]
PairwiseReading = Annotated[
    str | None,
    pairwise_reading_option(
        "With --pairwise: P(A) from the A/B token log-probabilities (default where available) or the letter only."
    ),
]
TieBand = Annotated[
    float,
    tie_band_option(
        "With --pairwise: the `average` verdict rule's tie band (|P(original better) - 0.5| up to this is a tie); accuracy under both rules (`agree`, `average`) is reported."
    ),
]
PosttestLearner = Annotated[
    str | None,
    posttest_learner_option(
        "Instead of judging: the post-test's validity. This learner model takes the post-test on each original and its skip_steps / off_topic copies; their Step Recall must drop: posttest_validity.csv/.md (beside the judge's accuracy when this directory has it), posttests.jsonl."
    ),
]
PosttestPrompt = Annotated[
    str | None,
    posttest_prompt_option(
        'With --posttest-learner: the test\'s wording, v2 (default) or v3 ("not taught" allowed per step).'
    ),
]
PosttestLikelihood = Annotated[
    bool,
    posttest_likelihood_option(
        "With --posttest-learner: also the likelihood post-test (the learner model's mean log-probability per token of each tutorial step given the lesson minus given the title: Likelihood Gain, nats) on each original and copy: posttest_likelihood_validity.csv. Needs an OpenAI-compatible /v1/completions with echo + logprobs (vLLM) or a llama.cpp server (the embedded `local`: read through a grammar)."
    ),
]
Metrics = Annotated[
    bool,
    typer.Option(
        "--metrics",
        rich_help_panel=MODELS,
        help="Instead of judging: every computational metric (evaluate's default mode, no post-test) on each original and perturbed copy, no model call: the share of conversations where the metric prefers the original, in its own direction, with CIs: metric_sensitivity.csv/.md/.png.",
    ),
]
Tutorials = Annotated[
    list[Path] | None,
    typer.Option(
        rich_help_panel=POSTTEST,
        metavar="PATH",
        help="With --posttest-learner: split the validity by tutorial set (repeatable), e.g. --tutorials wikihowagent/data/validity/counterfactual (procedures the learner cannot already know) --tutorials wikihowagent/data/tutorials: each conversation counts in the set whose tutorial it teaches; posttest_validity_by_set.csv.",
    ),
]
DeviceOpt = Annotated[
    Device,
    typer.Option(
        rich_help_panel=METRICS,
        help="With --posttest-learner or --metrics: where the metric encoders run (the sentence encoder of Step Recall, Step Coverage and BERTScore): auto = a CUDA or Apple MPS GPU when torch sees one, else the CPU.",
    ),
]


def judge_check(
    runs: Runs,
    out: Out,
    evaluator: Evaluator = None,
    judge_scoring: JudgeScoring = None,
    judge_rationale: JudgeRationale = False,
    judge_prompt: JudgePrompt = None,
    perturbations: Perturbations = None,
    rubrics: InputRubrics = None,
    max_conversations: MaxConversations = None,
    config: Config = None,
    base_url: JudgeBaseUrl = None,
    concurrency: Concurrency = None,
    retries: JudgeRetries = 2,
    no_figures: NoHeatmap = False,
    pairwise: Pairwise = False,
    pairwise_reading: PairwiseReading = None,
    tie_band: TieBand = 0.0,
    posttest_learner: PosttestLearner = None,
    posttest_prompt: PosttestPrompt = None,
    posttest_likelihood: PosttestLikelihood = False,
    metrics: Metrics = False,
    tutorials: Tutorials = None,
    device: DeviceOpt = "auto",
) -> None:
    """Meta-evaluate the rubric judge without human labels: perturbed conversations that should score lower
    (sensitivity) and the originals judged twice (self-consistency)."""
    from .core import JudgeCheckRequest, run_judge_check

    console = make_console()
    scoring = ScoringRequest(
        base_url=base_url,
        concurrency=concurrency,
        retries=retries,
        judge_scoring=judge_scoring,
        judge_rationale=judge_rationale,
        judge_prompt=judge_prompt,
        posttest_learner=posttest_learner,
        posttest_prompt=posttest_prompt,
        posttest_likelihood=posttest_likelihood,
    )
    req = JudgeCheckRequest(
        runs=tuple(runs),
        out=out,
        evaluators=tuple(evaluator or ()),
        scoring=scoring,
        perturbations=perturbations,
        rubrics=rubrics,
        max_conversations=max_conversations,
        config=config,
        figures=not no_figures,
        pairwise=pairwise,
        pairwise_reading=pairwise_reading,
        tie_band=tie_band,
        posttest_tutorials=tuple(tutorials or ()),
        device=device,
        metrics=metrics,
    )
    with command_errors(console, "judgments"):
        run_judge_check(req, console)
