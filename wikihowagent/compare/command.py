"""`wikihowagent compare`: the typer command (registered by wikihowagent/cli.py). It parses, calls
`core.run_compare` and prints."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from wikihowagent.cli_options import (
    Config,
    InputRubrics,
    JudgeBaseUrl,
    NoHeatmap,
    bootstrap_option,
    checklist_option,
    checklist_weights_option,
    command_errors,
    concurrency_option,
    evaluator_option,
    judge_scoring_option,
    pairwise_reading_option,
    retries_option,
    retry_failed_option,
    seed_option,
    tie_band_option,
)
from wikihowagent.console import CLUSTER, INPUTS, MODELS, OUTPUT, make_console, print_error, progress_bar
from wikihowagent.judge.request import ScoringRequest
from wikihowagent.markdown import number_cell

Runs = Annotated[
    list[Path],
    typer.Argument(
        help="Two or more run directories (or JSONL of records) that taught the same tutorials.",
        show_default=False,
        metavar="RUN",
    ),
]
Out = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=OUTPUT,
        help="Output directory (default: <runs_dir>/compare): pair-judgments.jsonl, pairwise.csv, win_rates.csv, position.csv, bradley_terry.csv, summary.md, head_to_head.png.",
    ),
]
Evaluator = Annotated[
    str | None, evaluator_option("Judge model spec (default: the runs' evaluator, which must be the same for all).")
]
Metrics = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=INPUTS,
        metavar="LIST",
        help="Comma-separated rubric names to compare on (default: every rubric).",
    ),
]
MaxTutorials = Annotated[
    int | None, typer.Option(rich_help_panel=INPUTS, min=1, help="Only the first N tutorials (sorted by id).")
]
PairwiseReading = Annotated[
    str | None,
    pairwise_reading_option(
        "How a verdict is read: P(A) from the A/B token log-probabilities (default where the backend returns them) or the letter only."
    ),
]
Bootstrap = Annotated[int, bootstrap_option("Bootstrap resamples (of tutorials) for the CIs.")]
Seed = Annotated[int, seed_option("Seed of the bootstrap.")]
Shard = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=CLUSTER,
        metavar="K/N",
        help="Judge only every N-th tutorial from K (0-based) into pair-judgments-K-of-N.jsonl; a run without --shard then analyses every shard's judgments.",
    ),
]
Concurrency = Annotated[int | None, concurrency_option("Judge passes in flight (default: the config's concurrency).")]
Retries = Annotated[int, retries_option("Re-asks of the judge when a reply is not one letter.")]
RetryFailed = Annotated[bool, retry_failed_option("Ask again the verdicts that failed in an earlier pass.")]
VerdictRule = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=MODELS,
        metavar="agree|average|scores",
        help="How the two orders make one verdict (scores: the checklist judge's, automatic with --judge-scoring checklist): agree (default: a preference only when both orders prefer the same conversation) or average (P(A better) averaged over the orders, (p_ab + 1 - p_ba) / 2, outside 0.5 ± --tie-band; cancels a constant position bias). Written into pairwise.csv and summary.md.",
    ),
]
TieBand = Annotated[float, tie_band_option("With --verdict-rule average: |P(A better) - 0.5| up to this is a tie.")]
JudgeScoring = Annotated[
    str | None,
    judge_scoring_option(
        "'checklist': no pairwise prompt; each conversation is judged alone by the checklist judge (yes/no items, see `evaluate --judge-scoring checklist`) and each rubric's verdict comes from the two conversations' own scores (verdict rule `scores`; position consistency 1 by construction). 'pairwise': the pairwise judge, both orders. Default: the judge's measured default (the embedded model: checklist; other models: pairwise), unless an option of one of them is given (--checklist, --checklist-weights, --score-tie-band: checklist; --pairwise-reading, --tie-band, --verdict-rule agree|average: pairwise).",
        metavar="checklist|pairwise",
    ),
]
Checklist = Annotated[
    Path | None,
    checklist_option(
        "The checklist judge's items file (default: wikihowagent/data/checklists.json); selects checklist verdicts."
    ),
]
ChecklistWeights = Annotated[
    Path | None,
    checklist_weights_option(
        "The checklist judge's item weights, from `align --fit-checklist` (default: uniform); selects checklist verdicts."
    ),
]
ScoreTieBand = Annotated[
    float,
    typer.Option(
        rich_help_panel=MODELS,
        min=0.0,
        max=4.0,
        help="Checklist verdicts: a difference of the two conversations' rubric scores up to this many points is a tie; selects checklist verdicts.",
    ),
]
FromJudgments = Annotated[
    bool,
    typer.Option(
        "--from-judgments",
        rich_help_panel=INPUTS,
        help="Judge nothing: analyse the pair judgments already in --out (e.g. under another --verdict-rule); no model is loaded.",
    ),
]


def compare(
    runs: Runs,
    out: Out = None,
    evaluator: Evaluator = None,
    metrics: Metrics = None,
    rubrics: InputRubrics = None,
    max_tutorials: MaxTutorials = None,
    pairwise_reading: PairwiseReading = None,
    bootstrap: Bootstrap = 1000,
    seed: Seed = 0,
    shard: Shard = None,
    config: Config = None,
    base_url: JudgeBaseUrl = None,
    concurrency: Concurrency = None,
    retries: Retries = 2,
    retry_failed: RetryFailed = True,
    no_figures: NoHeatmap = False,
    verdict_rule: VerdictRule = None,
    tie_band: TieBand = 0.0,
    judge_scoring: JudgeScoring = None,
    checklist: Checklist = None,
    checklist_weights: ChecklistWeights = None,
    score_tie_band: ScoreTieBand = 0.0,
    from_judgments: FromJudgments = False,
) -> None:
    """Judge runs head to head: for every tutorial two runs share, which conversation teaches better, per
    rubric, asked in both orders; win rates, position consistency and (3+ runs) a Bradley–Terry ranking."""
    from .core import CompareRequest, run_compare

    console = make_console()
    scoring = ScoringRequest(evaluator=evaluator, base_url=base_url, concurrency=concurrency, retries=retries)
    req = CompareRequest(
        runs=tuple(runs),
        out=out,
        scoring=scoring,
        rubrics=rubrics,
        metrics=metrics,
        config=config,
        shard=shard,
        bootstrap=bootstrap,
        seed=seed,
        reading=pairwise_reading,
        max_tutorials=max_tutorials,
        figures=not no_figures,
        retry_failed=retry_failed,
        verdict_rule=verdict_rule,
        tie_band=tie_band,
        from_judgments=from_judgments,
        judge_scoring=judge_scoring,
        checklist=checklist,
        checklist_weights=checklist_weights,
        score_tie_band=score_tie_band,
    )
    with command_errors(console, "judgments"):
        res, stats, desc = run_compare(
            req, console, lambda total: progress_bar(console, total, "judging pairs (both orders)")
        )
    _print_outcome(res, stats, desc, console, from_judgments)


def _print_outcome(res: Any, stats: Any, desc: str, console: Any, from_judgments: bool) -> None:
    """The passes made (or that only stored judgments were analysed), then the tables; exit 1 when no verdict
    was readable."""
    if from_judgments:
        console.print("analysed the stored pair judgments (no judge asked)", highlight=False, markup=False)
    else:
        what = (
            "had no checklist score for one of the two conversations"
            if stats.from_scores
            else "were not one readable letter"
        )
        console.print(
            f"{stats.judged} judge passes made, {stats.already} already done; {stats.failures} of "
            f"{stats.asked} verdicts asked {what}",
            highlight=False,
            markup=False,
        )
    if res is None:
        console.print(
            "shard judged; run compare without --shard (same runs and --out) to analyse every shard",
            highlight=False,
            markup=False,
        )
        return
    stdout = make_console(stderr=False)
    print_result(res, desc, stdout)
    console.print("wrote " + ", ".join(str(p) for p in res.written), highlight=False, markup=False)
    if stats.asked and stats.failures == stats.asked:
        print_error("the judge gave no readable verdict: nothing could be compared", console)
        raise typer.Exit(1)


def print_result(res: Any, desc: str, console: Any) -> None:
    from rich.table import Table

    from .analysis import OVERALL

    if res.bradley_terry is not None and len(res.bradley_terry):
        t = Table(
            title=f"Bradley–Terry, overall (log-strength θ, 95 % CI over tutorials; verdict rule {res.rule}): {desc}"
        )
        for c in ("rank", "run", "θ", "CI"):
            t.add_column(c, justify="left" if c == "run" else "right")
        for _, r in res.bradley_terry[res.bradley_terry["rubric"] == OVERALL].sort_values("rank").iterrows():
            t.add_row(
                str(r["rank"]),
                r["run"],
                number_cell(r["theta"]),
                f"{number_cell(r['ci_low'])} – {number_cell(r['ci_high'])}",
            )
        console.print(t)
    t = Table(title=f"Win rates, overall (verdict rule {res.rule}; ties half; 95 % CI over tutorials)")
    for c in ("run A", "run B", "n", "A / tie / B", "win rate A", "CI"):
        t.add_column(c, justify="left" if c.startswith("run") else "right")
    for _, r in res.win_rates[res.win_rates["rubric"] == OVERALL].iterrows():
        t.add_row(
            r["run_a"],
            r["run_b"],
            str(r["n"]),
            f"{r['wins_a']} / {r['ties']} / {r['wins_b']}",
            number_cell(r["win_rate_a"]),
            f"{number_cell(r['ci_low'])} – {number_cell(r['ci_high'])}",
        )
    console.print(t)
    t = Table(title="Position consistency per rubric (both orders prefer the same conversation)")
    for c in ("rubric", "n", "consistent", "mean order effect", "first shown preferred"):
        t.add_column(c, justify="left" if c == "rubric" else "right")
    for _, r in res.position.iterrows():
        t.add_row(
            r["rubric"],
            str(r["n"]),
            number_cell(r["position_consistency"]),
            number_cell(r["mean_order_effect"]),
            number_cell(r["first_preferred"]),
        )
    console.print(t)
    if res.missing:
        console.print(
            f"{res.missing} (pair, tutorial, rubric) verdicts left out: an order missing or unreadable "
            "(rerun to ask again)",
            highlight=False,
            markup=False,
        )
    if res.bad_values:
        console.print(
            f"{res.bad_values} stored P(A better) values were not probabilities in [0, 1]: left out "
            "(rerun with the judge to ask them again)",
            highlight=False,
            markup=False,
        )
