"""Benchmark `generate` and write the figures into BENCHMARKS.md (section "generate").

(a) orchestration overhead: 1,000 tutorials through the real graph and runner with an instant scripted
    model: conversations/s and messages/s (what the pipeline itself costs per conversation).
(b) the embedded model on the bundled sample: generated tokens/s of the pipeline at concurrency 1 and at
    the number of server slots, against the server's own throughput for the same number of parallel raw
    requests (same kind of prompts, same max_tokens): the ratio says what the pipeline loses.

    python -m benchmarks generate [--skip-model] [--tutorials N] [--max-interactions M]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from benchmarks.harness import Section, model_lock, write_section
from wikihowagent.config import load_config
from wikihowagent.corpus.core import load_tutorials
from wikihowagent.generation.core import run_conversations
from wikihowagent.records import Tutorial
from wikihowagent.records_io import read_records
from wikihowagent.testing import ScriptedChatModel
from wikihowagent.workflow.graph import WorkflowOptions
from wikihowagent.workflow.prompts import load_prompts


def bench_orchestration(n: int = 1000, concurrency: int = 16) -> dict[str, float]:
    base = load_tutorials()
    tuts = [base[i % len(base)].model_copy(update={"tutorial_id": f"bench{i:05d}"}) for i in range(n)]
    teacher = ScriptedChatModel(script=lambda p: "Here is the step. Do it carefully.")
    learner = ScriptedChatModel(script=lambda p: "Clear, next step please.")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "conversations.jsonl"
        start = time.perf_counter()
        stats = asyncio.run(
            run_conversations(
                tuts,
                teacher,
                learner,
                load_prompts(),
                WorkflowOptions(),
                out,
                run_name="bench",
                teacher="fake",
                learner="fake",
                concurrency=concurrency,
            )
        )
        wall = time.perf_counter() - start
        messages = sum(len(rec.turns) for _, rec in read_records(out))
    assert stats.done == n
    return {
        "conversations": n,
        "wall_s": wall,
        "conv_per_s": n / wall,
        "messages_per_s": messages / wall,
        "ms_per_message": 1000 * wall / messages,
    }


async def _raw_throughput(model, prompts: list, parallel: int) -> tuple[int, float]:
    sem = asyncio.Semaphore(parallel)
    tokens = 0

    async def one(p: str) -> None:
        nonlocal tokens
        async with sem:
            reply = await model.ainvoke(p)
            tokens += (reply.usage_metadata or {}).get("output_tokens", 0)

    start = time.perf_counter()
    await asyncio.gather(*(one(p) for p in prompts))
    return tokens, time.perf_counter() - start


def bench_embedded(n_tutorials: int, max_interactions: int, slots: int) -> list[dict[str, float]]:
    from wikihowagent.backends import make_chat_model, shutdown_local_servers

    cfg = load_config()
    cfg.local.n_parallel = slots
    model = make_chat_model("local", cfg.model, cfg.local)
    prompts = load_prompts()
    tuts: list[Tutorial] = sorted(load_tutorials(), key=lambda t: sum(len(s) for s in t.steps))[:n_tutorials]
    options = WorkflowOptions(max_interactions=max_interactions, learner_farewell=False)
    rows = []
    try:
        for conc in sorted({1, slots}):
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "conversations.jsonl"
                start = time.perf_counter()
                stats = asyncio.run(
                    run_conversations(
                        tuts,
                        model,
                        model,
                        prompts,
                        options,
                        out,
                        run_name="b",
                        teacher="local",
                        learner="local",
                        concurrency=conc,
                    )
                )
                wall = time.perf_counter() - start
                seen = list(model_prompts_from(out))
            # The server alone: the same prompts the pipeline sent, `conc` at a time, no graph around them.
            raw_tokens, raw_wall = asyncio.run(_raw_throughput(model, seen, conc))
            pipe_tps = stats.completion_tokens / wall
            raw_tps = raw_tokens / raw_wall
            rows.append(
                {
                    "concurrency": conc,
                    "pipeline_tokens": stats.completion_tokens,
                    "pipeline_s": wall,
                    "pipeline_tps": pipe_tps,
                    "raw_requests": len(seen),
                    "raw_tokens": raw_tokens,
                    "raw_s": raw_wall,
                    "raw_tps": raw_tps,
                    "ratio": pipe_tps / raw_tps,
                }
            )
            print(rows[-1], flush=True)
    finally:
        shutdown_local_servers()
    return rows


def model_prompts_from(out: Path):
    """Rebuild the model prompts of a finished run (teacher and learner turns that called the model)."""
    prompts = load_prompts()
    for _, rec in read_records(out):
        turns = rec.turns
        steps = rec.tutorial.steps
        for i, t in enumerate(turns):
            if t.kind in ("begin", "finish"):
                continue
            if t.role == "learner":
                yield prompts.learner_messages(instruction=turns[i - 1].text)
            else:
                yield prompts.teacher_messages(
                    summary=rec.summary,
                    step_index=t.step + 1,
                    num_steps=len(steps),
                    step_content=steps[t.step],
                    user_utterance=turns[i - 1].text,
                    clarification=t.kind == "clarification",
                )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-model", action="store_true", help="only (a): no embedded model")
    ap.add_argument("--tutorials", type=int, default=2)
    ap.add_argument("--max-interactions", type=int, default=6)
    ap.add_argument("--slots", type=int, default=2, help="server slots (n_parallel) for (b)")
    ap.add_argument("--write-md", action="store_true", help="rewrite the section of BENCHMARKS.md")
    args = ap.parse_args(argv)
    a = bench_orchestration()
    lines = [
        "One run on this machine (no GPU).",
        "",
        "**(a) Orchestration overhead** (instant scripted model, real graph + runner + fsynced JSONL, "
        f"concurrency 16): {a['conversations']} conversations in {a['wall_s']:.1f} s = "
        f"**{a['conv_per_s']:.0f} conversations/s** ({a['messages_per_s']:.0f} messages/s, "
        f"{a['ms_per_message']:.2f} ms per message). Against a real model's 15-20 s per message, the pipeline's "
        "own cost is negligible.",
    ]
    if not args.skip_model:
        with model_lock():
            rows = bench_embedded(args.tutorials, args.max_interactions, args.slots)
        lines += [
            "",
            f"**(b) Embedded model** (Qwen2.5-Coder-1.5B-Instruct Q4_K_M via xllamacpp, {args.slots} server slots, "
            f"{args.tutorials} shortest "
            f"sample tutorials, conversations cut at {args.max_interactions} messages). Raw = the same prompts "
            "sent straight to the server, the same number at a time. tok/s = generated tokens / wall time, which "
            "includes prompt processing (the replies are short, so reading ~300-token prompts dominates):",
            "",
            "| concurrency | pipeline tokens | pipeline s | pipeline tok/s | raw requests | raw tok/s | pipeline / raw |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['concurrency']} | {r['pipeline_tokens']} | {r['pipeline_s']:.0f} | {r['pipeline_tps']:.2f} | "
            f"{r['raw_requests']} | {r['raw_tps']:.2f} | {r['ratio']:.2f} |"
            for r in rows
        ]
    headline = f"the pipeline's own cost: {a['ms_per_message']:.2f} ms per message (scripted model)"
    if not args.skip_model:
        headline += "; with the embedded model, pipeline / server alone " + ", ".join(
            f"{r['ratio']:.2f} at concurrency {r['concurrency']}" for r in rows
        )
    print("\n".join(lines))
    if args.write_md:
        write_section(Section("generate", "generate", headline, "python -m benchmarks generate", "\n".join(lines)))


if __name__ == "__main__":
    main()
