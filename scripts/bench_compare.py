#!/usr/bin/env python
"""Benchmark of `wikihowagent compare` on runs of the embedded model: the Bradley–Terry table with CIs,
win rates, position consistency and the cost per comparison.

    .venv/bin/python scripts/bench_compare.py RUN RUN RUN... --out DIR [--metrics Clarity,Engagement]
        [--max-tutorials N] [--max-minutes 11] [--verdict-rule agree|average] [--tie-band 0]
        [--report-site SITE] [--report-only] [--write-md]
    .venv/bin/python scripts/bench_compare.py --synthetic 5 --out DIR ...   # runs with a known order

`--synthetic N` writes three runs of `bench_judge.py`'s first N conversations into DIR/runs: `original`,
`terse` and `skip_steps` (judge-check's perturbations of the same conversations), so the true order is
known (original above both copies).

Judging runs `wikihowagent compare` (the embedded judge, `--concurrency 1`) under `timeout -s INT`, so a
run cut by `--max-minutes` keeps every pass written and the next invocation resumes it; the seconds and
passes of each invocation are logged in DIR/timings.jsonl. The analysis reads DIR's pair judgments
(no model): every tutorial judged in both orders for every pair counts. It is made under both verdict
rules: `--verdict-rule` (default agree) into DIR (pairwise.csv, bradley_terry.csv, summary.md, ...), the
other into DIR/<rule>/; both go into the BENCHMARKS section. `--report-site SITE` then builds the report
of the runs with its "Head to head" page from DIR (`report --compare DIR`, no model).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

TIMINGS = "timings.jsonl"


def synthetic_runs(root: Path, n: int) -> list[Path]:
    """original / terse / skip_steps runs of the same n bench conversations (rewritten identically each time)."""
    from bench_judge import bench_conversations

    from wikihowagent.evaluation.judge import load_rubrics
    from wikihowagent.judgecheck.perturbations import load_perturbations, perturb
    from wikihowagent.records import ConversationRecord
    from wikihowagent.runs import CONVERSATIONS, RUN_INFO

    convs = bench_conversations(n, 3)
    perts = {p.name: p for p in load_perturbations(None, list(load_rubrics()))}
    out = []
    for name in ("original", "terse", "skip_steps"):
        d = root / name
        d.mkdir(parents=True, exist_ok=True)
        (d / RUN_INFO).write_text(
            json.dumps({"name": name, "teacher": "local", "learner": "local", "evaluator": "local"})
        )
        lines = []
        for c in convs:
            pc = c if name == "original" else perturb(perts[name], c, convs)
            rec = ConversationRecord.model_validate(pc.model_dump(mode="json"))
            rec = rec.model_copy(
                update={"conversation_id": f"{name}-{c.conversation_id}", "tutorial_id": c.conversation_id}
            )
            lines.append(json.dumps(rec.model_dump(mode="json")))
        (d / CONVERSATIONS).write_text("\n".join(lines) + "\n")
        out.append(d)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="*", type=Path)
    ap.add_argument("--synthetic", type=int, default=0, help="judge three synthetic runs with a known order")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--metrics", default="")
    ap.add_argument("--max-tutorials", type=int, default=None)
    ap.add_argument("--max-minutes", type=float, default=11.0)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--verdict-rule", default="agree", help="the rule of DIR's outputs and the report page")
    ap.add_argument("--tie-band", type=float, default=0.0)
    ap.add_argument(
        "--report-site", type=Path, default=None, help="build the runs' report with the head-to-head page here"
    )
    ap.add_argument(
        "--judge-scoring",
        choices=("pairwise", "checklist"),
        default="pairwise",
        help="checklist: verdicts from each conversation's own checklist scores (rule `scores`, tie band 0 points)",
    )
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--write-md", action="store_true")
    ap.add_argument("--note", action="append", default=[], help="a line for the section (e.g. how the runs were made)")
    args = ap.parse_args()

    from benchmarks_md import write_section

    from wikihowagent.compare.core import OVERALL, analyse
    from wikihowagent.compare.engine import judgment_files, read_pair_judgments, reading_note
    from wikihowagent.compare.pairwise import CHECKLIST_READING, SCORES, VERDICT_RULES
    from wikihowagent.evaluation.judge import load_rubrics
    from wikihowagent.markdown import frame_table
    from wikihowagent.runs import PAIR_JUDGMENTS, run_name

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.synthetic:
        args.runs = synthetic_runs(out / "runs", args.synthetic)
    names = [m for m in args.metrics.split(",") if m] or list(load_rubrics())

    def n_records() -> int:
        return sum(len(p.read_text().splitlines()) for p in judgment_files(out, PAIR_JUDGMENTS))

    if not args.report_only:
        cmd = [
            "timeout",
            "-s",
            "INT",
            str(int(60 * args.max_minutes)),
            sys.executable,
            "-m",
            "wikihowagent",
            "compare",
            *map(str, args.runs),
            "--out",
            str(out),
            "--evaluator",
            "local",
            "--concurrency",
            "1",
            "--no-figures",
            "--bootstrap",
            "0",
        ]
        cmd += ["--judge-scoring", args.judge_scoring]
        if args.metrics:
            cmd += ["--metrics", args.metrics]
        if args.max_tutorials:
            cmd += ["--max-tutorials", str(args.max_tutorials)]
        print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
        before, t0 = n_records(), time.perf_counter()
        rc = subprocess.call(cmd, env={**os.environ, "PYTHONPATH": str(ROOT)})
        with (out / TIMINGS).open("a") as fh:
            fh.write(json.dumps({"seconds": time.perf_counter() - t0, "passes": n_records() - before, "rc": rc}) + "\n")
    runs = [run_name(p) for p in args.runs]
    checklist = args.judge_scoring == "checklist"
    reading = CHECKLIST_READING if checklist else "logprobs"
    if checklist:
        args.verdict_rule = SCORES
    records = read_pair_judgments(judgment_files(out, PAIR_JUDGMENTS), "local", reading)
    desc = "local (checklist scores)" if checklist else "local (pairwise, logprobs)"
    res = analyse(
        out,
        records,
        runs,
        names,
        desc,
        reading_note(reading),
        args.bootstrap,
        0,
        rule=args.verdict_rule,
        tie_band=args.tie_band,
    )
    others = {}
    for rule in VERDICT_RULES:
        if not checklist and rule not in (args.verdict_rule, SCORES):
            (out / rule).mkdir(exist_ok=True)
            others[rule] = analyse(
                out / rule,
                records,
                runs,
                names,
                desc,
                reading_note(reading),
                args.bootstrap,
                0,
                figures=False,
                rule=rule,
                tie_band=args.tie_band,
            )
    site = None
    if args.report_site is not None:
        from wikihowagent.report.core import build_report

        site = build_report(list(args.runs), args.report_site, compare=out).out
    t = [json.loads(x) for x in (out / TIMINGS).read_text().splitlines()] if (out / TIMINGS).exists() else []
    passes = sum(x["passes"] for x in t)
    secs = sum(x["seconds"] for x in t)  # includes the model's start and the reading probe per invocation
    n_tut = res.pairwise["tutorial_id"].nunique() if len(res.pairwise) else 0
    cpu = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared with other helpers' jobs)"
    lines = [
        f"Embedded judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp, n_parallel 1), {cpu}; runs "
        + ", ".join(f"`{r}`" for r in runs)
        + f"; rubrics: {', '.join(names)}; {n_tut} tutorials; "
        + (
            "each conversation judged alone by the checklist judge (`compare --judge-scoring checklist`, the "
            "embedded judge's default), each verdict from the two conversations' own scores (rule `scores`, "
            "tie band 0 points); "
            if checklist
            else "every pair judged in both orders; "
        )
        + f"{args.bootstrap} bootstrap resamples of tutorials. Load average "
        f"{os.getloadavg()[0]:.1f} when written. `scripts/bench_compare.py`.",
        "",
        f"- cost: {secs / passes:.1f} s per judge pass (one order, {len(names)} rubric(s), incl. the model's start "
        f"per invocation), {2 * secs / passes:.1f} s per comparison (both orders); {passes} passes timed"
        if passes
        else '- cost: not timed here (the checklist judge\'s cost per conversation: section "checklist judge")'
        if checklist
        else "- cost: not timed",
        f"- verdicts: {len(res.pairwise)}; left out (an order missing or unreadable): {res.missing}",
    ]
    lines += [f"- {n}" for n in args.note]
    if len(res.pairwise) and not checklist:  # the checklist judge's verdicts come from scores, not P(A better)
        means = res.pairwise.groupby(["run_a", "run_b"], sort=False)["p_a"].agg(["mean", "min", "max"])
        lines.append(
            "- P(run_a better) averaged over the two orders, mean [min, max] per pair: "
            + "; ".join(
                f"{a} vs {b} {r['mean']:.3f} [{r['min']:.3f}, {r['max']:.3f}]" for (a, b), r in means.iterrows()
            )
        )
    if args.synthetic:
        lines.append(
            f"- synthetic runs (`--synthetic {args.synthetic}`): the true order is original above terse and skip_steps"
        )
    lines.append(
        f"- outputs: {out / 'pairwise.csv'} (verdict rule {res.rule}), bradley_terry.csv, win_rates.csv, "
        "position.csv, summary.md"
        + "".join(f"; rule {r.rule}: {out / name}/" for name, r in others.items())
        + (f"; report: {site / 'head-to-head.html'}" if site else "")
    )
    lines.append("")
    for r in [res, *others.values()]:
        if r.bradley_terry is not None and len(r.bradley_terry):
            lines += [
                f"Bradley–Terry, overall, verdict rule {r.rule} (log-strength θ, mean 0; 95 % CI over tutorials):",
                "",
                frame_table(r.bradley_terry[r.bradley_terry["rubric"] == OVERALL].drop(columns="rubric")),
                "",
            ]
    if res.bradley_terry is not None and len(res.bradley_terry):
        lines += [f"Per rubric (verdict rule {res.rule}):", "", frame_table(res.bradley_terry), ""]
    for r in [res, *others.values()]:
        lines += [f"Win rates (verdict rule {r.rule}; ties half):", "", frame_table(r.win_rates), ""]
    lines += ["Position consistency (the same under every rule):", "", frame_table(res.position)]
    md = "\n".join(lines)
    print(md, flush=True)
    if args.write_md:
        what = "runs with a known order (synthetic)" if args.synthetic else "runs of the embedded model"
        if checklist:
            write_section(f"compare: checklist verdicts on {what} (Bradley–Terry, position consistency)", md)
        else:
            write_section(f"compare: head to head on {what} (Bradley–Terry, cost)", md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
