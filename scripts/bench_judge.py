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
    loop = asyncio.new_event_loop()
    try:
        for j in originals:
            for m in modes:
                path = base / m / JUDGMENTS
                if (j.conv.conversation_id, ORIGINAL) in done[m]:
                    continue
                t0 = time.perf_counter()
                loop.run_until_complete(run_jobs([j], judges[m], "local", path, lambda n: None, CheckStats()))
                spent[m] += time.perf_counter() - t0
                count[m] += 1
            print(" ".join(f"{m}: {spent[m] / max(1, count[m]):.1f} s/conv ({count[m]})" for m in modes), flush=True)
    finally:
        loop.close()
    return {m: spent[m] / count[m] if count[m] else math.nan for m in modes}


def run_mode(mode: str, convs: list[Conversation], llm, rubrics, perts, out: Path, check_n: int, per_conv: float,
             judging: bool = True) -> dict:
    """(b) judge-check on the first `check_n` conversations (resumable in `out`); (c) the originals' spread."""
    from wikihowagent.evaluation.scoring import make_scorer
    from wikihowagent.judgecheck.core import JUDGMENTS, ORIGINAL, CheckStats, analyse, plan, read_judgments, run_jobs

    judge = make_scorer(mode, llm, rubrics, None, concurrency=1)
    keep = {c.conversation_id for c in convs[:check_n]}
    stats = CheckStats()
    if judging and keep:
        loop = asyncio.new_event_loop()
        try:
            jobs = [j for j in plan(convs, perts, list(rubrics), stats) if j.conv.conversation_id in keep]
            loop.run_until_complete(run_jobs(jobs, judge, "local", out / JUDGMENTS, lambda n: None, stats))
        finally:
            loop.close()
    got = read_judgments(out / JUDGMENTS, "local", judge.label)
    orig = [v for c in convs for v in ((got.get((c.conversation_id, ORIGINAL)) or {}).get("scores") or {}).values()]
    failures = sum(len((got.get((c.conversation_id, ORIGINAL)) or {}).get("judge_failures") or []) for c in convs)
    res = analyse(out, perts, list(rubrics), "local", judge.label, keep, stats) if keep else None
    scored = [v for v in orig if v is not None]
    return {"mode": mode, "per_conv": per_conv, "mean_acc": res.mean_accuracy if res else math.nan,
            "sens": res.sensitivity if res else None, "check_n": len(keep),
            "failures": failures, "asked": len(orig),
            "n_orig": len(scored), "integers": sum(float(v).is_integer() for v in scored),
            "distinct": len({round(v, 3) for v in scored}), "orig_mean": sum(scored) / len(scored) if scored else math.nan}


def markdown(results: list[dict], n: int, steps: int) -> str:
    from wikihowagent.evaluation.summary import markdown_table

    cpu = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared)"
    lines = [f"Embedded judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp in-process, n_parallel 1), {cpu}; "
             f"the same {n} conversations (bundled tutorials, first {steps} steps each) for every mode, one run; "
             "cost timed on the originals, the modes interleaved conversation by conversation; "
             f"load average {os.getloadavg()[0]:.1f} when written. `scripts/bench_judge.py`.", "",
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
    ap.add_argument("--no-timing", action="store_true", help="skip (a): judge-check only")
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
    modes = args.modes.split(",")
    for mode in modes:
        (base / mode).mkdir(parents=True, exist_ok=True)
    timing = not (args.no_timing or args.report_only)
    costs = timing_pass(modes, convs, llm, rubrics, perts, base) if timing else dict.fromkeys(modes, math.nan)
    for i, mode in enumerate(modes):
        results.append(run_mode(mode, convs, llm, rubrics, perts, base / mode, check[min(i, len(check) - 1)],
                                costs[mode], not args.report_only))
        md = markdown(results, args.n, args.steps)
        print(md, flush=True)
        if args.write_md:
            part = "sensitivity" if not timing else "cost" if not any(check) else "cost, sensitivity"
            write_section(f"judge: scoring modes ({part})", md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
