"""`wikihowagent generate` and `wikihowagent merge`: the typer commands (registered by wikihowagent/cli.py).
They parse, call the stage (core.py, imported lazily) and print."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wikihowagent.console import (
    CLUSTER,
    CONVERSATION,
    INPUTS,
    MODELS,
    OUTPUT,
    POSTTEST,
    SELECTION,
    make_console,
    print_error,
    print_labeled,
)
from wikihowagent.corpus.command import DomainOpt, DomainsFileOpt, PerOpt, SampleOpt, SampleSeedOpt, TopicOpt
from wikihowagent.errors import WikihowagentError
from wikihowagent.layout import CONVERSATIONS
from wikihowagent.shards import merge_run

if TYPE_CHECKING:
    from rich.console import Console

    from .core import GenerateSummary


def _fail(message: str, code: int = 2) -> None:
    print_error(message)
    raise typer.Exit(code)


def _print_summary(summary: GenerateSummary, console: Console) -> None:
    """Print how the run ended (disk full, interrupted, or its counts) and exit with its code."""
    from rich.text import Text

    if summary.disk_full:  # the records written so far are whole; the same command resumes
        print_error(summary.disk_full, console)
        raise typer.Exit(summary.exit_code)
    if summary.interrupted:
        console.print("interrupted: finished conversations are saved; rerun the same command to resume")
        raise typer.Exit(summary.exit_code)
    stats, counts = summary.stats, summary.counts
    for err in stats.errors[:10]:
        print_labeled(console, "failed:", "red", err)
    console.print(
        Text.assemble(
            (str(summary.run_dir / CONVERSATIONS), "bold"),
            f": {counts['conversations']} conversations "
            f"({counts['finished']} finished, {counts['max_interactions']} cut at {summary.max_interactions} messages, "
            f"{counts['failed']} failed); this run: {stats.done} done, {stats.failed} failed, "
            f"{stats.completion_tokens} tokens generated; turn checks: {counts['turn_retries']} replies retried, "
            f"{counts['turn_warnings']} turns kept with a warning"
            + (
                f"; post-tests: {counts['posttests']} taken, {counts['posttest_failures']} without a step list"
                if counts.get("posttests")
                else ""
            )
            + (f"; llm manager: {counts['manager_fallbacks']} fallbacks to the rules" if summary.llm_manager else ""),
        )
    )
    raise typer.Exit(summary.exit_code)


Teacher = Annotated[
    str,
    typer.Option(
        rich_help_panel=MODELS,
        help="Teacher model spec: local, an alias (openchat, qwen2, ...), ollama:<tag>, openai:<model>.",
    ),
]
Learner = Annotated[
    str | None,
    typer.Option(rich_help_panel=MODELS, help="Learner model spec (default: the teacher's: homogeneous setup)."),
]
Evaluator = Annotated[
    str | None,
    typer.Option(rich_help_panel=MODELS, help="Evaluator spec recorded for `evaluate` (default: the teacher's)."),
]
Config = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=INPUTS,
        help="YAML config overriding wikihowagent/configs/default.yaml, e.g. configs/ollama.yaml.",
    ),
]
Tutorials = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=INPUTS,
        help="Article directory tree, JSON or JSONL file, e.g. data/wikihow (default: the bundled sample).",
    ),
]
Out = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=OUTPUT, help="Run directory (default: <runs_dir>/T-<teacher>_L-<learner>_E-<evaluator>)."
    ),
]
MaxTutorials = Annotated[
    int | None,
    typer.Option(rich_help_panel=SELECTION, min=1, help="Use the first N tutorials (deterministic order)."),
]
Concurrency = Annotated[int | None, typer.Option(rich_help_panel=CLUSTER, min=1, help="Conversations in flight.")]
MaxInteractions = Annotated[
    int | None,
    typer.Option(rich_help_panel=CONVERSATION, min=2, help="Cut a conversation after M messages (paper: 40)."),
]
History = Annotated[
    int | None,
    typer.Option(
        rich_help_panel=CONVERSATION, min=0, help="Show agents the last N messages (0 = the paper's prompts)."
    ),
]
BaseUrl = Annotated[
    list[str] | None,
    typer.Option(
        rich_help_panel=MODELS,
        help="OpenAI-compatible server URL for openai: specs (e.g. vLLM); repeat for replicas of the model (least-busy routing).",
    ),
]
Temperature = Annotated[
    float | None, typer.Option(rich_help_panel=MODELS, min=0.0, help="Sampling temperature (default 0).")
]
Seed = Annotated[int | None, typer.Option(rich_help_panel=MODELS, help="Sampling seed.")]
MaxTokens = Annotated[int | None, typer.Option(rich_help_panel=MODELS, min=1, help="Max new tokens per reply.")]
Timeout = Annotated[float | None, typer.Option(rich_help_panel=MODELS, help="Request timeout in seconds.")]
Retries = Annotated[int | None, typer.Option(rich_help_panel=MODELS, min=0, help="Retries with backoff per request.")]
RetryFailed = Annotated[bool, typer.Option(rich_help_panel=CLUSTER, help="On resume, run failed conversations again.")]
SkipInvalid = Annotated[
    bool, typer.Option(rich_help_panel=INPUTS, help="Skip (and list) bad articles instead of stopping.")
]
LearnerPersona = Annotated[
    list[str] | None,
    typer.Option(
        rich_help_panel=CONVERSATION,
        help="Learner persona from wikihowagent/configs/personas.yaml: paper (default), curious, novice, passive, skeptical, distracted, expert. Repeat to mix personas (round-robin over the tutorials).",
    ),
]
MaxClarifications = Annotated[
    int | None,
    typer.Option(
        rich_help_panel=CONVERSATION,
        min=0,
        help="Learner questions answered per step before moving on (default 2).",
    ),
]
Manager = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=CONVERSATION,
        help="Who classifies learner messages: rules (Algorithm 1, default) or llm (a model: question / understood / off-topic / wants-to-stop, rules on a parse failure).",
    ),
]
ManagerModel = Annotated[
    str | None,
    typer.Option(rich_help_panel=CONVERSATION, help="Model spec of --manager llm (default: the teacher's)."),
]
Shard = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=CLUSTER,
        help="K/N: run only every N-th tutorial starting at K (0-based; cluster array jobs) into <run>/shards/K-of-N; join them with `wikihowagent merge`.",
    ),
]
Posttest = Annotated[
    bool | None,
    typer.Option(
        "--posttest/--no-posttest",
        rich_help_panel=POSTTEST,
        help="After each conversation, the learner model writes the method's steps from memory (post-test; plus one cached pre-test per tutorial). Default: on (off with --preset paper).",
    ),
]
PosttestPrompt = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=POSTTEST,
        metavar="NAME",
        help='Wording of the post-/pre-test: v2 (default) or v3 (the learner may answer "not taught" / "don\'t know" per step); docs: Guides > Post-test.',
    ),
]
Preset = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=MODELS,
        help="'paper': the paper's prompts verbatim and decoding (max tokens 4096, temperature 0), under --config and flags.",
    ),
]


def generate(
    teacher: Teacher = "local",
    learner: Learner = None,
    evaluator: Evaluator = None,
    config: Config = None,
    tutorials: Tutorials = None,
    out: Out = None,
    max_tutorials: MaxTutorials = None,
    domain: DomainOpt = None,
    topic: TopicOpt = None,
    domains: DomainsFileOpt = None,
    sample: SampleOpt = None,
    per: PerOpt = "domain",
    sample_seed: SampleSeedOpt = 0,
    concurrency: Concurrency = None,
    max_interactions: MaxInteractions = None,
    history: History = None,
    base_url: BaseUrl = None,
    temperature: Temperature = None,
    seed: Seed = None,
    max_tokens: MaxTokens = None,
    timeout: Timeout = None,
    retries: Retries = None,
    retry_failed: RetryFailed = True,
    skip_invalid: SkipInvalid = False,
    learner_persona: LearnerPersona = None,
    max_clarifications: MaxClarifications = None,
    manager: Manager = None,
    manager_model: ManagerModel = None,
    shard: Shard = None,
    posttest: Posttest = None,
    posttest_prompt: PosttestPrompt = None,
    preset: Preset = None,
) -> None:
    """Simulate teacher-learner conversations over tutorials into a resumable run directory."""
    from .core import GenerateRequest, run_generation  # lazily: `--help` loads no model code

    console = make_console()
    request = GenerateRequest(
        teacher=teacher,
        learner=learner,
        evaluator=evaluator,
        config=config,
        tutorials=tutorials,
        out=out,
        max_tutorials=max_tutorials,
        domains=tuple(domain or ()),
        topics=tuple(topic or ()),
        domains_file=domains,
        sample=sample,
        per=per,
        sample_seed=sample_seed,
        shard=shard,
        retry_failed=retry_failed,
        skip_invalid=skip_invalid,
        base_url=tuple(base_url or ()),
        preset=preset,
        concurrency=concurrency,
        max_interactions=max_interactions,
        history=history,
        temperature=temperature,
        seed=seed,
        max_tokens=max_tokens,
        timeout=timeout,
        retries=retries,
        learner_personas=tuple(learner_persona or ()),
        max_clarifications=max_clarifications,
        manager=manager,
        manager_model=manager_model,
        posttest=posttest,
        posttest_prompt=posttest_prompt,
    )
    try:
        summary = run_generation(request, console)
    except WikihowagentError as exc:  # GenerateError, or a config, backend or run error as it is
        _fail(str(exc))
    _print_summary(summary, console)


def merge(
    run_dir: Annotated[Path, typer.Argument(help="A run directory whose shards/ were produced with --shard K/N.")],
) -> None:
    """Merge the shards of a cluster run (conversations, and scores of `evaluate --shard`; no duplicates).

    Refuses in one line if a shard 0..N-1 is missing or was made with other settings."""
    console = make_console()
    try:
        for line in merge_run(run_dir):
            console.print(line, highlight=False, markup=False)
    except WikihowagentError as exc:  # RunError, ShardError, a bad line (JsonlError)
        _fail(str(exc))
