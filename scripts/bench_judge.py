#!/usr/bin/env python
"""Benchmark of the rubric judge's scoring modes on the embedded model: cost and sensitivity.

    .venv/bin/python scripts/bench_judge.py [--n 10] [--steps 3] [--modes weighted,json] [--write-md]

The same N conversations (deterministic, built from the bundled tutorials' real WikiHow steps: the
teacher states each of the first `--steps` steps in its first two sentences, the learner acknowledges
or asks) are judged by the embedded model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp in-process)
with each `--judge-scoring` mode, in one run:

  (a) cost: seconds per conversation to score all 8 rubrics (weighted: 8 one-token calls sharing the
      conversation prefix; json: 2 structured-output calls);
  (b) sensitivity: `judge-check`'s perturbations of every conversation (data/perturbations.json), judged
      on their target rubrics; the share of (conversation, targeted rubric) pairs where the original
      scores higher (ties count half), per cell and on average over the targeted cells;
  (c) the spread of the originals' scores (distinct values, sd) and how many scores were integers.
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

        msgs = [msg("teacher", f"Let's begin: {t.method_title}. BEGIN", "begin"), msg("learner", "Okay, I am ready to start.")]
        for k, step in enumerate(t.steps[:steps], 1):
            msgs.append(msg("teacher", f"Step {k}: {_first_sentences(step)}"))
            msgs.append(msg("learner", QUESTIONS[(i + k) % 3] if (i + k) % 2 else ACKS[(i + k) % 3]))
            if (i + k) % 2:
                msgs.append(msg("teacher", f"Good question. {_first_sentences(step, 1)} Take your time with it.", "clarification"))
                msgs.append(msg("learner", ACKS[k % 3]))
        msgs.append(msg("teacher", "We've reached the end of the tutorial. Bye! FINISHED", "finish"))
        msgs.append(msg("learner", "Thank you so much!"))
        convs.append(Conversation.from_turns(msgs, list(t.steps[:steps]), t.method_title, completed=True,
                                             conversation_id=f"bench-{i}", run="bench", where=f"bench:{i}",
                                             domain=t.domain, title=t.title))
    return convs


def run_mode(mode: str, convs: list[Conversation], llm, rubrics, perts, out: Path, check_n: int, timing: bool = True,
             judging: bool = True) -> dict:
    """(a) fresh timing of the originals (all 8 rubrics) on every conversation; (b) judge-check on the
    first `check_n` of them (resumable in `out`)."""
    from wikihowagent.evaluation.scoring import make_scorer
    from wikihowagent.judgecheck.core import JUDGMENTS, CheckStats, analyse, plan, run_jobs

    judge = make_scorer(mode, llm, rubrics, None, concurrency=1)
    loop = asyncio.new_event_loop()
    orig: list[float] = []
    failures = asked = 0
    try:
        t0 = time.perf_counter()
        for c in convs if timing else []:
            res = loop.run_until_complete(judge.judge(c))
            orig += [v for v in res.scores.values() if v is not None]
            failures += len(res.failures)
            asked += len(res.scores)
        per_conv = (time.perf_counter() - t0) / len(convs) if timing else math.nan
        print(f"{mode}: {per_conv:.1f} s per conversation (8 rubrics)", flush=True)
        stats = CheckStats()
        sub = convs[:check_n]
        if sub and judging:
            loop.run_until_complete(run_jobs(plan(sub, perts, list(rubrics), stats), judge, "local", out / JUDGMENTS,
                                             lambda n: None, stats))
    finally:
        loop.close()
    res = analyse(out, perts, list(rubrics), "local", judge.label, {c.conversation_id for c in convs[:check_n]}, stats) \
        if check_n else None
    return {"mode": mode, "per_conv": per_conv, "mean_acc": res.mean_accuracy if res else math.nan,
            "sens": res.sensitivity if res else None, "check_n": len(convs[:check_n]),
            "failures": failures, "asked": asked,
            "n_orig": len(orig), "integers": sum(float(v).is_integer() for v in orig),
            "distinct": len({round(v, 3) for v in orig}), "orig_mean": sum(orig) / len(orig) if orig else math.nan}


def markdown(results: list[dict], n: int, steps: int) -> str:
    from wikihowagent.evaluation.summary import markdown_table

    cpu = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared)"
    lines = [f"Embedded judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp in-process, n_parallel 1), {cpu}; "
             f"the same {n} conversations (bundled tutorials, first {steps} steps each) for every mode, one run. "
             "`scripts/bench_judge.py`.", "",
             "| mode | s / conversation (8 rubrics) | failures / rubric scores asked | "
             "originals: distinct scores / integers / n | originals' mean | judge-check: conversations, mean accuracy over targeted cells |",
             "|---|---|---|---|---|---|"]
    for r in results:
        acc = "not run" if r["sens"] is None else f"{r['check_n']}, {r['mean_acc']:.3f}"
        lines.append(f"| {r['mode']} | {r['per_conv']:.1f} | {r['failures']} / {r['asked']} | "
                     f"{r['distinct']} / {r['integers']} / {r['n_orig']} | {r['orig_mean']:.2f} | {acc} |")
    if len(results) == 2:
        a, b = results
        lines += ["", f"Cost ratio {a['mode']} / {b['mode']}: **{a['per_conv'] / b['per_conv']:.2f}**."]
    for r in results:
        s = r["sens"]
        if s is None:
            continue
        lines += ["", f"Sensitivity, {r['mode']} (P(original scores higher), ties half; 95 % bootstrap CI):", ""]
        lines.append(markdown_table(["rubric", "perturbation", "n", "accuracy", "CI"],
                                    [[row.rubric, row.perturbation, str(row.n),
                                      "–" if row.accuracy is None or row.accuracy != row.accuracy else f"{row.accuracy:.2f}",
                                      "–" if row.ci_low is None or row.ci_low != row.ci_low else f"{row.ci_low:.2f}–{row.ci_high:.2f}"]
                                     for row in s.itertuples(index=False)]))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--modes", default="weighted,json")
    ap.add_argument("--check-n", default="10,10", help="judge-check conversations per mode (0 = skip), e.g. 10,0")
    ap.add_argument("--no-timing", action="store_true", help="skip (a) and (c): judge-check only")
    ap.add_argument("--report-only", action="store_true", help="no judging: report the judgments already in --out")
    ap.add_argument("--out", type=Path, default=None, help="keep judgments here (default: a temporary directory)")
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args()
    from benchmarks_md import write_section

    from wikihowagent.backends import make_chat_model
    from wikihowagent.config import load_config
    from wikihowagent.evaluation.judge import load_rubrics
    from wikihowagent.judgecheck.perturbations import load_perturbations

    cfg = load_config(None)
    llm = None if args.report_only else make_chat_model("local", cfg.model.model_copy(update={"temperature": 0.0}), cfg.local)
    rubrics = load_rubrics()
    perts = load_perturbations(None, list(rubrics))
    convs = bench_conversations(args.n, args.steps)
    base = args.out or Path(tempfile.mkdtemp(prefix="bench_judge-"))
    results = []
    check = [int(x) for x in args.check_n.split(",")]
    for i, mode in enumerate(args.modes.split(",")):
        out = base / mode
        out.mkdir(parents=True, exist_ok=True)
        results.append(run_mode(mode, convs, llm, rubrics, perts, out, check[min(i, len(check) - 1)],
                                not (args.no_timing or args.report_only), not args.report_only))
        md = markdown(results, args.n, args.steps)
        print(md, flush=True)
        if args.write_md:
            part = "sensitivity" if args.no_timing else "cost" if not any(check) else "cost, sensitivity"
            write_section(f"judge: scoring modes ({part})", md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
