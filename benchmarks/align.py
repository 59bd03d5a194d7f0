"""Benchmark `wikihowagent align`: N conversations x J judges (default 10,000 x 2), time and memory.

Builds synthetic runs (`scores.jsonl` with judge replies of realistic size) and judge sheets (2 % blanks, a
few bad cells) in a temp directory, then
1. runs the pipeline in-process, phase by phase (read, compute, write incl. figures), and
2. runs the `align` command end to end in a fresh Python process (imports included), peak RSS of that child.

    python -m benchmarks align [--n 10000] [--judges 2] [--runs 5] [--bootstrap 2000] [--by model]
                                            [--write-md]   # rewrite the "align" section of BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import ROOT, Section, timed, write_section
from wikihowagent.alignment import schema
from wikihowagent.layout import RUN_INFO, SCORES

METRICS = schema.metrics()  # the rubrics, in the rubric file's order
SHEET = ("conversation_id", "filename", "title", *schema.sheet_metrics(), "comment")  # the paper's published sheets
RAW = (
    "Clarity: 4\nEngagement: 3\nCoherence: 5\nDepth: 3\nRelevance: 4\nProgress: 4\nNaturalness: 3\n"
    "The teacher explains each step clearly; the learner asks few questions. "
) * 6


def build(tmp: Path, n: int, judges: int, runs: int, seed: int = 0) -> tuple[list[Path], Path]:
    rng = np.random.default_rng(seed)
    llm = rng.integers(2, 6, size=(n, len(METRICS))).astype(float)  # LLMs rate high
    per_run = -(-n // runs)
    ids, run_of = [], []
    for r in range(runs):
        name = f"T-model{r}_L-model{r}_E-judge_{r}"
        d = tmp / "runs" / name
        d.mkdir(parents=True)
        (d / RUN_INFO).write_text(json.dumps({"name": name}))
        with open(d / SCORES, "w") as fh:
            for i in range(r * per_run, min(n, (r + 1) * per_run)):
                cid = f"{name}-{i:06d}"
                ids.append(cid)
                run_of.append(name)
                rec = {
                    "conversation_id": cid,
                    "run": name,
                    "tutorial_id": f"{i % (per_run):016x}",
                    "title": f"How to do thing {i}",
                    "domain": f"Domain {i % 17}",
                    "teacher": f"model{r}",
                    "learner": f"model{r}",
                    "mode": "default",
                    "metrics": dict(zip(METRICS, llm[i].tolist(), strict=False)),
                    "judge": {
                        "evaluator": "judge",
                        "raw": {"rubric": [RAW], "truthfulness": [RAW[:300]]},
                        "failures": [],
                        "notes": [],
                    },
                    "notes": [],
                }
                fh.write(json.dumps(rec) + "\n")
    sheets = []
    order = [METRICS.index(m.capitalize()) for m in SHEET[3:11]]
    for j in range(judges):
        human = np.clip(llm - rng.integers(0, 3, llm.shape) + rng.integers(0, 2, llm.shape), 1, 5)
        blank = rng.random(human.shape) < 0.02
        path = tmp / f"judge{j + 1}.csv"
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(SHEET)
            for i, cid in enumerate(ids):
                cells = ["" if blank[i, k] else str(int(human[i, k])) for k in order]
                if i % 2500 == 7:
                    cells[0] = "n.a."  # a few bad cells, as real sheets have
                w.writerow([cid, run_of[i], f"How to do thing {i}", *cells, ""])
        sheets.append(path)
    return sheets, tmp / "runs"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--judges", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument("--by", default="none,model", help="comma list of: none | run | model | domain (one run each)")
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args(argv)
    parts, headline = [], []
    for by in args.by.split(","):
        by = None if by.strip() in ("", "none") else by.strip()
        text, seconds, peak = bench_once(args, by)
        parts.append(text)
        headline.append(f"{seconds:.1f} s, peak {peak:.0f} MB" + (f" with `--by {by}`" if by else ""))
    text = "\n".join(parts)
    print(text)
    if args.write_md:
        what = f"{args.n:,} conversations x {args.judges} judges, {args.bootstrap:,} resamples: "
        write_section(Section("align", "align", what + "; ".join(headline), "python -m benchmarks align", text))


def _align_command(sheets: list[Path], runs: Path, out: Path, bootstrap: int, by: str | None) -> list[str]:
    """`align` on the sheets and runs, as a fresh Python process runs it (no other command imported)."""
    return [
        sys.executable,
        "-c",
        "import sys, typer; from wikihowagent.alignment.command import align; "
        "app = typer.Typer(); app.command()(align); app.command('noop')(lambda: None); app()",
        "align",
        *sum((["-H", str(s)] for s in sheets), []),
        "--scores",
        str(runs),
        "--out",
        str(out),
        "--bootstrap",
        str(bootstrap),
        *(["--by", by] if by else []),
    ]


def bench_once(args, by: str | None) -> tuple[str, float, float]:
    with tempfile.TemporaryDirectory(prefix="bench_align_") as td:
        tmp = Path(td)
        t = time.perf_counter()
        sheets, runs = build(tmp, args.n, args.judges, args.runs)
        t_build = time.perf_counter() - t
        size_mb = sum(p.stat().st_size for p in runs.rglob(SCORES)) / 1e6

        # 1. the command end to end in a fresh process (imports included)
        cmd = _align_command(sheets, runs, tmp / "out_cli", args.bootstrap, by)
        proc = timed(cmd, env={"PYTHONPATH": str(ROOT), "PATH": ""})  # exits on failure, with its stderr
        t_cli, child_rss = proc.seconds, proc.peak_mb

        # 2. in-process, phase by phase (imports done first, not counted)
        import krippendorff  # noqa: F401
        import matplotlib.pyplot  # noqa: F401
        import scipy.stats  # noqa: F401

        from wikihowagent.alignment import core as report
        from wikihowagent.alignment.annotations import read_human_files
        from wikihowagent.alignment.problems import Problems
        from wikihowagent.alignment.sources import read_llm_scores

        t = time.perf_counter()
        read_human_files(sheets, Problems())
        read_llm_scores([runs], Problems())
        t_read = time.perf_counter() - t
        t0 = time.perf_counter()
        problems = Problems()
        res = report.compute(sheets, [runs], by=by, n_boot=args.bootstrap, seed=0, problems=problems)
        t1 = time.perf_counter()
        report.write_outputs(res, tmp / "out", sheets, figures=True)
        t2 = time.perf_counter()
        n_pairs = res.groups[0].correlations["Clarity"].n
        n_figs = len(list((tmp / "out" / "figures").glob("*.png")))

    rows = [
        ("conversations x judges", f"{args.n:,} x {args.judges} ({args.runs} runs, scores.jsonl {size_mb:.1f} MB)"),
        ("paired (Clarity)", f"{n_pairs:,}"),
        ("groups", f"all + {len(res.groups) - 1} ({by})" if by else "all"),
        ("bootstrap", f"{args.bootstrap:,} resamples per metric and group"),
        ("problems reported", f"{len(problems)}"),
        (
            "**`align` command, fresh process (imports included)**",
            f"**{t_cli:.2f} s**, peak RSS {child_rss:.0f} MB",
        ),
        ("in-process: read inputs", f"{t_read:.2f} s"),
        ("in-process: compute (read + stats + agreement)", f"{t1 - t0:.2f} s"),
        (f"in-process: write outputs incl. {n_figs} figures", f"{t2 - t1:.2f} s"),
    ]
    title = f"`--by {by}`" if by else "no `--by`"
    return (
        f"### {title}\n\nSynthetic data (build {t_build:.1f} s, not counted); "
        f"{_cpus()} CPU(s), load average {os.getloadavg()[0]:.1f} at the end (the machine is shared; "
        "the fresh-process time includes ~1.5 s of imports: scipy.stats, matplotlib).\n\n| What | Result |\n|---|---|\n"
        + "\n".join(f"| {a} | {b} |" for a, b in rows)
        + "\n",
        t_cli,
        child_rss,
    )


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    main()
