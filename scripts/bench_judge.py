#!/usr/bin/env python
"""Benchmark of the rubric judge's scoring modes on the embedded model: cost and sensitivity.

    .venv/bin/python scripts/bench_judge.py [--n 10] [--steps 3] [--modes weighted,json] [--write-md]

The same N conversations (deterministic, built from the bundled tutorials' real WikiHow steps: the
teacher states each of the first `--steps` steps in its first two sentences, the learner acknowledges
or asks) are judged by the embedded model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp in-process)
with each `--judge-scoring` mode, in one run:

  (a) cost: seconds per conversation to score all 8 rubrics (weighted: 8 one-token calls sharing the
      tutorial + conversation prefix; json: 2 structured-output calls), the modes interleaved
      conversation by conversation; these judgments are (b)'s originals;
  (b) sensitivity: `judge-check`'s perturbations of every conversation (wikihowagent/data/perturbations.json), judged
      on their target rubrics; the share of (conversation, targeted rubric) pairs where the original
      scores higher (ties count half), per cell and on average over the targeted cells;
  (c) the spread of the originals' scores (distinct values, sd) and how many scores were integers.

    .venv/bin/python scripts/bench_judge.py --throughput [--study DIR] [--k 3] [--cap-min 5,4] [--write-md]

(d) throughput of the embedded judge (one server slot, `local.n_parallel: 1`) on conversations of realistic
length: the `--k` conversations of the human study's run files (`--study`, default
/work/shared/human-study/conversations) whose judge prompt is nearest the study's median length (2-8k
tokens), all 8 rubrics each (`weighted`), all handed to the judge at once with `--concurrency 1` (one
conversation per slot, evaluate's default for the embedded judge) and then with 2 (the old default: two
conversations' rubric calls interleave on the one slot, and each call re-reads its whole prefix). Each
setting stops at its cap (`--cap-min`, minutes); conversations/hour = conversations finished / time to the
last one finished (or the cap, if not all finished); rubric calls finished are counted too.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wikihowagent.records import Conversation, Turn  # noqa: E402

ACKS = ["Got it, thanks. What is next?", "Okay, I understand. Next step, please.", "That makes sense. What comes next?"]
QUESTIONS = ["Why is this step important?", "What should I watch out for here?", "How long should this take?"]


def _first_sentences(text: str, n: int = 2) -> str:
    sents = [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]
    return " ".join(sents[:n])


def bench_conversations(n: int, steps: int) -> list[Conversation]:
    from wikihowagent.corpus.core import load_tutorials

    tutorials = load_tutorials()
    convs = []
    for i in range(n):
        t = tutorials[i % len(tutorials)]

        def msg(role: str, text: str, kind: str = "model") -> Turn:
            return Turn(role=role, text=text, kind=kind)

        msgs = [
            msg("teacher", f"Let's begin: {t.method_title}. BEGIN", "begin"),
            msg("learner", "Okay, I am ready to start."),
        ]
        for k, step in enumerate(t.steps[:steps], 1):
            msgs.append(msg("teacher", f"Step {k}: {_first_sentences(step)}"))
            msgs.append(msg("learner", QUESTIONS[(i + k) % 3] if (i + k) % 2 else ACKS[(i + k) % 3]))
            if (i + k) % 2:
                msgs.append(
                    msg(
                        "teacher",
                        f"Good question. {_first_sentences(step, 1)} Take your time with it.",
                        "clarification",
                    )
                )
                msgs.append(msg("learner", ACKS[k % 3]))
        msgs.append(msg("teacher", "We've reached the end of the tutorial. Bye! FINISHED", "finish"))
        msgs.append(msg("learner", "Thank you so much!"))
        convs.append(
            Conversation.from_turns(
                msgs,
                list(t.steps[:steps]),
                t.method_title,
                completed=True,
                conversation_id=f"bench-{i}",
                run="bench",
                where=f"bench:{i}",
                domain=t.domain,
                title=t.title,
            )
        )
    return convs


def timing_pass(modes: list[str], convs: list[Conversation], llm, rubrics, perts, base: Path) -> dict[str, float]:
    """(a) cost: the originals (all 8 rubrics) of every conversation, judged by each mode in turn,
    conversation by conversation (interleaved, so a change in the machine's load hits every mode alike).
    The judgments are the judge-check's `original` ones: (b) does not judge them again."""
    from wikihowagent.evaluation.scoring import make_scorer
    from wikihowagent.judgecheck.core import JUDGMENTS, ORIGINAL, CheckStats, plan, read_judgments, run_jobs

    judges = {m: make_scorer(m, llm, rubrics, None, concurrency=1) for m in modes}
    originals = [j for j in plan(convs, perts, list(rubrics), CheckStats()) if j.variant == ORIGINAL]
    spent, count = dict.fromkeys(modes, 0.0), dict.fromkeys(modes, 0)
    done = {m: read_judgments(base / m / JUDGMENTS, "local", judges[m].label) for m in modes}
    from wikihowagent.evaluation.session import JudgeLoop

    with JudgeLoop() as loop:
        for j in originals:
            for m in modes:
                path = base / m / JUDGMENTS
                if (j.conv.conversation_id, ORIGINAL) in done[m]:
                    continue
                t0 = time.perf_counter()
                loop.run(run_jobs([j], judges[m], "local", path, lambda n: None, CheckStats()))
                spent[m] += time.perf_counter() - t0
                count[m] += 1
            print(" ".join(f"{m}: {spent[m] / max(1, count[m]):.1f} s/conv ({count[m]})" for m in modes), flush=True)
    return {m: spent[m] / count[m] if count[m] else math.nan for m in modes}


def run_mode(
    mode: str,
    convs: list[Conversation],
    llm,
    rubrics,
    perts,
    out: Path,
    check_n: int,
    per_conv: float,
    judging: bool = True,
) -> dict:
    """(b) judge-check on the first `check_n` conversations (resumable in `out`); (c) the originals' spread."""
    from wikihowagent.evaluation.scoring import make_scorer
    from wikihowagent.judgecheck.core import JUDGMENTS, ORIGINAL, CheckStats, analyse, plan, read_judgments, run_jobs

    judge = make_scorer(mode, llm, rubrics, None, concurrency=1)
    keep = {c.conversation_id for c in convs[:check_n]}
    stats = CheckStats()
    if judging and keep:
        from wikihowagent.evaluation.session import JudgeLoop

        with JudgeLoop() as loop:
            jobs = [j for j in plan(convs, perts, list(rubrics), stats) if j.conv.conversation_id in keep]
            loop.run(run_jobs(jobs, judge, "local", out / JUDGMENTS, lambda n: None, stats))
    got = read_judgments(out / JUDGMENTS, "local", judge.label)
    orig = [v for c in convs for v in ((got.get((c.conversation_id, ORIGINAL)) or {}).get("scores") or {}).values()]
    failures = sum(len((got.get((c.conversation_id, ORIGINAL)) or {}).get("judge_failures") or []) for c in convs)
    res = analyse(out, perts, list(rubrics), "local", judge.label, keep, stats) if keep else None
    scored = [v for v in orig if v is not None]
    return {
        "mode": mode,
        "per_conv": per_conv,
        "mean_acc": res.mean_accuracy if res else math.nan,
        "sens": res.sensitivity if res else None,
        "check_n": len(keep),
        "failures": failures,
        "asked": len(orig),
        "n_orig": len(scored),
        "integers": sum(float(v).is_integer() for v in scored),
        "distinct": len({round(v, 3) for v in scored}),
        "orig_mean": sum(scored) / len(scored) if scored else math.nan,
    }


def markdown(results: list[dict], n: int, steps: int) -> str:
    from wikihowagent.evaluation.summary import markdown_table

    cpu = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared)"
    lines = [
        f"Embedded judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp in-process, n_parallel 1), {cpu}; "
        f"the same {n} conversations (bundled tutorials, first {steps} steps each) for every mode, one run; "
        "cost timed on the originals, the modes interleaved conversation by conversation; "
        f"load average {os.getloadavg()[0]:.1f} when written. `scripts/bench_judge.py`.",
        "",
        "| mode | s / conversation (8 rubrics) | failures / rubric scores asked | "
        "originals: distinct scores / integers / n | originals' mean | judge-check: conversations, mean accuracy over targeted cells |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        acc = "not run" if r["sens"] is None else f"{r['check_n']}, {r['mean_acc']:.3f}"
        lines.append(
            f"| {r['mode']} | {r['per_conv']:.1f} | {r['failures']} / {r['asked']} | "
            f"{r['distinct']} / {r['integers']} / {r['n_orig']} | {r['orig_mean']:.2f} | {acc} |"
        )
    if len(results) == 2:
        a, b = results
        lines += ["", f"Cost ratio {a['mode']} / {b['mode']}: **{a['per_conv'] / b['per_conv']:.2f}**."]
    for r in results:
        s = r["sens"]
        if s is None:
            continue
        lines += ["", f"Sensitivity, {r['mode']} (P(original scores higher), ties half; 95 % bootstrap CI):", ""]
        lines.append(
            markdown_table(
                ["rubric", "perturbation", "n", "accuracy", "CI"],
                [
                    [
                        row.rubric,
                        row.perturbation,
                        str(row.n),
                        "–" if row.accuracy is None or row.accuracy != row.accuracy else f"{row.accuracy:.2f}",
                        "–"
                        if row.ci_low is None or row.ci_low != row.ci_low
                        else f"{row.ci_low:.2f}–{row.ci_high:.2f}",
                    ]
                    for row in s.itertuples(index=False)
                ],
            )
        )
    return "\n".join(lines)


STUDY = Path("/work/shared/human-study/conversations")


def judge_prompt_text(conv: Conversation, rubrics) -> str:
    """The judge's prompt for the conversation's first rubric (default prompt variant), as one text."""
    from wikihowagent.evaluation.scoring import rubric_prompt

    messages, _ = rubric_prompt(conv, next(iter(rubrics.values())), False)
    return "\n".join(text for _, text in messages)


def study_conversations(study: Path, k: int, rubrics) -> list[Conversation]:
    """The `k` conversations of the study's run files whose judge prompt is nearest the median length."""
    from wikihowagent.evaluation.inputs import resolve_inputs

    convs = [
        c for src in resolve_inputs(sorted(study.glob("*.json")), study) for c in src.conversations(on_error=print)
    ]
    size = {c.conversation_id: len(judge_prompt_text(c, rubrics)) for c in convs}
    median = sorted(size.values())[len(size) // 2]
    return sorted(convs, key=lambda c: (abs(size[c.conversation_id] - median), c.conversation_id))[:k]


def prompt_tokens(llm, convs: list[Conversation], rubrics) -> list[int | None]:
    """The first rubric prompt's length in the embedded model's tokens (llama.cpp's /tokenize)."""
    import httpx

    base = str(llm.openai_api_base).removesuffix("/v1")
    out: list[int | None] = []
    for c in convs:
        try:
            r = httpx.post(f"{base}/tokenize", json={"content": judge_prompt_text(c, rubrics)}, timeout=60)
            out.append(len(r.json()["tokens"]))
        except (httpx.HTTPError, KeyError, ValueError):
            out.append(None)
    return out


def throughput(llm, rubrics, convs: list[Conversation], concurrency: int, cap_s: float) -> dict:
    """All `convs` handed to a weighted judge of `concurrency` at once, stopped at `cap_s`."""
    from wikihowagent.evaluation.scoring import make_scorer

    judge = make_scorer("weighted", llm, rubrics, None, concurrency=concurrency)
    call_s: list[float] = []  # when each rubric call finished
    score = judge.score
    t0 = time.perf_counter()

    async def counted(*a):
        res = await score(*a)
        call_s.append(time.perf_counter() - t0)
        return res

    judge.score = counted
    finished: list[float] = []
    errors: list[str] = []

    async def run() -> None:
        nonlocal t0
        t0 = time.perf_counter()

        async def one(c: Conversation) -> None:
            try:
                await judge.judge(c)
            except Exception as exc:  # noqa: BLE001 - reported, not counted as finished
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
                return
            finished.append(time.perf_counter() - t0)

        tasks = [asyncio.ensure_future(one(c)) for c in convs]
        await asyncio.wait(tasks, timeout=cap_s)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    from wikihowagent.evaluation.session import JudgeLoop

    with JudgeLoop() as loop:
        loop.run(run())
    span = finished[-1] if len(finished) == len(convs) else cap_s
    return {
        "concurrency": concurrency,
        "cap_s": cap_s,
        "done": len(finished),
        "of": len(convs),
        "calls": len(call_s),
        "span_s": span,
        "per_hour": len(finished) / span * 3600,
        "calls_per_hour": len(call_s) / span * 3600,
        "finished_s": [round(x) for x in finished],
        "call_s": [round(x) for x in call_s],
        "errors": errors,
    }


def throughput_markdown(rows: list[dict], tokens: list[int | None]) -> str:
    cpu = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared with other helpers' work)"
    toks = ", ".join("?" if t is None else f"{t:,}" for t in tokens)
    lines = [
        f"Embedded judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp in-process, one slot: `local.n_parallel: 1`), "
        f"{cpu}; `--judge-scoring weighted`, all 8 rubrics; {len(tokens)} conversations of the human study's run "
        f"files nearest its median length, judge prompts of {toks} tokens; all handed to the judge at once; "
        f"one run, the settings one after the other; load average {os.getloadavg()[0]:.1f} when written. "
        "`scripts/bench_judge.py --throughput`.",
        "",
        "| concurrency | cap | conversations finished | finished at (s) | rubric calls finished (at s) | conversations / hour | rubric calls / hour |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['concurrency']}{' (before: the old default)' if r['concurrency'] > 1 else ' (after: one per slot, the default)'} "
            f"| {r['cap_s'] / 60:g} min | {r['done']} of {r['of']} | {', '.join(map(str, r['finished_s'])) or '–'} "
            f"| {r['calls']} ({', '.join(map(str, r['call_s'])) or '–'}) | {r['per_hour']:.1f} | {r['calls_per_hour']:.0f} |"
        )
        if r["errors"]:
            lines.append(f"| | | errors: {'; '.join(r['errors'])} | | | | |")
    if len(rows) == 2 and rows[1]["calls_per_hour"]:
        a, b = rows
        lines += [
            "",
            f"Rubric calls per hour, concurrency {a['concurrency']} / {b['concurrency']}: "
            f"**{a['calls_per_hour'] / b['calls_per_hour']:.1f}x**.",
        ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--modes", default="weighted,json")
    ap.add_argument("--check-n", default="10,10", help="judge-check conversations per mode (0 = skip), e.g. 10,0")
    ap.add_argument("--no-timing", action="store_true", help="skip (a): judge-check only")
    ap.add_argument("--report-only", action="store_true", help="no judging: report the judgments already in --out")
    ap.add_argument("--out", type=Path, default=None, help="keep judgments here (default: a temporary directory)")
    ap.add_argument("--write-md", action="store_true")
    ap.add_argument("--throughput", action="store_true", help="(d) only: conversations/hour at concurrency 1 vs 2")
    ap.add_argument("--study", type=Path, default=STUDY, help="run files of realistic conversations for (d)")
    ap.add_argument("--k", type=int, default=3, help="conversations for (d)")
    ap.add_argument("--cap-min", default="6,4", help="(d): minutes for concurrency 1, then for 2")
    args = ap.parse_args()
    from benchmarks_md import write_section

    from wikihowagent.backends import make_chat_model
    from wikihowagent.config import load_config
    from wikihowagent.evaluation.judge import load_rubrics
    from wikihowagent.judgecheck.perturbations import load_perturbations

    cfg = load_config(None)
    llm = (
        None
        if args.report_only
        else make_chat_model("local", cfg.model.model_copy(update={"temperature": 0.0}), cfg.local)
    )
    rubrics = load_rubrics()
    if args.throughput:
        convs = study_conversations(args.study, args.k, rubrics)
        tokens = prompt_tokens(llm, convs, rubrics)
        print(f"conversations: {[c.conversation_id for c in convs]}, prompt tokens {tokens}", flush=True)
        rows = []
        for conc, cap in zip((1, 2), (float(x) * 60 for x in args.cap_min.split(",")), strict=False):
            rows.append(throughput(llm, rubrics, convs, conc, cap))
            print(rows[-1], flush=True)
        md = throughput_markdown(rows, tokens)
        print(md, flush=True)
        if args.write_md:
            write_section("judge: embedded judge throughput (one conversation per slot)", md)
        return 0
    perts = load_perturbations(None, list(rubrics))
    convs = bench_conversations(args.n, args.steps)
    base = args.out or Path(tempfile.mkdtemp(prefix="bench_judge-"))
    results = []
    check = [int(x) for x in args.check_n.split(",")]
    modes = args.modes.split(",")
    for mode in modes:
        (base / mode).mkdir(parents=True, exist_ok=True)
    timing = not (args.no_timing or args.report_only)
    costs = timing_pass(modes, convs, llm, rubrics, perts, base) if timing else dict.fromkeys(modes, math.nan)
    for i, mode in enumerate(modes):
        results.append(
            run_mode(
                mode,
                convs,
                llm,
                rubrics,
                perts,
                base / mode,
                check[min(i, len(check) - 1)],
                costs[mode],
                not args.report_only,
            )
        )
        md = markdown(results, args.n, args.steps)
        print(md, flush=True)
        if args.write_md:
            part = "sensitivity" if not timing else "cost" if not any(check) else "cost, sensitivity"
            write_section(f"judge: scoring modes ({part})", md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
