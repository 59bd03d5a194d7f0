"""`evaluate` as one call: `run_evaluation(EvaluateRequest, console) -> EvaluationSummary`.

Resolves the inputs, the rubric file and the metrics, checks every input's evaluator before any work, scores
each input (runner.Evaluation; one process per scores file: a lock), then builds the summary tables and
figures. Raises a WikihowagentError (one line: EvaluateError, or the config, input, rubric or metric error as it
is) for anything that stops the stage.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from wikihowagent.config import Config, load_config
from wikihowagent.console import print_labeled, progress_bar
from wikihowagent.csvcells import people_csv
from wikihowagent.jsonlio import DiskFullError, RunError, dir_lock
from wikihowagent.judge import calibrated
from wikihowagent.judge.checklist import ChecklistError, check_checklist_files
from wikihowagent.judge.modes import SCORING_MODES, prompt_variant_modes
from wikihowagent.judge.panel import combine as combine_panel
from wikihowagent.judge.panel import panel_spec
from wikihowagent.judge.request import ScoringRequest
from wikihowagent.judge.rubric_judge import JudgeBackendError, RubricError, load_rubrics
from wikihowagent.judge.session import EvaluateError, JudgeEndpoints, JudgeLoop, judge_endpoints
from wikihowagent.layout import BY_DOMAIN_CSV, BY_PERSONA_CSV, SCORE_SHARDS_DIR, SUMMARY_DIR
from wikihowagent.metrics import people_estimate
from wikihowagent.metrics.computational import MetricError, embedding_metrics, resolve_device
from wikihowagent.outdir import check_writable
from wikihowagent.presets import get_preset, preset_config
from wikihowagent.processes import parse_workers
from wikihowagent.scores.inputs import InputError, InputSource, resolve_inputs
from wikihowagent.scores.paper_tables import expand_sweep_dirs, paper_tables
from wikihowagent.scores.runner import (
    EvalOptions,
    Evaluation,
    count_input_records,
    scores_dir,
    scores_path,
    select_metrics,
    write_source_info,
)
from wikihowagent.scores.shards import scores_fingerprint, write_shard_info
from wikihowagent.scores.significance import TableStats
from wikihowagent.scores.source_stats import SourceStats
from wikihowagent.scores.summary import (
    by_domain,
    load_run_scores,
    summarize,
    write_calibrated,
    write_figures,
    write_summary,
)
from wikihowagent.shards import input_state, shard_option
from wikihowagent.workflow.posttest import prompt_option


@dataclass(frozen=True)
class EvaluateRequest:
    """What `wikihowagent evaluate` was asked to do."""

    runs: tuple[Path, ...] = ()  # run directories / files; () = the latest run
    scoring: ScoringRequest = field(default_factory=ScoringRequest)  # the judge's, post-test's and output options
    panel: tuple[str, ...] = ()  # --evaluator given several times: each judges into judges/<judge>/, the mean is kept
    metrics: str | None = None  # "BLEU,METEOR,Clarity", "computational", "rubric"; None = all
    judge: bool = True  # False = --no-judge
    compat: str | None = None  # "paper"
    baseline: Path | None = None
    by: str | None = None  # "domain" | "persona"
    config: Path | None = None
    device: str = "auto"  # --device: the metric encoders' torch device (metrics.DEVICES)
    workers: str | None = None  # --workers N: processes computing the metrics (workers.py); None = the cores available
    figures: bool = True
    shard: str | None = None  # "K/N": score shard K of N only (shards.py)
    tables: bool = False  # the paper's Table 1 / Table 2 (automatic for a sweep directory)
    preset: str | None = None  # presets.py: a config layer, and --compat
    calibration: Path | None = None  # `align --calibrate`'s calibration.json: adds "<rubric> (cal.)" columns
    people_estimate: Path | None = None  # `align`'s people_estimate.json: adds "Estimated Overall (people)"
    bootstrap: int = 1000  # resamples (of tutorials) for the tables' CIs; 0 = no CIs
    seed: int = 0  # the bootstrap's seed

    @property
    def table_stats(self) -> TableStats:
        """CIs in every cell; arrows from a paired test by tutorial, except in paper mode (the paper's raw arrows)."""
        return TableStats(n_boot=self.bootstrap, seed=self.seed, paired=self.mode != "paper")

    @property
    def mode(self) -> Literal["default", "paper"]:
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
    estimate_figures: tuple[str, str] = ("", "")  # --people-estimate: its out-of-fold figures, a warning if weak


def run_evaluation(req: EvaluateRequest, console: Any) -> EvaluationSummary:
    """Score every input and summarise. `console` (rich, stderr) shows warnings, progress and per-input lines.
    The steps: the request checked and the inputs, rubrics and metrics resolved (`_plan`), every input scored
    under the scores files' locks in one judge session (`_score_inputs`; with a panel, by each judge; with
    --shard, one shard), then the summary tables and figures (`_summarize`, `_paper_tables`)."""
    plan = _plan(req, console)
    req = plan.req
    with contextlib.ExitStack() as locks:
        # One evaluation per scores file at a time, decided before any model is loaded.
        for o in [plan.opts, *plan.judge_opts]:
            _lock_scores_files(locks, plan.sources, o, plan.runs_dir)
        with JudgeLoop() as loop:
            scored = _score_inputs(plan, console, loop)
    results = scored.results
    if plan.shard is not None:  # a summary needs every shard: `wikihowagent merge DIR`, then evaluate again
        return _shard_summary(results, plan.shard, plan.opts, scored.specs, scored.states)
    if len(scored.empty) == len(plan.sources):  # nothing scored and nothing scored before: no summary to write
        raise EvaluateError("nothing to evaluate: " + "; ".join(scored.empty))
    result = _summarize(results, plan.rubric_names, plan.base_name, req, plan.runs_dir, plan.calibration)
    result.judge_all_failed = scored.all_failed
    if plan.tables:
        _paper_tables(result, results, plan.rubric_names, req, plan.runs_dir, plan.calibration)
    return result


@dataclass
class EvaluationPlan:
    """What `run_evaluation` settled before taking the scores files' locks."""

    req: EvaluateRequest  # with --out the sweep directory for one sweep
    cfg: Config
    runs_dir: Path
    shard: tuple[int, int] | None
    sources: list[InputSource]
    base_name: str | None  # --baseline's input name
    tables: bool  # the paper's Tables 1 and 2
    rubric_set: dict[str, Any] | None  # None: --no-judge without a rubric file
    rubric_names: list[str]
    computational: list[str]  # the computational metrics asked (--metrics)
    rubrics: list[str]  # the rubrics judged (--metrics)
    opts: EvalOptions
    panel: list[str]  # the judges of a panel (--evaluator given several times), else []
    calibration: Any  # --calibration's Calibration, or None
    warn: Callable[[str], None]

    @property
    def judge_opts(self) -> list[EvalOptions]:
        """Each panel judge's options: it judges into judges/<judge>/ beside the scores file."""
        return [
            replace(self.opts, asked=replace(self.opts.asked, evaluator=spec), panel_judge=True) for spec in self.panel
        ]


@dataclass
class Scored:
    """What `_score_inputs` did."""

    results: list[tuple[InputSource, Path]]  # each input and its scores file
    specs: dict[str, str | None]  # input name -> its judge spec (None: no rubric judged)
    states: dict[str, Any]  # --shard: what each input's shard was scored against, read before scoring
    all_failed: list[str] = field(default_factory=list)  # inputs whose judge failed on every rubric asked
    empty: list[str] = field(default_factory=list)  # inputs with no scorable conversation


def _plan(req: EvaluateRequest, console: Any) -> EvaluationPlan:
    """The request checked, the config, the inputs, the rubric file, the metrics and --calibration resolved; a
    one-line error for anything that stops the stage before any scoring."""
    preset = get_preset(req.preset)
    _check_request(req)
    cfg = load_config(req.config, preset=preset_config(req.preset) if preset else None)
    runs_dir = Path(cfg.runs_dir)
    shard = shard_option(req.shard, EvaluateError)
    req, sources, base_name, tables = _sources(req, runs_dir, console)
    if req.scoring.out is not None:  # a file or a folder this user cannot write: one line, before any work
        check_writable(Path(req.scoring.out))
    try:
        rubric_set = load_rubrics(req.scoring.rubrics)
    except RubricError:
        if req.judge or req.scoring.rubrics is not None:
            raise
        rubric_set = None  # --no-judge needs no rubric file
    rubric_names = list(rubric_set or [])
    comp, rub = select_metrics(req.metrics, req.mode, rubric_names)
    if rubric_set is not None:  # every file the user named is read before any model or server is contacted
        try:
            check_checklist_files(req.scoring.checklist, req.scoring.checklist_weights, rubric_names)
        except ChecklistError as exc:
            raise EvaluateError(str(exc)) from None
    calibration = _load_calibration(req)
    if req.people_estimate is not None:  # a bad file, or one these scores cannot have: one line, before any work
        est = people_estimate.load(req.people_estimate)
        people_estimate.check_request(est, req.people_estimate, req.mode, comp)
    opts = _options(req, cfg, comp, rub, shard)
    opts.device = _device(req.device, comp, console)
    opts.workers = _workers(req.workers, comp)
    panel = list(dict.fromkeys(req.panel))
    _check_panel(panel, shard, opts.judge)
    return EvaluationPlan(
        req=req,
        cfg=cfg,
        runs_dir=runs_dir,
        shard=shard,
        sources=sources,
        base_name=base_name,
        tables=tables,
        rubric_set=rubric_set,
        rubric_names=rubric_names,
        computational=comp,
        rubrics=rub,
        opts=opts,
        panel=panel,
        calibration=calibration,
        warn=lambda msg: print_labeled(console, "warning:", "yellow", msg),
    )


def _device(requested: str, comp: list[str], console: Any) -> str:
    """The metric encoders' device: `requested` resolved (an absent cuda/mps is a one-line error, also when no
    embedding metric is asked); "cpu" without resolving `auto` (no torch import) when none is."""
    if requested == "auto" and not set(comp) & embedding_metrics():
        return "cpu"
    device = resolve_device(requested)
    if device != "cpu" and set(comp) & embedding_metrics():
        console.print(f"metric encoders (sentence embeddings, BERTScore) on {device}", highlight=False, markup=False)
    return device


def _workers(value: str | None, comp: list[str]) -> int:
    """--workers checked (one line for anything but a whole number >= 1): the processes that compute the metrics;
    none beside this process when no computational metric is asked (a judge-only pass)."""
    try:
        workers = parse_workers(value)
    except ValueError as exc:
        raise EvaluateError(str(exc)) from None
    return workers if comp else 1


def _options(
    req: EvaluateRequest, cfg: Config, comp: list[str], rub: list[str], shard: tuple[int, int] | None
) -> EvalOptions:
    """The scoring options of the request, as asked, and what the stage settled: the metrics, the mode, the shard;
    the judge is on when a rubric is asked and --no-judge is not given."""
    return EvalOptions(
        asked=req.scoring,
        mode=req.mode,
        metrics=comp + rub,
        judge=bool(rub) and req.judge,
        default_concurrency=cfg.concurrency,
        shard=shard,
    )


def _score_inputs(plan: EvaluationPlan, console: Any, loop: JudgeLoop) -> Scored:
    """Every input scored on `loop` (the one judge session): the metrics and, without a panel, the judge's
    rubric scores; with a panel, each judge's into its own file, then their mean."""
    opts, comp, rub, panel = plan.opts, plan.computational, plan.rubrics, plan.panel
    endpoints = judge_endpoints(plan.cfg, plan.req.scoring.base_url)
    ev = Evaluation(
        opts,
        comp,
        rub if opts.judge and not panel else [],
        plan.rubric_set,
        endpoints.make_llm if opts.judge and not panel else None,
        plan.warn,
        make_learner=endpoints.learner_factory(plan.cfg) if plan.req.scoring.posttest_learner else None,
        loop=loop,
    )
    with contextlib.closing(ev):  # the metrics' worker processes exit, also after a failure or Ctrl-C
        return _score_with(plan, console, ev, endpoints, loop)


def _score_with(
    plan: EvaluationPlan, console: Any, ev: Evaluation, endpoints: JudgeEndpoints, loop: JudgeLoop
) -> Scored:
    """`_score_inputs` with the Evaluation `ev` made: each judge of a panel made, every input scored, the panel's
    mean taken."""
    rub, panel = plan.rubrics, plan.panel
    judges = [
        Evaluation(o, [], rub, plan.rubric_set, endpoints.make_llm, plan.warn, loop=loop) for o in plan.judge_opts
    ]
    specs, judge_specs = _prepare(plan, endpoints, ev, judges)
    scored = Scored([], specs, _shard_states(plan.sources) if plan.shard is not None else {})
    scored.results = _score_all(console, ev, plan, specs, scored.all_failed, scored.empty)
    for j, sp in zip(judges, judge_specs, strict=True):  # each judge of a panel into its own file
        _score_all(console, j, plan, sp, scored.all_failed, [])
    for src, p in scored.results if panel else []:
        n = combine_panel(p, panel, rub, ev.rubrics_hash)
        console.print(
            f"{src.name}: panel of {len(panel)} judges ({', '.join(panel)}): mean rubric scores "
            f"of {n} conversations -> {p}",
            highlight=False,
            markup=False,
        )
    return scored


def _prepare(
    plan: EvaluationPlan, endpoints: JudgeEndpoints, ev: Evaluation, judges: list[Evaluation]
) -> tuple[dict[str, str | None], list[dict[str, str | None]]]:
    """Every input's evaluator (and the server it is asked on) known, --calibration's judge checked and every
    judge built before any work starts (a --judge-scoring mode the backend cannot serve fails here) -> ({input
    name: spec} of `ev`, the same of each panel judge)."""
    specs = endpoints.resolve(ev, plan.sources)
    judge_specs = [endpoints.resolve(j, plan.sources) for j in judges]
    calibrated_specs = {n: panel_spec(plan.panel) for n in specs} if plan.panel else specs
    _check_calibration_judge(plan.calibration, plan.req, calibrated_specs, ev.rubrics_hash)
    ev.prepare(list(specs.values()))
    for j, sp in zip(judges, judge_specs, strict=True):
        j.prepare(list(sp.values()))
    return specs, judge_specs


def _check_request(req: EvaluateRequest) -> None:
    """Options that cannot work (together), refused in one line before any work."""
    asked = req.scoring
    if req.compat not in (None, "paper"):
        raise EvaluateError(f"--compat: only 'paper' is supported, not {req.compat!r}")
    if asked.judge_scoring is not None and asked.judge_scoring not in SCORING_MODES:
        raise EvaluateError(f"--judge-scoring: unknown mode {asked.judge_scoring!r}; valid: {', '.join(SCORING_MODES)}")
    mode = SCORING_MODES.get(asked.judge_scoring) if asked.judge_scoring is not None else None
    if asked.judge_rationale and mode is not None and not mode.prompt_variants:
        raise EvaluateError(
            f"--judge-rationale applies to --judge-scoring {prompt_variant_modes()}, not {asked.judge_scoring}"
        )
    if (asked.checklist or asked.checklist_weights) and mode is not None and not mode.checklist:
        raise EvaluateError("--checklist and --checklist-weights apply to --judge-scoring checklist")
    if req.by not in (None, "domain", "persona"):
        raise EvaluateError(f"--by: only 'domain' or 'persona' is supported, not {req.by!r}")
    if asked.posttest_learner and req.mode == "paper":
        raise EvaluateError("--posttest-learner: the post-test is not part of the paper's metrics (--compat paper)")
    prompt_option(asked.posttest_prompt, asked.posttest_learner)  # a bad --posttest-prompt: one line, before any work
    if asked.posttest_likelihood and not asked.posttest_learner:
        raise EvaluateError(
            "--posttest-likelihood: give --posttest-learner (the model whose log-probabilities are read)"
        )


def _sources(
    req: EvaluateRequest, runs_dir: Path, console: Any
) -> tuple[EvaluateRequest, list[InputSource], str | None, bool]:
    """The inputs to score (a sweep directory expanded into its cells; --baseline added first when not among
    them) -> (the request, with --out the sweep directory for one sweep; the sources; the baseline's name or None;
    whether the paper's Tables 1 and 2 are made)."""
    paths, from_sweep = expand_sweep_dirs(
        list(req.runs), lambda m: console.print(f"warning: {m}", highlight=False, markup=False)
    )
    if from_sweep and not paths:
        raise EvaluateError(f"{req.runs[0]}: no cell of this sweep has conversations yet (wikihowagent sweep run FILE)")
    if from_sweep and req.scoring.out is None and len(req.runs) == 1:  # a sweep's tables go into the sweep directory
        req = replace(req, scoring=replace(req.scoring, out=Path(req.runs[0])))
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


def _shard_states(sources: list[InputSource]) -> dict[str, Any]:
    """What each shard is scored against, read before scoring (merge compares it)."""
    try:
        return {s.name: input_state(s.records_path, s.kind != "paper-json") for s in sources}
    except OSError as exc:
        raise EvaluateError(f"{exc.filename}: {exc.strerror}") from None


def _shard_summary(
    results: list[Any], shard: tuple[int, int], opts: Any, specs: dict[str, Any], states: dict[str, Any]
) -> EvaluationSummary:
    """Each shard's shard.json (what it was scored against); no summary: that needs every shard."""
    for src, p in results:
        write_shard_info(
            p,
            shard,
            scores_fingerprint(opts.mode, opts.metrics or [], specs[src.name], opts.asked.rubrics, src.path),
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
    return calibrated.load(req.calibration)


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
    out = []
    for src, p in results:
        rs = load_run_scores(src.name, src.label, p, n_failed=src.n_failed, n_invalid=src.n_invalid)
        if calibration is not None and req.calibration is not None:  # loaded from req.calibration
            calibrated.check(calibration, req.calibration, rs.table, f"{p}")
            rs.table = calibrated.add_calibrated(rs.table, calibration)
        if req.people_estimate is not None:
            est = people_estimate.load(req.people_estimate)
            people_estimate.check(est, req.people_estimate, rs.table, f"{p}")
            rs.table = people_estimate.add_estimate(rs.table, est)
        out.append(rs)
    return out


def _paper_tables(
    result: EvaluationSummary, results, rubric_names, req: EvaluateRequest, runs_dir: Path, calibration: Any = None
) -> None:
    run_scores = _run_scores(results, calibration, req)
    setups = {src.name: (src.teacher, src.learner or src.teacher) for src, _ in results}
    out_dir = (
        Path(req.scoring.out)
        if req.scoring.out is not None
        else (results[0][1].parent if len(results) == 1 else runs_dir / SUMMARY_DIR)
    )
    result.tables = paper_tables(run_scores, setups, rubric_names, req.table_stats)
    for stem, _, summary in result.tables:
        _estimate_intervals(summary, req)
        result.written += write_summary(summary, out_dir / stem)


def _lock_scores_files(
    locks: contextlib.ExitStack, sources: list[InputSource], opts: EvalOptions, runs_dir: Path
) -> None:
    """Lock every scores file this invocation writes; EvaluateError if another evaluate holds one."""
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


def _score_all(
    console: Any,
    ev: Evaluation,
    plan: EvaluationPlan,
    specs: dict[str, str | None],
    all_failed: list[str],
    empty: list[str],
) -> list[tuple[InputSource, Path]]:
    """Each input scored by `ev` into its scores file (`_score_one`) and said (`_report`) -> (input, scores
    file) per input; the inputs whose judge failed on every rubric go to `all_failed`, those with nothing
    scorable to `empty`."""
    results = []
    for src in plan.sources:
        out_path = scores_path(src, ev.opts, plan.runs_dir)
        write_source_info(src, scores_dir(src, ev.opts.asked.out, plan.runs_dir))
        stats = _score_one(console, ev, src, out_path, specs[src.name])
        _report(console, ev, src, stats, specs[src.name], out_path)
        if stats.judged and stats.judge_failures == stats.judged:
            all_failed.append(src.name)
        if src.n_records == 0 and src.n_invalid == 0:
            plan.warn(f"{src.path}: no conversations")
        if stats.scored + stats.already == 0:
            empty.append(
                f"{src.path}: no scorable conversation ({src.n_invalid} unreadable records, "
                f"{src.n_failed} failed conversations)"
            )
        results.append((src, out_path))
    return results


def _score_one(console: Any, ev: Evaluation, src: InputSource, out_path: Path, spec: str | None) -> SourceStats:
    """One input scored under a progress bar; a judge, metric, input or run-file error as EvaluateError saying
    that the scores so far are kept (a full disk's message as it is: it says what to do)."""
    what = f"{src.name}" + (f" (judge: {spec})" if spec else "")
    try:
        total = count_input_records(src)
    except OSError as exc:
        raise EvaluateError(f"{src.path}: {exc.strerror}") from None
    try:
        with progress_bar(console, total, f"scoring {what}") as advance:
            return ev.run_source(src, out_path, progress=advance)
    except (EvaluateError, MetricError, JudgeBackendError, InputError, RunError) as exc:
        if isinstance(exc, DiskFullError):  # its message says what to do
            raise EvaluateError(str(exc)) from None
        raise EvaluateError(f"{exc} (scores so far are in {out_path}; rerun to resume)") from None


def _report(
    console: Any, ev: Evaluation, src: InputSource, stats: SourceStats, spec: str | None, out_path: Path
) -> None:
    """An input's lines: what was scored, what was judged again and why, the judge's reading and its first
    failures, the post-tests taken, the notes."""
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
                f"{src.name}: {n} conversation{'s' if n != 1 else ''} re-judged because {why} (now {spec})",
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
        _report_judge(console, ev, src, stats, spec, out_path)
    if stats.posttests:
        console.print(
            f"{src.name}: post-tests taken ({ev.opts.asked.posttest_learner}): {stats.posttests}, "
            f"{stats.posttest_failures} without a step list",
            highlight=False,
            markup=False,
        )
    if stats.likelihoods:
        console.print(
            f"{src.name}: likelihood post-tests taken ({ev.opts.asked.posttest_learner}): {stats.likelihoods}, "
            f"{stats.likelihood_failures} could not be read",
            highlight=False,
            markup=False,
        )
    for note in stats.notes:
        console.print(f"  note: {note}", highlight=False)


def _report_judge(
    console: Any, ev: Evaluation, src: InputSource, stats: SourceStats, spec: str | None, out_path: Path
) -> None:
    """The judge's line of an input: rubric scores read and failed (by kind), and its first failures."""
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(stats.failure_kinds.items()))
    prompt = ev.prompt_name(spec)
    label = ev.scoring_label(spec) + (f", prompt {prompt}" if prompt else "")
    console.print(
        f"{src.name}: judge ({label}): {stats.judged - stats.judge_failures} "
        f"of {stats.judged} rubric scores read, {stats.judge_failures} failed"
        + (f" ({kinds})" if kinds else "")
        + (f"; {stats.retried} conversations' failed rubrics judged again" if stats.retried else ""),
        highlight=False,
        markup=False,
    )
    for note in stats.failure_notes:  # the first few; every one is in the scores file
        console.print(f"  judge failure: {note}", highlight=False, markup=False)
    if stats.judge_failures > len(stats.failure_notes):
        console.print(
            f"  ... {stats.judge_failures - len(stats.failure_notes)} more in {out_path} (judge.notes)",
            highlight=False,
            markup=False,
        )


def _summarize(
    results, rubric_names, base_name, req: EvaluateRequest, runs_dir: Path, calibration: Any = None
) -> EvaluationSummary:
    run_scores = _run_scores(results, calibration, req)
    summary = summarize(run_scores, rubric_names, baseline=base_name, stats=req.table_stats)
    figures = _estimate_intervals(summary, req)
    if req.scoring.out is not None:
        out_dir = Path(req.scoring.out)
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
    return EvaluationSummary(
        summary=summary, domain_table=domain_df, persona_table=persona_df, written=written, estimate_figures=figures
    )


def _estimate_intervals(summary: Any, req: EvaluateRequest) -> tuple[str, str]:
    """--people-estimate: its column's CIs widened into prediction intervals (`people_estimate.widen`) and the
    file's out-of-fold figures (with a warning when weak) in the summary's legend -> (figures, warning)."""
    if req.people_estimate is None:
        return "", ""
    est = people_estimate.load(req.people_estimate)
    people_estimate.widen(summary, est)
    line, warning = people_estimate.figures(est, req.people_estimate)
    if summary.stats is not None and summary.stats.n_boot and est.residual_sd is not None:
        line += (
            f". Its [lo, hi]: a 95 % prediction interval of the people's mean, the bootstrap CI widened by the "
            f"estimate's out-of-fold residual sd ({est.residual_sd:.2f} per conversation, over the square root of n"
            + (f"; {est.residual_sd_between_runs:.2f} between runs" if est.residual_sd_between_runs is not None else "")
            + ")"
        )
    summary.notes += [line + "."] + ([f"Warning: {warning}."] if warning else [])
    return line, warning
