"""`judge-check`: meta-evaluation of a rubric judge without human labels.

For each conversation: the original is judged twice (the second time with the rubric order reversed and
the seed + 1: self-consistency), and each perturbation of `wikihowagent/data/perturbations.json` is judged on its
target rubrics. Judgments are appended to `judgments.jsonl` as they finish (a rerun resumes); the
analysis reads that file:

- `sensitivity.csv`: per rubric x perturbation (targeted cells), how often the original scores higher
  than the perturbed copy (ties count half), with a bootstrap 95 % CI over conversations.
- `consistency.csv`: per rubric, Krippendorff's alpha (interval) between the two judgings of the
  originals, their mean absolute difference, and the mean and spread of scores across conversations.
- `summary.md` and `sensitivity.png` (heatmap).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from wikihowagent.compare.engine import (
    PassStats,
    pending,
    read_pair_judgments,
    reading_note,
    run_pair_jobs,
)
from wikihowagent.compare.pairwise import (
    PairwiseJudge,
    check_tie_band,
)
from wikihowagent.config import load_config
from wikihowagent.console import progress_bar
from wikihowagent.corpus.core import LoadReport, TutorialError, load_tutorials
from wikihowagent.corpus.counterfactual import ValiditySetError, check_steps
from wikihowagent.errors import WikihowagentError
from wikihowagent.jsonlio import JsonlAppender
from wikihowagent.judge.gather import gather_cancelling
from wikihowagent.judge.modes import SCORING_MODES
from wikihowagent.judge.panel import judge_slug
from wikihowagent.judge.request import ScoringRequest
from wikihowagent.judge.rubric_judge import load_rubrics
from wikihowagent.judge.session import JudgeLoop, judge_endpoints, locked_out, resumable
from wikihowagent.layout import JUDGE_CHECK_LOCK, JUDGMENTS, PAIR_JUDGMENTS, POSTTESTS
from wikihowagent.metrics.computational import resolve_device
from wikihowagent.outdir import check_writable
from wikihowagent.records import Conversation, JudgmentRecord
from wikihowagent.records_io import read_judgment_table
from wikihowagent.scores.inputs import resolve_inputs
from wikihowagent.scores.runner import EvalOptions, EvaluateError, Evaluation, judge_concurrency
from wikihowagent.workflow.likelihood import LikelihoodError, LikelihoodTaker, for_chat_model
from wikihowagent.workflow.posttest import post_tester, prompt_option

from . import metric_check, posttest_check
from .accuracy import (  # noqa: F401 (re-exported)
    BOOTSTRAP,
    ORIGINAL,
    ORIGINAL_2,
    bootstrap_ci,
    mean_accuracy_samples,
    paired_wins,
    win,
)
from .analysis import analyse
from .judgments import CheckStats, Job, plan, read_judgments
from .pairwise_check import analyse_pairwise, plan_pairwise
from .panel import PANEL_DIR, combine_judgments
from .perturbations import Perturbation, load_perturbations


async def run_jobs(
    jobs: list[Job], judge: Any, evaluator: str, path: Path, progress: Callable[[int], None], stats: CheckStats
) -> None:

    done = read_judgments(path, evaluator, judge.label, judge.prompt_name)
    todo = []
    for j in jobs:
        old = done.get((j.conv.conversation_id, j.variant))
        if old is not None and set(j.names) <= {k for k, v in (old.get("scores") or {}).items() if v is not None}:
            stats.already += 1
            progress(1)
        else:
            todo.append(j)
    with JsonlAppender(path) as sink:

        async def one(j: Job) -> None:
            res = await judge.judge(j.conv, j.names, j.seed_variant)
            sink.append(
                JudgmentRecord(
                    conversation_id=j.conv.conversation_id,
                    run=j.conv.run,
                    variant=j.variant,
                    evaluator=evaluator,
                    judge_scoring=judge.label,
                    judge_prompt=judge.prompt_name,
                    scores=res.scores,
                    judge_failures=res.failures,
                    notes=res.notes,
                )
            )
            stats.judged += 1
            stats.rubric_scores += len(res.scores)
            stats.failures += len(res.failures)
            progress(1)

        await gather_cancelling(one(j) for j in todo)


# --------------------------------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------------
# Pairwise: original vs perturbed copy, judged head to head in both orders
# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------------
# The stage: run_judge_check (the command parses, calls it, prints its one-line error)
# --------------------------------------------------------------------------------------------------


class JudgeCheckError(WikihowagentError, ValueError):
    """judge-check cannot run or measured nothing; one line."""


@dataclass(frozen=True)
class JudgeCheckRequest:
    """What `wikihowagent judge-check` was asked to do."""

    runs: tuple[Path, ...]
    out: Path
    evaluators: tuple[str, ...] = ()  # () = as `evaluate`; several = a panel
    # the judge's options as `evaluate` takes them (its server, concurrency, retries, --judge-scoring, ...); with
    # posttest_learner set: instead of judging, the post-test's validity with this learner (posttest_prompt: its
    # wording; posttest_likelihood: also the likelihood post-test)
    scoring: ScoringRequest = field(default_factory=ScoringRequest)
    perturbations: Path | None = None
    rubrics: Path | None = None
    max_conversations: int | None = None
    config: Path | None = None
    figures: bool = True
    pairwise: bool = False
    pairwise_reading: str | None = None
    tie_band: float = 0.0  # --pairwise: the `average` verdict rule's tie band
    posttest_tutorials: tuple[Path, ...] = ()  # the post-test's validity split by these tutorial sets
    device: str = "auto"  # ... Step Recall's encoder on this torch device (metrics.computational.resolve_device)
    metrics: bool = False  # instead of judging: every computational metric against the perturbations (no model)


def run_judge_check(req: JudgeCheckRequest, console: Any) -> None:
    """Judge, resume, analyse and write; progress and results on `console`. Raises JudgeCheckError or
    outdir.OutputDirError (one line)."""
    check_writable(Path(req.out))  # a file or a folder this user cannot write: before any work
    learner = req.scoring.posttest_learner
    if req.posttest_tutorials and not learner:
        raise JudgeCheckError("--tutorials: give --posttest-learner (the tutorial sets split the post-test's validity)")
    if req.scoring.posttest_likelihood and not learner:
        raise JudgeCheckError(
            "--posttest-likelihood: give --posttest-learner (the model whose log-probabilities are read)"
        )
    if req.device != "auto" or learner or req.metrics:  # an absent --device: one line, before any work
        req = replace(req, device=resolve_device(req.device))
    specs = list(dict.fromkeys(req.evaluators))
    if req.metrics:
        if specs or req.pairwise or req.scoring.posttest_learner:
            raise JudgeCheckError(
                "--metrics checks the computational metrics and asks no model: give it without --evaluator, "
                "--pairwise or --posttest-learner"
            )
        inputs = read_inputs(console, req)
        metric_check.run_metric_check(
            console,
            inputs.convs,
            inputs.perts,
            Path(req.out),
            str(inputs.sources[0].path)
            if len(inputs.sources) == 1
            else f"{len(inputs.sources)} inputs, the first {inputs.sources[0].path}",
            req.figures,
            req.device,
        )
        return
    if len(specs) > 1 and req.scoring.posttest_learner:
        raise JudgeCheckError(
            "--posttest-learner measures the post-test's validity and asks no judge: give it without a panel of "
            "--evaluator (the post-test's table shows the judge-check accuracy already in --out)"
        )
    if len(specs) > 1:
        _judge_panel(console, req, specs)
    else:
        _judge_check(console, req, specs[0] if specs else None)


def _judge_panel(console: Any, req: JudgeCheckRequest, specs: list[str]) -> None:
    """Each judge into OUT/<judge>/, then the panel of their mean scores into OUT/panel/."""
    if req.pairwise:
        raise JudgeCheckError("--pairwise compares one judge's verdicts; give one --evaluator")
    out = Path(req.out)
    for spec in specs:
        console.print(f"panel judge {spec} -> {out / judge_slug(spec)}", highlight=False, markup=False)
        member = replace(  # one judge of the panel: the absolute judge only
            req,
            out=out / judge_slug(spec),
            evaluators=(spec,),
            pairwise_reading=None,
            tie_band=0.0,
            scoring=replace(req.scoring, posttest_prompt=None),
        )
        _judge_check(console, member, spec)
    rubric_set = load_rubrics(req.rubrics)
    perts = load_perturbations(req.perturbations, list(rubric_set))
    name, label, ids, n = combine_judgments(out, specs)
    accuracy = {
        spec: analyse(
            out / judge_slug(spec),
            perts,
            list(rubric_set),
            spec,
            _scoring_of(out / judge_slug(spec), spec),
            ids,
            CheckStats(),
            figures=False,
        ).mean_accuracy
        for spec in specs
    }
    res = analyse(out / PANEL_DIR, perts, list(rubric_set), name, label, ids, CheckStats(), figures=req.figures)
    console.print(
        "mean accuracy over targeted cells: "
        + ", ".join(f"{s} {a:.3f}" for s, a in accuracy.items())
        + f"; panel (mean of {len(specs)}) {res.mean_accuracy:.3f}",
        highlight=False,
        markup=False,
    )
    console.print(f"panel: {n} judgments -> " + ", ".join(str(p) for p in res.written), highlight=False, markup=False)


def _scoring_of(out: Path, spec: str) -> str:
    m = read_judgment_table(out / JUDGMENTS).meta
    found = [sc for ev, sc in zip(m["evaluator"], m["scoring"], strict=True) if ev == spec]
    return found[-1] if found else ""


@dataclass
class CheckInputs:
    """What every judge-check mode reads first (`read_inputs`)."""

    cfg: Any  # the Config
    rubric_set: dict[str, Any]
    perts: list[Perturbation]
    sources: list[Any]  # scores.inputs sources
    convs: list[Conversation]  # at most --max-conversations, at least 2
    test_prompt: Any  # the post-test's TestPrompt
    tutorial_sets: dict[str, list[Any]]  # --tutorials: {set name: its tutorials}


def read_inputs(console: Any, req: JudgeCheckRequest) -> CheckInputs:
    """The options checked and the inputs read, each bad one a one-line error before any judging."""
    asked = req.scoring
    if asked.judge_scoring is not None and asked.judge_scoring not in SCORING_MODES:
        raise JudgeCheckError(
            f"--judge-scoring: unknown mode {asked.judge_scoring!r}; valid: {', '.join(SCORING_MODES)}"
        )
    test_prompt = prompt_option(
        asked.posttest_prompt, asked.posttest_learner
    )  # a bad --posttest-prompt: one line, first
    tutorial_sets = load_tutorial_sets(req.posttest_tutorials, console)  # a bad --tutorials set: one line, first
    cfg = load_config(req.config)
    rubric_set = load_rubrics(req.rubrics)
    perts = load_perturbations(req.perturbations, list(rubric_set))
    sources = resolve_inputs(list(req.runs), Path(cfg.runs_dir))

    def warn(msg: str) -> None:
        console.print("warning: " + msg, highlight=False, soft_wrap=True, markup=False)

    convs = first_conversations(sources, req.max_conversations, warn)
    if len(convs) < 2:
        raise JudgeCheckError(
            f"{', '.join(str(s.path) for s in sources)}: judge-check needs at least 2 conversations "
            f"(found {len(convs)})"
        )
    return CheckInputs(cfg, rubric_set, perts, sources, convs, test_prompt, tutorial_sets)


def first_conversations(sources: list[Any], limit: int | None, warn: Callable[[str], None]) -> list[Conversation]:
    """The inputs' conversations in order, the first `limit` of them (all for None or 0)."""
    convs: list[Conversation] = []
    for src in sources:
        for c in src.conversations(on_error=warn):
            convs.append(c)
            if limit and len(convs) >= limit:
                return convs
    return convs


def _judge_check(console: Any, req: JudgeCheckRequest, evaluator: str | None) -> None:
    """One judge (`evaluator`, None = as `evaluate`): absolute (default), --pairwise, or the post-test's validity
    (--posttest-learner)."""
    inputs = read_inputs(console, req)
    endpoints = judge_endpoints(inputs.cfg, req.scoring.base_url)  # as `evaluate`: the run's evaluator and endpoint
    if req.scoring.posttest_learner:
        _posttest_validity(console, req, inputs, endpoints.learner_factory(inputs.cfg))
        return
    opts = EvalOptions(
        asked=replace(req.scoring, evaluator=evaluator), judge=True, default_concurrency=inputs.cfg.concurrency
    )  # as `evaluate`: the run's evaluator and endpoint, else --evaluator

    def warn(msg: str) -> None:
        console.print("warning: " + msg, highlight=False, soft_wrap=True, markup=False)

    ev = Evaluation(opts, [], list(inputs.rubric_set), inputs.rubric_set, endpoints.make_llm, warn)
    spec = endpoints.resolve_one(ev, inputs.sources, _different_evaluators)
    if req.pairwise:
        llm = endpoints.make_llm(spec)
        _pairwise(console, req, inputs, spec, llm, judge_concurrency(opts, llm))
    else:
        _absolute(console, req, inputs, spec, ev.judge_for(spec))


def _absolute(console: Any, req: JudgeCheckRequest, inputs: CheckInputs, spec: str, judge: Any) -> None:
    """judge-check: originals (twice) and perturbed copies scored by the absolute judge, then analysed."""
    out = Path(req.out)
    stats = CheckStats()
    rubric_names = list(inputs.rubric_set)
    jobs = plan(inputs.convs, inputs.perts, rubric_names, stats)
    desc = judge.label + (f", prompt {judge.prompt_name}" if judge.prompt_name else "")
    console.print(
        f"judge-check: {len(inputs.convs)} conversations, {len(inputs.perts)} perturbations, judge {spec} ({desc}): "
        f"{len(jobs)} judge passes",
        highlight=False,
        markup=False,
    )
    with (
        JudgeLoop() as loop,
        resumable(JudgeCheckError, out / JUDGMENTS),
        locked_out(out, "another 'wikihowagent judge-check'", JUDGE_CHECK_LOCK),
        progress_bar(console, len(jobs), "judging originals and perturbed copies") as advance,
    ):
        loop.run(run_jobs(jobs, judge, spec, out / JUDGMENTS, advance, stats))
    conv_ids = {c.conversation_id for c in inputs.convs}
    res = analyse(
        out, inputs.perts, rubric_names, spec, judge.label, conv_ids, stats, req.figures, prompt=judge.prompt_name
    )
    console.print(
        f"{stats.judged} judge passes made, {stats.already} already done; {stats.failures} of "
        f"{stats.rubric_scores} rubric scores failed (calls, parse, low digit mass); "
        f"mean accuracy over targeted cells: {res.mean_accuracy:.3f}",
        highlight=False,
        markup=False,
    )
    console.print("wrote " + ", ".join(str(p) for p in res.written), highlight=False, markup=False)
    if stats.rubric_scores and stats.failures == stats.rubric_scores:
        raise JudgeCheckError("the judge failed on every rubric: no sensitivity could be measured")


def _different_evaluators(by_source: dict[str, str]) -> JudgeCheckError:
    return JudgeCheckError(
        f"the inputs name different evaluators ({', '.join(sorted(set(by_source.values())))}): pass --evaluator SPEC"
    )


def _pairwise(console: Any, req: JudgeCheckRequest, inputs: CheckInputs, spec: str, llm: Any, concurrency: int) -> None:
    """judge-check --pairwise: original vs perturbed copy, both orders, the perturbation's target rubrics."""
    out, rubric_set, convs, perts = Path(req.out), inputs.rubric_set, inputs.convs, inputs.perts
    try:
        check_tie_band(req.tie_band)
        judge = PairwiseJudge(
            llm,
            rubric_set,
            list(rubric_set),
            reading=req.pairwise_reading,
            retries=req.scoring.retries,
            concurrency=concurrency,
        )
    except ValueError as exc:
        raise JudgeCheckError(f"evaluator {spec!r}: {exc}") from None
    stats = CheckStats()
    jobs = plan_pairwise(convs, perts, list(rubric_set), stats)
    passes = PassStats()
    path = out / PAIR_JUDGMENTS
    with JudgeLoop() as loop, resumable(JudgeCheckError, path):
        loop.run(judge.probe())
        console.print(
            f"judge-check --pairwise: {len(convs)} conversations, {len(perts)} perturbations, judge {spec} "
            f"(pairwise, {judge.label}): {len(jobs)} judge passes (both orders), "
            f"{sum(len(j.names) for j in jobs)} verdicts",
            highlight=False,
            markup=False,
        )
        console.print(reading_note(judge.label), highlight=False, markup=False)
        with locked_out(out, "another 'wikihowagent judge-check'", JUDGE_CHECK_LOCK):
            todo = pending(jobs, read_pair_judgments([path], spec, judge.label))
            passes.already = len(jobs) - len(todo)
            with progress_bar(
                console, len(jobs), "judging originals against perturbed copies (both orders)"
            ) as advance:
                advance(passes.already)
                loop.run(run_pair_jobs(todo, judge, spec, path, advance, passes))
    stats.rubric_scores, stats.failures = passes.asked, passes.failures
    res = analyse_pairwise(
        out,
        read_pair_judgments([path], spec, judge.label),
        perts,
        list(rubric_set),
        spec,
        judge.label,
        {c.conversation_id for c in convs},
        stats,
        figures=req.figures,
        tie_band=req.tie_band,
    )
    console.print(
        f"{passes.judged} judge passes made, {passes.already} already done; {passes.failures} of {passes.asked} "
        f"verdicts unreadable; position consistency {res.position_consistency:.3f}; mean accuracy over "
        "targeted cells (95 % CI over conversations): " + "; ".join(m.text() for m in res.modes),
        highlight=False,
        markup=False,
    )
    console.print("wrote " + ", ".join(str(p) for p in res.written), highlight=False, markup=False)
    console.print(res.recommendation, highlight=False, markup=False)
    if passes.asked and passes.failures == passes.asked:
        raise JudgeCheckError("the judge gave no readable verdict: no sensitivity could be measured")


def load_tutorial_sets(paths: tuple[Path, ...] | list[Path], console: Any) -> dict[str, list[Any]]:
    """`--tutorials PATH...` -> {set name: its tutorials}; the name is the folder's (or file's) name, the path
    when two share one. A tutorial outside 2..30 steps is a one-line error naming its file and method (a
    validity tutorial, corpus/counterfactual.py); methods the loader skips (one step) are said."""
    names = [Path(p).name or str(p) for p in paths]
    out: dict[str, list[Any]] = {}
    for p, name in zip(paths, names, strict=True):
        report = LoadReport()
        try:
            tuts = load_tutorials(Path(p), report=report)
            for t in tuts:
                check_steps(t.source_tutorial_path, t.method_title, len(t.steps))
        except (TutorialError, ValiditySetError) as exc:
            raise JudgeCheckError(f"--tutorials: {exc}") from None
        if report.skipped:
            console.print(f"--tutorials {p}: {report.summary()}", highlight=False, markup=False)
        out[str(p) if names.count(name) > 1 else name] = tuts
    return out


def _posttest_validity(
    console: Any, req: JudgeCheckRequest, inputs: CheckInputs, make_learner: Callable[[str], Any]
) -> None:
    """judge-check --posttest-learner: post-tests on originals and skip_steps / off_topic copies (per tutorial
    set with --tutorials)."""
    convs, perts, out, spec = inputs.convs, inputs.perts, Path(req.out), str(req.scoring.posttest_learner)
    check = posttest_check.PostTestCheck()
    sets = _tutorial_sets_taught(convs, inputs.tutorial_sets)
    jobs = posttest_check.variants(convs, perts, check, sets)
    if not any(v != "original" for v, _ in jobs):
        raise JudgeCheckError(
            "judge-check --posttest-learner: no skip_steps / off_topic perturbation applies "
            "(the perturbation file needs one of these kinds)"
        )
    console.print(
        f"judge-check --posttest-learner: {len(convs)} conversations, {len(jobs)} post-tests "
        f"(originals, skip_steps, off_topic), learner {spec}, prompt {inputs.test_prompt.name}",
        highlight=False,
        markup=False,
    )
    opts = EvalOptions(asked=req.scoring, default_concurrency=inputs.cfg.concurrency)
    tests = _take_posttests(
        console, jobs, make_learner, spec, out, inputs.test_prompt, check, req.scoring.posttest_likelihood, opts
    )
    recalls = posttest_check.step_recalls(convs, tests, check, req.device)
    per_test = {"abstained": posttest_check.abstained_shares(tests), "coverage": posttest_check.coverages(jobs)}
    table = posttest_check.validity_table(recalls, perts, posttest_check.judge_accuracy(out), per_test)
    by_set = posttest_check.validity_by_set(recalls, perts, sets, per_test) if sets else None
    lik_table = lik_by_set = None
    if req.scoring.posttest_likelihood:
        gains = posttest_check.likelihood_gains(convs, tests)
        coverage = {"coverage": per_test["coverage"]}  # the same copies: did they remove teaching?
        lik_table = posttest_check.validity_table(gains, perts, None, coverage)
        lik_by_set = posttest_check.validity_by_set(gains, perts, sets, coverage) if sets else None
    written = posttest_check.write_validity(
        out,
        table,
        f"{spec}, post-test prompt {inputs.test_prompt.name}"
        + (f", Step Recall's encoder on {req.device}" if req.device not in ("cpu", "auto") else ""),
        len(convs),
        check,
        by_set,
        lik_table,
        lik_by_set,
    )
    _print_validity(console, table, by_set, lik_table if lik_by_set is None else lik_by_set, lik_by_set is not None)
    if req.scoring.posttest_likelihood:
        console.print(
            f"likelihood post-tests: {check.likelihoods} taken, {check.likelihood_failed} could not be read",
            highlight=False,
            markup=False,
        )
    console.print(
        f"post-tests: {check.taken} taken, {check.reused} reused, {check.failed} not a step list; wrote "
        + ", ".join(str(p) for p in written),
        highlight=False,
        markup=False,
    )


def _tutorial_sets_taught(convs: list[Conversation], tutorial_sets: dict[str, list[Any]]) -> dict[str, str] | None:
    """--tutorials: {conversation id: its tutorial set} (None without sets); a set no conversation teaches is a
    one-line error."""
    sets = posttest_check.tutorial_sets(convs, tutorial_sets) if tutorial_sets else None
    for name, tuts in tutorial_sets.items():
        if name not in (sets or {}).values():
            raise JudgeCheckError(
                f"--tutorials {name}: none of the {len(convs)} conversations teaches one of its "
                f"{len(tuts)} tutorials (generate --tutorials {name} makes some)"
            )
    return sets


def _take_posttests(
    console: Any,
    jobs: list[Any],
    make_learner: Callable[[str], Any],
    spec: str,
    out: Path,
    prompt: Any,
    check: Any,
    with_likelihood: bool,
    opts: EvalOptions,
) -> Any:
    """The post-tests of `jobs` (resumable, under OUT's lock), with the likelihood post-test when asked, as many
    at once as the learner takes (`judge_concurrency`'s rule: --concurrency, else the embedded model's slots)."""
    with JudgeLoop() as loop, resumable(JudgeCheckError, out / POSTTESTS, "post-tests", also=(EvaluateError,)):
        try:
            with (
                locked_out(out, "another 'wikihowagent judge-check'", JUDGE_CHECK_LOCK),
                post_tester(make_learner(spec), spec, out, prompt) as tester,
            ):
                taker = None
                if with_likelihood:
                    reader = for_chat_model(tester.model)
                    taker = LikelihoodTaker(reader)
                    console.print(
                        f"likelihood post-test: {reader.transport} on {reader.root}", highlight=False, markup=False
                    )
                with progress_bar(console, len(jobs), "post-tests of originals and perturbed copies") as advance:
                    take = posttest_check.take_posttests(
                        jobs,
                        tester,
                        spec,
                        out / POSTTESTS,
                        advance,
                        check,
                        taker,
                        judge_concurrency(opts, tester.model),
                    )
                    tests = loop.run(take)
        except LikelihoodError as exc:
            raise JudgeCheckError(f"--posttest-likelihood: {exc}") from None
    return tests


def _print_validity(console: Any, table: Any, by_set: Any, lik_rows: Any, lik_by_set: bool) -> None:
    """One line per perturbation (per tutorial set with --tutorials): the post-test's accuracy, and the
    Likelihood Gain's when measured."""
    import pandas as pd  # the tables are DataFrames: already loaded

    for row in (by_set if by_set is not None else table).itertuples(index=False):
        where = f"{row.tutorials}: " if by_set is not None else ""
        console.print(
            f"{where}{row.perturbation}: post-test recall lower than the original's in {row.lower} of "
            f"{row.n} pairs ({row.ties} ties), accuracy {row.accuracy} [{row.ci_low}, {row.ci_high}]"
            + (
                f"; teacher's Step Coverage {row.coverage_original:.2f} -> {row.coverage_perturbed:.2f}"
                if pd.notna(row.coverage_original)  # None or NaN: not recorded
                else ""
            ),
            highlight=False,
            markup=False,
        )
    for row in lik_rows.itertuples(index=False) if lik_rows is not None else ():
        where = f"{row.tutorials}: " if lik_by_set else ""
        console.print(
            f"{where}{row.perturbation}: Likelihood Gain lower than the original's in {row.lower} of "
            f"{row.n} pairs, accuracy {row.accuracy} [{row.ci_low}, {row.ci_high}]",
            highlight=False,
            markup=False,
        )
