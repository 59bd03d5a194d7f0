"""`wikihowagent judge-check`: the typer command (registered by wikihowagent/cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from wikihowagent.runs import JUDGE_CHECK_LOCK


def judge_check(
    runs: Annotated[list[Path], typer.Argument(help="Run directories, paper run files or JSONL of records.",
                                               show_default=False, metavar="RUN")],
    out: Annotated[Path, typer.Option(help="Output directory: judgments.jsonl, sensitivity.csv, consistency.csv, summary.md, sensitivity.png.")],
    evaluator: Annotated[Optional[list[str]], typer.Option(metavar="SPEC", help="Judge model spec (default: as `evaluate`: the run's evaluator, else its teacher). Repeatable: a panel; each judge is checked into OUT/<judge>/ and the panel (the mean of their scores) into OUT/panel/.")] = None,
    judge_scoring: Annotated[Optional[str], typer.Option(metavar="weighted|json|sampled", help="Scoring mode (default: as `evaluate`).")] = None,
    judge_rationale: Annotated[bool, typer.Option("--judge-rationale", help="The judge writes its analysis first (weighted/sampled).")] = False,
    judge_prompt: Annotated[Optional[str], typer.Option(metavar="NAME", help="Judge prompt variant of data/judge_prompts.json (default: as `evaluate`).")] = None,
    perturbations: Annotated[Optional[Path], typer.Option(help="Perturbation file (default: data/perturbations.json).")] = None,
    rubrics: Annotated[Optional[Path], typer.Option(help="Rubric JSON file (default: data/rubrics.json).")] = None,
    max_conversations: Annotated[Optional[int], typer.Option(min=2, help="Use the first N conversations.")] = None,
    config: Annotated[Optional[Path], typer.Option(help="YAML config overriding configs/default.yaml.")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="Ollama host / OpenAI-compatible base URL for the evaluator.")] = None,
    concurrency: Annotated[Optional[int], typer.Option(min=1, help="Judge passes in flight (default: the embedded judge's server slots, local.n_parallel; else the config's concurrency).")] = None,
    retries: Annotated[int, typer.Option(min=0, help="Re-asks of the judge when a reply cannot be parsed.")] = 2,
    no_figures: Annotated[bool, typer.Option("--no-figures", help="Skip the heatmap.")] = False,
    pairwise: Annotated[bool, typer.Option("--pairwise", help="Judge each perturbed copy against its original head to head, in both orders (the `compare` judge), on the perturbation's target rubrics: pairwise_sensitivity.csv, pairwise_summary.md, next to the absolute judge's accuracy when judgments.jsonl has it.")] = False,
    pairwise_reading: Annotated[Optional[str], typer.Option(metavar="logprobs|answer", help="With --pairwise: P(A) from the A/B token log-probabilities (default where available) or the letter only.")] = None,
    posttest_learner: Annotated[Optional[str], typer.Option(metavar="SPEC", help="Instead of judging: the post-test's validity. This learner model takes the post-test on each original and its skip_steps / off_topic copies; their Step Recall must drop: posttest_validity.csv/.md (beside the judge's accuracy when this directory has it), posttests.jsonl.")] = None,
) -> None:
    """Meta-evaluate the rubric judge without human labels: perturbed conversations that should score lower
    (sensitivity) and the originals judged twice (self-consistency)."""
    from wikihowagent.console import make_console, print_labeled

    console = make_console()
    specs = list(dict.fromkeys(evaluator or []))
    try:
        if len(specs) > 1:
            code = _judge_panel(console, specs, runs, out, judge_scoring, judge_rationale, perturbations, rubrics,
                                max_conversations, config, base_url, concurrency, retries, no_figures, pairwise,
                                judge_prompt)
        else:
            code = _judge_check(console, runs, out, specs[0] if specs else None, judge_scoring, judge_rationale,
                                perturbations, rubrics, max_conversations, config, base_url, concurrency, retries,
                                no_figures, pairwise, pairwise_reading, judge_prompt, posttest_learner)
    except KeyboardInterrupt:
        print_labeled(console, "interrupted:", "yellow", "judgments written so far are kept; rerun the same command to resume")
        raise typer.Exit(130) from None
    if code:
        raise typer.Exit(code)


def _judge_panel(console, specs, runs, out, judge_scoring, judge_rationale, perturbations_path, rubrics_path,
                 max_conversations, config, base_url, concurrency, retries, no_figures, pairwise,
                 judge_prompt=None) -> int:
    """Each judge into OUT/<judge>/, then the panel of their mean scores into OUT/panel/."""
    from wikihowagent.evaluation.judge import RubricError, load_rubrics
    from wikihowagent.evaluation.panel import judge_slug

    from .core import CheckStats, analyse
    from .panel import PANEL_DIR, combine_judgments
    from .perturbations import PerturbationError, load_perturbations

    if pairwise:
        return _fail(console, "--pairwise compares one judge's verdicts; give one --evaluator")
    out = Path(out)
    accuracy = {}
    for spec in specs:
        console.print(f"panel judge {spec} -> {out / judge_slug(spec)}", highlight=False, markup=False)
        code = _judge_check(console, runs, out / judge_slug(spec), spec, judge_scoring, judge_rationale,
                            perturbations_path, rubrics_path, max_conversations, config, base_url, concurrency,
                            retries, no_figures, judge_prompt=judge_prompt)
        if code:
            return code
    try:
        rubric_set = load_rubrics(rubrics_path)
        perts = load_perturbations(perturbations_path, list(rubric_set))
    except (RubricError, PerturbationError) as exc:
        return _fail(console, str(exc))
    name, label, ids, n = combine_judgments(out, specs)
    for spec in specs:
        accuracy[spec] = analyse(out / judge_slug(spec), perts, list(rubric_set), spec,
                                 _scoring_of(out / judge_slug(spec), spec), ids, CheckStats(),
                                 figures=False).mean_accuracy
    res = analyse(out / PANEL_DIR, perts, list(rubric_set), name, label, ids, CheckStats(), figures=not no_figures)
    console.print("mean accuracy over targeted cells: " + ", ".join(f"{s} {a:.3f}" for s, a in accuracy.items())
                  + f"; panel (mean of {len(specs)}) {res.mean_accuracy:.3f}", highlight=False, markup=False)
    console.print(f"panel: {n} judgments -> " + ", ".join(str(p) for p in res.written), highlight=False, markup=False)
    return 0


def _scoring_of(out: Path, spec: str) -> str:
    from wikihowagent.runs import JUDGMENTS, read_judgment_table

    m = read_judgment_table(out / JUDGMENTS).meta
    found = [sc for ev, sc in zip(m["evaluator"], m["scoring"]) if ev == spec]
    return found[-1] if found else ""


def _fail(console: Any, msg: str) -> int:
    from wikihowagent.console import print_error

    print_error(msg, console)
    return 2


def _judge_check(console, runs, out, evaluator, judge_scoring, judge_rationale, perturbations_path, rubrics_path,
                 max_conversations, config, base_url, concurrency, retries, no_figures, pairwise=False,
                 pairwise_reading=None, judge_prompt=None, posttest_learner=None) -> int:
    import asyncio

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from wikihowagent.config import ConfigError, load_config
    from wikihowagent.evaluation.core import judge_llm_factory
    from wikihowagent.evaluation.endpoints import judge_base_urls
    from wikihowagent.evaluation.inputs import InputError, resolve_inputs
    from wikihowagent.evaluation.judge import JudgeBackendError, RubricError, load_rubrics
    from wikihowagent.evaluation.runner import EvalOptions, Evaluation, EvaluateError
    from wikihowagent.evaluation.scoring import SCORING_MODES
    from wikihowagent.runs import RunError, dir_lock

    from .core import JUDGMENTS, CheckStats, analyse, plan, run_jobs
    from .perturbations import PerturbationError, load_perturbations

    if judge_scoring is not None and judge_scoring not in SCORING_MODES:
        return _fail(console, f"--judge-scoring: unknown mode {judge_scoring!r}; valid: {', '.join(SCORING_MODES)}")
    try:
        cfg = load_config(config)
        rubric_set = load_rubrics(rubrics_path)
        perts = load_perturbations(perturbations_path, list(rubric_set))
        sources = resolve_inputs(list(runs), Path(cfg.runs_dir))
    except (ConfigError, RubricError, PerturbationError, InputError) as exc:
        return _fail(console, str(exc))

    def warn(msg: str) -> None:
        console.print("warning: " + msg, highlight=False, soft_wrap=True, markup=False)

    convs = []
    for src in sources:
        for c in src.conversations(on_error=warn):
            convs.append((src, c))
            if max_conversations and len(convs) >= max_conversations:
                break
        if max_conversations and len(convs) >= max_conversations:
            break
    if len(convs) < 2:
        return _fail(console, f"{', '.join(str(s.path) for s in sources)}: judge-check needs at least 2 conversations "
                              f"(found {len(convs)})")
    if posttest_learner:
        from wikihowagent.evaluation.core import judge_llm_factory as factory

        make_learner = factory(cfg, base_url, Path(cfg.models) if cfg.models else None, None, "--posttest-learner",
                               "choose another model spec")
        return _posttest_validity(console, [c for _, c in convs], perts, posttest_learner, make_learner, Path(out))
    opts = EvalOptions(judge=True, evaluator=evaluator, base_url=base_url, concurrency=concurrency,
                       default_concurrency=cfg.concurrency,
                       retries=retries, scoring=judge_scoring, rationale=judge_rationale, prompt=judge_prompt)
    aliases = Path(cfg.models) if cfg.models else None
    judge_urls: dict[str, str | None] = {}
    make_llm = judge_llm_factory(cfg, base_url, aliases, judge_urls)
    ev = Evaluation(opts, [], list(rubric_set), rubric_set, make_llm, warn)
    try:
        by_source = {s.name: ev.evaluator_spec(s) for s in sources}
        judge_urls.update(judge_base_urls(by_source, sources, base_url, aliases))
        specs = set(by_source.values())
        if len(specs) != 1:
            return _fail(console, f"the inputs name different evaluators ({', '.join(sorted(map(str, specs)))}): "
                                  "pass --evaluator SPEC")
        spec = specs.pop()
        if pairwise:
            from wikihowagent.evaluation.runner import judge_concurrency

            llm = make_llm(spec)
            return _pairwise(console, [c for _, c in convs], perts, rubric_set, spec, llm, Path(out),
                             pairwise_reading, retries, judge_concurrency(opts, llm), no_figures)
        judge = ev.judge_for(spec)
    except EvaluateError as exc:
        return _fail(console, str(exc))
    out = Path(out)
    stats = CheckStats()
    jobs = plan([c for _, c in convs], perts, list(rubric_set), stats)
    desc = judge.label + (f", prompt {judge.prompt_name}" if judge.prompt_name else "")
    console.print(f"judge-check: {len(convs)} conversations, {len(perts)} perturbations, judge {spec} ({desc}): "
                  f"{len(jobs)} judge passes", highlight=False, markup=False)
    loop = asyncio.new_event_loop()
    try:
        out.mkdir(parents=True, exist_ok=True)
        with dir_lock(out, blocking=False, what="another 'wikihowagent judge-check'", name=JUDGE_CHECK_LOCK), \
                Progress(TextColumn("{task.description}", markup=False, style="bold"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                         TimeRemainingColumn(), console=console) as prog:
            task = prog.add_task("judging originals and perturbed copies", total=len(jobs))
            loop.run_until_complete(run_jobs(jobs, judge, spec, out / JUDGMENTS, lambda n: prog.advance(task, n), stats))
    except (JudgeBackendError, RunError, OSError) as exc:
        return _fail(console, f"{exc} (judgments so far are in {out / JUDGMENTS}; rerun to resume)")
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    res = analyse(out, perts, list(rubric_set), spec, judge.label, {c.conversation_id for _, c in convs}, stats,
                  figures=not no_figures, prompt=judge.prompt_name)
    console.print(f"{stats.judged} judge passes made, {stats.already} already done; {stats.failures} of "
                  f"{stats.rubric_scores} rubric scores failed (calls, parse, low digit mass); "
                  f"mean accuracy over targeted cells: {res.mean_accuracy:.3f}", highlight=False, markup=False)
    console.print("wrote " + ", ".join(str(p) for p in res.written), highlight=False, markup=False)
    if stats.rubric_scores and stats.failures == stats.rubric_scores:
        return _fail(console, "the judge failed on every rubric: no sensitivity could be measured")
    return 0


def _pairwise(console, convs, perts, rubric_set, spec, llm, out, reading, retries, concurrency, no_figures) -> int:
    """judge-check --pairwise: original vs perturbed copy, both orders, the perturbation's target rubrics."""
    import asyncio

    from wikihowagent.compare.core import PassStats, pending, read_records, reading_note, run_pair_jobs
    from wikihowagent.compare.pairwise import PairwiseJudge
    from wikihowagent.evaluation.judge import JudgeBackendError
    from wikihowagent.evaluation.runner import cancel_leftover_tasks
    from wikihowagent.console import progress_bar
    from wikihowagent.runs import PAIR_JUDGMENTS, RunError, dir_lock

    from .core import CheckStats, analyse_pairwise, plan_pairwise

    try:
        judge = PairwiseJudge(llm, rubric_set, list(rubric_set), reading=reading, retries=retries, concurrency=concurrency)
    except ValueError as exc:
        return _fail(console, f"evaluator {spec!r}: {exc}")
    stats = CheckStats()
    jobs = plan_pairwise(convs, perts, list(rubric_set), stats)
    passes = PassStats()
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(judge.probe())
        console.print(f"judge-check --pairwise: {len(convs)} conversations, {len(perts)} perturbations, judge {spec} "
                      f"(pairwise, {judge.label}): {len(jobs)} judge passes (both orders), "
                      f"{sum(len(j.names) for j in jobs)} verdicts", highlight=False, markup=False)
        console.print(reading_note(judge.label), highlight=False, markup=False)
        out.mkdir(parents=True, exist_ok=True)
        path = out / PAIR_JUDGMENTS
        with dir_lock(out, blocking=False, what="another 'wikihowagent judge-check'", name=JUDGE_CHECK_LOCK):
            todo = pending(jobs, read_records([path], spec, judge.label))
            passes.already = len(jobs) - len(todo)
            with progress_bar(console, len(jobs), "judging originals against perturbed copies (both orders)") as advance:
                advance(passes.already)
                loop.run_until_complete(run_pair_jobs(todo, judge, spec, path, advance, passes))
    except (JudgeBackendError, RunError, OSError) as exc:
        return _fail(console, f"{exc} (judgments so far are in {out / PAIR_JUDGMENTS}; rerun to resume)")
    finally:
        cancel_leftover_tasks(loop)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    stats.rubric_scores, stats.failures = passes.asked, passes.failures
    res = analyse_pairwise(out, read_records([out / PAIR_JUDGMENTS], spec, judge.label), perts, list(rubric_set), spec,
                           judge.label, {c.conversation_id for c in convs}, stats, figures=not no_figures)
    console.print(f"{passes.judged} judge passes made, {passes.already} already done; {passes.failures} of {passes.asked} "
                  f"verdicts unreadable; mean accuracy over targeted cells: {res.mean_accuracy:.3f}, position "
                  f"consistency {res.position_consistency:.3f}"
                  + (f" (absolute judge on the same cells: {res.absolute_mean_accuracy:.3f})"
                     if res.absolute_mean_accuracy == res.absolute_mean_accuracy else ""), highlight=False, markup=False)
    console.print("wrote " + ", ".join(str(p) for p in res.written), highlight=False, markup=False)
    if passes.asked and passes.failures == passes.asked:
        return _fail(console, "the judge gave no readable verdict: no sensitivity could be measured")
    return 0


def _posttest_validity(console, convs, perts, spec, make_learner, out) -> int:
    """judge-check --posttest-learner: post-tests on originals and skip_steps / off_topic copies."""
    import asyncio

    from wikihowagent.console import progress_bar
    from wikihowagent.evaluation.runner import EvaluateError, cancel_leftover_tasks
    from wikihowagent.runs import POSTTESTS, PretestCache, RunError, dir_lock
    from wikihowagent.workflow.posttest import PostTester

    from .posttest_check import (PostTestCheck, judge_accuracy, step_recalls, take_posttests, validity_table, variants,
                                 write_validity)

    check = PostTestCheck()
    jobs = variants(convs, perts, check)
    if not any(v != "original" for v, _ in jobs):
        return _fail(console, "judge-check --posttest-learner: no skip_steps / off_topic perturbation applies "
                              "(the perturbation file needs one of these kinds)")
    console.print(f"judge-check --posttest-learner: {len(convs)} conversations, {len(jobs)} post-tests "
                  f"(originals, skip_steps, off_topic), learner {spec}", highlight=False, markup=False)
    loop = asyncio.new_event_loop()
    try:
        out.mkdir(parents=True, exist_ok=True)
        with dir_lock(out, blocking=False, what="another 'wikihowagent judge-check'", name=JUDGE_CHECK_LOCK):
            tester = PostTester(make_learner(spec), spec, PretestCache(out))
            with progress_bar(console, len(jobs), "post-tests of originals and perturbed copies") as advance:
                tests = loop.run_until_complete(take_posttests(jobs, tester, spec, out / POSTTESTS, advance, check))
    except (EvaluateError, RunError, OSError) as exc:
        return _fail(console, f"{exc} (post-tests so far are in {out / POSTTESTS}; rerun to resume)")
    finally:
        cancel_leftover_tasks(loop)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    table = validity_table(step_recalls(convs, tests, check), perts, judge_accuracy(out))
    written = write_validity(out, table, spec, len(convs), check)
    for row in table.itertuples(index=False):
        console.print(f"{row.perturbation}: post-test recall lower than the original's in {row.lower} of {row.n} "
                      f"pairs ({row.ties} ties), accuracy {row.accuracy} [{row.ci_low}, {row.ci_high}]",
                      highlight=False, markup=False)
    console.print(f"post-tests: {check.taken} taken, {check.reused} reused, {check.failed} not a step list; wrote "
                  + ", ".join(str(p) for p in written), highlight=False, markup=False)
    return 0
