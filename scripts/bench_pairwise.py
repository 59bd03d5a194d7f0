#!/usr/bin/env python
"""Benchmark of the pairwise judge on the embedded model: `judge-check --pairwise` accuracy, position
consistency and cost per comparison, next to the absolute weighted judge on the same conversations.

    .venv/bin/python scripts/bench_pairwise.py [--n 10] [--steps 3] [--out runs/bench-pairwise]
        [--max-minutes 11] [--absolute] [--only skip_steps,terse] [--tie-bands 0,0.01,0.02] [--report-only] [--write-md]

The conversations are `bench_judge.py`'s (deterministic, built from the bundled tutorials' real WikiHow
steps), so the absolute judge's 0.673 there is on the same conversations. Each perturbed copy is judged
against its original in both orders on the perturbation's target rubrics only (judge-check --pairwise).
Resumable: judgments and per-pass timings are kept in --out; `--max-minutes` stops between passes (run it
again to continue). `--absolute` also runs the absolute weighted judge-check into the same directory.
A comparison = one (original, perturbed) pair judged in both orders on its target rubrics.
`--report-only` loads no model: it recomputes everything from the stored judgments (both verdict rules,
`agree` and `average`, with CIs; the `average` rule's accuracy at each of `--tie-bands`; the first band is
the table's).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

TIMINGS = "timings.jsonl"
INVOCATION = time.strftime("%Y-%m-%dT%H:%M:%S")


def judge_passes(jobs, run_one, deadline: float, timings: Path, kind: str) -> int:
    """Run `jobs` one by one (`run_one(job)` judges and appends it), logging each pass's seconds."""
    made = 0
    for j in jobs:
        if time.monotonic() > deadline:
            print(f"time budget reached: {len(jobs) - made} {kind} passes left (rerun to continue)", flush=True)
            break
        t0 = time.perf_counter()
        run_one(j)
        dt = time.perf_counter() - t0
        with timings.open("a") as fh:
            fh.write(
                json.dumps({"kind": kind, "seconds": dt, "verdicts": len(j.names), "invocation": INVOCATION}) + "\n"
            )
        made += 1
        print(f"{kind}: {made}/{len(jobs)} passes, {dt:.1f} s", flush=True)
    return made


SCORING_MODES = "judge: scoring modes (cost, sensitivity)"


def earlier_absolute(section: str, table) -> dict[tuple[str, str], float]:
    """{(rubric, perturbation): accuracy} of the weighted judge's sensitivity table in `section` (bench_judge.py's
    BENCHMARKS section) on the cells of `table`."""
    part = (
        section.split("Sensitivity, weighted", 1)[1].split("Sensitivity, json", 1)[0]
        if "Sensitivity, weighted" in section
        else ""
    )
    found = {}
    for line in part.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[3].replace(".", "", 1).isdigit():
            found[(cells[0], cells[1])] = float(cells[3])
    return {k: found[k] for k in zip(table["rubric"], table["perturbation"], strict=False) if k in found}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "bench-pairwise")
    ap.add_argument("--max-minutes", type=float, default=11.0)
    ap.add_argument("--absolute", action="store_true", help="also the absolute weighted judge-check (same directory)")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument(
        "--only", default="", help="comma-separated perturbations to judge (default: all; a saving to state)"
    )
    ap.add_argument(
        "--tie-bands", default="0,0.01,0.02", help="the `average` rule's tie bands to report (first: the table's)"
    )
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args()
    bands = [float(b) for b in args.tie_bands.split(",") if b.strip()]

    from bench_judge import bench_conversations
    from benchmarks_md import read_section, write_section

    from wikihowagent.backends import make_chat_model
    from wikihowagent.compare.engine import PassStats, pending, read_pair_judgments, run_pair_jobs
    from wikihowagent.compare.pairwise import PairwiseJudge
    from wikihowagent.config import load_config
    from wikihowagent.evaluation.judge import load_rubrics
    from wikihowagent.evaluation.scoring import make_scorer
    from wikihowagent.judgecheck.core import (
        JUDGMENTS,
        CheckStats,
        analyse_pairwise,
        plan,
        plan_pairwise,
        read_judgments,
        run_jobs,
    )
    from wikihowagent.judgecheck.perturbations import load_perturbations, perturb
    from wikihowagent.markdown import frame_table
    from wikihowagent.records import conversation_lines
    from wikihowagent.runs import PAIR_JUDGMENTS

    cfg = load_config(None)
    rubrics = load_rubrics()
    perts = load_perturbations(None, list(rubrics))
    if args.only:
        perts = [p for p in perts if p.name in args.only.split(",")]
    convs = bench_conversations(args.n, args.steps)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    timings = out / TIMINGS
    deadline = time.monotonic() + 60 * args.max_minutes
    stats = CheckStats()
    jobs = plan_pairwise(convs, perts, list(rubrics), stats)
    reading = "logprobs"
    if not args.report_only:
        llm = make_chat_model("local", cfg.model.model_copy(update={"temperature": 0.0}), cfg.local)
        judge = PairwiseJudge(llm, rubrics, None, reading="logprobs", concurrency=1)
        from wikihowagent.evaluation.session import JudgeLoop

        with JudgeLoop() as loop:
            todo = pending(jobs, read_pair_judgments([out / PAIR_JUDGMENTS], "local", reading))
            # perturbation by perturbation (both orders of one conversation together): a time limit leaves
            # whole cells judged on every conversation rather than every cell on a few
            rank = {p.name: i for i, p in enumerate(perts)}
            todo.sort(key=lambda j: rank[j.second if j.first == "original" else j.first])
            judge_passes(
                todo,
                lambda j: loop.run(
                    run_pair_jobs([j], judge, "local", out / PAIR_JUDGMENTS, lambda n: None, PassStats())
                ),
                deadline,
                timings,
                "pairwise",
            )
            if args.absolute:
                scorer = make_scorer("weighted", llm, rubrics, None, concurrency=1)
                done = read_judgments(out / JUDGMENTS, "local", scorer.label)
                todo_abs = [
                    j
                    for j in plan(convs, perts, list(rubrics), CheckStats())
                    if (j.conv.conversation_id, j.variant) not in done
                ]
                judge_passes(
                    todo_abs,
                    lambda j: loop.run(run_jobs([j], scorer, "local", out / JUDGMENTS, lambda n: None, CheckStats())),
                    deadline,
                    timings,
                    "absolute",
                )
    records = read_pair_judgments([out / PAIR_JUDGMENTS], "local", reading)
    done_convs = {
        c.conversation_id for c in convs if all(j.key in records for j in jobs if j.tutorial_id == c.conversation_id)
    }
    if not done_convs:
        print("no conversation fully judged yet", flush=True)
        return 0
    asked = sum(len(r.p_first) for r in records.values())
    failed = sum(sum(v is None for v in r.p_first.values()) for r in records.values())
    stats.rubric_scores, stats.failures = asked, failed
    by_band = [
        (
            b,
            analyse_pairwise(
                out,
                records,
                perts,
                list(rubrics),
                "local",
                reading,
                done_convs,
                CheckStats(),
                figures=False,
                tie_band=b,
            ).modes[1],
        )
        for b in bands[1:]
    ]
    res = analyse_pairwise(out, records, perts, list(rubrics), "local", reading, done_convs, stats, tie_band=bands[0])

    def chars(c) -> int:
        return len("\n".join(conversation_lines(c.messages)))

    length = {
        p.name: statistics.mean(
            chars(pc) - chars(c)
            for c in convs
            if c.conversation_id in done_convs
            for pc in [perturb(p, c, convs)]
            if pc is not None
        )
        for p in perts
    }
    lean = [abs(x - 0.5) for x in res.table["mean_p_original"] if x == x and x is not None]
    t = [json.loads(x) for x in timings.read_text().splitlines()] if timings.exists() else []
    pw = [x for x in t if x["kind"] == "pairwise"]
    ab = [x for x in t if x["kind"] == "absolute"]
    per_pass = sum(x["seconds"] for x in pw) / len(pw) if pw else math.nan
    median = statistics.median(x["seconds"] for x in pw) if pw else math.nan
    per_verdict = sum(x["seconds"] for x in pw) / sum(x["verdicts"] for x in pw) if pw else math.nan
    abs_per_score = sum(x["seconds"] for x in ab) / sum(x["verdicts"] for x in ab) if ab else math.nan
    cpu = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared with other helpers' jobs)"
    lines = [
        f"Embedded judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp in-process, n_parallel 1), {cpu}; "
        f"`bench_judge.py`'s {args.n} conversations ({args.steps} steps each), {len(done_convs)} fully judged; "
        f"perturbations: {', '.join(p.name for p in perts)}; "
        "each perturbed copy against its original in both orders, on the perturbation's target rubrics only "
        f"(a fair saving: the other rubrics are not expected to move). Load average {os.getloadavg()[0]:.1f} "
        "when written. `scripts/bench_pairwise.py`.",
        "",
        (
            "- recomputed without the model from the stored judgments (`--report-only`, "
            f"{time.strftime('%Y-%m-%d %H:%M')})"
            if args.report_only
            else "- judged in this invocation and earlier ones"
        ),
        f"- mean accuracy over the {len(res.table)} targeted cells (goal ≥ 0.85), 95 % CI (bootstrap over the "
        f"{len(done_convs)} conversations): " + "; ".join(f"**{m.text()}**" for m in res.modes),
        f"- position consistency (pooled): **{res.position_consistency:.3f}** (goal ≥ 0.8)",
        "- the `average` rule at other tie bands: " + ("; ".join(m.text() for _, m in by_band) or "none asked"),
        f"- order-averaged lean |P(original better) − 0.5| per cell: mean {statistics.mean(lean):.3f}, "
        f"max {max(lean):.3f}"
        if lean
        else "- no lean measured",
        "- length change of the perturbed copy (characters of the conversation, mean over conversations): "
        + ", ".join(f"{k} {v:+.0f}" for k, v in length.items()),
        f"- unreadable verdicts: {failed} of {asked}",
        f"- cost: {per_pass:.1f} s per judge pass on average (median {median:.1f} s; one order, its target "
        f"rubrics; {len(pw)} passes timed; the first "
        f"pass of each invocation includes the model's start), {2 * per_pass:.1f} s per comparison (both orders; "
        f"median {2 * median:.1f} s), {per_verdict:.1f} s per verdict-order. Pass times vary with the "
        "shared machine's load (load average 2-8 during these runs).",
        '- the absolute weighted judge on the same 10 conversations and cells: section "judge: scoring '
        'modes" (same judge, temperature 0, measured earlier)',
    ]
    earlier = earlier_absolute(read_section(SCORING_MODES), res.table)
    if earlier:
        lines.append(
            f"- the absolute weighted judge on these {len(earlier)} cells, from that earlier run: mean "
            f"{statistics.mean(earlier.values()):.3f} ("
            + ", ".join(f"{r}/{p} {a:.2f}" for (r, p), a in earlier.items())
            + "; its per-conversation scores were not kept, so no paired CI)"
        )
    if res.absolute_mean_accuracy == res.absolute_mean_accuracy:
        lines.append(
            f"- absolute weighted judge on the same cells, same run: {res.absolute_mean_accuracy:.3f}"
            + (f"; {abs_per_score:.1f} s per rubric score" if ab else "")
        )
    lines += ["", frame_table(res.table), "", res.recommendation]
    md = "\n".join(lines)
    print(md, flush=True)
    if args.write_md:
        write_section("judge: pairwise judge-check (accuracy, position consistency, cost)", md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
