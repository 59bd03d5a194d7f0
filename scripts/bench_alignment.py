#!/usr/bin/env python
"""Judge prompt variants chosen on people: agreement with the human study's development split, judge-check
accuracy and cost, one table (issue 20).

    # model time (one model process at a time; each call stops cleanly after --minutes and resumes where it stopped)
    .venv/bin/python scripts/bench_alignment.py judge --variants plain --per-tutorial 2 --minutes 11
    .venv/bin/python scripts/bench_alignment.py check --variants plain --check-n 4 --minutes 11
    # no model: align every variant's scores against both humans, beside the paper's judges
    .venv/bin/python scripts/bench_alignment.py report --variants tutorial-first,plain --per-tutorial 2 [--write-md]

`judge`: `wikihowagent evaluate` (embedded judge, `--judge-scoring weighted --judge-prompt VARIANT --metrics
rubric`) on the development split's conversations (`--study`, the paper's run-file format): all 70, or a fixed
subset of `--per-tutorial` K conversations per tutorial, the models taken in turn (tutorial t: models 2t, 2t+1
mod 7 for K = 2), written as paper run files with the original names under OUT/subset-K/. Scores go to
OUT/VARIANT/<run>/scores.jsonl (kept: `align --calibrate/--ppi` can read them); each call appends
(conversations judged, seconds) to OUT/VARIANT/timing.jsonl.

`check`: `judge-check`'s perturbations (wikihowagent/data/perturbations.json) of `bench_judge.py`'s synthetic conversations
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
import csv
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

STUDY = ROOT.parent / "shared" / "human-study"  # the issue's `../shared/human-study/`
OUT = ROOT.parent / "runs" / "human-study"  # outside the repository: later work (align --calibrate) reads it
HUMANS = ("judge_1.csv", "judge_2.csv")
PAPER = "paper_llm_scores.csv"
TIMING = "timing.jsonl"
CHECK_DIR = "judge-check"
ROWS = (
    "Clarity",
    "Truthfulness",
    "Engagement",
    "Coherence",
    "Depth",
    "Relevance",
    "Progress",
    "Naturalness",
    "Overall",
)


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


def paper_records(path: Path) -> list[dict]:
    """The conversation records of one of the paper's run files (`runs.conversation_items`)."""
    from wikihowagent.runs import conversation_items

    return [obj for _, obj in conversation_items(path, paper=True)]


def subset_files(study: Path, out: Path, per_tutorial: int) -> list[Path]:
    """The study's run files (per_tutorial 0), or copies holding K conversations per tutorial: tutorial t
    (its position in the run files, which list the same tutorials in the same order) is taken from models
    (K*t + i) mod M, i < K. Written once under OUT/subset-K/ with the original file names."""
    files = study_files(study)
    if per_tutorial <= 0:
        return files
    data = [paper_records(f) for f in files]
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


def titles(files: list[Path], ids: set[str]) -> list[str]:
    """The tutorial titles of the conversations `ids` of `files`."""
    return [c.get("title", "") for f in files for c in paper_records(f) if c["conversation_id"] in ids]


def conversation_ids(files: list[Path]) -> list[str]:
    return [c["conversation_id"] for f in files for c in paper_records(f)]


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
    return {
        cid
        for cid, rec in last.items()
        if rec.judge
        and rec.judge.prompt == variant
        and sum(v is not None for k, v in rec.metrics.items() if k in ROWS) + len(rec.judge.failures) >= 8
    }


def shortest_first(files: list[Path]) -> list[tuple[Path, dict]]:
    """(run file, conversation) of every conversation of `files`, shortest first (characters of its messages;
    ties in file order): the order `judge` works in."""
    convs = [(f, c) for f in files for c in paper_records(f)]
    convs.sort(key=lambda fc: sum(len(str(m)) for m in fc[1].get("conversation") or []))
    return convs


def single_files(files: list[Path], out: Path, per_tutorial: int) -> list[Path]:
    """One paper run file per conversation, in `shortest_first` order, each named like its run file (the run
    name is the file's stem) under OUT/subset-K/one/<i>/. Shortest first: when the model time runs out, the
    most conversations have been judged by every variant."""
    singles = []
    for f, c in shortest_first(files):
        target = out / f"subset-{per_tutorial}" / "one" / c["conversation_id"] / f.name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps({"total_conversations": [c]}, ensure_ascii=False), encoding="utf-8")
        singles.append(target)
    return singles


def judge(variants: list[str], files: list[Path], out: Path, minutes: float, per_tutorial: int) -> None:
    """Round robin: conversation 1 with every variant, then conversation 2, ... (so every variant has judged
    the same conversations whenever the time runs out), in this process (the model is loaded once), through
    `run_evaluation` (the `evaluate` command's core). Stops starting new work after `minutes`; a conversation
    already started finishes (its scores are written as soon as it is judged: a rerun resumes)."""
    from wikihowagent.console import make_console
    from wikihowagent.evaluation.core import EvaluateRequest, run_evaluation

    console = make_console()
    deadline = time.perf_counter() + minutes * 60
    done = {v: scored_ids(out / v, v) for v in variants}
    for single in single_files(files, out, per_tutorial):
        cid = conversation_ids([single])[0]
        for v in variants:
            if cid in done[v]:
                continue
            if time.perf_counter() > deadline:
                print(f"time is up ({minutes:g} min): rerun to resume", flush=True)
                return
            t0 = time.perf_counter()
            run_evaluation(
                EvaluateRequest(
                    runs=(single,),
                    evaluator="local",
                    metrics="rubric",
                    judge_scoring="weighted",
                    judge_prompt=v,
                    out=out / v,
                    figures=False,
                    concurrency=1,
                    bootstrap=0,
                ),
                console,
            )
            secs = time.perf_counter() - t0
            with open(out / v / TIMING, "a", encoding="utf-8") as fh:
                fh.write(
                    json.dumps(
                        {
                            "conversation_id": cid,
                            "conversations": 1,
                            "seconds": round(secs, 1),
                            "load": round(os.getloadavg()[0], 2),
                        }
                    )
                    + "\n"
                )
            print(f"{v}: {cid} judged in {secs:.0f} s", flush=True)


def seconds_per_conversation(folder: Path, ids: set[str]) -> tuple[float, int]:
    """Wall seconds per judged conversation of `ids` (8 rubrics; the model already loaded)."""
    n = secs = 0.0
    path = folder / TIMING
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec.get("conversation_id") in ids:
                n += rec["conversations"]
                secs += rec["seconds"]
    return (secs / n if n else math.nan), int(n)


# --------------------------------------------------------------------------------------------------
# check: judge-check accuracy (originals + target rubrics of the perturbed copies)
# --------------------------------------------------------------------------------------------------


def pending_checks(jobs: list, conversation_id: str, have: dict) -> list:
    """The judge-check jobs of one conversation whose rubrics `have` (its stored judgments) lacks a score of."""
    return [
        j
        for j in jobs
        if j.conv.conversation_id == conversation_id
        and not (
            (j.conv.conversation_id, j.variant) in have
            and set(j.names)
            <= {k for k, x in (have[(j.conv.conversation_id, j.variant)].get("scores") or {}).items() if x is not None}
        )
    ]


def check(variants: list[str], n: int, out: Path, minutes: float) -> None:
    """judge-check's originals and perturbed copies (target rubrics only), conversation by conversation with
    every variant in turn (equal n when the time runs out); stops starting new work after `minutes`."""
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
    jobs = [j for j in plan(convs, perts, list(rubrics), CheckStats()) if j.variant != ORIGINAL_2]
    deadline = time.perf_counter() + minutes * 60
    from wikihowagent.evaluation.session import JudgeLoop

    with JudgeLoop() as loop:
        for conv in convs:
            for v in variants:
                scorer = make_scorer("weighted", llm, rubrics, None, concurrency=1, prompt=get_prompt(v))
                path = out / v / CHECK_DIR / JUDGMENTS
                path.parent.mkdir(parents=True, exist_ok=True)
                have = read_judgments(path, "local", scorer.label, scorer.prompt_name)
                todo = pending_checks(jobs, conv.conversation_id, have)
                if not todo:
                    continue
                if time.perf_counter() > deadline:
                    print(f"time is up ({minutes:g} min): rerun to resume", flush=True)
                    return
                t0 = time.perf_counter()
                loop.run(run_jobs(todo, scorer, "local", path, lambda k: None, CheckStats()))
                print(
                    f"{v}: judge-check {conv.conversation_id}: {len(todo)} passes in {time.perf_counter() - t0:.0f} s",
                    flush=True,
                )


def judgment_wins(path: Path, scoring: str, prompt: str, ids: list[str]) -> tuple[Any, list[tuple[str, str]]]:
    """(wins, cells) of the embedded judge's judge-check judgments in `path` (scoring mode + prompt variant):
    wins[i, k] = P(original scored higher than its perturbed copy) of conversation ids[i] on cell k =
    (perturbation, targeted rubric), ties half, NaN where either score is missing."""
    import numpy as np

    from wikihowagent.evaluation.judge import load_rubrics
    from wikihowagent.judgecheck.core import ORIGINAL, read_judgments, win
    from wikihowagent.judgecheck.perturbations import load_perturbations

    rubrics = load_rubrics()
    perts = load_perturbations(None, list(rubrics))
    cells = [(p.name, t) for p in perts for t in p.targets if t in rubrics]
    wins = np.full((len(ids), len(cells)), np.nan)
    recs = read_judgments(path, "local", scoring, prompt) if path.exists() else {}
    for i, cid in enumerate(ids):
        orig = (recs.get((cid, ORIGINAL)) or {}).get("scores") or {}
        for k, (pname, rubric) in enumerate(cells):
            pert = (recs.get((cid, pname)) or {}).get("scores") or {}
            if orig.get(rubric) is not None and pert.get(rubric) is not None:
                wins[i, k] = win(orig[rubric], pert[rubric])
    return wins, cells


def _cell_mean(w) -> float:
    """Mean over cells of each cell's mean over conversations (NaN-aware)."""
    import warnings

    import numpy as np

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(np.nanmean(np.nanmean(w, axis=0)))


class CheckAccuracy(NamedTuple):
    """judge-check accuracy of each judge and the paired difference, on the same resampled conversations."""

    n: int  # conversations with at least one cell judged by every judge
    accuracy: dict[str, tuple[float, float, float]]  # judge -> (value, CI low, CI high)
    difference: tuple[float, float, float]  # second judge minus first: (value, CI low, CI high)
    per_cell: dict[str, list[float]]  # judge -> accuracy of each cell


def paired_accuracy(wins: dict[str, Any], n_boot: int = 2000, seed: int = 0) -> CheckAccuracy:
    """Accuracy = mean over the targeted cells of P(original higher); 95 % percentile CIs from resampling
    conversations (rows), the same resamples for every judge, so the difference of the second judge from the
    first has a paired CI. Rows no judge scored at all are left out."""
    import numpy as np

    names = list(wins)
    stack = np.stack([np.asarray(wins[m], dtype=float) for m in names])
    keep = ~np.any(np.all(np.isnan(stack), axis=2), axis=0)
    stack = stack[:, keep]
    n = int(keep.sum())
    nan3 = (math.nan, math.nan, math.nan)
    if n == 0:
        return CheckAccuracy(0, {m: nan3 for m in names}, nan3, {m: [] for m in names})
    rng = np.random.default_rng(seed)
    boots = np.array([[_cell_mean(w[idx]) for w in stack] for idx in (rng.integers(0, n, n) for _ in range(n_boot))])
    point = [_cell_mean(w) for w in stack]

    def ci(values, b) -> tuple[float, float, float]:
        lo, hi = np.nanpercentile(b, [2.5, 97.5])
        return float(values), float(lo), float(hi)

    acc = {m: ci(point[j], boots[:, j]) for j, m in enumerate(names)}
    diff = ci(point[-1] - point[0], boots[:, -1] - boots[:, 0]) if len(names) > 1 else nan3
    cells = {m: [_cell_mean(stack[j][:, [k]]) for k in range(stack.shape[2])] for j, m in enumerate(names)}
    return CheckAccuracy(n, acc, diff, cells)


def check_accuracy(variant: str, n: int, out: Path, n_boot: int = 2000) -> tuple[float, float, float, int]:
    """(mean accuracy over targeted cells, CI low, CI high, conversations) from the judgments on disk."""
    from bench_judge import bench_conversations

    from wikihowagent.judgecheck.core import JUDGMENTS

    ids = [c.conversation_id for c in bench_conversations(n, 3)]
    wins, _cells = judgment_wins(out / variant / CHECK_DIR / JUDGMENTS, "weighted", variant, ids)
    acc = paired_accuracy({variant: wins}, n_boot)
    return (*acc.accuracy[variant], acc.n)


# --------------------------------------------------------------------------------------------------
# report: align against both humans, beside the paper's judges on the same conversations
# --------------------------------------------------------------------------------------------------


CHARS_PER_TOKEN = 4.9  # llama.cpp's token counts of the plain prompts (j1 log: 1912 tokens for ~9,400 characters)
KEYS = ("n", "pearson_r", "pearson_ci_low", "pearson_ci_high", "spearman_rho", "spearman_ci_low", "spearman_ci_high")


def align(scores: list[Path], study: Path, dest: Path) -> dict[str, dict[str, float]]:
    """{rubric or Overall: {pearson_r, pearson_ci_low, ..., spearman_rho, ..., n}} from `align`'s correlations.csv."""
    cmd = [
        *wikihowagent(),
        "align",
        *sum((["-H", str(study / h)] for h in HUMANS), []),
        *sum((["--scores", str(s)] for s in scores), []),
        "--out",
        str(dest),
        "--no-figures",
    ]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"align failed ({res.returncode}): {res.stderr.strip() or res.stdout.strip()}")
    out = {}
    with open(dest / "correlations.csv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["by"] == "all":
                out[row["metric"]] = {k: float(row[k]) if row.get(k) not in ("", None) else math.nan for k in KEYS}
    return out


def common_scores(folder: Path, ids: set[str]) -> Path:
    """The last scores line of each conversation in `ids`, from every run of `folder`, in one file (so every
    variant is aligned on the same conversations)."""
    from wikihowagent.runs import iter_scores

    last = {}
    for path in sorted(folder.glob("*/scores.jsonl")):
        for _n, rec in iter_scores(path, on_error=lambda m: None):
            if rec.conversation_id in ids:
                last[rec.conversation_id] = rec
    dest = folder.parent / "alignment-input" / folder.name / "scores.jsonl"  # outside the variant's folder:
    # `align --scores OUT/VARIANT` then reads each conversation once
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("".join(rec.model_dump_json() + "\n" for rec in last.values()), encoding="utf-8")
    return dest


def paper_subset(study: Path, ids: set[str], dest: Path) -> Path:
    """The paper's judge scores of `ids` only (its bytes, its encoding)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    lines = (study / PAPER).read_bytes().splitlines(keepends=True)
    keep = [lines[0]] + [ln for ln in lines[1:] if ln.split(b",", 1)[0].strip().decode("ascii", "replace") in ids]
    dest.write_bytes(b"".join(keep))
    return dest


def overall_pairs(alignment: Path) -> dict[str, tuple[float, float]]:
    """{conversation id: (human Overall, judge Overall)} from `align`'s paired_scores.csv."""
    from wikihowagent.csvcells import read_people_csv
    from wikihowagent.runs import PAIRED_SCORES_CSV

    head, *rows = read_people_csv(alignment / PAIRED_SCORES_CSV)  # align's cells, as they were before neutralising
    out = {}
    for row in (dict(zip(head, r, strict=False)) for r in rows):
        try:
            h, j = float(row["human_Overall"]), float(row["llm_Overall"])
        except (KeyError, ValueError):
            continue
        if math.isfinite(h) and math.isfinite(j):
            out[row["conversation_id"]] = (h, j)
    return out


def delta_r(
    base: dict[str, tuple[float, float]], other: dict[str, tuple[float, float]], n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float, int]:
    """Overall Pearson r of `other` minus `base` on the conversations both have, with a 95 % paired bootstrap
    CI (the same resampled conversations for both: the difference's own uncertainty, narrower than comparing
    two independent CIs). (delta, low, high, n)."""
    import numpy as np

    ids = sorted(set(base) & set(other))
    if len(ids) < 4:
        return math.nan, math.nan, math.nan, len(ids)
    h = np.array([base[i][0] for i in ids])
    a, b = np.array([base[i][1] for i in ids]), np.array([other[i][1] for i in ids])

    def r(x: np.ndarray, y: np.ndarray) -> float:
        return float(np.corrcoef(x, y)[0, 1]) if x.std() > 0 and y.std() > 0 else math.nan

    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        k = rng.integers(0, len(ids), len(ids))
        boots.append(r(b[k], h[k]) - r(a[k], h[k]))
    lo, hi = np.nanpercentile(boots, [2.5, 97.5])
    return r(b, h) - r(a, h), float(lo), float(hi), len(ids)


def decision(
    variants: list[str],
    deltas: dict[str, tuple[float, float, float, int]],
    acc: dict[str, tuple[float, float, float, int]],
    default: str,
) -> str:
    """The issue's rule, with "on evidence" made explicit: a variant replaces the default when its judge-check
    accuracy is not lower than the default's by more than the default's CI half-width, and its Overall r is
    higher than the default's with the paired 95 % CI of the difference above 0."""
    a0, lo0, hi0, k0 = acc.get(default, (math.nan, math.nan, math.nan, 0))
    half = (hi0 - lo0) / 2 if k0 and math.isfinite(lo0) else math.nan
    eligible, better = [], []
    for v in variants:
        if v == default:
            continue
        a, _lo, _hi, k = acc[v]
        ok_acc = bool(k and k0 and math.isfinite(a) and a >= a0 - half)
        d, dlo, _dhi, _n = deltas[v]
        if ok_acc:
            eligible.append(v)
            if math.isfinite(dlo) and dlo > 0:
                better.append((d, v))
    if not k0:
        return f"Rule not applicable: the default `{default}` has no judge-check accuracy yet."
    if better:
        return (
            f"Rule applied: `{max(better)[1]}` is better than the default `{default}` on evidence (paired Δr CI "
            f"above 0, judge-check within the default's CI): it becomes the default."
        )
    return (
        f"Rule applied: no variant's Overall r is higher than the default `{default}`'s with a paired 95 % CI "
        f"above 0 (eligible on judge-check accuracy: {', '.join(f'`{v}`' for v in eligible) or 'none'}): "
        "the default stays."
    )


def cell(c: dict[str, float], key: str) -> str:
    v = c.get(key, math.nan)
    if not math.isfinite(v):
        return "–"
    lo, hi = c.get(f"{key.split('_')[0]}_ci_low", math.nan), c.get(f"{key.split('_')[0]}_ci_high", math.nan)
    return f"{v:+.2f} [{lo:+.2f}, {hi:+.2f}]" if math.isfinite(lo) else f"{v:+.2f}"


def report(variants: list[str], files: list[Path], study: Path, out: Path, check_n: int, per_tutorial: int) -> str:
    from wikihowagent.evaluation.judge_prompts import DEFAULT_PROMPT, load_prompts

    prompts = load_prompts()
    ids = set(conversation_ids(files))
    judged = {v: scored_ids(out / v, v) & ids for v in variants}
    common = set.intersection(*judged.values()) if judged else set()
    rows, acc = {}, {}
    for v in variants:
        rows[v] = align([common_scores(out / v, common)], study, out / v / "alignment")
        acc[v] = check_accuracy(v, check_n, out)
    paper = (
        align([paper_subset(study, common, out / "paper" / PAPER)], study, out / "paper" / "alignment")
        if common
        else {}
    )
    pairs = {v: overall_pairs(out / v / "alignment") for v in variants}
    base = DEFAULT_PROMPT if DEFAULT_PROMPT in variants else variants[0]
    deltas = {v: delta_r(pairs[base], pairs[v]) for v in variants}
    n_conv = len(common)
    pool = (
        f"a fixed subset of {len(ids)} (K = {per_tutorial} per tutorial, the 7 models taken in turn)"
        if per_tutorial
        else f"all {len(ids)}"
    )
    tutorials = len({t for t in titles(files, common)})
    cpu = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores shared with other jobs"
    lines = [
        f"Development split of the paper's human study (`{study.name}/`): 10 tutorials, 70 conversations by seven 7B "
        f"models, two human judges. Pool: {pool} conversations, judged shortest first, every variant in turn on "
        f"each conversation, as far as the model time allowed: every column below is on the **{n_conv} "
        f"conversations (of {tutorials} tutorials)** judged by every variant — the shortest of the pool, not a "
        "random sample. Embedded judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp "
        f"in-process, n_ctx 8192, 1 slot), `--judge-scoring weighted`, {cpu}. Correlations: `wikihowagent align` "
        "against the mean of both humans, 95 % bootstrap CIs (2000 resamples of conversations); Overall = mean of "
        "the 8 rubrics. Paper = the paper's own 7B judges (`paper_llm_scores.csv`) on the same conversations. "
        f"judge-check: the first {check_n} synthetic conversations of `bench_judge.py`, accuracy over the targeted "
        "cells, 95 % CI over conversations. s / conversation: wall time to judge one of these conversations on "
        "8 rubrics (model loaded; consecutive variants share the server's prompt cache where their prompts "
        f"start alike), on a machine shared with other jobs (load average {os.getloadavg()[0]:.1f} when written). `scripts/bench_alignment.py`.",
        "",
    ]
    head = ["", *variants, "paper judges"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for stat, label in (("pearson_r", "Pearson r"), ("spearman_rho", "Spearman ρ")):
        for m in ROWS:
            name = f"**{m}** {label}" if m == "Overall" else f"{m} {label}"
            vals = [cell(rows[v].get(m, {}), stat) for v in variants] + [cell(paper.get(m, {}), stat)]
            lines.append(f"| {name} | " + " | ".join(vals) + " |")
    lines.append(
        "| n (conversations with a score) | "
        + " | ".join(str(int(rows[v].get("Overall", {}).get("n", 0))) for v in variants)
        + f" | {int(paper.get('Overall', {}).get('n', 0))} |"
    )
    accs = []
    for v in variants:
        a, lo, hi, k = acc[v]
        accs.append(f"{a:.3f} [{lo:.2f}, {hi:.2f}] (n {k})" if k else "not run")
    lines.append("| judge-check accuracy | " + " | ".join(accs) + " | – |")
    spc = [seconds_per_conversation(out / v, common) for v in variants]
    lines.append(
        f"| **Overall** r − `{base}`'s, paired bootstrap | "
        + " | ".join(
            "–" if v == base else (f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]" if math.isfinite(d) else "–")
            for v, (d, lo, hi, _n) in deltas.items()
        )
        + " | – |"
    )
    lines.append("| s / conversation | " + " | ".join(f"{s:.0f} (n {k})" if k else "–" for s, k in spc) + " | – |")
    lines += ["", decision(variants, deltas, acc, base)]
    lines += ["", "Variants (wikihowagent/data/judge_prompts.json):", ""]
    lines += [f"- `{v}`: {prompts[v].description}" for v in variants if v in prompts]
    return "\n".join(lines)


def prompt_sizes(variants: list[str], study: Path) -> str:
    """What each variant feeds the judge for all 70 conversations (no model): the longest rubric prompt per
    conversation in characters, how many conversations the truncation rule shortened, and how many would
    not fit the embedded judge's 8,192-token context (at the characters per token measured below)."""
    import statistics

    from wikihowagent.evaluation.inputs import resolve_inputs
    from wikihowagent.evaluation.judge import load_rubrics
    from wikihowagent.evaluation.judge_prompts import load_prompts, shorten
    from wikihowagent.evaluation.scoring import rubric_prompt

    rubrics = load_rubrics()
    prompts = load_prompts()
    convs = [c for src in resolve_inputs(study_files(study), ROOT) for c in src.conversations(on_error=print)]
    lines = [
        f"What each variant sends for the {len(convs)} conversations of the split (longest of the 8 rubric "
        f"prompts, system message included; no model): characters, and how many prompts exceed the embedded "
        f"judge's 8,192-token context at {CHARS_PER_TOKEN} characters per token (the ratio llama.cpp counted "
        "on these prompts; an estimate).",
        "",
        "| variant | median chars | max chars | conversations shortened | prompts over 8,192 tokens (est.) |",
        "|---|---|---|---|---|",
    ]
    for v in variants:
        p = prompts[v]
        longest = [
            max(sum(len(t) for _, t in rubric_prompt(c, r, False, p)[0]) for r in rubrics.values()) for c in convs
        ]
        short = sum(shorten(c, p).note is not None for c in convs)
        over = sum(n / CHARS_PER_TOKEN > 8192 for n in longest)
        lines.append(f"| {v} | {statistics.median(longest):,.0f} | {max(longest):,} | {short} | {over} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("judge", "check", "report"))
    ap.add_argument("--variants", required=True, help="comma-separated names of wikihowagent/data/judge_prompts.json")
    ap.add_argument("--per-tutorial", type=int, default=2, help="conversations per tutorial (0 = all 70)")
    ap.add_argument("--check-n", type=int, default=4, help="judge-check conversations")
    ap.add_argument("--minutes", type=float, default=11.0, help="stop (resumably) after this much model time")
    ap.add_argument("--study", type=Path, default=STUDY)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    files = subset_files(args.study, args.out, args.per_tutorial) if args.step != "check" else []
    if args.step == "judge":
        judge(variants, files, args.out, args.minutes, args.per_tutorial)
    elif args.step == "check":
        check(variants, args.check_n, args.out, args.minutes)
    else:
        md = report(variants, files, args.study, args.out, args.check_n, args.per_tutorial)
        md += "\n\n" + prompt_sizes(variants, args.study)
        print(md)
        if args.write_md:
            from benchmarks_md import write_section

            write_section("judge prompts on the human study (development split)", md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
