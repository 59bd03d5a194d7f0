"""`wikihowagent evaluate`: the typer command (registered by wikihowagent/cli.py). It parses, calls
`core.run_evaluation` and prints."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wikihowagent.cli_options import (
    Config,
    Device,
    JudgeRetries,
    base_url_option,
    bootstrap_option,
    checklist_option,
    checklist_weights_option,
    command_errors,
    concurrency_option,
    evaluator_option,
    judge_prompt_option,
    judge_rationale_option,
    judge_scoring_option,
    posttest_learner_option,
    posttest_likelihood_option,
    posttest_prompt_option,
    retry_failed_option,
    rubrics_option,
    seed_option,
)
from wikihowagent.console import (
    CLUSTER,
    METRICS,
    MODELS,
    OUTPUT,
    STATISTICS,
    make_console,
    print_error,
    print_labeled,
)
from wikihowagent.judge.modes import modes_metavar
from wikihowagent.judge.request import ScoringRequest

if TYPE_CHECKING:
    from rich.console import Console

    from .core import EvaluationSummary


def _print_result(result: EvaluationSummary, console: Console, paper: bool) -> None:
    """Print what `evaluate` produced: a shard's merge hint, or the summary, its tables and the files written;
    exit 1 when the judge produced no rubric score at all."""
    from wikihowagent.scores.summary import print_by_domain, print_summary  # lazily, as summary (numpy): not for --help

    if result.shard is not None:
        k, n = result.shard
        console.print(
            f"shard {k}/{n} scored; once all {n} shards are: wikihowagent merge "
            + " ".join(str(d) for d in result.merge_dirs),
            highlight=False,
            markup=False,
        )
        return
    stdout = make_console(stderr=False)
    print_summary(result.summary, stdout, title="Evaluation summary" + (" (--compat paper)" if paper else ""))
    if result.domain_table is not None:
        print_by_domain(result.domain_table, stdout)
    if result.persona_table is not None:
        print_by_domain(result.persona_table, stdout, key="persona")
    for _, title, table in result.tables:
        print_summary(table, stdout, title=title)
    figures, warning = result.estimate_figures
    if figures:
        console.print(figures, highlight=False, markup=False, soft_wrap=True)
    if warning:
        print_labeled(console, "warning:", "yellow", warning)
    console.print("wrote " + ", ".join(str(p) for p in result.written), highlight=False, markup=False)
    if result.judge_all_failed:
        print_error(
            f"the judge failed on every rubric it was asked in {', '.join(result.judge_all_failed)}: no rubric "
            "score was produced (see the judge failures above; rerun to judge them again)",
            console,
        )
        raise typer.Exit(1)


Runs = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Run directories, the paper's run files ({total_conversations: [...]} JSON) or JSONL of records. "
        "Default: the latest run.",
        show_default=False,
        metavar="RUN_DIR",
    ),
]
Evaluator = Annotated[
    list[str] | None,
    evaluator_option(
        "Judge model spec (default: the run's evaluator, else its teacher: homogeneous). Repeatable: a panel of judges, each scoring into <scores dir>/judges/<judge>/scores.jsonl, the run's scores holding their mean (evaluator 'panel:A+B')."
    ),
]
Metrics = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=METRICS,
        metavar="LIST",
        help="Comma-separated metric names (or 'computational', 'rubric'). Default: all.",
    ),
]
NoJudge = Annotated[
    bool, typer.Option("--no-judge", rich_help_panel=METRICS, help="Computational metrics only (no LLM calls).")
]
Compat = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=METRICS,
        metavar="paper",
        help="'paper': the released code's metric definitions, to compare with the paper's tables.",
    ),
]
Baseline = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=STATISTICS,
        help="Run to compare the others with (Table 2 view): ↑/↓ where a paired test by tutorial (Wilcoxon, Holm across the metrics) gives p < 0.05, else ≈; --compat paper: the raw difference.",
    ),
]
By = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=STATISTICS,
        metavar="domain|persona",
        help="'domain': per-domain breakdown (Figure 5); 'persona': per learner persona (by_persona.csv).",
    ),
]
Out = Annotated[
    Path | None,
    typer.Option(rich_help_panel=OUTPUT, help="Output directory: <OUT>/<run>/scores.jsonl and the summary files."),
]
Rubrics = Annotated[Path | None, rubrics_option(METRICS)]
BaseUrl = Annotated[
    str | None,
    base_url_option(
        "Ollama host / OpenAI-compatible base URL for the evaluator (default: the one recorded in run.json for its spec)."
    ),
]
Concurrency = Annotated[
    int | None,
    concurrency_option(
        "Conversations at the judge at once, and at the --posttest-learner (default: the embedded model's server slots, local.n_parallel; else the config's concurrency)."
    ),
]
BatchSize = Annotated[
    int,
    typer.Option(
        rich_help_panel=METRICS,
        min=1,
        help="Text chunks per embedding forward pass on a GPU (on the CPU each chunk is a pass of its own: the fastest there, measured).",
    ),
]
DeviceOpt = Annotated[
    Device,
    typer.Option(
        rich_help_panel=METRICS,
        help="Where the metric encoders (sentence embeddings, BERTScore, the post-test's step matching) run: auto = a CUDA or Apple MPS GPU when torch sees one, else the CPU; recorded in scores.jsonl (metrics_device).",
    ),
]
Workers = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=CLUSTER,
        metavar="N",
        help="Processes computing the metrics at once, each on one core with its own copy of the encoder (about 0.4 GB of memory each); 1 = in the evaluate process itself. Default: the cores available to it. The numbers are the same for any N.",
        show_default=False,
    ),
]
NoFigures = Annotated[bool, typer.Option("--no-figures", rich_help_panel=OUTPUT, help="Skip the PNG figures.")]
Preset = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=METRICS,
        help="'paper': --compat paper and the paper's decoding for the judge (max tokens 4096, temperature 0).",
    ),
]
Tables = Annotated[
    bool,
    typer.Option(
        "--tables",
        rich_help_panel=STATISTICS,
        help="The paper's Table 1 (homogeneous runs) and Table 2 (heterogeneous, ↑/↓ against the teacher's homogeneous run); automatic for a sweep directory.",
    ),
]
Shard = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=CLUSTER,
        metavar="K/N",
        help="Score only shard K of N of the conversations into <scores dir>/score-shards/K-of-N/ (cluster array jobs); join with `wikihowagent merge`.",
    ),
]
JudgeScoring = Annotated[
    str | None,
    judge_scoring_option(
        "How rubric scores are read: 'checklist' (yes/no items of wikihowagent/data/checklists.json asked one at a time, P(yes) from log-probabilities; score = 1 + 4 x the weighted mean of the items' P(good); the embedded model's default, measured in BENCHMARKS.md), 'weighted' (probability-weighted mean over the score digits; default for other backends that return log-probabilities, and with --judge-rationale or --judge-prompt), 'json' (structured output, integers; default without log-probabilities), 'sampled' (5 samples at temperature 0.7).",
        modes_metavar(),
    ),
]
Checklist = Annotated[
    Path | None,
    checklist_option(
        "Checklist items file of --judge-scoring checklist (default: wikihowagent/data/checklists.json); its version is recorded with every score."
    ),
]
ChecklistWeights = Annotated[
    Path | None,
    checklist_weights_option(
        "Item weights fitted by `align --fit-checklist` (default: uniform); refused for another judge or checklist version."
    ),
]
JudgeRationale = Annotated[
    bool,
    judge_rationale_option(
        "The judge writes its analysis first, then 'Score: k' (weighted/sampled; read at the final score token)."
    ),
]
JudgePrompt = Annotated[
    str | None,
    judge_prompt_option(
        "Judge prompt variant of wikihowagent/data/judge_prompts.json (weighted/sampled; default: see docs: Methodology > The rubric judge); recorded with every score."
    ),
]
RetryFailed = Annotated[bool, retry_failed_option("Judge rubrics that failed in an earlier pass again.")]
PosttestLearner = Annotated[
    str | None,
    posttest_learner_option(
        "Give conversations without a post-test one, taken by this learner model (and its pre-test per tutorial), stored beside the scores (posttests.jsonl, pretests.jsonl); also the paper's run files. Not with --compat paper."
    ),
]
PosttestPrompt = Annotated[
    str | None,
    posttest_prompt_option(
        'Wording of the post-/pre-test that --posttest-learner takes: v2 (default) or v3 ("not taught" / "don\'t know" allowed per step).'
    ),
]
PosttestLikelihood = Annotated[
    bool,
    posttest_likelihood_option(
        "With --posttest-learner: also the likelihood post-test of every conversation (the learner model's mean log-probability per token of each tutorial step given the lesson minus given the title: the 'Likelihood Gain' metric, nats), stored with its post-test in posttests.jsonl. Needs an OpenAI-compatible /v1/completions with echo + logprobs (vLLM) or a llama.cpp server (the embedded `local`: read through a grammar)."
    ),
]
Bootstrap = Annotated[
    int, bootstrap_option("Bootstrap resamples (of tutorials) for the 95 % CI in every table cell; 0 = no CIs.")
]
Seed = Annotated[int, seed_option("Seed of the bootstrap resampling (the tables' CIs).")]
Calibration = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=MODELS,
        metavar="FILE",
        help="A calibration.json of `align --calibrate`: adds '<rubric> (cal.)' columns (the judge's score mapped to the human scale) to the summary, the tables and calibrated_scores.csv; refused for scores of another judge, scoring mode or rubric file.",
    ),
]
PeopleEstimate = Annotated[
    Path | None,
    typer.Option(
        "--people-estimate",
        rich_help_panel=METRICS,
        metavar="FILE",
        help="A people_estimate.json of `align` (fitted on a human study): adds 'Estimated Overall (people)', the people's Overall predicted from a few cheap metrics, to the summary and tables with its CI; refused for scores of another metric mode or without one of its metrics.",
    ),
]


def evaluate(
    runs: Runs = None,
    evaluator: Evaluator = None,
    metrics: Metrics = None,
    no_judge: NoJudge = False,
    compat: Compat = None,
    baseline: Baseline = None,
    by: By = None,
    out: Out = None,
    rubrics: Rubrics = None,
    config: Config = None,
    base_url: BaseUrl = None,
    concurrency: Concurrency = None,
    retries: JudgeRetries = 2,
    batch_size: BatchSize = 32,
    device: DeviceOpt = "auto",
    workers: Workers = None,
    no_figures: NoFigures = False,
    preset: Preset = None,
    tables: Tables = False,
    shard: Shard = None,
    judge_scoring: JudgeScoring = None,
    checklist: Checklist = None,
    checklist_weights: ChecklistWeights = None,
    judge_rationale: JudgeRationale = False,
    judge_prompt: JudgePrompt = None,
    retry_failed: RetryFailed = True,
    posttest_learner: PosttestLearner = None,
    posttest_prompt: PosttestPrompt = None,
    posttest_likelihood: PosttestLikelihood = False,
    bootstrap: Bootstrap = 1000,
    seed: Seed = 0,
    calibration: Calibration = None,
    people_estimate: PeopleEstimate = None,
) -> None:
    """Score conversations: computational metrics and the LLM rubric judge; summary table, CSV, Markdown, figures."""
    from .core import EvaluateRequest, run_evaluation  # lazily, as summary (numpy): not for --help

    console = make_console()
    request = EvaluateRequest(
        runs=tuple(runs or ()),
        scoring=ScoringRequest(
            evaluator=evaluator[0] if evaluator and len(set(evaluator)) == 1 else None,
            base_url=base_url,
            rubrics=rubrics,
            out=out,
            concurrency=concurrency,
            retries=retries,
            batch_size=batch_size,
            judge_scoring=judge_scoring,
            judge_rationale=judge_rationale,
            judge_prompt=judge_prompt,
            retry_failed=retry_failed,
            posttest_learner=posttest_learner,
            posttest_prompt=posttest_prompt,
            posttest_likelihood=posttest_likelihood,
            checklist=checklist,
            checklist_weights=checklist_weights,
        ),
        panel=tuple(dict.fromkeys(evaluator)) if evaluator and len(set(evaluator)) > 1 else (),
        metrics=metrics,
        judge=not no_judge,
        compat=compat,
        baseline=baseline,
        by=by,
        config=config,
        device=device,
        workers=workers,
        figures=not no_figures,
        preset=preset,
        tables=tables,
        shard=shard,
        calibration=calibration,
        people_estimate=people_estimate,
        bootstrap=bootstrap,
        seed=seed,
    )
    with command_errors(console, "scores"):
        result = run_evaluation(request, console)
    _print_result(result, console, paper=request.mode == "paper")
