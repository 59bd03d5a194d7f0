"""`wikihowagent evaluate`: the typer command (registered by wikihowagent/cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer


def evaluate(
    runs: Annotated[Optional[list[Path]], typer.Argument(
        help="Run directories, the paper's run files ({total_conversations: [...]} JSON) or JSONL of records. "
             "Default: the latest run.", show_default=False, metavar="RUN_DIR")] = None,
    evaluator: Annotated[Optional[str], typer.Option(metavar="SPEC", help="Judge model spec (default: the run's evaluator, else its teacher: homogeneous).")] = None,
    metrics: Annotated[Optional[str], typer.Option(metavar="LIST", help="Comma-separated metric names (or 'computational', 'rubric'). Default: all.")] = None,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Computational metrics only (no LLM calls).")] = False,
    compat: Annotated[Optional[str], typer.Option(metavar="paper", help="'paper': the released code's metric definitions, to compare with the paper's tables.")] = None,
    baseline: Annotated[Optional[Path], typer.Option(help="Run to compare the others with (Table 2 view, ↑/↓).")] = None,
    by: Annotated[Optional[str], typer.Option(metavar="domain", help="'domain': per-domain breakdown (Figure 5).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Output directory: <OUT>/<run>/scores.jsonl and the summary files.")] = None,
    rubrics: Annotated[Optional[Path], typer.Option(help="Rubric JSON file (default: data/rubrics.json).")] = None,
    config: Annotated[Optional[Path], typer.Option(help="YAML config overriding configs/default.yaml.")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="Ollama host / OpenAI-compatible base URL for the evaluator.")] = None,
    concurrency: Annotated[Optional[int], typer.Option(min=1, help="Judge calls in flight (default: the config's concurrency).")] = None,
    retries: Annotated[int, typer.Option(min=0, help="Re-asks of the judge when a reply cannot be parsed.")] = 2,
    batch_size: Annotated[int, typer.Option(min=1, help="Texts per embedding forward pass.")] = 32,
    no_figures: Annotated[bool, typer.Option("--no-figures", help="Skip the PNG figures.")] = False,
    preset: Annotated[Optional[str], typer.Option(help="'paper': --compat paper and the paper's decoding for the judge (max tokens 4096, temperature 0).")] = None,
    tables: Annotated[bool, typer.Option("--tables", help="The paper's Table 1 (homogeneous runs) and Table 2 (heterogeneous, ↑/↓ against the teacher's homogeneous run); automatic for a sweep directory.")] = False,
    shard: Annotated[Optional[str], typer.Option(metavar="K/N", help="Score only shard K of N of the conversations into <scores dir>/score-shards/K-of-N/ (cluster array jobs); join with `wikihowagent merge`.")] = None,
) -> None:
    """Score conversations: computational metrics and the LLM rubric judge; summary table, CSV, Markdown, figures."""
    from rich.console import Console

    console = Console(stderr=True)
    try:
        code = _evaluate(console, runs or [], evaluator, metrics, no_judge, compat, baseline, by, out, rubrics,
                         config, base_url, concurrency, retries, batch_size, no_figures, shard, tables, preset)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: scores written so far are kept; rerun the same command to resume")
        raise typer.Exit(130) from None
    if code:
        raise typer.Exit(code)


def _fail(console: Any, msg: str) -> int:
    from wikihowagent.console import print_error

    print_error(msg, console)
    return 2


def _evaluate(console, runs, evaluator, metrics, no_judge, compat, baseline, by, out, rubrics_path, config,
              base_url, concurrency, retries, batch_size, no_figures, shard=None, tables=False, preset=None) -> int:
    from wikihowagent.config import ConfigError, load_config

    from .inputs import InputError, resolve_inputs
    from .judge import RubricError, load_rubrics
    from .metrics import MetricError
    from .runner import EvalOptions, Evaluation, EvaluateError, select_metrics

    from wikihowagent.presets import PresetError, get_preset, preset_config

    try:
        preset_layer, chosen = preset_config(preset), get_preset(preset)
    except PresetError as exc:
        return _fail(console, str(exc))
    compat = compat or (chosen.compat if chosen else None)
    if compat not in (None, "paper"):
        return _fail(console, f"--compat: only 'paper' is supported, not {compat!r}")
    if by not in (None, "domain"):
        return _fail(console, f"--by: only 'domain' is supported, not {by!r}")
    mode = "paper" if compat == "paper" else "default"
    shard_kn = None
    if shard:
        from wikihowagent.generate import parse_shard

        try:
            shard_kn = parse_shard(shard)
        except ValueError as exc:
            return _fail(console, str(exc))
    try:
        cfg = load_config(config, preset=preset_layer)
    except ConfigError as exc:
        return _fail(console, str(exc))
    runs_dir = Path(cfg.runs_dir)
    from .tables import expand_sweep_dirs

    paths, from_sweep = expand_sweep_dirs(list(runs), lambda m: console.print(f"warning: {m}", highlight=False, markup=False))
    if from_sweep:
        tables = True
        if out is None and len(runs) == 1:  # the tables of a sweep go into the sweep's directory
            out = Path(runs[0])
    if not paths:
        return _fail(console, f"{runs[0]}: no cell of this sweep has conversations yet (wikihowagent sweep run FILE)")
    if baseline is not None and all(Path(p).resolve() != Path(baseline).resolve() for p in paths):
        paths = [baseline] + paths
    try:
        sources = resolve_inputs(paths, runs_dir, on_empty=lambda m: console.print(f"[yellow]warning:[/] {m}; skipped", highlight=False))
    except InputError as exc:
        return _fail(console, str(exc))
    if baseline is not None and all(s.path.resolve() != Path(baseline).resolve() for s in sources):
        return _fail(console, f"--baseline {baseline}: the baseline run has nothing to evaluate")
    base_name = None
    if baseline is not None:
        base_name = next(s.name for s in sources if s.path.resolve() == Path(baseline).resolve())

    try:
        try:
            rubric_set = load_rubrics(rubrics_path)
        except RubricError:
            if not no_judge or rubrics_path is not None:
                raise
            rubric_set = None  # --no-judge needs no rubric file
        rubric_names = list(rubric_set or [])
        comp, rub = select_metrics(metrics, mode, rubric_names)
    except (RubricError, EvaluateError) as exc:
        return _fail(console, str(exc))
    judge_on = bool(rub) and not no_judge
    opts = EvalOptions(mode=mode, metrics=comp + rub, judge=judge_on, evaluator=evaluator, base_url=base_url,
                       rubrics_path=rubrics_path, out=out, concurrency=concurrency or cfg.concurrency,
                       retries=retries, batch_size=batch_size, shard=shard_kn)

    def warn(msg: str) -> None:
        console.print(f"[yellow]warning:[/] {msg}", highlight=False, soft_wrap=True)

    def make_llm(spec: str) -> Any:
        from wikihowagent.backends import BackendError, check_backend, make_chat_model, resolve_spec

        judge_settings = cfg.model.model_copy(update={"temperature": 0.0})
        try:
            check_backend(resolve_spec(spec), base_url)
            return make_chat_model(spec, judge_settings, cfg.local, base_url=base_url)
        except BackendError as exc:
            raise EvaluateError(f"evaluator {spec!r}: {exc} (choose another with --evaluator SPEC, or --no-judge)") from None

    try:
        ev = Evaluation(opts, comp, rub if judge_on else [], rubric_set, make_llm if judge_on else None, warn)
        # Every input's evaluator is known before any work starts.
        specs = {s.name: ev.evaluator_spec(s) for s in sources}
    except (EvaluateError, MetricError) as exc:
        return _fail(console, str(exc))

    try:
        results = _score_all(console, ev, sources, specs, opts, runs_dir, warn)
    finally:
        ev.close()
    if isinstance(results, int):
        return results
    if shard_kn is not None:  # a summary needs every shard: `wikihowagent merge DIR`, then evaluate again
        console.print(f"shard {shard_kn[0]}/{shard_kn[1]} scored; once all {shard_kn[1]} shards are: "
                      "wikihowagent merge " + " ".join(str(p.parent.parent.parent) for _, p in results),
                      highlight=False, markup=False)
        return 0
    code = _summarize(console, results, rubric_names, base_name, mode, out, runs_dir, by, no_figures)
    if tables and not code:
        code = _paper_tables(console, results, rubric_names, out, runs_dir)
    return code


def _paper_tables(console, results, rubric_names, out, runs_dir) -> int:
    from rich.console import Console

    from .summary import load_run_scores, print_summary, write_summary
    from .tables import paper_tables

    run_scores = [load_run_scores(src.name, src.label, p, rubric_names, n_failed=src.n_failed, n_invalid=src.n_invalid)
                  for src, p in results]
    setups = {src.name: (src.teacher, src.learner or src.teacher) for src, _ in results}
    out_dir = Path(out) if out is not None else (results[0][1].parent if len(results) == 1 else runs_dir / "summary")
    written = []
    for stem, title, summary in paper_tables(run_scores, setups, rubric_names):
        print_summary(summary, Console(), title=title)
        written += write_summary(summary, out_dir / stem)
    console.print("wrote " + ", ".join(str(p) for p in written), highlight=False, markup=False)
    return 0


def _score_all(console, ev, sources, specs, opts, runs_dir, warn):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from .inputs import InputError
    from .judge import JudgeBackendError
    from .metrics import MetricError
    from wikihowagent.runs import RunError, dir_lock

    from .runner import EvaluateError, count_input_records, scores_path

    results = []
    for src in sources:
        out_path = scores_path(src, opts, runs_dir)
        what = f"{src.name}" + (f" (judge: {specs[src.name]})" if specs[src.name] else "")
        try:
            total = count_input_records(src)
        except OSError as exc:
            return _fail(console, f"{src.path}: {exc.strerror}")
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TimeRemainingColumn(), console=console, transient=False) as prog:
            task = prog.add_task(f"scoring {what}", total=total)
            try:
                # One evaluation per scores file at a time (two appenders would score the same conversations).
                with dir_lock(out_path.parent, blocking=False, what="another 'wikihowagent evaluate'",
                              name=f".{out_path.name}.lock"):
                    stats = ev.run_source(src, out_path, progress=lambda n: prog.advance(task, n))
            except (EvaluateError, MetricError, JudgeBackendError, InputError, RunError) as exc:
                prog.stop()
                return _fail(console, f"{exc} (scores so far are in {out_path}; rerun to resume)")
        console.print(f"{src.name}: {stats.scored} scored, {stats.already} already scored, {stats.failed} failed "
                      f"conversations skipped, {stats.invalid} unreadable records -> {out_path}", highlight=False)
        rejudged = [(stats.rejudged_evaluator, "the evaluator changed"), (stats.rejudged_rubrics, "the rubric file changed")]
        for n, why in rejudged:
            if n:
                console.print(f"{src.name}: {n} conversation{'s' if n != 1 else ''} re-judged because {why} "
                              f"(now {specs[src.name]})", highlight=False)
        for note in stats.notes:
            console.print(f"  note: {note}", highlight=False)
        if src.n_records == 0 and src.n_invalid == 0:
            warn(f"{src.path}: no conversations")
        if opts.shard is not None:
            from .shards import scores_fingerprint, write_shard_info

            write_shard_info(out_path, opts.shard, scores_fingerprint(opts.mode, opts.metrics or [], specs[src.name],
                                                                     opts.rubrics_path, src.path))
        results.append((src, out_path))
    return results


def _summarize(console, results, rubric_names, base_name, mode, out, runs_dir, by, no_figures) -> int:
    from .summary import by_domain, load_run_scores, print_by_domain, print_summary, summarize, write_figures, write_summary

    run_scores = [load_run_scores(src.name, src.label, p, rubric_names, n_failed=src.n_failed, n_invalid=src.n_invalid)
                  for src, p in results]
    summary = summarize(run_scores, rubric_names, baseline=base_name)
    if out is not None:
        out_dir = Path(out)
    elif len(results) == 1:
        out_dir = results[0][1].parent
    else:
        out_dir = runs_dir / "summary"
    from rich.console import Console

    print_summary(summary, Console(), title="Evaluation summary" + (" (--compat paper)" if mode == "paper" else ""))
    written = write_summary(summary, out_dir)
    domain_df = None
    if by == "domain":
        domain_df = by_domain(run_scores, rubric_names)
        p = out_dir / "by_domain.csv"
        domain_df.to_csv(p, index=False)
        written.append(p)
        print_by_domain(domain_df, Console())
    if not no_figures:
        written += write_figures(summary, rubric_names, out_dir, domain_df)
    console.print("wrote " + ", ".join(str(p) for p in written), highlight=False)
    return 0
