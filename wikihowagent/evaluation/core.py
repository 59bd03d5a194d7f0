"""`evaluate` as one call: `run_evaluation(EvaluateRequest, console) -> EvaluationSummary`.

Resolves the inputs, the rubric file and the metrics, checks every input's evaluator before any work, scores
each input (runner.Evaluation; one process per scores file: a lock), then builds the summary tables and
figures. Raises a WikihowagentError (one line: EvaluateError, or the config, input, rubric or metric error as it
is) for anything that stops the stage.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from wikihowagent.csvcells import people_csv
from wikihowagent.runs import BY_DOMAIN_CSV, BY_PERSONA_CSV
from wikihowagent.shards import parse_shard

from .runner import EvaluateError


@dataclass(frozen=True)
class EvaluateRequest:
    """What `wikihowagent evaluate` was asked to do."""

    runs: tuple[Path, ...] = ()  # run directories / files; () = the latest run
    evaluator: str | None = None
    panel: tuple[str, ...] = ()  # --evaluator given several times: each judges into judges/<judge>/, the mean is kept
    metrics: str | None = None  # "BLEU,METEOR,Clarity", "computational", "rubric"; None = all
    judge: bool = True  # False = --no-judge
    compat: str | None = None  # "paper"
    baseline: Path | None = None
    by: str | None = None  # "domain" | "persona"
    out: Path | None = None
    rubrics: Path | None = None
    config: Path | None = None
    base_url: str | None = None
    concurrency: int | None = None  # None = runner.judge_concurrency (embedded judge: its slots; else the config's)
    retries: int = 2
    batch_size: int = 32
    figures: bool = True
    shard: str | None = None  # "K/N": score shard K of N only (shards.py)
    tables: bool = False  # the paper's Table 1 / Table 2 (automatic for a sweep directory)
    preset: str | None = None  # presets.py: a config layer, and --compat
    judge_scoring: str | None = None  # scoring.py: "weighted" | "json" | "sampled" | "checklist"; None = by backend
    judge_rationale: bool = False
    judge_prompt: str | None = None  # judge_prompts.py: a variant of data/judge_prompts.json; None = the default
    checklist: Path | None = None  # --checklist: items file of --judge-scoring checklist; None = data/checklists.json
    checklist_weights: Path | None = None  # --checklist-weights: `align --fit-checklist`'s weights file
    retry_failed: bool = True  # rubrics that failed in an earlier pass are judged again
    posttest_learner: str | None = None  # take the post-test of conversations without one with this model
    posttest_prompt: str | None = None  # --posttest-prompt: workflow/posttest.py PROMPTS; None = the default
    calibration: Path | None = None  # `align --calibrate`'s calibration.json: adds "<rubric> (cal.)" columns
    bootstrap: int = 1000  # resamples (of tutorials) for the tables' CIs; 0 = no CIs
    seed: int = 0  # the bootstrap's seed

    @property
    def table_stats(self) -> Any:
        """CIs in every cell; arrows from a paired test by tutorial, except in paper mode (the paper's raw arrows)."""
        from .significance import TableStats

        return TableStats(n_boot=self.bootstrap, seed=self.seed, paired=self.mode != "paper")

    @property
    def mode(self) -> Literal["default", "paper"]:
        from wikihowagent.presets import get_preset

        preset = get_preset(self.preset)
        compat = self.compat or (preset.compat if preset else None)
        return "paper" if compat == "paper" else "default"


@dataclass
class EvaluationSummary:
    summary: Any  # summary.Summary
    domain_table: Any = None  # pandas DataFrame with --by domain
    persona_table: Any = None  # pandas DataFrame with --by persona
    written: list[Path] = field(default_factory=list)
    tables: list[tuple[str, str, Any]] = field(default_factory=list)  # (file stem, title, Summary): Tables 1/2
    shard: tuple[int, int] | None = None  # --shard K/N: scores of one shard, no summary (summary is None)
    merge_dirs: list[Path] = field(default_factory=list)  # where `wikihowagent merge` joins the shards
    judge_all_failed: list[str] = field(default_factory=list)  # inputs whose judge failed on every rubric asked


def run_evaluation(req: EvaluateRequest, console: Any) -> EvaluationSummary:
    """Score every input and summarise. `console` (rich, stderr) shows warnings, progress and per-input lines.
    The steps: the request checked, the inputs, rubrics and metrics resolved, every input scored (with a panel,
    by each judge; with --shard, one shard), then the summary tables and figures."""
    from wikihowagent.config import load_config
    from wikihowagent.console import print_labeled
    from wikihowagent.presets import get_preset, preset_config

    from .judge import RubricError, load_rubrics
    from .panel import combine as combine_panel
    from .panel import panel_spec
    from .runner import EvalOptions, Evaluation, select_metrics
    from .session import judge_endpoints

    preset = get_preset(req.preset)
    _check_request(req)
    mode = req.mode
    cfg = load_config(req.config, preset=preset_config(req.preset) if preset else None)
    runs_dir = Path(cfg.runs_dir)
    shard = _shard(req)
    req, sources, base_name, tables = _sources(req, runs_dir, console)

    try:
        rubric_set = load_rubrics(req.rubrics)
    except RubricError:
        if req.judge or req.rubrics is not None:
            raise
        rubric_set = None  # --no-judge needs no rubric file
    rubric_names = list(rubric_set or [])
    comp, rub = select_metrics(req.metrics, mode, rubric_names)
    judge_on = bool(rub) and req.judge
    calibration = _load_calibration(req)
    opts = EvalOptions(
        mode=mode,
        metrics=comp + rub,
        judge=judge_on,
        evaluator=req.evaluator,
        base_url=req.base_url,
        rubrics_path=req.rubrics,
        out=req.out,
        concurrency=req.concurrency,
        default_concurrency=cfg.concurrency,
        retries=req.retries,
        batch_size=req.batch_size,
        shard=shard,
        scoring=req.judge_scoring,
        rationale=req.judge_rationale,
        retry_failed=req.retry_failed,
        prompt=req.judge_prompt,
        posttest_learner=req.posttest_learner,
        posttest_prompt=req.posttest_prompt,
        checklist_path=req.checklist,
        checklist_weights=req.checklist_weights,
    )

    def warn(msg: str) -> None:
        print_labeled(console, "warning:", "yellow", msg)

    endpoints = judge_endpoints(cfg, req.base_url)
    make_llm = endpoints.make_llm

    panel = list(dict.fromkeys(req.panel))
    _check_panel(panel, shard, judge_on)
    with contextlib.ExitStack() as locks:
        # One evaluation per scores file at a time, decided before any model is loaded.
        _lock_scores_files(locks, sources, opts, runs_dir)
        judge_opts = [replace(opts, evaluator=spec, panel_judge=True) for spec in panel]
        for o in judge_opts:
            _lock_scores_files(locks, sources, o, runs_dir)
        ev = Evaluation(
            opts,
            comp,
            rub if judge_on and not panel else [],
            rubric_set,
            make_llm if judge_on and not panel else None,
            warn,
            make_learner=endpoints.learner_factory(cfg) if req.posttest_learner else None,
        )
        # Every input's evaluator (and the server it is asked on) is known before any work starts.
        specs = endpoints.resolve(ev, sources)
        judges = [Evaluation(o, [], rub, rubric_set, make_llm, warn) for o in judge_opts]
        judge_specs = [endpoints.resolve(j, sources) for j in judges]
        _check_calibration_judge(
            calibration, req, {n: panel_spec(panel) for n in specs} if panel else specs, ev.rubrics_hash
        )
        ev.prepare(list(specs.values()))  # a --judge-scoring mode the backend cannot serve fails here
        for j, sp in zip(judges, judge_specs, strict=True):
            j.prepare(list(sp.values()))
        all_failed: list[str] = []
        empty: list[str] = []  # inputs with no scorable conversation
        states = _shard_states(sources) if shard is not None else {}
        try:
            results = _score_all(console, ev, sources, specs, opts, runs_dir, warn, all_failed, empty)
        finally:
            ev.close()
        for j, sp, o in zip(judges, judge_specs, judge_opts, strict=True):  # each judge of a panel into its own file
            try:
                _score_all(console, j, sources, sp, o, runs_dir, warn, all_failed, [])
            finally:
                j.close()
        if panel:
            for src, p in results:
                n = combine_panel(p, panel, rub, ev.rubrics_hash)
                console.print(
                    f"{src.name}: panel of {len(panel)} judges ({', '.join(panel)}): mean rubric scores "
                    f"of {n} conversations -> {p}",
                    highlight=False,
                    markup=False,
                )
    if shard is not None:  # a summary needs every shard: `wikihowagent merge DIR`, then evaluate again
        return _shard_summary(results, shard, opts, specs, states)
    if len(empty) == len(sources):  # nothing scored and nothing scored before: no summary to write
        raise EvaluateError("nothing to evaluate: " + "; ".join(empty))
    result = _summarize(results, rubric_names, base_name, req, runs_dir, calibration)
    result.judge_all_failed = all_failed
    if tables:
        _paper_tables(result, results, rubric_names, req, runs_dir, calibration)
    return result


def _check_request(req: EvaluateRequest) -> None:
    """Options that cannot work (together), refused in one line before any work."""
    from wikihowagent.workflow.posttest import prompt_option

    from .scoring import SCORING_MODES

    if req.compat not in (None, "paper"):
        raise EvaluateError(f"--compat: only 'paper' is supported, not {req.compat!r}")
    if req.judge_scoring is not None and req.judge_scoring not in SCORING_MODES:
        raise EvaluateError(f"--judge-scoring: unknown mode {req.judge_scoring!r}; valid: {', '.join(SCORING_MODES)}")
    if req.judge_rationale and req.judge_scoring in ("json", "checklist"):
        raise EvaluateError(
            f"--judge-rationale applies to --judge-scoring weighted or sampled, not {req.judge_scoring}"
        )
    if (req.checklist or req.checklist_weights) and req.judge_scoring != "checklist":
        raise EvaluateError("--checklist and --checklist-weights apply to --judge-scoring checklist")
    if req.by not in (None, "domain", "persona"):
        raise EvaluateError(f"--by: only 'domain' or 'persona' is supported, not {req.by!r}")
    if req.posttest_learner and req.mode == "paper":
        raise EvaluateError("--posttest-learner: the post-test is not part of the paper's metrics (--compat paper)")
    prompt_option(req.posttest_prompt, req.posttest_learner)  # a bad --posttest-prompt: one line, before any work


def _shard(req: EvaluateRequest) -> tuple[int, int] | None:
    """--shard K/N parsed (EvaluateError, one line); None without it."""
    if req.shard is None:
        return None
    try:  # --shard "" is an error, not unsharded
        return parse_shard(req.shard)
    except ValueError as exc:
        raise EvaluateError(str(exc)) from None


def _sources(req: EvaluateRequest, runs_dir: Path, console: Any) -> tuple[EvaluateRequest, list[Any], str | None, bool]:
    """The inputs to score (a sweep directory expanded into its cells; --baseline added first when not among
    them) -> (the request, with --out the sweep directory for one sweep; the sources; the baseline's name or None;
    whether the paper's Tables 1 and 2 are made)."""
    from wikihowagent.console import print_labeled

    from .inputs import resolve_inputs
    from .tables import expand_sweep_dirs

    paths, from_sweep = expand_sweep_dirs(
        list(req.runs), lambda m: console.print(f"warning: {m}", highlight=False, markup=False)
    )
    if from_sweep and not paths:
        raise EvaluateError(f"{req.runs[0]}: no cell of this sweep has conversations yet (wikihowagent sweep run FILE)")
    if from_sweep and req.out is None and len(req.runs) == 1:  # a sweep's tables go into the sweep directory
        req = replace(req, out=Path(req.runs[0]))
    tables = req.tables or from_sweep
    baseline = req.baseline
    if baseline is not None and all(Path(p).resolve() != Path(baseline).resolve() for p in paths):
        paths = [baseline] + paths
    sources = resolve_inputs(
        paths, runs_dir, on_empty=lambda m: print_labeled(console, "warning:", "yellow", f"{m}; skipped")
    )
    if baseline is not None and all(s.path.resolve() != Path(baseline).resolve() for s in sources):
        raise EvaluateError(f"--baseline {baseline}: the baseline run has nothing to evaluate")
    base_name = None
    if baseline is not None:
        base_name = next(s.name for s in sources if s.path.resolve() == Path(baseline).resolve())
    return req, sources, base_name, tables


def _check_panel(panel: list[str], shard: tuple[int, int] | None, judge_on: bool) -> None:
    if panel and shard is not None:
        raise EvaluateError(
            "a panel of judges (--evaluator given several times) cannot be scored by --shard; "
            "give one --evaluator per sharded evaluate"
        )
    if panel and not judge_on:
        raise EvaluateError(
            "a panel of judges (--evaluator given several times) judges the rubric metrics: drop "
            "--no-judge, or ask for a rubric with --metrics"
        )


def _shard_states(sources: list[Any]) -> dict[str, Any]:
    """What each shard is scored against, read before scoring (merge compares it)."""
    from wikihowagent.shards import input_state

    try:
        return {s.name: input_state(s.records_path, s.kind != "paper-json") for s in sources}
    except OSError as exc:
        raise EvaluateError(f"{exc.filename}: {exc.strerror}") from None


def _shard_summary(
    results: list[Any], shard: tuple[int, int], opts: Any, specs: dict[str, Any], states: dict[str, Any]
) -> EvaluationSummary:
    """Each shard's shard.json (what it was scored against); no summary: that needs every shard."""
    from wikihowagent.runs import SCORE_SHARDS_DIR

    from .shards import scores_fingerprint, write_shard_info

    for src, p in results:
        write_shard_info(
            p,
            shard,
            scores_fingerprint(opts.mode, opts.metrics or [], specs[src.name], opts.rubrics_path, src.path),
            states.get(src.name),
        )
    return EvaluationSummary(
        summary=None,
        shard=shard,
        merge_dirs=[p.parent.parent.parent for _, p in results if p.parent.parent.name == SCORE_SHARDS_DIR],
    )


def _load_calibration(req: EvaluateRequest) -> Any:
    """--calibration FILE, checked before any work (EvaluateError, one line); None without it."""
    if req.calibration is None:
        return None
    from .calibrated import load

    return load(req.calibration)


def _check_calibration_judge(calibration: Any, req: EvaluateRequest, specs: dict, rubrics_hash: str) -> None:
    """Before any judge call: the judge and rubric file this evaluate uses are the calibration's."""
    if calibration is None:
        return
    for name, spec in specs.items():
        if spec and spec != calibration.judge:
            raise EvaluateError(
                f"{req.calibration}: fitted for judge {calibration.judge}; {name} would be judged "
                f"by {spec}: use --evaluator {calibration.judge}, or calibrate {spec} "
                "(`wikihowagent align --calibrate`)"
            )
        if spec and rubrics_hash and rubrics_hash != calibration.rubrics_sha256:
            raise EvaluateError(
                f"{req.calibration}: fitted for the rubric file with sha256 "
                f"{calibration.rubrics_sha256[:12]}, this evaluate uses {rubrics_hash[:12]} "
                "(--rubrics): calibrate again on scores judged with these rubrics"
            )


def _run_scores(results, calibration: Any, req: EvaluateRequest) -> list:
    """Each scored input's rows of the score table, with the calibrated columns when --calibration is given
    (EvaluateError if its scores come from another judge or rubric file)."""
    from .calibrated import add_calibrated, check
    from .summary import load_run_scores

    out = []
    for src, p in results:
        rs = load_run_scores(src.name, src.label, p, n_failed=src.n_failed, n_invalid=src.n_invalid)
        if calibration is not None and req.calibration is not None:  # loaded from req.calibration
            check(calibration, req.calibration, rs.table, f"{p}")
            rs.table = add_calibrated(rs.table, calibration)
        out.append(rs)
    return out


def _paper_tables(
    result: EvaluationSummary, results, rubric_names, req: EvaluateRequest, runs_dir: Path, calibration: Any = None
) -> None:
    from wikihowagent.runs import SUMMARY_DIR

    from .summary import write_summary
    from .tables import paper_tables

    run_scores = _run_scores(results, calibration, req)
    setups = {src.name: (src.teacher, src.learner or src.teacher) for src, _ in results}
    out_dir = (
        Path(req.out)
        if req.out is not None
        else (results[0][1].parent if len(results) == 1 else runs_dir / SUMMARY_DIR)
    )
    result.tables = paper_tables(run_scores, setups, rubric_names, req.table_stats)
    for stem, _, summary in result.tables:
        result.written += write_summary(summary, out_dir / stem)


def _lock_scores_files(locks: contextlib.ExitStack, sources, opts, runs_dir) -> None:
    """Lock every scores file this invocation writes; EvaluateError if another evaluate holds one."""
    from wikihowagent.runs import RunError, dir_lock

    from .runner import scores_path

    for src in sources:
        out_path = scores_path(src, opts, runs_dir)
        try:
            locks.enter_context(
                dir_lock(
                    out_path.parent,
                    blocking=False,
                    what="another 'wikihowagent evaluate'",
                    name=f".{out_path.name}.lock",
                )
            )
        except RunError:
            raise EvaluateError(
                f"{out_path}: another evaluate is running on this scores file; wait for it to "
                "finish (or use another --out)"
            ) from None


def _score_all(console, ev, sources, specs, opts, runs_dir, warn, all_failed: list[str], empty: list[str]):
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from wikihowagent.runs import DiskFullError, RunError

    from .inputs import InputError
    from .judge import JudgeBackendError
    from .metrics import MetricError
    from .runner import count_input_records, scores_path

    results = []
    for src in sources:
        out_path = scores_path(src, opts, runs_dir)
        what = f"{src.name}" + (f" (judge: {specs[src.name]})" if specs[src.name] else "")
        try:
            total = count_input_records(src)
        except OSError as exc:
            raise EvaluateError(f"{src.path}: {exc.strerror}") from None
        with Progress(
            TextColumn("{task.description}", markup=False, style="bold"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        ) as prog:
            task = prog.add_task(f"scoring {what}", total=total)
            try:
                stats = ev.run_source(src, out_path, progress=lambda n, task=task: prog.advance(task, n))
            except (EvaluateError, MetricError, JudgeBackendError, InputError, RunError) as exc:
                prog.stop()
                if isinstance(exc, DiskFullError):  # its message says what to do
                    raise EvaluateError(str(exc)) from None
                raise EvaluateError(f"{exc} (scores so far are in {out_path}; rerun to resume)") from None
        console.print(
            f"{src.name}: {stats.scored} scored, {stats.already} already scored, {stats.failed} failed "
            f"conversations skipped, {stats.invalid} unreadable records -> {out_path}",
            highlight=False,
        )
        rejudged = [
            (stats.rejudged_evaluator, "the evaluator changed"),
            (stats.rejudged_rubrics, "the rubric file changed"),
            (stats.rejudged_scoring, "the --judge-scoring mode changed"),
            (stats.rejudged_prompt, "the --judge-prompt variant changed"),
        ]
        for n, why in rejudged:
            if n:
                console.print(
                    f"{src.name}: {n} conversation{'s' if n != 1 else ''} re-judged because {why} "
                    f"(now {specs[src.name]})",
                    highlight=False,
                )
        if stats.reweighted:
            console.print(
                f"{src.name}: {stats.reweighted} conversation{'s' if stats.reweighted != 1 else ''}' "
                "checklist scores weighed again from their stored items (other item weights; no model "
                "call)",
                highlight=False,
            )
        if stats.judged:  # failed calls, parse failures and low digit mass: counted, never scored
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(stats.failure_kinds.items()))
            prompt = ev.prompt_name(specs[src.name])
            label = ev.scoring_label(specs[src.name]) + (f", prompt {prompt}" if prompt else "")
            console.print(
                f"{src.name}: judge ({label}): {stats.judged - stats.judge_failures} "
                f"of {stats.judged} rubric scores read, {stats.judge_failures} failed"
                + (f" ({kinds})" if kinds else "")
                + (f"; {stats.retried} conversations' failed rubrics judged again" if stats.retried else ""),
                highlight=False,
                markup=False,
            )
            if stats.judge_failures == stats.judged:
                all_failed.append(src.name)
            for note in stats.failure_notes:  # the first few; every one is in the scores file
                console.print(f"  judge failure: {note}", highlight=False, markup=False)
            if stats.judge_failures > len(stats.failure_notes):
                console.print(
                    f"  ... {stats.judge_failures - len(stats.failure_notes)} more in {out_path} (judge.notes)",
                    highlight=False,
                    markup=False,
                )
        if stats.posttests:
            console.print(
                f"{src.name}: post-tests taken ({opts.posttest_learner}): {stats.posttests}, "
                f"{stats.posttest_failures} without a step list",
                highlight=False,
                markup=False,
            )
        for note in stats.notes:
            console.print(f"  note: {note}", highlight=False)
        if src.n_records == 0 and src.n_invalid == 0:
            warn(f"{src.path}: no conversations")
        if stats.scored + stats.already == 0:
            empty.append(
                f"{src.path}: no scorable conversation ({src.n_invalid} unreadable records, "
                f"{src.n_failed} failed conversations)"
            )
        results.append((src, out_path))
    return results


def _summarize(
    results, rubric_names, base_name, req: EvaluateRequest, runs_dir: Path, calibration: Any = None
) -> EvaluationSummary:
    from wikihowagent.runs import SUMMARY_DIR

    from .summary import by_domain, summarize, write_calibrated, write_figures, write_summary

    run_scores = _run_scores(results, calibration, req)
    summary = summarize(run_scores, rubric_names, baseline=base_name, stats=req.table_stats)
    if req.out is not None:
        out_dir = Path(req.out)
    elif len(results) == 1:
        out_dir = results[0][1].parent
    else:
        out_dir = runs_dir / SUMMARY_DIR
    written = write_summary(summary, out_dir)
    if calibration is not None:
        written.append(write_calibrated(run_scores, calibration, out_dir))
    domain_df = None
    if req.by == "domain":
        domain_df = by_domain(run_scores, rubric_names, stats=req.table_stats)
        p = out_dir / BY_DOMAIN_CSV
        people_csv(domain_df, p)
        written.append(p)
    persona_df = None
    if req.by == "persona":
        persona_df = by_domain(run_scores, rubric_names, key="persona", stats=req.table_stats)
        p = out_dir / BY_PERSONA_CSV
        people_csv(persona_df, p)
        written.append(p)
    if req.figures:
        written += write_figures(summary, rubric_names, out_dir, domain_df)
    return EvaluationSummary(summary=summary, domain_table=domain_df, persona_table=persona_df, written=written)
