"""Typer command functions of the alignment study, registered by `wikihowagent.cli`:

    app_annotate.command("export")(annotate_export)   # wikihowagent annotate export
    app.command("align")(align)                       # wikihowagent align

Only typer/pathlib are imported here; numpy, scipy, matplotlib, krippendorff and sklearn are imported when
a command runs, so `wikihowagent --help` stays fast.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from wikihowagent.cli_options import bootstrap_option, seed_option
from wikihowagent.console import INPUTS, OUTPUT, SELECTION, STATISTICS, make_console, print_error, print_labeled
from wikihowagent.layout import ALIGNMENT_DIR, ANNOTATION_SHEET

from .problems import AlignInputError, Problems

RUNS_DIR_HELP = (
    'Where runs live (default: the config\'s runs_dir, "runs"). Evaluated runs are its sub-directories '
    "with scores.jsonl or scores-paper.jsonl (scores.jsonl is preferred when a run has both) and the "
    "re-scored paper files in rescored/<file stem>/."
)
CONFIG_HELP = "YAML config overriding wikihowagent/configs/default.yaml (only its runs_dir is used here)."


def resolve_runs_dir(runs_dir: Path | None, config: Path | None) -> Path:
    """--runs-dir, else the project config's runs_dir (`wikihowagent.config.load_config`, the source of truth
    shared with generate/evaluate). A bad config file -> one error line, exit 1."""
    if runs_dir is not None and config is None:
        return runs_dir
    from wikihowagent.config import ConfigError, load_config  # yaml: ~15 ms kept off --help

    try:
        cfg = load_config(config)
    except ConfigError as exc:
        print_error(str(exc))
        raise typer.Exit(1) from None
    return runs_dir if runs_dir is not None else Path(cfg.runs_dir)


RunDirs = Annotated[
    list[Path] | None,
    typer.Argument(
        metavar="[RUN_DIR]...",
        help="Evaluated run directories (or the paper's run .json files, or a "
        "directory of runs). Default: every evaluated run under --runs-dir.",
        show_default=False,
    ),
]
Top = Annotated[
    int | None,
    typer.Option(
        "--top",
        rich_help_panel=SELECTION,
        metavar="N",
        help="The N tutorials with the highest mean LLM rubric score (the paper: 25). Default mode.",
    ),
]
Bottom = Annotated[
    int | None,
    typer.Option(
        "--bottom", rich_help_panel=SELECTION, metavar="N", help="The N tutorials with the lowest mean score."
    ),
]
RandomN = Annotated[
    int | None,
    typer.Option("--random", rich_help_panel=SELECTION, metavar="N", help="N tutorials drawn at random (see --seed)."),
]
Select = Annotated[
    tuple[str, int],
    typer.Option(
        "--select",
        rich_help_panel=SELECTION,
        metavar="uncertain|stratified N",
        help="N conversations per run instead of whole tutorials: 'stratified' = drawn at random "
        "(the random subset prediction-powered estimates need: align --ppi), 'uncertain' = "
        "those whose judge's p(1..5) has the highest entropy (labels where calibration learns "
        "most: align --calibrate; not valid for --ppi).",
        show_default=False,
    ),
]
SheetSeed = Annotated[
    int,
    typer.Option(
        rich_help_panel=STATISTICS, help="Seed for --random, --select stratified and the blind order and ids."
    ),
]
SheetOut = Annotated[
    Path,
    typer.Option(
        "--out",
        "-o",
        rich_help_panel=OUTPUT,
        metavar="CSV",
        help="The annotation sheet (CSV); its companion page is written "
        "beside it with the suffix .html, and (blind) the key file "
        "<stem>.key.csv.",
    ),
]
InAllRuns = Annotated[
    bool,
    typer.Option(
        "--in-all-runs",
        rich_help_panel=INPUTS,
        help="Only tutorials with a scored conversation in every given run.",
    ),
]
SheetRunsDir = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=INPUTS, help=RUNS_DIR_HELP + " Searched when no RUN_DIR is given.", show_default=False
    ),
]
Config = Annotated[Path | None, typer.Option(rich_help_panel=INPUTS, help=CONFIG_HELP, show_default=False)]
Rubrics = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=INPUTS,
        help="Rubric file, validated as by `evaluate --rubrics` (default: the bundled wikihowagent/data/rubrics.json).",
        show_default=False,
    ),
]
Force = Annotated[bool, typer.Option("--force", rich_help_panel=OUTPUT, help="Overwrite an existing sheet.")]
Unblind = Annotated[
    bool,
    typer.Option(
        "--unblind",
        rich_help_panel=OUTPUT,
        help="The old layout: real conversation ids, the run name in "
        "the filename column and the companion, selection order; no key file.",
    ),
]


def annotate_export(
    run_dirs: RunDirs = None,
    top: Top = None,
    bottom: Bottom = None,
    random_n: RandomN = None,
    select_: Select = ("", 0),
    seed: SheetSeed = 0,
    out: SheetOut = Path(ANNOTATION_SHEET),
    in_all_runs: InAllRuns = False,
    runs_dir: SheetRunsDir = None,
    config: Config = None,
    rubrics: Rubrics = None,
    force: Force = False,
    unblind: Unblind = False,
) -> None:
    """Select tutorials for human annotation; write an annotation sheet (CSV) and an HTML guide.

    Tutorials are ranked by the mean LLM rubric score of their conversations across the runs (the paper: top 25); or, with --select stratified|uncertain N, N conversations per run (random: for align --ppi; the judge least sure: for align --calibrate). The sheet has one row per conversation in the paper's layout (conversation_id, filename, title, the 8 metric columns, comment, tutorial_id); the HTML page beside it shows the rubric, each tutorial and its conversations.

    Blind by default: blind ids, no run, model or file name in the sheet or the page, rows in a random order (--seed); the key file SHEET.key.csv beside them maps the ids back (keep it from the judges; align finds it beside the filled sheets, or pass --key).

    Give each judge a copy; read the filled copies back with: wikihowagent align -H judge1.csv -H judge2.csv
    """
    from wikihowagent.outdir import OutputDirError

    from .blind import key_path  # the stage's machinery (judge.rubric_judge, numpy): off --help
    from .export import CONVERSATION_MODES, default_run_paths, export_sheet

    modes = [(m, n) for m, n in (("top", top), ("bottom", bottom), ("random", random_n)) if n is not None]
    if select_[0]:
        if select_[0] not in CONVERSATION_MODES:
            raise typer.BadParameter(f"must be one of: {', '.join(CONVERSATION_MODES)} (then N)", param_hint="--select")
        modes.append(select_)
    if len(modes) > 1:
        raise typer.BadParameter("use only one of --top, --bottom, --random, --select")
    mode, n = modes[0] if modes else ("top", 25)
    problems = Problems()
    console = make_console()
    try:
        paths = list(run_dirs) if run_dirs else default_run_paths(resolve_runs_dir(runs_dir, config))
        sel, sheet, companion = export_sheet(
            paths,
            out,
            problems,
            mode=mode,
            n=n,
            seed=seed,
            in_all_runs=in_all_runs,
            rubrics_path=rubrics,
            force=force,
            blind=not unblind,
        )
    except (AlignInputError, OutputDirError) as exc:
        problems.echo(limit=40)
        print_error(str(exc), console)
        raise typer.Exit(2 if isinstance(exc, OutputDirError) else 1) from None
    problems.echo(limit=40)
    how = (
        f"{mode} {n}"
        + (" per run" if mode in CONVERSATION_MODES else "")
        + (f", seed {seed}" if mode in ("random", "stratified") else "")
    )
    what = (
        f"{len(sel.conversations)} of {sel.qualifying} scored conversations ({how}) from "
        f"{len(sel.runs)} run(s), {len(sel.tutorials)} tutorials"
        if mode in CONVERSATION_MODES
        else f"{len(sel.tutorials)} of {sel.qualifying} tutorials ({how}) from {len(sel.runs)} run(s): "
        f"{len(sel.conversations)} conversations"
    )
    make_console(stderr=False).print(
        f"Selected {what}.\n  sheet:     {sheet}\n  companion: {companion}"
        + ("" if unblind else f"\n  key:       {key_path(sheet)} (blind ids -> conversations; not for the judges)"),
        highlight=False,
        soft_wrap=True,
    )


Human = Annotated[
    list[Path],
    typer.Option(
        "--human",
        "-H",
        rich_help_panel=INPUTS,
        metavar="FILE",
        help="A human annotation file: one per judge (conversation_id + metric columns, "
        "any case), or one file with an annotator column. Repeatable.",
    ),
]
Scores = Annotated[
    list[Path] | None,
    typer.Option(
        "--scores",
        "-s",
        rich_help_panel=INPUTS,
        metavar="PATH",
        help="LLM judge scores: a run directory, a directory of runs, a scores(-paper).jsonl, a "
        "wide CSV (the annotation layout) or a paper run .json. Repeatable. "
        "Default: the runs under --runs-dir named in the sheets' filename column.",
        show_default=False,
    ),
]
Out = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        rich_help_panel=OUTPUT,
        metavar="DIR",
        help="Output directory (default: RUNS_DIR/alignment). "
        "It is replaced as a whole; a directory holding files align did not "
        "write is refused.",
        show_default=False,
    ),
]
By = Annotated[
    str | None,
    typer.Option(
        "--by",
        rich_help_panel=STATISTICS,
        metavar="run|model|domain|persona",
        help="Also per group: run, model, domain or learner persona.",
        show_default=False,
    ),
]
Bootstrap = Annotated[int, bootstrap_option("Bootstrap resamples for the 95 % CIs (0 = none).")]
Seed = Annotated[int, seed_option("Bootstrap seed.")]
RunsDir = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=INPUTS, help=RUNS_DIR_HELP + " Gives the default --scores and --out.", show_default=False
    ),
]
Figures = Annotated[bool, typer.Option("--figures/--no-figures", rich_help_panel=OUTPUT, help="Write the PNG figures.")]
Key = Annotated[
    list[Path] | None,
    typer.Option(
        "--key",
        rich_help_panel=INPUTS,
        metavar="FILE",
        help="Key file of a blind sheet "
        "(SHEET.key.csv from `annotate export`). Default: the key file "
        "beside each human file that knows its ids.",
        show_default=False,
    ),
]
Calibrate = Annotated[
    bool,
    typer.Option(
        "--calibrate",
        rich_help_panel=STATISTICS,
        help="Calibrate the judge on the human ratings per rubric "
        "(isotonic on its score; ridge on its p(1..5) when stored), out of fold "
        "by tutorial: raw vs calibrated r, ρ, MAE with CIs (calibration.md/.csv) "
        "and calibration.json for `evaluate --calibration`.",
    ),
]
CalibrationMethod = Annotated[
    str,
    typer.Option(
        "--calibration-method",
        rich_help_panel=STATISTICS,
        metavar="isotonic|ridge",
        help="The mapping written to calibration.json (ridge needs the weighted judge's distributions).",
    ),
]
Ppi = Annotated[
    bool,
    typer.Option(
        "--ppi",
        rich_help_panel=STATISTICS,
        help="Prediction-powered mean of the human rating per model (or --by "
        "group) and rubric, from the rated conversations and the judge's scores of "
        "all the others, beside the human-only and judge-only means (ppi.md/.csv, "
        "figures/ppi_*.png). Needs a random rated subset.",
    ),
]
FitChecklist = Annotated[
    bool,
    typer.Option(
        "--fit-checklist",
        rich_help_panel=STATISTICS,
        help="Fit non-negative checklist item weights per "
        "rubric on the human ratings (scores of `evaluate --judge-scoring "
        "checklist`), shrunk toward uniform, out of fold by tutorial: uniform "
        "vs fitted r with CIs (checklist_fit.md/.csv) and checklist_weights.json "
        "for `evaluate --checklist-weights`.",
    ),
]
ChecklistShrinkage = Annotated[
    float,
    typer.Option(
        "--checklist-shrinkage",
        min=0.0,
        rich_help_panel=STATISTICS,
        help="With --fit-checklist: "
        "how strongly the weights are pulled toward uniform (0 = none; "
        "1 = strong, the default).",
    ),
]


def align(
    human: Human,
    scores: Scores = None,
    out: Out = None,
    by: By = None,
    bootstrap: Bootstrap = 2000,
    seed: Seed = 0,
    runs_dir: RunsDir = None,
    config: Config = None,
    figures: Figures = True,
    key: Key = None,
    calibrate: Calibrate = False,
    calibration_method: CalibrationMethod = "isotonic",
    ppi: Ppi = False,
    fit_checklist: FitChecklist = False,
    checklist_shrinkage: ChecklistShrinkage = 1.0,
) -> None:
    """Measure how well the LLM judge agrees with human judges (paper §3.2, §5.3).

    Per metric and for the per-conversation mean of the metrics: Pearson r, Spearman ρ, Kendall τ with p-values, stars (* p<0.05, ** p<0.01) and bootstrap 95 % CIs; human vs LLM means and stds; with two or more judges, their agreement (Krippendorff's α, quadratic Cohen's κ, Pearson).

    Only the 8 paper rubrics are aligned (Clarity, Truthfulness, Engagement, Coherence, Depth, Relevance, Progress, Naturalness); another rubric in the scores (from `evaluate --rubrics`) is compared with people as a metric (below) where it has numbers, else ignored, with one warning line listing those.

    Every numeric metric in the scores (computational, Step Coverage, Echo Rate, post-test, registered) against each human rubric and the people's Overall: Pearson/Spearman/Kendall, the within-tutorial r, the partial r controlling for conversation length and the share of clearly ordered same-tutorial pairs, with CIs resampling tutorials, sorted by the within-tutorial r with conversation length as the baseline (metric_alignment.md/.csv, figures/metric_alignment*.png); `evaluate --no-judge` scores are enough, and a judge's scores of the same conversations in another --scores file are joined with them. From the cheap metrics, a people-calibrated estimate fitted out of fold by tutorial (people_estimate.md, people_estimate.json for `evaluate --people-estimate`).

    Also every judge (a panel's members, found in judges/<judge>/ beside the scores) with Krippendorff's α counting the judge as one more rater (judges.md); with --calibrate the judge mapped to the human scale, out of fold by tutorial (calibration.md, calibration.json for `evaluate --calibration`); with --ppi the prediction-powered human mean per model (ppi.md).

    Writes CSV, Markdown and PNG figures to --out, all or nothing: --out is replaced as a whole (a directory holding files align did not write is refused). What was left out (bad cells, unmatched ids, too few pairs) is listed on stderr and in problems.txt.
    """
    from wikihowagent.outdir import OutputDirError

    from .core import AlignRequest, AlignUsageError, check_options, check_out_dir, run_alignment

    err = make_console()
    try:  # usage errors (exit 2), before any work
        check_options(by, calibration_method)
        runs_dir = resolve_runs_dir(runs_dir, config)
        out_dir = out or runs_dir / ALIGNMENT_DIR
        check_out_dir(out_dir, inputs=[*human, *(key or ())], holders=scores or ())
    except AlignUsageError as exc:
        if exc.option:
            raise typer.BadParameter(str(exc), param_hint=exc.option) from None
        print_error(str(exc), err)
        raise typer.Exit(2) from None
    t0 = time.perf_counter()
    request = AlignRequest(
        human=tuple(human),
        out_dir=out_dir,
        runs_dir=runs_dir,
        scores=tuple(scores or ()),
        by=by,
        bootstrap=bootstrap,
        seed=seed,
        figures=figures,
        keys=tuple(key or ()),
        calibrate=calibration_method if calibrate else None,
        ppi=ppi,
        fit_checklist=checklist_shrinkage if fit_checklist else None,
    )
    problems = Problems()
    try:
        outcome = run_alignment(request, problems)
    except OutputDirError as exc:  # the directory changed while computing
        problems.echo(limit=200, grouped=False)  # no problems.txt
        print_error(f"{exc}; no output written", err)
        raise typer.Exit(2) from None
    _print_outcome(outcome, problems, err, out_dir, t0)


def _print_outcome(outcome: Any, problems: Any, err: Any, out_dir: Path, t0: float) -> None:
    """What align found and wrote (the tables on stdout, problems on stderr); exit 1 when nothing could be
    computed or a named file contributed nothing. `t0`: when the work began (perf_counter)."""
    from .writing import render

    res, unused = outcome.result, outcome.unused  # named files that gave nothing: exit 1
    unused_line = (
        (unused[0] if len(unused) == 1 else f"{len(unused)} named files contribute nothing: " + "; ".join(unused))
        if unused
        else ""
    )
    if not outcome.written:
        problems.echo(limit=200, grouped=False)  # no problems.txt: every line on screen
        print_error(
            (unused_line + "; " if unused else "") + "nothing could be computed (see the warnings above); "
            "no output written",
            err,
        )
        raise typer.Exit(1)
    problems.echo(limit=40)
    if not res.any_correlation and not res.metrics_computed:
        print_labeled(
            err,
            "warning:",
            "yellow",
            "no human–LLM correlation could be computed (only inter-annotator agreement); check --scores",
        )
    console = make_console(stderr=False)
    render(res, console)
    console.print(
        f"Wrote {len(outcome.written)} files to {out_dir} in {time.perf_counter() - t0:.1f} s", highlight=False
    )
    if unused:
        print_error(f"{unused_line} (the results written leave it out)", err)
        raise typer.Exit(1)
