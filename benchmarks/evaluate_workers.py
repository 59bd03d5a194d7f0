"""`evaluate --no-judge` against the encoder alone, over the same conversations, in one run.

Each repetition runs, one after the other in fresh processes (so each sees the same machine):
  encoder   all-MiniLM-L6-v2 alone over the unique 256-piece chunks of the conversations' texts (tutorials and
            teacher turns), as a program that only embeds would: length-sorted batches of 32, torch's threads;
  old       `evaluate` of another checkout (`--old DIR`, e.g. the revision before `--workers`);
  workers1  this checkout's `evaluate --workers 1` (in one process);
  default   this checkout's `evaluate` with its default `--workers` (the cores available).
Each evaluate scores every conversation from scratch (`--no-judge --no-figures --bootstrap 0`, a fresh `--out`).
The ratio of each to the encoder's forward passes is taken within its repetition; the figures are the means
over repetitions with bootstrap CIs. The scores of the first repetition are compared (old vs new, workers1 vs
default: the largest difference per metric). A `parts` job measures, in one process, what the plan for a GPU node
rests on: the encoder's word pieces per conversation and the CPU seconds per conversation of everything else.

    git worktree add /tmp/base 83262ae          # or any checkout of the code to compare with
    python -m benchmarks evaluate_workers --old /tmp/base --reps 3 [--write-md]

Resumable: each finished job is a line of the results file (`--results`); a rerun does the rest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    ROOT,
    Job,
    Results,
    Section,
    cli,
    mean_ci,
    run_jobs,
    sync_pages,
    table,
    timed,
    with_ci,
    write_section,
)

# the human study's run files: ../shared beside the clone, else $WIKIHOWAGENT_SHARED, else /work/shared
HUMAN_STUDY = next(
    (
        d / "human-study" / "conversations"
        for d in (ROOT.parent / "shared", Path(os.environ.get("WIKIHOWAGENT_SHARED", "/work/shared")))
        if (d / "human-study" / "conversations").is_dir()
    ),
    ROOT.parent / "shared" / "human-study" / "conversations",
)
RESULTS = Path("/tmp/bench_evaluate_workers.jsonl")
WORK = Path("/tmp/bench_evaluate_workers")
VARIANTS = ("encoder", "old", "workers1", "default")
TITLE = "evaluate: workers beside the encoder"
LABEL = "evaluate_workers"  # the GPU-node plan's block on the cluster page (harness.measured_block)
PAGES = ("docs/guides/sweep.md",)
PAPER_CONVERSATIONS = 114_296  # 14,287 tutorials x 8 models
GPU_NODE_CORES = 16


def study_files(folder: Path) -> list[Path]:
    files = sorted(folder.glob("*.json"))
    if not files:
        raise SystemExit(f"{folder}: no run files (the human study's conversations)")
    return files


def load_conversations(files: list[Path]) -> list[Any]:
    from wikihowagent.scores.inputs import resolve_inputs

    convs: list[Any] = []
    for src in resolve_inputs(files, WORK):
        convs += list(src.conversations(on_error=print))
    return convs


def texts_of(convs: list[Any]) -> tuple[list[str], list[str]]:
    from wikihowagent.metrics import computational as M

    return [M.reference_text(c) for c in convs], [M.HYPOTHESIS["default"](c) for c in convs]


def encoder_alone(files: list[Path], out: Path) -> None:
    """The encoder as a program that only embeds: unique chunks, length-sorted batches of 32, torch's threads."""
    import torch

    from wikihowagent.metrics.computational import MiniLM

    convs = load_conversations(files)
    lm = MiniLM()
    refs, hyps = texts_of(convs)
    seqs = sorted({s for t in refs + hyps for s in lm.chunks(t)}, key=len)
    t0 = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(seqs), 32):
            full = [[lm.cls_id, *s, lm.sep_id] for s in seqs[i : i + 32]]
            n = max(len(f) for f in full)
            ids = torch.full((len(full), n), lm.pad_id, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for j, f in enumerate(full):
                ids[j, : len(f)] = torch.tensor(f)
                mask[j, : len(f)] = 1
            lm.model(input_ids=ids, attention_mask=mask)
    forward = time.perf_counter() - t0
    row = {"forward_s": forward, "chunks": len(seqs), "pieces": sum(len(s) + 2 for s in seqs), "convs": len(convs)}
    out.write_text(json.dumps(row))


def parts(files: list[Path], out: Path) -> None:
    """CPU seconds per conversation (one thread) of each part of scoring, and the encoder's pieces per conversation."""
    import torch

    from wikihowagent.metrics import computational as M

    torch.set_num_threads(1)
    clock = time.thread_time
    convs = load_conversations(files)
    t0 = clock()
    M.load_wordnet()
    wordnet_s = clock() - t0
    text = M.Scorers("default", [m for m in M.computational_metrics("default") if m not in M.embedding_metrics()])
    t0 = clock()
    text.score(convs)
    text_s = clock() - t0
    lm = M.MiniLM()
    refs, hyps = texts_of(convs)
    t0 = clock()
    rch, hch = [lm.chunks(r) for r in refs], [lm.chunks(h) for h in hyps]
    chunking_s = clock() - t0
    t0 = clock()
    enc = lm.encode({s for c in rch + hch for s in c})
    forward_s = clock() - t0
    t0 = clock()
    for r, h in zip(rch, hch, strict=True):
        M.bertscore_f1([enc[s][0] for s in r], [enc[s][0] for s in h])
        M.pooled_cosine([(enc[s][1], len(s) + 2) for s in r], [(enc[s][1], len(s) + 2) for s in h])
    matching_s = clock() - t0
    n = len(convs)
    own = [len(set(r) | set(h)) for r, h in zip(rch, hch, strict=True)]  # a conversation's chunks, its tutorial's too
    row = {
        "convs": n,
        "wordnet_load_s": wordnet_s,
        "text_metrics_s_per_conv": text_s / n,
        "chunking_s_per_conv": chunking_s / n,
        "forward_cpu_s_per_conv": forward_s / n,
        "matching_s_per_conv": matching_s / n,
        "pieces_per_conv": sum(len(s) + 2 for r, h in zip(rch, hch, strict=True) for s in set(r) | set(h)) / n,
        "unique_pieces_per_conv": sum(len(s) + 2 for s in enc) / n,
        "chunks_per_conv": sum(own) / n,
        "batches8_per_conv": sum(-(-k // 8) for k in own) / n,
    }
    out.write_text(json.dumps(row))


def evaluate_job(variant: str, rep: int, files: list[Path], old: Path | None) -> dict[str, Any]:
    out = WORK / f"rep{rep}-{variant}"
    shutil.rmtree(out, ignore_errors=True)
    code = old if variant == "old" else ROOT
    argv = cli("evaluate", *map(str, files), "--no-judge", "--no-figures", "--bootstrap", "0", "--out", str(out))
    if variant == "workers1":
        argv += ["--workers", "1"]
    env = dict(os.environ, PYTHONPATH=str(code))
    proc = timed(argv, cwd=code or ROOT, env=env)
    return {"seconds": proc.seconds, "main_cpu_s": proc.cpu_s, "peak_mb": proc.peak_mb}


def helper_job(flag: str, files: list[Path]) -> dict[str, Any]:
    WORK.mkdir(parents=True, exist_ok=True)
    out = WORK / f"{flag.strip('-')}.json"
    proc = timed([sys.executable, "-m", "benchmarks.evaluate_workers", flag, *map(str, files), "--to", str(out)])
    return {"seconds": proc.seconds, **json.loads(out.read_text())}


def score_differences(rep: int = 0) -> dict[str, float]:
    """The largest |difference| per metric between the scores of `a` and `b` in repetition `rep`."""

    def scores(variant: str) -> dict[tuple[str, str], dict[str, Any]]:
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for p in sorted((WORK / f"rep{rep}-{variant}").glob("*/scores.jsonl")):
            for line in p.read_text(encoding="utf-8").splitlines():
                r = json.loads(line)
                out[p.parent.name, r["conversation_id"]] = r["metrics"]
        return out

    diffs: dict[str, float] = {}
    for a, b in (("old", "default"), ("workers1", "default")):
        sa, sb = scores(a), scores(b)
        if not sa or sa.keys() != sb.keys():
            continue
        for key, ma in sa.items():
            for name, va in ma.items():
                vb = sb[key].get(name)
                d = 0.0 if va == vb else abs(float(va) - float(vb)) if None not in (va, vb) else float("inf")
                diffs[f"{a} vs {b}: {name}"] = max(diffs.get(f"{a} vs {b}: {name}", 0.0), d)
    return diffs


def jobs(reps: int, files: list[Path], old: Path | None) -> list[Job]:
    out = [Job({"variant": "parts"}, lambda: helper_job("--parts", files))]
    for rep in range(reps):
        for v in VARIANTS:
            if v == "old" and old is None:
                continue
            if v == "encoder":
                out.append(Job({"rep": rep, "variant": v}, lambda: helper_job("--encoder-alone", files)))
            else:
                out.append(Job({"rep": rep, "variant": v}, lambda v=v, rep=rep: evaluate_job(v, rep, files, old)))
    return out


def ratios(rows: list[dict[str, Any]], over: str = "forward_s") -> dict[str, list[float]]:
    """Per variant, each repetition's evaluate seconds over that repetition's encoder forward seconds (`over`
    "seconds": over the encoder's whole process, its start and model load included)."""
    enc = {r["rep"]: r[over] for r in rows if r.get("variant") == "encoder"}
    out: dict[str, list[float]] = {}
    for r in rows:
        if r.get("variant") in ("old", "workers1", "default") and r["rep"] in enc:
            out.setdefault(r["variant"], []).append(r["seconds"] / enc[r["rep"]])
    return out


GOAL = 1.3  # evaluate's wall time over the encoder's forward passes alone, on the same texts


def floor(p: dict[str, Any], forward_s: float, n: int, measured: float | None, whole: str) -> str:
    """Where the default's time beyond the encoder's goes on this machine, from the measured parts: each worker
    encodes on one thread beside the CPU metrics, and starts (WordNet) before its first conversation."""
    cores = len(os.sched_getaffinity(0))
    per_conv = p["forward_cpu_s_per_conv"] + p["text_metrics_s_per_conv"] + p["chunking_s_per_conv"]
    per_conv += p["matching_s_per_conv"]
    steady = per_conv / cores / (forward_s / n)
    with_start = (n * per_conv / cores + p["wordnet_load_s"]) / forward_s
    goal = "met" if measured is not None and measured <= GOAL else "not met"
    return (
        f"Goal ≤ {GOAL}×: {goal} on this machine. The parts (below) say why: the {cores} workers each encode on one "
        f"thread beside their CPU metrics, {per_conv:.2f} s of one core per conversation, against the encoder "
        f"alone's {forward_s / n:.3f} s on all {cores} cores: {steady:.2f}× for every conversation once the workers "
        f"run. Each worker first loads WordNet ({p['wordnet_load_s']:.1f} s), which {n} conversations do not "
        f"amortise: with it the parts add up to {with_start:.2f}×; the rest is the evaluate process's own start "
        "(imports, reading the runs) and the wait for the last conversation. Over the encoder's whole process (its "
        f"own start and model load counted, as the evaluate's are) the default takes {whole}."
        if goal == "not met"
        else f"Goal ≤ {GOAL}×: met on this machine ({cores} cores)."
    )


def gpu_plan(p: dict[str, Any], main_s: float, gpu_slots_per_s: float, shards: int, workers: int) -> str:
    """The plan for the paper's conversations on one 16-core GPU node, from the measured parts (`p`) and the evaluate
    process's own CPU seconds per conversation (`main_s`, an upper bound: its start is included)."""
    n = PAPER_CONVERSATIONS
    cpu_per_conv = p["text_metrics_s_per_conv"] + p["chunking_s_per_conv"] + p["matching_s_per_conv"]
    cores = shards * workers
    cpu_h = n * (cpu_per_conv + main_s) / cores / 3600
    slots = p["batches8_per_conv"] * 8 * 256  # fixed [8, 256] batches: the token slots the GPU computes
    gpu_h = n * slots / gpu_slots_per_s / 3600
    cpu_node_h = n * (cpu_per_conv + main_s + p["forward_cpu_s_per_conv"]) / cores / 3600
    return "\n".join(
        [
            f"- Encoder: {p['pieces_per_conv']:.0f} word pieces per conversation ({p['chunks_per_conv']:.1f} chunks of "
            f"its teacher text and its tutorial); in fixed batches of 8 × 256 (`--batch-size 8`) that is "
            f"{p['batches8_per_conv']:.2f} batches = {slots:,.0f} token slots per conversation. At an assumed "
            f"{gpu_slots_per_s:,.0f} token slots/s (about 24 MFLOP per slot at 5 TFLOP/s sustained in float32; not "
            f"measured: no GPU here), {n:,} conversations take **{gpu_h:.2f} h** of GPU time.",
            f"- On the CPU (measured here, one thread): text metrics {p['text_metrics_s_per_conv']:.3f} s + chunking "
            f"{p['chunking_s_per_conv']:.3f} s + BERTScore matching and pooling {p['matching_s_per_conv']:.3f} s = "
            f"**{cpu_per_conv:.3f} s per conversation per core** in the workers, and at most {main_s:.3f} s in the "
            f"evaluate process (its start included); on {cores} cores ({shards} shards × {workers} workers), "
            f"{n:,} conversations take **{cpu_h:.2f} h**, plus each worker's start (WordNet "
            f"{p['wordnet_load_s']:.1f} s).",
            f"- The GPU and the cores work at once (many workers share the GPU): the node needs about **max({gpu_h:.2f}, "
            f"{cpu_h:.2f}) = {max(gpu_h, cpu_h):.2f} h** against the goal of 1 h "
            f"({'met' if max(gpu_h, cpu_h) <= 1 else 'not met'} on this GPU throughput; the goal holds down to "
            f"{n * slots / 3600:,.0f} slots/s).",
            f"- Without a GPU, the encoder's {p['forward_cpu_s_per_conv']:.2f} s per conversation per core (measured, "
            f"one thread) joins the rest: a 16-core CPU node needs about **{cpu_node_h:.1f} h**.",
        ]
    )


def _table_rows(rows: list[dict[str, Any]], names: dict[str, str], secs: dict[str, list[float]]) -> list[list[Any]]:
    """A row per variant measured: its runs, seconds and ratios to the encoder's forward passes and whole process."""
    rs, whole = ratios(rows), ratios(rows, over="seconds")
    return [
        [
            names[v],
            len(rs[v]),
            with_ci(*mean_ci(secs[v]), digits=1, unit=" s"),
            with_ci(*mean_ci(rs[v])),
            with_ci(*mean_ci(whole[v])),
        ]
        for v in names
        if rs.get(v)
    ]


def _scores_sentence(worst: dict[str, float]) -> str:
    """How the first repetition's scores compare: `--workers 1` against the default, old against new."""
    return (
        "Scores of the first repetition: "
        + (
            "identical between `--workers 1` and the default (every metric, bit for bit); "
            if not any(k.startswith("workers1") for k in worst)
            else "`--workers 1` vs default differ: "
            + ", ".join(f"{k} {v:.1e}" for k, v in worst.items() if k.startswith("workers1"))
            + "; "
        )
        + "old vs new: "
        + (
            ", ".join(f"{k.split(': ', 1)[1]} max |diff| {v:.1e}" for k, v in worst.items() if k.startswith("old"))
            or "identical"
        )
        + " (every other metric identical; the embedding metrics now do not depend on the batch a chunk is "
        "encoded in, see docs: Metrics, Semantic similarity)."
    )


def markdown(rows: list[dict[str, Any]], old_label: str) -> tuple[str, str, str]:
    enc_rows = [r for r in rows if r.get("variant") == "encoder"]
    part = next(r for r in rows if r.get("variant") == "parts")
    rs = ratios(rows)
    names = {
        "old": f"`evaluate`, {old_label} (before `--workers`)",
        "workers1": "`evaluate --workers 1` (this version, one process)",
        "default": f"`evaluate` (this version, default `--workers` = {len(os.sched_getaffinity(0))})",
    }
    whole = ratios(rows, over="seconds")
    secs = {v: [r["seconds"] for r in rows if r.get("variant") == v] for v in names}
    body_rows = _table_rows(rows, names, secs)
    main_s = sum(r["main_cpu_s"] / enc_rows[0]["convs"] for r in rows if r.get("variant") == "default")
    plan = gpu_plan(part, main_s / max(1, len(secs["default"])), GPU_SLOTS_PER_S, shards=4, workers=4)
    fwd = [r["forward_s"] for r in enc_rows]
    proc = [r["seconds"] for r in enc_rows]
    diffs = score_differences()
    worst = {k: v for k, v in diffs.items() if v}
    headline = (
        f"evaluate --no-judge on the human study: {mean_ci(rs['default'])[0]:.2f}× the encoder alone "
        f"(was {mean_ci(rs['old'])[0]:.2f}×)"
        if rs.get("old") and rs.get("default")
        else "evaluate --no-judge against the encoder alone"
    )
    text = "\n".join(
        [
            f"The {enc_rows[0]['convs']} conversations of `../shared/human-study/conversations` (7 run files, 10 "
            f"tutorials), no judge; each repetition runs the four in turn in fresh processes, each evaluate from "
            f"scratch (`--no-judge --no-figures --bootstrap 0`). The encoder alone: all-MiniLM-L6-v2 over the "
            f"{enc_rows[0]['chunks']} unique 256-piece chunks ({enc_rows[0]['pieces']:,} word pieces) of the same "
            f"texts, length-sorted batches of 32 on torch's threads: {with_ci(*mean_ci(fwd), digits=1, unit=' s')} of "
            f"forward passes ({with_ci(*mean_ci(proc), digits=1, unit=' s')} for its whole process, model load "
            "included). The ratio is each evaluate's wall time over the encoder's forward passes of the same "
            f"repetition (mean over repetitions, 95 % bootstrap CI). Goal: ≤ {GOAL}×. The machine is shared with other "
            "jobs, so seconds vary between repetitions; the ratios are taken within one.",
            "",
            table(
                ["variant", "n", "wall time", "× the encoder alone", "× the encoder's whole process"], body_rows
            ).rstrip(),
            "",
            floor(
                part,
                mean_ci(fwd)[0],
                enc_rows[0]["convs"],
                mean_ci(rs["default"])[0] if rs.get("default") else None,
                with_ci(*mean_ci(whole["default"])) + "×" if whole.get("default") else "(not measured)",
            ),
            "",
            _scores_sentence(worst),
            "",
            "**The plan for a GPU node** (`--device cuda`), from parts measured here (`parts`: one process, one "
            f"thread, the same {part['convs']} conversations):",
            "",
            plan,
        ]
    )
    return headline, text, plan


# All-MiniLM-L6-v2 is about 24 MFLOP per token slot (6 layers of 384 wide, 1536 feed-forward, 256-long attention);
# an assumed 5 TFLOP/s sustained in float32 on a data-centre GPU gives the throughput the plan uses.
GPU_SLOTS_PER_S = 5e12 / 24e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoder-alone", nargs="+", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--parts", nargs="+", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--to", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--old", type=Path, help="a checkout of the code to compare with (e.g. a git worktree)")
    ap.add_argument("--input", type=Path, default=HUMAN_STUDY, help="folder of run files (default: the human study)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--minutes", type=float, default=None, help="start no job after this long (rerun to continue)")
    ap.add_argument("--write-md", action="store_true", help="write the section of BENCHMARKS.md from the results")
    args = ap.parse_args(argv)
    if args.encoder_alone:
        encoder_alone(args.encoder_alone, args.to)
        return 0
    if args.parts:
        parts(args.parts, args.to)
        return 0
    files = study_files(args.input)
    results = Results(args.results)
    done = run_jobs(jobs(args.reps, files, args.old), results, minutes=args.minutes, lock=True)
    if not done:
        return 1
    headline, text, plan = markdown(results.rows(), f"`{args.old.name}`" if args.old else "old")
    print(text)
    if args.write_md:
        reproduce = "python -m benchmarks evaluate_workers --old /tmp/base --reps 3 --write-md"
        write_section(Section(TITLE, "evaluate", headline, reproduce, text))
        sync_pages(LABEL, plan + f'\n\n(BENCHMARKS.md, "{TITLE}": `{reproduce}`.)', PAGES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
