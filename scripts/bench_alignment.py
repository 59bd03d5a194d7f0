#!/usr/bin/env python
"""Judge prompt variants chosen on people: agreement with the human study's development split, judge-check
accuracy and cost, one table (issue 20).

    # model time (run under `modelrun`; each call stops cleanly after --minutes and resumes where it stopped)
    modelrun .venv/bin/python scripts/bench_alignment.py judge --variants plain --per-tutorial 2 --minutes 11
    modelrun .venv/bin/python scripts/bench_alignment.py check --variants plain --check-n 4 --minutes 11
    # no model: align every variant's scores against both humans, beside the paper's judges
    .venv/bin/python scripts/bench_alignment.py report --variants tutorial-first,plain --per-tutorial 2 [--write-md]

`judge`: `wikihowagent evaluate` (embedded judge, `--judge-scoring weighted --judge-prompt VARIANT --metrics
rubric`) on the development split's conversations (`--study`, the paper's run-file format): all 70, or a fixed
subset of `--per-tutorial` K conversations per tutorial, the models taken in turn (tutorial t: models 2t, 2t+1
mod 7 for K = 2), written as paper run files with the original names under OUT/subset-K/. Scores go to
OUT/VARIANT/<run>/scores.jsonl (kept: `align --calibrate/--ppi` can read them); each call appends
(conversations judged, seconds) to OUT/VARIANT/timing.jsonl.

`check`: `judge-check`'s perturbations (data/perturbations.json) of `bench_judge.py`'s synthetic conversations
(bundled tutorials, 3 steps), the first --check-n of them, judged with the variant; only the originals and
the perturbed copies' target rubrics (no second judging: accuracy only). Judgments: OUT/VARIANT/judge-check/.
Accuracy = mean over the targeted (rubric, perturbation) cells of P(original scores higher), ties half; 95 %
CI by resampling conversations.

`report`: `wikihowagent align -H judge_1.csv -H judge_2.csv --scores OUT/VARIANT` per variant; the paper's judges
(paper_llm_scores.csv) on exactly the same conversations; Pearson and Spearman per rubric and Overall, 95 %
bootstrap CIs (align's, 2000 resamples of conversations).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import math
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

STUDY = ROOT.parent / "shared" / "human-study"  # the issue's `../shared/human-study/`
OUT = ROOT.parent / "runs" / "human-study"  # outside the repository: later work (align --calibrate) reads it
HUMANS = ("judge_1.csv", "judge_2.csv")
PAPER = "paper_llm_scores.csv"
TIMING = "timing.jsonl"
CHECK_DIR = "judge-check"
ROWS = ("Clarity", "Truthfulness", "Engagement", "Coherence", "Depth", "Relevance", "Progress", "Naturalness", "Overall")


def wikihowagent() -> list[str]:
    return [sys.executable, "-m", "wikihowagent"]


# --------------------------------------------------------------------------------------------------
# Conversations: all 70, or a fixed stratified subset
# --------------------------------------------------------------------------------------------------


def study_files(study: Path) -> list[Path]:
    files = sorted((study / "conversations").glob("*.json"))
    if not files:
        raise SystemExit(f"{study / 'conversations'}: no run files")
    return files


def subset_files(study: Path, out: Path, per_tutorial: int) -> list[Path]:
    """The study's run files (per_tutorial 0), or copies holding K conversations per tutorial: tutorial t
    (its position in the run files, which list the same tutorials in the same order) is taken from models
    (K*t + i) mod M, i < K. Written once under OUT/subset-K/ with the original file names."""
    files = study_files(study)
    if per_tutorial <= 0:
        return files
    data = [json.loads(f.read_text(encoding="utf-8"))["total_conversations"] for f in files]
    titles = [[c.get("title") for c in d] for d in data]
    if any(t != titles[0] for t in titles):
        raise SystemExit(f"{study}: the run files do not list the same tutorials in the same order")
    m = len(files)
    pick: dict[int, list[int]] = {i: [] for i in range(m)}
    for t in range(len(titles[0])):
        for i in range(per_tutorial):
            pick[(per_tutorial * t + i) % m].append(t)
    folder = out / f"subset-{per_tutorial}"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for i, f in enumerate(files):
        if not pick[i]:
            continue
        target = folder / f.name
        convs = [c for t, c in enumerate(data[i]) if t in pick[i]]
        text = json.dumps({"total_conversations": convs}, ensure_ascii=False)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def conversation_ids(files: list[Path]) -> list[str]:
    return [c["conversation_id"] for f in files for c in json.loads(f.read_text(encoding="utf-8"))["total_conversations"]]


# --------------------------------------------------------------------------------------------------
# judge: evaluate under a deadline, resumable
# --------------------------------------------------------------------------------------------------


def scored_ids(folder: Path, variant: str) -> set[str]:
    """Conversations of `folder` whose 8 rubric scores were judged with `variant` (the last line counts)."""
    from wikihowagent.runs import iter_scores

    last = {}
    for path in folder.glob("*/scores.jsonl"):
        for _n, rec in iter_scores(path, on_error=lambda m: None):
            last[rec.conversation_id] = rec
    return {cid for cid, rec in last.items() if rec.judge and rec.judge.prompt == variant
            and sum(v is not None for k, v in rec.metrics.items() if k in ROWS) + len(rec.judge.failures) >= 8}


def judge(variant: str, files: list[Path], out: Path, minutes: float) -> None:
    folder = out / variant
    folder.mkdir(parents=True, exist_ok=True)
    before = scored_ids(folder, variant)
    todo = set(conversation_ids(files)) - before
    if not todo:
        print(f"{variant}: all {len(before)} conversations already judged", flush=True)
        return
    cmd = [*wikihowagent(), "evaluate", *map(str, files), "--evaluator", "local", "--metrics", "rubric",
           "--judge-scoring", "weighted", "--judge-prompt", variant, "--out", str(folder), "--no-figures",
           "--concurrency", "1"]  # one server slot: conversations one after another keep the prompt cache warm
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT)
    try:
        proc.wait(timeout=minutes * 60)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # evaluate keeps what it wrote; the next call resumes
        proc.wait()
    secs = time.perf_counter() - t0
    done = scored_ids(folder, variant) - before
    with open(folder / TIMING, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"conversations": len(done), "seconds": round(secs, 1), "load": os.getloadavg()[0]}) + "\n")
    print(f"{variant}: {len(done)} conversations judged in {secs:.0f} s; {len(todo) - len(done)} left", flush=True)


def seconds_per_conversation(folder: Path) -> tuple[float, int]:
    """Wall seconds per judged conversation over every call (process start and model load included)."""
    n = secs = 0.0
    path = folder / TIMING
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            n += rec["conversations"]
            secs += rec["seconds"]
    return (secs / n if n else math.nan), int(n)


# --------------------------------------------------------------------------------------------------
# check: judge-check accuracy (originals + target rubrics of the perturbed copies)
# --------------------------------------------------------------------------------------------------


def check(variant: str, n: int, out: Path, minutes: float) -> None:
    from bench_judge import bench_conversations

    from wikihowagent.backends import make_chat_model
    from wikihowagent.config import load_config
    from wikihowagent.evaluation.judge import load_rubrics
    from wikihowagent.evaluation.judge_prompts import get_prompt
    from wikihowagent.evaluation.scoring import make_scorer
    from wikihowagent.judgecheck.core import JUDGMENTS, ORIGINAL_2, CheckStats, plan, read_judgments, run_jobs
    from wikihowagent.judgecheck.perturbations import load_perturbations

    cfg = load_config(None)
    llm = make_chat_model("local", cfg.model.model_copy(update={"temperature": 0.0}), cfg.local)
    rubrics = load_rubrics()
    perts = load_perturbations(None, list(rubrics))
    convs = bench_conversations(n, 3)
    scorer = make_scorer("weighted", llm, rubrics, None, concurrency=1, prompt=get_prompt(variant))
    folder = out / variant / CHECK_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / JUDGMENTS
    jobs = [j for j in plan(convs, perts, list(rubrics), CheckStats()) if j.variant != ORIGINAL_2]
    deadline = time.perf_counter() + minutes * 60
    loop = asyncio.new_event_loop()
    judged = 0
    try:
        for j in jobs:
            if time.perf_counter() > deadline:
                break
            have = read_judgments(path, "local", scorer.label, scorer.prompt_name).get((j.conv.conversation_id, j.variant))
            if have is not None and set(j.names) <= {k for k, v in (have.get("scores") or {}).items() if v is not None}:
                continue
            loop.run_until_complete(run_jobs([j], scorer, "local", path, lambda k: None, CheckStats()))
            judged += 1
    finally:
        loop.close()
    print(f"{variant}: judge-check {judged} passes judged", flush=True)


def check_accuracy(variant: str, n: int, out: Path, n_boot: int = 2000) -> tuple[float, float, float, int]:
    """(mean accuracy over targeted cells, CI low, CI high, conversations) from the judgments on disk."""
    import numpy as np

    from bench_judge import bench_conversations

    from wikihowagent.evaluation.judge import load_rubrics
    from wikihowagent.judgecheck.core import JUDGMENTS, ORIGINAL, read_judgments, win
    from wikihowagent.judgecheck.perturbations import load_perturbations

    rubrics = load_rubrics()
    perts = load_perturbations(None, list(rubrics))
    ids = [c.conversation_id for c in bench_conversations(n, 3)]
    recs = read_judgments(out / variant / CHECK_DIR / JUDGMENTS, "local", "weighted", variant)
    cells = [(p.name, t) for p in perts for t in p.targets if t in rubrics]
    wins = np.full((len(ids), len(cells)), np.nan)
    for i, cid in enumerate(ids):
        orig = (recs.get((cid, ORIGINAL)) or {}).get("scores") or {}
        for k, (pname, rubric) in enumerate(cells):
            pert = (recs.get((cid, pname)) or {}).get("scores") or {}
            if orig.get(rubric) is not None and pert.get(rubric) is not None:
                wins[i, k] = win(orig[rubric], pert[rubric])
    done = ~np.all(np.isnan(wins), axis=1)
    wins = wins[done]
    if not len(wins):
        return math.nan, math.nan, math.nan, 0

    def stat(w: np.ndarray) -> float:
        with np.errstate(all="ignore"):
            return float(np.nanmean(np.nanmean(w, axis=0)))

    rng = np.random.default_rng(0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        boots = [stat(wins[rng.integers(0, len(wins), len(wins))]) for _ in range(n_boot)]
    lo, hi = np.nanpercentile(boots, [2.5, 97.5])
    return stat(wins), float(lo), float(hi), int(done.sum())


# --------------------------------------------------------------------------------------------------
# report: align against both humans, beside the paper's judges on the same conversations
# --------------------------------------------------------------------------------------------------


def align(scores: list[Path], study: Path, dest: Path) -> dict[str, dict[str, float]]:
    """{rubric or Overall: {pearson_r, pearson_ci_low, ..., spearman_rho, ..., n}} from `align`'s correlations.csv."""
    cmd = [*wikihowagent(), "align", *sum((["-H", str(study / h)] for h in HUMANS), []),
           *sum((["--scores", str(s)] for s in scores), []), "--out", str(dest), "--no-figures"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"align failed ({res.returncode}): {res.stderr.strip() or res.stdout.strip()}")
    out = {}
    with open(dest / "correlations.csv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["by"] == "all":
                out[row["metric"]] = {k: float(v) if v not in ("", None) else math.nan for k, v in row.items()
                                      if k.startswith(("pearson_r", "pearson_ci", "spearman_rho", "spearman_ci", "n"))}
    return out


def paper_subset(study: Path, ids: set[str], dest: Path) -> Path:
    """The paper's judge scores of `ids` only (its bytes, its encoding)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    lines = (study / PAPER).read_bytes().splitlines(keepends=True)
    keep = [lines[0]] + [ln for ln in lines[1:] if ln.split(b",", 1)[0].strip().decode("ascii", "replace") in ids]
    dest.write_bytes(b"".join(keep))
    return dest


def cell(c: dict[str, float], key: str) -> str:
    v = c.get(key, math.nan)
    if not math.isfinite(v):
        return "–"
    lo, hi = c.get(f"{key.split('_')[0]}_ci_low", math.nan), c.get(f"{key.split('_')[0]}_ci_high", math.nan)
    return f"{v:+.2f} [{lo:+.2f}, {hi:+.2f}]" if math.isfinite(lo) else f"{v:+.2f}"


def report(variants: list[str], files: list[Path], study: Path, out: Path, check_n: int, per_tutorial: int) -> str:
    from wikihowagent.evaluation.judge_prompts import load_prompts

    prompts = load_prompts()
    ids = set(conversation_ids(files))
    judged = {v: scored_ids(out / v, v) & ids for v in variants}
    common = set.intersection(*judged.values()) if judged else set()
    rows, acc = {}, {}
    for v in variants:
        runs = sorted(p.parent for p in (out / v).glob("*/scores.jsonl"))
        rows[v] = align(runs, study, out / v / "alignment")
        acc[v] = check_accuracy(v, check_n, out)
    paper = align([paper_subset(study, common, out / "paper" / PAPER)], study, out / "paper" / "alignment") if common else {}
    n_conv = len(common)
    what = (f"a fixed subset of {len(ids)} (K = {per_tutorial} per tutorial, the 7 models taken in turn)"
            if per_tutorial else f"all {len(ids)}")
    cpu = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores shared with other jobs"
    lines = [
        f"Development split of the paper's human study (`{study.name}/`): 10 tutorials, 70 conversations by seven 7B "
        f"models, two human judges. Conversations judged: {what}; every column below is on the {n_conv} "
        "conversations judged by every variant. Embedded judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp "
        f"in-process, n_ctx 8192, 1 slot), `--judge-scoring weighted`, {cpu}. Correlations: `wikihowagent align` "
        "against the mean of both humans, 95 % bootstrap CIs (2000 resamples of conversations); Overall = mean of "
        "the 8 rubrics. Paper = the paper's own 7B judges (`paper_llm_scores.csv`) on the same conversations. "
        f"judge-check: the first {check_n} synthetic conversations of `bench_judge.py`, accuracy over the targeted "
        "cells, 95 % CI over conversations. s/conv: wall time per conversation, 8 rubrics, process start and "
        "model load included, shared machine. `scripts/bench_alignment.py`.", "",
    ]
    head = ["", *variants, "paper judges"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for stat, label in (("pearson_r", "Pearson r"), ("spearman_rho", "Spearman ρ")):
        for m in ROWS:
            name = f"**{m}** {label}" if m == "Overall" else f"{m} {label}"
            vals = [cell(rows[v].get(m, {}), stat) for v in variants] + [cell(paper.get(m, {}), stat)]
            lines.append(f"| {name} | " + " | ".join(vals) + " |")
    lines.append("| n (conversations with a score) | " + " | ".join(
        str(int(rows[v].get("Overall", {}).get("n", 0))) for v in variants) + f" | {int(paper.get('Overall', {}).get('n', 0))} |")
    accs = []
    for v in variants:
        a, lo, hi, k = acc[v]
        accs.append(f"{a:.3f} [{lo:.2f}, {hi:.2f}] (n {k})" if k else "not run")
    lines.append("| judge-check accuracy | " + " | ".join(accs) + " | – |")
    spc = [seconds_per_conversation(out / v) for v in variants]
    lines.append("| s / conversation | " + " | ".join(f"{s:.0f} (n {k})" if k else "–" for s, k in spc) + " | – |")
    lines += ["", "Variants (data/judge_prompts.json):", ""]
    lines += [f"- `{v}`: {prompts[v].description}" for v in variants if v in prompts]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("judge", "check", "report"))
    ap.add_argument("--variants", required=True, help="comma-separated names of data/judge_prompts.json")
    ap.add_argument("--per-tutorial", type=int, default=2, help="conversations per tutorial (0 = all 70)")
    ap.add_argument("--check-n", type=int, default=4, help="judge-check conversations")
    ap.add_argument("--minutes", type=float, default=11.0, help="stop (resumably) after this much model time")
    ap.add_argument("--study", type=Path, default=STUDY)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    files = subset_files(args.study, args.out, args.per_tutorial)
    if args.step == "judge":
        deadline = time.perf_counter() + args.minutes * 60
        for v in variants:
            left = (deadline - time.perf_counter()) / 60
            if left > 0.5:
                judge(v, files, args.out, left)
    elif args.step == "check":
        deadline = time.perf_counter() + args.minutes * 60
        for v in variants:
            left = (deadline - time.perf_counter()) / 60
            if left > 0.5:
                check(v, args.check_n, args.out, left)
    else:
        md = report(variants, files, args.study, args.out, args.check_n, args.per_tutorial)
        print(md)
        if args.write_md:
            from benchmarks_md import write_section

            write_section("judge prompts on the human study (development split)", md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
