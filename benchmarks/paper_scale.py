"""The paper's experiment at full size: 8 runs x 14,287 conversations (114,296) through `evaluate --no-judge`
(sharded), `merge`, `align` and `report`, each stage timed in fresh processes with its peak memory and bytes
on disk beside the limit it is held against.

    python -m benchmarks paper_scale [--dir DIR] [--study DIR] [--sample 2000] [--write-md]
    python -m benchmarks paper_scale --redo merge        # forget a stage's figures (and what it built), rerun it

The data: texts drawn, seeded, from the human study's 70 conversations (`--study`, the paper's run files and
its two judges' sheets), one tutorial of the study per tutorial slot and model, every slot a tutorial of its
own (its titles numbered, so no reference text repeats within a run, as in the paper's crawl), written as
`generate` writes a run (`run.json` + `conversations.jsonl`, structured turns). The 70 rated conversations are
inside, under their own ids. Nothing is written into the repository: everything lives under `--dir`
(default `$WIKIHOWAGENT_BENCH_DIR/paper-scale`, else `~/.cache/wikihowagent-bench/paper-scale`).

Scoring all 114,296 takes most of a day on 2 cores, so `evaluate` scores a seeded sample (`--sample`: the 70
rated conversations + others drawn at random) in shards at full speed; its rate projects the full set. The
later stages get all 114,296 with scores copied the way the texts are (each conversation takes the scores of
the study's conversation its text was copied from), split into 50 score shards per run exactly as
`evaluate --shard K/50` writes them (400 shards). Every stage is resumable: its figures are kept in
`DIR/done/STAGE.json` and a rerun skips it. The last stage runs a few evaluate shards as a Slurm array on a
real single-node Slurm (`make install-slurm`; root): one task is killed before its shard is recorded, once,
and resubmitted, and the merged scores must equal an unsharded evaluation's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.harness import ROOT, Section, cli, files_digest, measured, within, write_section
from benchmarks.report import browser_times, dir_size
from wikihowagent.layout import OUTPUT_MANIFEST, SCORE_SHARDS_DIR

MODELS = ("deepseek-llm", "qwen2", "gemma", "olmo2", "openchat", "llama3", "phi4", "gpt-4")  # the paper's 8
TUTORIALS = 14_287
SHARDS = 50  # score shards per run: 8 x 50 = 400, as an array of 400 tasks would write them
SAMPLE_SHARDS = 4  # evaluate processes over the sample
CHUNK = 64  # evaluate --shard's block (scores/shards.py)
SEED = 2025
HUMANS = ("judge_1.csv", "judge_2.csv")
STUDY = ROOT.parent / "shared" / "human-study"
STAGES = ("build", "evaluate", "scores", "merge", "align", "report", "slurm")


def default_dir() -> Path:
    base = os.environ.get("WIKIHOWAGENT_BENCH_DIR") or Path.home() / ".cache" / "wikihowagent-bench"
    return Path(base) / "paper-scale"


def run_name(model: str) -> str:
    return f"T-{model}_L-{model}_E-{model}"


# --------------------------------------------------------------------------- the study's conversations


def load_sources(study: Path) -> list[list[dict[str, Any]]]:
    """The study's records: [model][tutorial], tutorials in one order for every model (doc_id, method_id)."""
    out = []
    for model in MODELS[:7]:
        (path,) = sorted((study / "conversations").glob(f"T-{model}_L-{model}_E-{model}_*.json"))
        records = json.loads(path.read_text(encoding="utf-8"))["total_conversations"]
        out.append(sorted(records, key=lambda r: (r["doc_id"], r["method_id"])))
    keys = {tuple((r["doc_id"], r["method_id"]) for r in recs) for recs in out}
    assert len(keys) == 1, "the study's models must share their tutorials"
    return out


@dataclass(frozen=True)
class Plan:
    """Which study conversation each (run, tutorial slot) copies: slot k teaches the study's tutorial
    `tutorial[k]`; run m < 7 copies model m's conversation of it, the eighth run a model drawn per slot. The
    study's own conversations sit in run m at `rated[t]` (one slot per study tutorial)."""

    tutorials: int
    tutorial: list[int]
    eighth: list[int]
    rated: list[int]

    @classmethod
    def make(cls, tutorials: int, study_tutorials: int = 10, seed: int = SEED) -> Plan:
        rng = random.Random(seed)
        tutorial = [rng.randrange(study_tutorials) for _ in range(tutorials)]
        eighth = [rng.randrange(7) for _ in range(tutorials)]
        rated = rng.sample(range(tutorials), study_tutorials)
        for t, k in enumerate(rated):
            tutorial[k] = t
        return cls(tutorials, tutorial, eighth, rated)

    def source(self, m: int, k: int) -> tuple[int, int]:
        """(study model, study tutorial) of run m's conversation at slot k."""
        return (m if m < 7 else self.eighth[k]), self.tutorial[k]

    def study_slot(self, k: int) -> bool:
        """Slot k teaches a study tutorial under its own titles (its rated conversations are there)."""
        return self.rated[self.tutorial[k]] == k

    def is_rated(self, m: int, k: int) -> bool:
        return m < 7 and self.study_slot(k)

    def sample(self, n: int, seed: int = SEED) -> list[tuple[int, int]]:
        """(run, slot) of `n` conversations: the study's 70 and others drawn at random, in run and slot order."""
        rated = {(m, k) for m in range(7) for k in self.rated}
        rng = random.Random(seed + 1)
        others: set[tuple[int, int]] = set()
        while len(others) < max(0, n - len(rated)):
            mk = (rng.randrange(len(MODELS)), rng.randrange(self.tutorials))
            if mk not in rated:
                others.add(mk)
        return sorted(rated | others)


# --------------------------------------------------------------------------- records as `generate` writes them

START = datetime(2025, 3, 1, tzinfo=UTC)


def turns_of(lines: list[str], steps: int) -> list[Any]:
    """The study's "Role: text" lines as `generate`'s turns: kinds, steps, intents and manager labels read from
    the text (a teacher turn after a question is a clarification, else it moves to the next step), tokens and
    latencies from the text's length."""
    from wikihowagent.paper_format import split_lines

    turns = split_lines(lines)
    step, context, asked = -1, 150, False
    for i, t in enumerate(turns):
        if t.role == "teacher" and t.kind == "model":
            t.kind = "clarification" if asked else "model"
            step += 0 if asked else 1
        elif t.role == "learner":
            asked = "?" in t.text
            t.intent = "begin" if i == 1 else ("farewell" if i == len(turns) - 1 else "ask" if asked else "acknowledge")
            t.manager_label = None if i == 1 else ("question" if asked else "understood")
        t.step = min(max(step, 0), steps - 1)
        if t.kind not in ("begin", "finish"):
            t.completion_tokens = max(1, len(t.text) // 4)
            t.prompt_tokens = context
            t.latency_s = round(0.2 + t.completion_tokens / 25, 3)
        context += t.completion_tokens + 8
    return turns


def template(src: dict[str, Any], model: str) -> dict[str, Any]:
    """A study record as `generate` would have written it (ConversationRecord's fields and order)."""
    from wikihowagent.paper_format import domain_of
    from wikihowagent.records import ConversationRecord, conversation_lines, make_tutorial_id

    steps = src["tutorial"]["steps"]
    turns = turns_of(src["conversation"], len(steps))
    finished = any(t.kind == "finish" for t in turns)
    rec = ConversationRecord(
        conversation_id=src["conversation_id"],
        tutorial_id=make_tutorial_id(src["source_tutorial_path"], src["method_id"]),
        doc_id=src["doc_id"],
        method_id=src["method_id"],
        source_tutorial_path=src["source_tutorial_path"],
        title=src["title"],
        categories=src["categories"],
        topic=src["categories"][-1] if src["categories"] else "",
        domain=domain_of(src),
        summary=src.get("summary") or "",
        tutorial={"title": src["tutorial"]["title"], "steps": steps},
        conversation=conversation_lines(turns),
        turns=turns,
        finished=finished,
        stop_reason="finished" if finished else "max_interactions",
        teacher=model,
        learner=model,
        persona="",
        manager="rules",
    )
    return rec.model_dump(mode="json")


def copy_of(tpl: dict[str, Any], run: str, k: int, study_slot: bool, own: bool) -> dict[str, Any]:
    """Slot k's copy of a template: the study's record itself (`own`), else a copy under a new id, in a study
    slot teaching the study's tutorial, elsewhere a tutorial of its own (titles and path numbered); time
    stamps along the run."""
    from wikihowagent.records import BEGIN_TEXT, make_conversation_id, make_tutorial_id, turn_line

    rec = dict(tpl)
    if not study_slot:
        method = f"{tpl['tutorial']['title']} #{k}"
        path = f"{tpl['source_tutorial_path'].removesuffix('.json')} #{k}.json"
        rec["tutorial_id"] = make_tutorial_id(path, tpl["method_id"])
        rec.update(source_tutorial_path=path, title=f"{tpl['title']} #{k}", doc_id=k)
        rec["tutorial"] = {"title": method, "steps": tpl["tutorial"]["steps"]}
        first = dict(tpl["turns"][0], text=BEGIN_TEXT.format(method_title=method))
        rec["turns"] = [first, *tpl["turns"][1:]]
        rec["conversation"] = [turn_line("teacher", first["text"]), *tpl["conversation"][1:]]
    if not own:
        rec["conversation_id"] = make_conversation_id(run, rec["tutorial_id"])
    began = START + timedelta(seconds=97 * k)
    took = sum(t["latency_s"] for t in rec["turns"])
    rec["started_at"] = began.isoformat(timespec="seconds")
    rec["ended_at"] = (began + timedelta(seconds=round(took))).isoformat(timespec="seconds")
    return rec


def write_run_json(run_dir: Path, model: str, n: int) -> None:
    from wikihowagent.runs import RunInfo, write_run_info

    info = RunInfo(
        name=run_dir.name,
        teacher=model,
        learner=model,
        evaluator=model,
        fingerprint={"rehearsal": "paper_scale", "seed": SEED},
        tutorials_source="benchmarks/paper_scale.py: copies of the human study's conversations",
        started_at=START.isoformat(timespec="seconds"),
        ended_at=(START + timedelta(seconds=97 * n)).isoformat(timespec="seconds"),
        status="complete",
        counts={"conversations": n, "finished": n, "cut": 0, "failed": 0},
    )
    write_run_info(run_dir, info)


class Copies:
    """The records of (run, slot), as `build` writes them."""

    def __init__(self, study: Path, tutorials: int) -> None:
        sources = load_sources(study)
        self.plan = Plan.make(tutorials, len(sources[0]))
        self.templates = [[template(src, MODELS[m]) for src in recs] for m, recs in enumerate(sources)]

    def record(self, m: int, k: int) -> dict[str, Any]:
        sm, st = self.plan.source(m, k)
        model = MODELS[m]
        tpl = self.templates[sm][st] if m < 7 else dict(self.templates[sm][st], teacher=model, learner=model)
        return copy_of(tpl, run_name(model), k, self.plan.study_slot(k), self.plan.is_rated(m, k))

    def line(self, m: int, k: int) -> str:
        return json.dumps(self.record(m, k), ensure_ascii=False) + "\n"


def build(work: Path, study: Path, tutorials: int) -> None:
    """`work/runs/<run>/` (8 runs x `tutorials`), built beside and renamed into place when whole."""
    copies = Copies(study, tutorials)
    tmp = work / "runs.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    t0 = time.monotonic()
    for m, model in enumerate(MODELS):
        run_dir = tmp / run_name(model)
        run_dir.mkdir(parents=True)
        with open(run_dir / "conversations.jsonl", "w", encoding="utf-8") as out:
            out.writelines(copies.line(m, k) for k in range(tutorials))
        write_run_json(run_dir, model, tutorials)
        say_eta("build", m + 1, len(MODELS), t0)
    shutil.rmtree(work / "runs", ignore_errors=True)
    tmp.rename(work / "runs")


def write_sample(work: Path, study: Path, tutorials: int, n: int) -> None:
    """`work/sample/sample/`: `n` of the built conversations (the 70 rated and others drawn at random), written
    again from the plan (the same lines as in the runs)."""
    copies = Copies(study, tutorials)
    run_dir = work / "sample" / "sample"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    picked = copies.plan.sample(n)
    with open(run_dir / "conversations.jsonl", "w", encoding="utf-8") as out:
        out.writelines(copies.line(m, k) for m, k in picked)
    write_run_json(run_dir, "sample", len(picked))


def say_eta(what: str, done: int, total: int, t0: float) -> None:
    spent = time.monotonic() - t0
    left = spent / done * (total - done) if done else float("nan")
    print(f"{what}: {done}/{total} after {spent:.0f} s, about {left:.0f} s left", flush=True)


def combined(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Processes run one after another: times add up, the peak is the largest."""
    return {
        "wall_s": sum(p["wall_s"] for p in parts),
        "cpu_s": sum(p["cpu_s"] for p in parts),
        "peak_mb": max(p["peak_mb"] for p in parts),
        "processes": len(parts),
    }


def count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)


def disk_bytes(*paths: Path, pattern: str = "*") -> int:
    return sum(f.stat().st_size for p in paths if p.exists() for f in p.rglob(pattern) if f.is_file())


# --------------------------------------------------------------------------- the 114,296 scores, copied


def copy_scores(work: Path, study: Path, tutorials: int) -> None:
    """Every run's score shards as `evaluate --shard K/50` writes them (blocks of 64 conversations, shard K
    the blocks K, K+50, ...; `shard.json` with the sample's fingerprint for this run and the state of its
    conversations file), each conversation with the sample's scores of the study conversation its text was
    copied from."""
    from wikihowagent.jsonlio import iter_jsonl
    from wikihowagent.scores.shards import write_shard_info
    from wikihowagent.shards import input_state

    copies = Copies(study, tutorials)
    plan = copies.plan
    sample = work / "sample" / "sample"
    scored = {o["conversation_id"]: o for _, o in iter_jsonl(sample / "scores.jsonl")}
    base = [[scored[tpl["conversation_id"]] for tpl in recs] for recs in copies.templates]
    fingerprint = json.loads(next((sample / SCORE_SHARDS_DIR).glob("*/shard.json")).read_text())["fingerprint"]
    t0 = time.monotonic()
    for m, model in enumerate(MODELS):
        run_dir = work / "runs" / run_name(model)
        shutil.rmtree(run_dir / SCORE_SHARDS_DIR, ignore_errors=True)
        (run_dir / "scores.jsonl").unlink(missing_ok=True)
        paths = [run_dir / SCORE_SHARDS_DIR / f"{s}-of-{SHARDS}" / "scores.jsonl" for s in range(SHARDS)]
        for p in paths:
            p.parent.mkdir(parents=True)
        outs = [open(p, "w", encoding="utf-8") for p in paths]  # noqa: SIM115 - closed below, all at once
        try:
            for k in range(tutorials):
                sm, st = plan.source(m, k)
                rec = copies.record(m, k)
                line = dict(base[sm][st], run=run_name(model), teacher=model, learner=model)
                line.update({f: rec[f] for f in ("conversation_id", "tutorial_id", "title", "domain")})
                outs[(k // CHUNK) % SHARDS].write(json.dumps(line, ensure_ascii=False) + "\n")
        finally:
            for fh in outs:
                fh.close()
        state = input_state(run_dir / "conversations.jsonl")
        for s, p in enumerate(paths):
            write_shard_info(p, (s, SHARDS), dict(fingerprint, input=str(run_dir.resolve())), state)
        say_eta("scores", m + 1, len(MODELS), t0)


# --------------------------------------------------------------------------- the stages, resumable


@dataclass(frozen=True)
class Work:
    """The benchmark's folder and settings; `done/STAGE.json` holds a finished stage's figures."""

    dir: Path
    study: Path
    tutorials: int
    sample: int
    before: Path | None = None  # a checkout of the code before this change: merge and align are timed on it too

    @property
    def runs(self) -> Path:
        return self.dir / "runs"

    @property
    def sample_run(self) -> Path:
        return self.dir / "sample" / "sample"

    def run_dirs(self) -> list[Path]:
        return [self.runs / run_name(m) for m in MODELS]

    def log(self, stage: str) -> Path:
        return self.dir / "logs" / f"{stage}.log"

    def done(self, stage: str) -> dict[str, Any] | None:
        p = self.dir / "done" / f"{stage}.json"
        return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None

    def mark(self, stage: str, figures: dict[str, Any]) -> dict[str, Any]:
        p = self.dir / "done" / f"{stage}.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        figures = {**figures, "load_1min": round(os.getloadavg()[0], 2), "day": datetime.now(UTC).date().isoformat()}
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(figures, indent=2), encoding="utf-8")
        tmp.replace(p)
        return figures

    @contextmanager
    def running(self, stage: str) -> Iterator[None]:
        """Hold the stage's lock: a second process running the same stage in this folder stops at once (two
        processes may run different stages side by side)."""
        from wikihowagent.jsonlio import RunError, dir_lock

        stack = ExitStack()
        try:
            stack.enter_context(
                dir_lock(self.dir / "done", blocking=False, what=f"another run of stage {stage}", name=f".{stage}.lock")
            )
        except RunError:
            raise SystemExit(
                f"{self.dir}: another process is running stage {stage} (wait, or use another --dir)"
            ) from None
        with stack:
            yield

    def forget(self, stage: str) -> None:
        for p in (self.dir / "done").glob(f"{stage}*.json"):
            p.unlink()

    def env(self, code: Path | None = None) -> dict[str, str]:
        """The environment of a stage's process: `code` (default this checkout) first on the path; run it with
        the current directory there too (`python -m` looks there first)."""
        return {**os.environ, "PYTHONPATH": str(code or ROOT), "COLUMNS": "120"}

    def child(self, what: str) -> list[str]:
        return [
            *(sys.executable, "-m", "benchmarks", "paper_scale", "--child", what),
            *("--dir", str(self.dir), "--study", str(self.study)),
            *("--tutorials", str(self.tutorials), "--sample", str(self.sample)),
        ]


def stage_build(w: Work) -> dict[str, Any]:
    got = measured(w.child("build"), w.log("build"), w.env())
    return {**got, "conversations": len(MODELS) * w.tutorials, "bytes": disk_bytes(w.runs)}


def stage_evaluate(w: Work) -> dict[str, Any]:
    """The sample in SAMPLE_SHARDS `evaluate --no-judge --shard K/N` processes (each its own figures, kept as
    it ends; a shard cut short is scored again from nothing, so each figure is one whole process), then
    `merge`."""

    if w.done("evaluate-0") is None:
        measured(w.child("sample"), w.log("evaluate"), w.env())
    parts, t0 = [], time.monotonic()
    for k in range(SAMPLE_SHARDS):
        key = f"evaluate-{k}"
        got = w.done(key)
        if got is None:
            shutil.rmtree(w.sample_run / SCORE_SHARDS_DIR / f"{k}-of-{SAMPLE_SHARDS}", ignore_errors=True)
            argv = cli("evaluate", str(w.sample_run), "--no-judge", "--shard", f"{k}/{SAMPLE_SHARDS}")
            got = w.mark(key, measured(argv, w.log("evaluate"), w.env()))
        parts.append(got)
        say_eta("evaluate", k + 1, SAMPLE_SHARDS, t0)
    merged = measured(cli("merge", str(w.sample_run)), w.log("evaluate"), w.env())
    n = count_lines(w.sample_run / "scores.jsonl")
    return {
        **combined(parts),
        "conversations": n,
        "merge_s": merged["wall_s"],
        "bytes": disk_bytes(w.sample_run / SCORE_SHARDS_DIR, pattern="scores.jsonl"),
        "loads": [p["load_1min"] for p in parts],
    }


def stage_scores(w: Work) -> dict[str, Any]:

    got = measured(w.child("scores"), w.log("scores"), w.env())
    return {**got, "bytes": disk_bytes(*(d / SCORE_SHARDS_DIR for d in w.run_dirs())), "shards": SHARDS}


def _merge_all(w: Work, code: Path | None) -> dict[str, Any]:
    parts, t0 = [], time.monotonic()
    for i, d in enumerate(w.run_dirs()):
        (d / "scores.jsonl").unlink(missing_ok=True)
        parts.append(measured(cli("merge", str(d)), w.log("merge"), w.env(code), cwd=code or ROOT))
        say_eta("merge" + (" (before)" if code else ""), i + 1, len(MODELS), t0)
    return combined(parts)


def stage_merge(w: Work) -> dict[str, Any]:
    """`merge` of each run's 50 score shards (400 in all), one process per run; with `--before`, the old code
    first, on the same shards, and its output compared with the new one's."""

    def digest() -> str:
        return files_digest([d / "scores.jsonl" for d in w.run_dirs()])

    before = None
    if w.before is not None:
        before = _merge_all(w, w.before) | {"sha256": digest()}
    got = _merge_all(w, None) | {"sha256": digest()}
    files = [d / "scores.jsonl" for d in w.run_dirs()]
    out = {
        **got,
        "bytes": sum(f.stat().st_size for f in files),
        "records": sum(count_lines(f) for f in files),
    }
    return out | ({"before": before} if before else {})


def _align_argv(w: Work, out: Path) -> list[str]:
    humans = [x for h in HUMANS for x in ("-H", str(w.study / h))]
    judge = ("--scores", str(w.study / "paper_llm_scores.csv"))
    return cli("align", *humans, "--scores", str(w.runs), *judge, "--out", str(out))


def _file_digests(out: Path) -> dict[str, list[str]]:
    """Each file an output folder holds (its name relative to it) -> [sha256 of its bytes, sha256 with CRLF line
    ends read as LF], but the list of them an output folder carries (older code kept none)."""
    import hashlib

    out_digests = {}
    for p in sorted(p for p in out.rglob("*") if p.is_file() and p.name != OUTPUT_MANIFEST):
        data = p.read_bytes()  # align's outputs are small: each read once for both digests
        lf = data.replace(b"\r\n", b"\n")
        out_digests[p.relative_to(out).as_posix()] = [hashlib.sha256(data).hexdigest(), hashlib.sha256(lf).hexdigest()]
    return out_digests


def stage_align(w: Work) -> dict[str, Any]:
    """`align` of the two judges' sheets against all 114,296 score lines (the 70 rated among them) and the
    paper's judge scores of the 70; with `--before`, the old code first, into a folder of its own."""
    out_dir, before = w.dir / "align", None
    if w.before is not None:
        old_dir = w.dir / "align-before"
        shutil.rmtree(old_dir, ignore_errors=True)
        before = measured(_align_argv(w, old_dir), w.log("align"), w.env(w.before), cwd=w.before)
        before["files"] = _file_digests(old_dir)
    shutil.rmtree(out_dir, ignore_errors=True)
    got = measured(_align_argv(w, out_dir), w.log("align"), w.env()) | {"files": _file_digests(out_dir)}
    out = {**got, "bytes": disk_bytes(out_dir)}
    return out | ({"before": before} if before else {})


def stage_slurm(w: Work) -> dict[str, Any]:
    """A few evaluate shards of the sample as a Slurm array, one task failing once (`paper_scale_slurm`)."""
    from benchmarks.paper_scale_slurm import rehearse

    return rehearse(w.sample_run / "conversations.jsonl", w.dir / "slurm", w.log("slurm"), w.env())


def stage_report(w: Work) -> dict[str, Any]:
    site = w.dir / "site"
    shutil.rmtree(site, ignore_errors=True)  # a site of an earlier run of the benchmark, perhaps by older code
    argv = cli("report", str(w.runs), "--alignment", str(w.dir / "align"), "--out", str(site))
    got = measured(argv, w.log("report"), w.env())
    files, size = dir_size(site)
    return {**got, "bytes": size, "files": files, "browser": browser_times(site)}


# --------------------------------------------------------------------------- BENCHMARKS.md and the docs page

TITLE = "paper scale: 114,296 conversations through every stage"
LABEL = "paper_scale"  # the docs page's block of these figures
PAGES = ("docs/guides/paper-scale.md",)
REPORT_LIMIT = (1.5 * 1024, 150.0)  # MiB, s: the goal `report` is held against at this size
BROWSER_LIMIT = (2.0, 1.0)  # s: the table, a conversation on screen in Chromium at this size


def _mb(x: float) -> str:
    """Memory (MiB, as the kernel counts it) in MiB or GiB."""
    return f"{x / 1024:.2f} GiB" if x >= 1024 else f"{x:.0f} MiB"


def _bytes(x: float) -> str:
    return f"{x / 1e9:.2f} GB" if x >= 1e9 else f"{x / 1e6:.1f} MB"


def _time(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.1f} min" if s >= 600 else f"{s:.0f} s"


def _row(label: str, n: int, g: dict[str, Any], disk: str, limit: str, figure: str = "measured") -> list[str]:
    return [label, f"{n:,}", _time(g["wall_s"]), _time(g["cpu_s"]), _mb(g["peak_mb"]), disk, limit, figure]


def _same(name: str, g: dict[str, Any]) -> str:
    """Whether the code before and this code wrote the same files (by sha256), and which differ."""
    old, new = g["before"], g
    if "files" in old and "files" in new:
        differ = sorted(
            k for k in old["files"].keys() | new["files"].keys() if old["files"].get(k) != new["files"].get(k)
        )
        if not differ:
            return f"{name} before and after this change write the same files: yes."
        both = old["files"].keys() & new["files"].keys()
        ends = [k for k in differ if k in both and old["files"][k][1] == new["files"][k][1]]
        text = [k for k in differ if k not in ends]
        return (
            f"{name} before and after this change write the same files: no, {len(differ)} of "
            f"{len(new['files'] | old['files'])} differ"
            + (f"; in their line ends only (CRLF now): {', '.join(ends)}" if ends else "")
            + (f"; in their content: {', '.join(text)}" if text else "")
            + " (the CHANGELOG says why)."
        )
    agree = old.get("sha256") == new.get("sha256")
    return f"{name} before and after this change write the same files: {'yes' if agree else '**no**'}."


def stage_rows(f: dict[str, dict[str, Any]]) -> list[list[str]]:
    """The stage table's rows: (stage, conversations, wall, CPU, peak memory, on disk, limit, measured or
    projected)."""
    e, total = f["evaluate"], f["build"]["conversations"]
    n, one = e["conversations"], e["peak_mb"]  # one evaluate process: what merge and align are held to
    m, a, r = f["merge"], f["align"], f["report"]
    full = {"wall_s": e["wall_s"] / n * total, "cpu_s": e["cpu_s"] / n * total, "peak_mb": one}
    rows = [
        _row("build (the benchmark's own)", total, f["build"], _bytes(f["build"]["bytes"]) + " of conversations", ""),
        _row(
            f"`evaluate --no-judge`, the sample in {e['processes']} shards",
            n,
            e,
            _bytes(e["bytes"]),
            "time ≤ 1.3 x the encoder alone (the `evaluate` section)",
        ),
        _row(
            "`evaluate --no-judge`, all",
            total,
            full,
            _bytes(e["bytes"] / n * total),
            "≤ 1 h on one 16-core GPU node (the GPU plan)",
            f"projected: the sample's time per conversation x {total:,}; memory: measured, per process",
        ),
    ]
    limit = f"memory ≤ one evaluate process ({_mb(one)})"
    for label, g, disk in (
        ("`merge`, the code before", m.get("before"), m["bytes"]),
        ("`merge`, 8 runs x 50 shards", m, m["bytes"]),
        ("`align`, the code before", a.get("before"), a["bytes"]),
        ("`align`", a, a["bytes"]),
    ):
        if g:
            rows.append(_row(label, total, g, _bytes(disk), f"{limit}: {within(g['peak_mb'] <= one)}"))
    mem, secs = REPORT_LIMIT
    held = f"≤ {_mb(mem)}: {within(r['peak_mb'] <= mem)}; ≤ {secs:.0f} s: {within(r['wall_s'] <= secs)}"
    held += f" ({r['wall_s']:.1f} s)" if abs(r["wall_s"] - secs) < 5 else ""  # where rounding would hide it
    rows.append(_row("`report`", total, r, f"{_bytes(r['bytes'])} ({r['files']:,} files)", held))
    if b := r.get("browser"):
        shows = f"the table on screen {b['table']:.2f} s, a conversation {b['conversation']:.2f} s"
        ok = b["table"] <= BROWSER_LIMIT[0] and b["conversation"] <= BROWSER_LIMIT[1]
        limit = f"≤ {BROWSER_LIMIT[0]:.0f} s, ≤ {BROWSER_LIMIT[1]:.0f} s: {within(ok)}"
        rows.append(
            ["the report's site in Chromium (median of 3 loads)", f"{total:,}", shows, "", "", "", limit, "measured"]
        )
    return rows


def where_rows(f: dict[str, dict[str, Any]]) -> list[list[str]]:
    """What the full set takes where, from the measured figures (the evaluate figures projected)."""
    e, m, a, r, total = f["evaluate"], f["merge"], f["align"], f["report"], f["build"]["conversations"]
    cpu, tasks = e["cpu_s"] / e["conversations"], len(MODELS) * SHARDS
    later = [f"{_time(g['wall_s'])}, {_mb(g['peak_mb'])}" for g in (m, a, r)]
    return [
        [
            "this machine (2 shared cores)",
            f"{_time(e['wall_s'] / e['conversations'] * total)} (CPU {_time(cpu * total)}), {_mb(e['peak_mb'])}",
            *later,
        ],
        ["one GPU node (`--device cuda`)", "the GPU plan in the `evaluate` section", *later],
        [
            f"a Slurm cluster: {tasks} tasks (8 runs x {SHARDS} shards)",
            f"per task {total // tasks:,} conversations, CPU {_time(cpu * total / tasks)}, {_mb(e['peak_mb'])}; "
            f"in all CPU {_time(cpu * total)}",
            f"8 tasks of {_time(m['wall_s'] / len(MODELS))}, or one",
            *later[1:],
        ],
    ]


def _slurm_line(sl: dict[str, Any]) -> str:
    if not sl:
        return ""
    if sl.get("skipped"):
        return f"Slurm rehearsal: not run ({sl['skipped']})."
    k, n = sl["failed_task"], sl["shards"]
    sl = {key: re.sub(r"/\S*/slurm/", "", v) if isinstance(v, str) else v for key, v in sl.items()}  # folder names
    return (
        f"Slurm rehearsal (a real single-node Slurm): {sl['conversations']} of the sample's conversations as an array "
        f"of {n} `evaluate --no-judge --shard K/{n}` tasks; task {k} killed before its shard was recorded, on its first attempt "
        f"({'it was' if sl['failed_once'] else 'it was **not**'}); `merge` then refused ({sl['refused_before']}); "
        f"after `sbatch --array={k}` of the same script: {sl['merged']}; the merged scores equal one unsharded "
        f"`evaluate`'s: **{'yes' if sl['identical'] else 'no'}**{_differ(sl.get('differences'))} (array "
        f"{sl['array_s']:.0f} s, the resubmitted task {sl['resubmitted_s']:.0f} s, unsharded {sl['single_s']:.0f} s)."
    )


def _differ(d: dict[str, Any] | None) -> str:
    if not d or not d["records"]:
        return ""
    return (
        f": {d['records']} records differ, in {', '.join(d['metrics']) or 'fields other than metrics'}, "
        f"by at most {d['largest']:.1e}"
    )


def statement(f: dict[str, dict[str, Any]]) -> str:
    """The stage table, what the full set takes where, and what they rest on: the block BENCHMARKS.md and the
    docs page show."""
    from benchmarks.harness import table

    heads = ["stage", "conversations", "wall", "CPU", "peak memory", "on disk", "limit", "figure"]
    e = f["evaluate"]
    loads = ", ".join(f"{x:.1f}" for x in e.get("loads", []))
    notes = (
        "Measured figures are whole fresh processes: wall, CPU of the process tree (its worker processes "
        "included), peak memory = the larger of the kernel's peak RSS and the sampled PSS of the process tree. Times add up over a stage's "
        "processes (one per shard, one `merge` per run); memory is the largest of them. The full `evaluate` row is "
        f"projected from the sample's time per conversation (the machine's load during its shards: {loads}, on 2 "
        "shared cores: its wall time is the machine's, its CPU time the work's)."
    )
    same = [_same(name, g) for name, g in (("`merge`", f["merge"]), ("`align`", f["align"])) if g.get("before")]
    notes += (" " + " ".join(same)) if same else ""
    where = table(["where", "`evaluate --no-judge`", "`merge`", "`align`", "`report`"], where_rows(f)).rstrip()
    parts = (table(heads, stage_rows(f)).rstrip(), notes, where, _slurm_line(f.get("slurm") or {}))
    return "\n\n".join(x for x in parts if x)


def section(f: dict[str, dict[str, Any]], w: Work) -> Section:
    m, a, r, e = f["merge"], f["align"], f["report"], f["evaluate"]
    total = f["build"]["conversations"]
    headline = (
        f"{total:,} conversations: merge {_time(m['wall_s'])} at {_mb(m['peak_mb'])}, align {_time(a['wall_s'])} "
        f"at {_mb(a['peak_mb'])}, report {_time(r['wall_s'])} at {_mb(r['peak_mb'])}; evaluate --no-judge projected "
        f"{_time(e['cpu_s'] / e['conversations'] * total)} of CPU"
    )
    body = (
        f"8 runs x {total // len(MODELS):,} conversations in the layout `generate` writes, texts copied (seeded) from "
        f"the human study's 70 conversations, every tutorial slot with titles of its own, the 70 rated ones inside "
        f"under their ids ({_bytes(f['build']['bytes'])} of `conversations.jsonl`). `evaluate --no-judge` scores a "
        f"seeded sample of {e['conversations']:,} (the 70 rated and others at random) in {e['processes']} shards; "
        f"the later stages get all {total:,}, each with the scores of the study conversation its text was copied "
        f"from, in 8 x {SHARDS} score shards as `evaluate --shard K/{SHARDS}` writes them. `align` reads the two "
        f"judges' sheets, every score line and the paper's judge scores of the 70; `report` gets the runs and "
        f"`align`'s output. Commands, resuming, and what each stage needs on a laptop, a GPU node and a cluster: "
        f"the guide *At the paper's scale* (`docs/guides/paper-scale.md`), which shows the same figures.\n\n"
        f"<!-- measured: {LABEL} -->\n{statement(f)}\n<!-- /measured -->\n"
    )
    return Section(TITLE, "evaluate, merge, align, report", headline, "python -m benchmarks paper_scale", body)


# --------------------------------------------------------------------------- main

STAGE_FUNCS = {
    "build": stage_build,
    "evaluate": stage_evaluate,
    "scores": stage_scores,
    "merge": stage_merge,
    "align": stage_align,
    "report": stage_report,
    "slurm": stage_slurm,
}


def run_stages(w: Work, only: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Every stage not done yet, in order (or the ones named), each marked done with its figures as it ends."""
    built, scored = w.done("build"), w.done("evaluate")
    if built and built["conversations"] != len(MODELS) * w.tutorials:
        raise SystemExit(f"{w.dir} was built with another --tutorials: --redo build, or another --dir")
    if scored and scored["conversations"] != max(w.sample, 70):
        raise SystemExit(f"{w.dir}: the sample scored has {scored['conversations']} conversations: --redo evaluate")
    for stage in STAGES:
        if (only and stage not in only) or w.done(stage):
            print(f"{stage}: done" if w.done(stage) else f"{stage}: skipped", flush=True)
            continue
        print(f"{stage}: running (log: {w.log(stage)})", flush=True)
        with w.running(stage):
            figures = w.mark(stage, STAGE_FUNCS[stage](w))
        print(f"{stage}: " + json.dumps({k: v for k, v in figures.items() if not isinstance(v, dict)}), flush=True)
    return {s: got for s in STAGES if (got := w.done(s)) is not None}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks paper_scale", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=default_dir(), help="where everything is built (not the repository)")
    ap.add_argument("--study", type=Path, default=STUDY, help="the human study (conversations/, judge_1.csv, ...)")
    ap.add_argument("--tutorials", type=int, default=TUTORIALS, help="per run (smaller: a smoke run)")
    ap.add_argument("--sample", type=int, default=2000, help="conversations evaluate scores for the rate")
    ap.add_argument("--before", type=Path, help="a checkout of older code: merge and align are timed on it too")
    ap.add_argument("--only", action="append", choices=STAGES, default=[], help="run only this stage (repeatable)")
    ap.add_argument("--redo", action="append", choices=STAGES, default=[], help="forget this stage and the later")
    ap.add_argument("--write-md", action="store_true", help="write the section and the docs page's figures")
    ap.add_argument("--child", choices=("build", "sample", "scores"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child == "build":
        return build(args.dir, args.study, args.tutorials)
    if args.child == "sample":
        return write_sample(args.dir, args.study, args.tutorials, args.sample)
    if args.child == "scores":
        return copy_scores(args.dir, args.study, args.tutorials)
    before = args.before.resolve() if args.before else None
    w = Work(args.dir.resolve(), args.study.resolve(), args.tutorials, args.sample, before)
    for stage in args.redo:
        for later in STAGES[STAGES.index(stage) :]:
            w.forget(later)
    figures = run_stages(w, args.only)
    if not all(s in figures for s in STAGES[:-1]):
        return
    print(statement(figures))
    if args.write_md:
        if args.tutorials != TUTORIALS:
            raise SystemExit(f"--write-md: only a full-size run (--tutorials {TUTORIALS})")
        from benchmarks.harness import sync_pages

        write_section(section(figures, w))
        sync_pages(LABEL, statement(figures), PAGES)


if __name__ == "__main__":
    main()
