"""`wikihowagent evaluate`: the typer command (registered by wikihowagent/cli.py). It parses, calls
`core.run_evaluation` and prints."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wikihowagent.console import (
    CLUSTER,
    INPUTS,
    METRICS,
    MODELS,
    OUTPUT,
    STATISTICS,
    bootstrap_option,
    make_console,
    print_error,
    print_labeled,
    seed_option,
)
from wikihowagent.judge.options import (
    Device,
    base_url_option,
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
    retries_option,
    retry_failed_option,
    rubrics_option,
)

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


def evaluate(
    runs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Run directories, the paper's run files ({total_conversations: [...]} JSON) or JSONL of records. "
            "Default: the latest run.",
            show_default=False,
            metavar="RUN_DIR",
        ),
    ] = None,
    evaluator: Annotated[
        list[str] | None,
        evaluator_option(
            "Judge model spec (default: the run's evaluator, else its teacher: homogeneous). Repeatable: a panel of judges, each scoring into <scores dir>/judges/<judge>/scores.jsonl, the run's scores holding their mean (evaluator 'panel:A+B')."
        ),
    ] = None,
    metrics: Annotated[
        str | None,
        typer.Option(
            rich_help_panel=METRICS,
            metavar="LIST",
            help="Comma-separated metric names (or 'computational', 'rubric'). Default: all.",
        ),
    ] = None,
    no_judge: Annotated[
        bool, typer.Option("--no-judge", rich_help_panel=METRICS, help="Computational metrics only (no LLM calls).")
    ] = False,
    compat: Annotated[
        str | None,
        typer.Option(
            rich_help_panel=METRICS,
            metavar="paper",
            help="'paper': the released code's metric definitions, to compare with the paper's tables.",
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            rich_help_panel=STATISTICS,
            help="Run to compare the others with (Table 2 view): ↑/↓ where a paired test by tutorial (Wilcoxon, Holm across the metrics) gives p < 0.05, else ≈; --compat paper: the raw difference.",
        ),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            rich_help_panel=STATISTICS,
            metavar="domain|persona",
            help="'domain': per-domain breakdown (Figure 5); 'persona': per learner persona (by_persona.csv).",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(rich_help_panel=OUTPUT, help="Output directory: <OUT>/<run>/scores.jsonl and the summary files."),
    ] = None,
    rubrics: Annotated[Path | None, rubrics_option(METRICS)] = None,
    config: Annotated[
        Path | None,
        typer.Option(rich_help_panel=INPUTS, help="YAML config overriding wikihowagent/configs/default.yaml."),
    ] = None,
    base_url: Annotated[
        str | None,
        base_url_option(
            "Ollama host / OpenAI-compatible base URL for the evaluator (default: the one recorded in run.json for its spec)."
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        concurrency_option(
            "Conversations at the judge at once, and at the --posttest-learner (default: the embedded model's server slots, local.n_parallel; else the config's concurrency)."
        ),
    ] = None,
    retries: Annotated[int, retries_option("Re-asks of the judge when a reply cannot be parsed.")] = 2,
    batch_size: Annotated[
        int,
        typer.Option(
            rich_help_panel=METRICS,
            min=1,
            help="Text chunks per embedding forward pass on a GPU (on the CPU each chunk is a pass of its own: the fastest there, measured).",
        ),
    ] = 32,
    device: Annotated[
        Device,
        typer.Option(
            rich_help_panel=METRICS,
            help="Where the metric encoders (sentence embeddings, BERTScore, the post-test's step matching) run: auto = a CUDA or Apple MPS GPU when torch sees one, else the CPU; recorded in scores.jsonl (metrics_device).",
        ),
    ] = "auto",
    workers: Annotated[
        str | None,
        typer.Option(
            rich_help_panel=CLUSTER,
            metavar="N",
            help="Processes computing the metrics at once, each on one core with its own copy of the encoder (about 0.4 GB of memory each); 1 = in the evaluate process itself. Default: the cores available to it. The numbers are the same for any N.",
            show_default=False,
        ),
    ] = None,
    no_figures: Annotated[
        bool, typer.Option("--no-figures", rich_help_panel=OUTPUT, help="Skip the PNG figures.")
    ] = False,
    preset: Annotated[
        str | None,
        typer.Option(
            rich_help_panel=METRICS,
            help="'paper': --compat paper and the paper's decoding for the judge (max tokens 4096, temperature 0).",
        ),
    ] = None,
    tables: Annotated[
        bool,
        typer.Option(
            "--tables",
            rich_help_panel=STATISTICS,
            help="The paper's Table 1 (homogeneous runs) and Table 2 (heterogeneous, ↑/↓ against the teacher's homogeneous run); automatic for a sweep directory.",
        ),
    ] = False,
    shard: Annotated[
        str | None,
        typer.Option(
            rich_help_panel=CLUSTER,
            metavar="K/N",
            help="Score only shard K of N of the conversations into <scores dir>/score-shards/K-of-N/ (cluster array jobs); join with `wikihowagent merge`.",
        ),
    ] = None,
    judge_scoring: Annotated[
        str | None,
        judge_scoring_option(
            help="How rubric scores are read: 'checklist' (yes/no items of wikihowagent/data/checklists.json asked one at a time, P(yes) from log-probabilities; score = 1 + 4 x the weighted mean of the items' P(good); the embedded model's default, measured in BENCHMARKS.md), 'weighted' (probability-weighted mean over the score digits; default for other backends that return log-probabilities, and with --judge-rationale or --judge-prompt), 'json' (structured output, integers; default without log-probabilities), 'sampled' (5 samples at temperature 0.7)."
        ),
    ] = None,
    checklist: Annotated[
        Path | None,
        checklist_option(
            "Checklist items file of --judge-scoring checklist (default: wikihowagent/data/checklists.json); its version is recorded with every score."
        ),
    ] = None,
    checklist_weights: Annotated[
        Path | None,
        checklist_weights_option(
            "Item weights fitted by `align --fit-checklist` (default: uniform); refused for another judge or checklist version."
        ),
    ] = None,
    judge_rationale: Annotated[
        bool,
        judge_rationale_option(
            "The judge writes its analysis first, then 'Score: k' (weighted/sampled; read at the final score token)."
        ),
    ] = False,
    judge_prompt: Annotated[
        str | None,
        judge_prompt_option(
            "Judge prompt variant of wikihowagent/data/judge_prompts.json (weighted/sampled; default: see docs: Methodology > The rubric judge); recorded with every score."
        ),
    ] = None,
    retry_failed: Annotated[bool, retry_failed_option("Judge rubrics that failed in an earlier pass again.")] = True,
    posttest_learner: Annotated[
        str | None,
        posttest_learner_option(
            "Give conversations without a post-test one, taken by this learner model (and its pre-test per tutorial), stored beside the scores (posttests.jsonl, pretests.jsonl); also the paper's run files. Not with --compat paper."
        ),
    ] = None,
    posttest_prompt: Annotated[
        str | None,
        posttest_prompt_option(
            'Wording of the post-/pre-test that --posttest-learner takes: v2 (default) or v3 ("not taught" / "don\'t know" allowed per step).'
        ),
    ] = None,
    posttest_likelihood: Annotated[
        bool,
        posttest_likelihood_option(
            "With --posttest-learner: also the likelihood post-test of every conversation (the learner model's mean log-probability per token of each tutorial step given the lesson minus given the title: the 'Likelihood Gain' metric, nats), stored with its post-test in posttests.jsonl. Needs an OpenAI-compatible /v1/completions with echo + logprobs (vLLM) or a llama.cpp server (the embedded `local`: read through a grammar)."
        ),
    ] = False,
    bootstrap: Annotated[
        int, bootstrap_option("Bootstrap resamples (of tutorials) for the 95 % CI in every table cell; 0 = no CIs.")
    ] = 1000,
    seed: Annotated[int, seed_option("Seed of the bootstrap resampling (the tables' CIs).")] = 0,
    calibration: Annotated[
        Path | None,
        typer.Option(
            rich_help_panel=MODELS,
            metavar="FILE",
            help="A calibration.json of `align --calibrate`: adds '<rubric> (cal.)' columns (the judge's score mapped to the human scale) to the summary, the tables and calibrated_scores.csv; refused for scores of another judge, scoring mode or rubric file.",
        ),
    ] = None,
    people_estimate: Annotated[
        Path | None,
        typer.Option(
            "--people-estimate",
            rich_help_panel=METRICS,
            metavar="FILE",
            help="A people_estimate.json of `align` (fitted on a human study): adds 'Estimated Overall (people)', the people's Overall predicted from a few cheap metrics, to the summary and tables with its CI; refused for scores of another metric mode or without one of its metrics.",
        ),
    ] = None,
) -> None:
    """Score conversations: computational metrics and the LLM rubric judge; summary table, CSV, Markdown, figures."""
    from .core import EvaluateRequest, run_evaluation  # lazily, as summary (numpy): not for --help

    console = make_console()
    request = EvaluateRequest(
        runs=tuple(runs or ()),
        evaluator=evaluator[0] if evaluator and len(set(evaluator)) == 1 else None,
        panel=tuple(dict.fromkeys(evaluator)) if evaluator and len(set(evaluator)) > 1 else (),
        metrics=metrics,
        judge=not no_judge,
        compat=compat,
        baseline=baseline,
        by=by,
        out=out,
        rubrics=rubrics,
        config=config,
        base_url=base_url,
        concurrency=concurrency,
        retries=retries,
        batch_size=batch_size,
        device=device,
        workers=workers,
        figures=not no_figures,
        preset=preset,
        tables=tables,
        shard=shard,
        judge_scoring=judge_scoring,
        judge_rationale=judge_rationale,
        judge_prompt=judge_prompt,
        retry_failed=retry_failed,
        calibration=calibration,
        people_estimate=people_estimate,
        bootstrap=bootstrap,
        seed=seed,
        posttest_learner=posttest_learner,
        posttest_prompt=posttest_prompt,
        posttest_likelihood=posttest_likelihood,
        checklist=checklist,
        checklist_weights=checklist_weights,
    )
    with command_errors(console, "scores"):
        result = run_evaluation(request, console)
    _print_result(result, console, paper=request.mode == "paper")
