"""The `wikihowagent` command line (typer). Commands stay thin: each stage lives in its own module."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape

from wikihowagent.console import print_error

app = typer.Typer(
    help="Simulate teacher-learner conversations grounded in WikiHow tutorials, evaluate their pedagogic "
    "quality, and align LLM judges with human ratings.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console(stderr=True)

# The evaluation and alignment stages register their own commands (their modules import lazily).
from wikihowagent.alignment.command import align, annotate_export  # noqa: E402
from wikihowagent.evaluation.command import evaluate  # noqa: E402

app.command("evaluate")(evaluate)

annotate_app = typer.Typer(help="Annotation sheets for the human alignment study.", no_args_is_help=True)
annotate_app.command("export")(annotate_export)
app.add_typer(annotate_app, name="annotate")
app.command("align")(align)

from wikihowagent.sweep.command import sweep_app  # noqa: E402

app.add_typer(sweep_app, name="sweep")


def fail(message: str, code: int = 2) -> None:
    """Print one clear line and exit (no stack trace for expected problems)."""
    print_error(message, console)
    raise typer.Exit(code)


@app.command()
def generate(
    teacher: Annotated[str, typer.Option(help="Teacher model spec: local, an alias (openchat, qwen2, ...), ollama:<tag>, openai:<model>.")] = "local",
    learner: Annotated[Optional[str], typer.Option(help="Learner model spec (default: the teacher's: homogeneous setup).")] = None,
    evaluator: Annotated[Optional[str], typer.Option(help="Evaluator spec recorded for `evaluate` (default: the teacher's).")] = None,
    config: Annotated[Optional[Path], typer.Option(help="YAML config overriding configs/default.yaml.")] = None,
    tutorials: Annotated[Optional[Path], typer.Option(help="Article directory tree, JSON or JSONL file (default: the bundled sample).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Run directory (default: <runs_dir>/T-<teacher>_L-<learner>_E-<evaluator>).")] = None,
    max_tutorials: Annotated[Optional[int], typer.Option(min=1, help="Use the first N tutorials (deterministic order).")] = None,
    domain: Annotated[Optional[list[str]], typer.Option(help="Only tutorials of this domain (repeatable).")] = None,
    concurrency: Annotated[Optional[int], typer.Option(min=1, help="Conversations in flight.")] = None,
    max_interactions: Annotated[Optional[int], typer.Option(min=2, help="Cut a conversation after M messages (paper: 40).")] = None,
    history: Annotated[Optional[int], typer.Option(min=0, help="Show agents the last N messages (0 = the paper's prompts).")] = None,
    base_url: Annotated[Optional[list[str]], typer.Option(help="OpenAI-compatible server URL for openai: specs (e.g. vLLM); repeat for replicas of the model (least-busy routing).")] = None,
    temperature: Annotated[Optional[float], typer.Option(help="Sampling temperature (default 0).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Sampling seed.")] = None,
    max_tokens: Annotated[Optional[int], typer.Option(min=1, help="Max new tokens per reply.")] = None,
    timeout: Annotated[Optional[float], typer.Option(help="Request timeout in seconds.")] = None,
    retries: Annotated[Optional[int], typer.Option(min=0, help="Retries with backoff per request.")] = None,
    retry_failed: Annotated[bool, typer.Option(help="On resume, run failed conversations again.")] = True,
    skip_invalid: Annotated[bool, typer.Option(help="Skip (and list) bad articles instead of stopping.")] = False,
    shard: Annotated[Optional[str], typer.Option(help="K/N: run only every N-th tutorial starting at K (0-based; cluster array jobs) into <run>/shards/K-of-N; join them with `wikihowagent merge`.")] = None,
    preset: Annotated[Optional[str], typer.Option(help="'paper': the paper's prompts verbatim and decoding (max tokens 4096, temperature 0), under --config and flags.")] = None,
) -> None:
    """Simulate teacher-learner conversations over tutorials into a resumable run directory."""
    from wikihowagent.config import ConfigError, load_config
    from wikihowagent.tutorials import LoadReport, TutorialError, default_tutorials_path, load_tutorials

    learner = learner or teacher
    overrides = {
        "concurrency": concurrency,
        "model": {"temperature": temperature, "seed": seed, "max_tokens": max_tokens, "timeout_s": timeout,
                  "max_retries": retries},
        "workflow": {"max_interactions": max_interactions, "history": history},
    }
    from wikihowagent.presets import PresetError, preset_config

    try:
        cfg = load_config(config, overrides, preset=preset_config(preset))
    except (ConfigError, PresetError) as exc:
        fail(str(exc))
    source = tutorials or default_tutorials_path()
    report = LoadReport()
    try:
        selected = load_tutorials(source, domains=domain or (), max_tutorials=max_tutorials,
                                  clean_citations=cfg.workflow.strip_citations, skip_invalid=skip_invalid,
                                  report=report)
    except TutorialError as exc:
        fail(str(exc))
    for problem in report.invalid:
        console.print(f"[yellow]skipped:[/] {problem}", highlight=False)
    if not selected:
        fail(f"{source}: no tutorials with >= 2 steps" + (f" in domain(s) {', '.join(domain)}" if domain else ""))
    shard_kn = None
    if shard:
        from wikihowagent.generate import parse_shard

        try:
            shard_kn = parse_shard(shard)
        except ValueError as exc:
            fail(str(exc))
        selected = selected[shard_kn[0]::shard_kn[1]]
    code = _generate(cfg, teacher, learner, evaluator, selected, str(source), out, base_url, retry_failed,
                     {"max_tutorials": max_tutorials, "domains": domain or [], "shard": shard}, shard_kn)
    raise typer.Exit(code)


def _generate(cfg, teacher, learner, evaluator, selected, source, out, base_url, retry_failed, filters,
              shard_kn) -> int:
    from wikihowagent.backends import BackendError, resolve_spec, shutdown_local_servers
    from wikihowagent.backends.replicas import make_pooled_chat_model, role_endpoints
    from wikihowagent.config import ConfigError
    from wikihowagent.generate import default_run_name, shard_dir
    from wikihowagent.runs import RunError, dir_lock
    from wikihowagent.workflow.graph import WorkflowOptions
    from wikihowagent.workflow.prompts import load_prompts

    try:
        prompts = load_prompts(cfg.prompts or None)
        aliases = Path(cfg.models) if cfg.models else None
        resolved = {}
        urls = {}  # --base-url is for openai: specs; an Ollama or local role keeps its own endpoint(s)
        for role, spec in (("teacher", teacher), ("learner", learner)):
            resolved[role] = resolve_spec(spec, aliases)
            urls[role] = role_endpoints(spec, base_url, aliases)
            _check_replicas(resolved[role], urls[role])
    except (BackendError, ConfigError) as exc:
        fail(str(exc))
    options = WorkflowOptions(max_interactions=cfg.workflow.max_interactions, history=cfg.workflow.history,
                              learner_farewell=cfg.workflow.learner_farewell)
    name = out.name if out else default_run_name(teacher, learner, evaluator)
    run_dir = out or Path(cfg.runs_dir) / name
    if shard_kn is not None:  # shards keep the run's name, so conversation ids do not depend on sharding
        run_dir = shard_dir(run_dir, *shard_kn)
    # What the conversations depend on; transport settings (timeout, retries, slots, concurrency) may change
    # between invocations, e.g. a longer --timeout to finish the conversations that timed out.
    fingerprint = {
        "teacher": teacher, "learner": learner, "evaluator": evaluator or teacher,
        "model": cfg.model.model_dump(exclude={"timeout_s", "max_retries"}), "workflow": cfg.workflow.model_dump(),
        "prompts": prompts.model_dump(), "tutorials_source": source,
    }
    if any(r.provider == "local" for r in resolved.values()):
        fingerprint["local"] = cfg.local.model_dump(include={"max_tokens", "n_ctx"})
    endpoints = {k: v.model_dump() | ({"base_url": urls[k][0]} if urls[k] else {})
                 | ({"base_urls": urls[k]} if urls[k] and len(urls[k]) > 1 else {}) for k, v in resolved.items()}
    try:
        # One `generate` per run directory at a time: two appenders (e.g. an overlapping requeue) would
        # run the same tutorials and lose records when one rewrites the file under the other.
        with dir_lock(run_dir, blocking=False, what="another 'wikihowagent generate'"):
            models = {}

            def model_for(role: str):
                spec = teacher if role == "teacher" else learner
                if spec not in models:  # homogeneous: one model object for both roles
                    models[spec] = make_pooled_chat_model(
                        spec, cfg.model, cfg.local, urls[role], aliases_path=aliases, pool_settings=cfg.replicas,
                        on_event=lambda m: console.print(f"note: {m}", highlight=False, markup=False))
                return models[spec]

            try:
                return _run_generation(cfg, run_dir, name, fingerprint, endpoints, selected, source, filters,
                                       retry_failed, options, prompts, teacher, learner, model_for)
            finally:
                shutdown_local_servers()
    except (RunError, BackendError) as exc:
        fail(str(exc))


def _check_replicas(resolved, urls) -> None:
    """Every endpoint is checked; unreachable replicas are reported and left to the pool (it rests them and
    probes them again), as long as one answers."""
    from wikihowagent.backends import BackendError, check_backend

    errors = []
    for url in urls or [None]:
        try:
            check_backend(resolved, url)
        except BackendError as exc:
            errors.append(exc)
    if len(errors) == len(urls or [None]):
        raise errors[0]
    for exc in errors:
        console.print(f"warning: a replica is not answering; going on with the others: {exc}", highlight=False,
                      markup=False)


def _run_generation(cfg, run_dir, name, fingerprint, endpoints, selected, source, filters, retry_failed, options,
                    prompts, teacher, learner, model_for) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from wikihowagent.generate import RunStats, finish_run_info, now, prepare_run_dir, run_conversations, run_info
    from wikihowagent.runs import CONVERSATIONS, RUN_INFO, write_json_atomic

    done_ids, previous = prepare_run_dir(run_dir, fingerprint, retry_failed)
    todo = [t for t in selected if t.tutorial_id not in done_ids]
    stats = RunStats(total=len(selected), already_done=len(selected) - len(todo))
    console.print(f"run [bold]{run_dir}[/]: {len(selected)} tutorials, {stats.already_done} already done, "
                  f"{len(todo)} to go (teacher={teacher}, learner={learner}, concurrency={cfg.concurrency})",
                  highlight=False)
    teacher_model, learner_model = (model_for("teacher"), model_for("learner")) if todo else (None, None)
    info = run_info(name, fingerprint, cfg, endpoints, source, previous.get("started_at") or now(), filters)
    if previous:
        info["resumed_at"] = now()
    write_json_atomic(run_dir / RUN_INFO, info)
    interrupted = False
    try:
        if todo:
            progress = Progress(
                TextColumn("[bold]generate"), BarColumn(), MofNCompleteColumn(),
                TextColumn("ok {task.fields[ok]} · failed {task.fields[failed]} · {task.fields[tokens]} tokens"),
                TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console,
            )
            with progress:
                task = progress.add_task("generate", total=len(todo), ok=0, failed=0, tokens=0)

                def on_done(record) -> None:  # `stats` is updated in place before this is called
                    progress.update(task, advance=1, ok=stats.done, failed=stats.failed,
                                    tokens=stats.completion_tokens)

                asyncio.run(run_conversations(
                    todo, teacher_model, learner_model, prompts, options, run_dir / CONVERSATIONS,
                    run_name=name, teacher=teacher, learner=learner, concurrency=cfg.concurrency,
                    on_done=on_done, stats=stats,
                ))
    except KeyboardInterrupt:
        interrupted = True
        console.print("interrupted: finished conversations are saved; rerun the same command to resume")
        return 130
    finally:
        # Also after Ctrl-C or an unexpected error: run.json never stays "running".
        finish_run_info(run_dir, info, stats, interrupted=interrupted)
    for err in stats.errors[:10]:
        console.print(f"[red]failed:[/] {err}", highlight=False)
    counts = info["counts"]
    console.print(
        f"[bold]{run_dir / CONVERSATIONS}[/]: {counts['conversations']} conversations "
        f"({counts['finished']} finished, {counts['max_interactions']} cut at {options.max_interactions} messages, "
        f"{counts['failed']} failed); this run: {stats.done} done, {stats.failed} failed, "
        f"{stats.completion_tokens} tokens generated", highlight=False)
    return 1 if counts["failed"] else 0


@app.command()
def merge(
    run_dir: Annotated[Path, typer.Argument(help="A run directory whose shards/ were produced with --shard K/N.")],
) -> None:
    """Merge the shards of a cluster run (conversations, and scores of `evaluate --shard`; no duplicates).

    Refuses in one line if a shard 0..N-1 is missing or was made with other settings."""
    from wikihowagent.evaluation.shards import SHARDS_DIR, merge_score_shards
    from wikihowagent.generate import merge_shards
    from wikihowagent.runs import RunError

    scores = (run_dir / SHARDS_DIR).is_dir()
    try:
        if (run_dir / "shards").is_dir() or not scores:
            counts = merge_shards(run_dir)
            console.print(f"{run_dir}: merged {counts['shards']} shards into {counts['conversations']} conversations "
                          f"({counts['finished']} finished, {counts['failed']} failed)", highlight=False, markup=False)
        if scores:
            counts = merge_score_shards(run_dir)
            console.print(f"{run_dir}: merged {counts['shards']} score shards into {counts['scores']} score records",
                          highlight=False, markup=False)
    except RunError as exc:
        fail(escape(str(exc)))


@app.command()
def graph(
    max_interactions: Annotated[int, typer.Option(min=2)] = 40,
) -> None:
    """Print the conversation graph as a Mermaid diagram."""
    from wikihowagent.workflow.graph import WorkflowOptions, mermaid

    typer.echo(mermaid(WorkflowOptions(max_interactions=max_interactions)))


@app.command("tutorials")
def list_tutorials(
    tutorials: Annotated[Optional[Path], typer.Option(help="Article directory tree, JSON or JSONL file.")] = None,
    domain: Annotated[Optional[list[str]], typer.Option(help="Only this domain (repeatable).")] = None,
    max_tutorials: Annotated[Optional[int], typer.Option(min=1)] = None,
) -> None:
    """List the tutorials an input yields (id, domain, steps, title)."""
    from rich.table import Table

    from wikihowagent.tutorials import LoadReport, TutorialError, load_tutorials

    report = LoadReport()
    try:
        items = load_tutorials(tutorials, domains=domain or (), max_tutorials=max_tutorials, report=report)
    except TutorialError as exc:
        fail(str(exc))
    table = Table("tutorial_id", "domain", "steps", "title / method")
    for t in items:
        table.add_row(t.tutorial_id, t.domain, str(len(t.steps)), f"{t.title} / {t.method_title}")
    Console().print(table)
    console.print(f"{len(items)} tutorials from {report.articles} articles ({report.methods} methods; "
                  f"{report.skipped_short} with < 2 steps skipped)", highlight=False)


def main() -> None:
    try:
        app()
    except BrokenPipeError:  # `wikihowagent graph | head`
        sys.exit(0)


if __name__ == "__main__":
    main()
