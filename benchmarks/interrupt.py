"""Ctrl-C on the embedded model: seconds from SIGINT to the exit of `generate` and `evaluate`, per code version.

Each job starts the command on the embedded model, waits until llama.cpp has started a request (its log line
"launch_slot_"), waits 1, 2.5 or 4 s more (mid-request: its prompt or its reply), sends SIGINT and times the
exit; it also records the exit status, run.json's status (generate) and whether every line written is whole
JSON. Code versions are LABEL=DIR (DIR first on PYTHONPATH; e.g. `git worktree add /tmp/base REV`), taken in
turn (A B A B ...) so both see the same machine:

    python -m benchmarks interrupt --code before=/tmp/base --code after=. --reps 6 [--minutes 9]
    python -m benchmarks interrupt --write-md          # the section, from the results file
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import ROOT, Job, Results, Section, mean_ci, run_jobs, table, with_ci, write_section

FIXTURE_RUN = ROOT / "tests" / "fixtures" / "evaluation" / "run_small"
START_MARK = "launch_slot_"
DELAYS = (1.0, 2.5, 4.0)  # seconds after the first request started, cycled over repetitions
STOP_WAIT_S = 600  # give up (and kill) after this long
RESULTS = Path("/tmp/bench_interrupt.jsonl")
COMMANDS = ("generate", "evaluate")


def command_line(command: str, work: Path) -> list[str]:
    py = [sys.executable, "-m", "wikihowagent"]
    if command == "generate":
        out = ["--out", str(work / "run"), "--max-tutorials", "2", "--concurrency", "1"]
        return [*py, "generate", "--teacher", "local", "--learner", "local", *out]
    shutil.copytree(FIXTURE_RUN, work / "run")
    return [*py, "evaluate", str(work / "run"), "--evaluator", "local", "--no-figures", "--judge-rationale"]


def lines_whole(path: Path) -> bool:
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    try:
        [json.loads(line) for line in lines if line.strip()]
    except json.JSONDecodeError:
        return False
    return True


def one(command: str, code: Path, delay: float) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench_interrupt_"))
    try:
        argv = command_line(command, work)
        env = dict(os.environ, PYTHONPATH=str(code), WIKIHOWAGENT_LLAMA_LOG="1")
        err_path = work / "stderr.txt"
        with open(err_path, "w") as err:
            # SIGINT back to the default: a child of a shell's background job would inherit SIG_IGN.
            proc = subprocess.Popen(
                argv,
                cwd=work,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )
            t_start = time.monotonic()
            while START_MARK not in err_path.read_text(errors="replace"):
                if proc.poll() is not None or time.monotonic() - t_start > 300:
                    proc.kill()
                    proc.wait()
                    return {"error": "no request started: " + err_path.read_text(errors="replace")[-300:]}
                time.sleep(0.1)
            time.sleep(delay)
            t0 = time.monotonic()
            proc.send_signal(signal.SIGINT)
            try:
                rc = proc.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
            seconds = time.monotonic() - t0
        run = work / "run"
        status = None
        if command == "generate" and (run / "run.json").exists():
            status = json.loads((run / "run.json").read_text(encoding="utf-8")).get("status")
        whole = lines_whole(run / ("conversations.jsonl" if command == "generate" else "scores.jsonl"))
        return {"seconds": round(seconds, 2), "rc": rc, "status": status, "whole": whole}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def jobs(codes: list[tuple[str, Path]], commands: list[str], reps: int) -> list[Job]:
    """Repetition by repetition, each command, each code version in turn: A B A B ..."""
    return [
        Job({"code": label, "command": command, "rep": rep}, lambda c=command, d=code, r=rep: one(c, d, DELAYS[r % 3]))
        for rep in range(reps)
        for command in commands
        for label, code in codes
    ]


def section(rows: list[dict]) -> Section:
    lines, headline = [], []
    labels = list(dict.fromkeys(r["code"] for r in rows))
    for command in COMMANDS:
        for label in labels:
            got = [r for r in rows if r["command"] == command and r["code"] == label and "seconds" in r]
            if not got:
                continue
            secs = sorted(r["seconds"] for r in got)
            mean, low, high = mean_ci(secs)
            status = ", ".join(sorted({str(r["status"]) for r in got})) if command == "generate" else "-"
            codes = ", ".join(sorted({str(r["rc"]) for r in got}))
            whole = "yes" if all(r["whole"] for r in got) else "no"
            lines.append([command, label, len(got), with_ci(mean, low, high, 1), f"{statistics.median(secs):.1f}",
                          f"{secs[0]:.1f}–{secs[-1]:.1f}", codes, status, whole])  # fmt: skip
            if label == labels[-1]:
                median = f"median {statistics.median(secs):.1f} s"
                headline.append(f"`{command}` mean {with_ci(mean, low, high, 1, ' s')}, {median} (n {len(got)})")
    columns = ["command", "code", "n", "mean s [95 % CI]", "median s", "range s", "exit", "run.json", "lines whole"]
    paired = []
    if len(labels) == 2:  # each repetition of one version against the same repetition of the other
        for command in COMMANDS:
            by = {(r["code"], r["rep"]): r["seconds"] for r in rows if r["command"] == command and "seconds" in r}
            diffs = [
                by[(labels[1], rep)] - by[(labels[0], rep)]
                for (c, rep) in by
                if c == labels[0] and (labels[1], rep) in by
            ]
            if len(diffs) >= 2:
                d = mean_ci(diffs)
                paired.append(f"`{command}` {with_ci(*d, 1, ' s')} (n {len(diffs)} pairs)")
    body = (
        "Seconds from SIGINT to process exit on the embedded model (llama.cpp in-process, 1 slot). Each "
        "repetition starts the command, waits for llama.cpp's first request, waits 1, 2.5 or 4 s more (mid-"
        "prompt or mid-reply), sends SIGINT. `generate`: 2 bundled tutorials, concurrency 1; `evaluate`: the "
        "6-conversation fixture run with `--judge-rationale`. Code versions taken in turn on the same machine.\n\n"
        + table(columns, lines)
        + (
            f"\n{labels[1]} − {labels[0]}, paired by repetition: " + "; ".join(paired) + ". What differs between the "
            "two versions: History, below.\n"
            if paired
            else ""
        )
    )
    return Section(
        "interrupt: Ctrl-C on the embedded model",
        "generate, evaluate",
        "Ctrl-C to exit: " + "; ".join(headline),
        "python -m benchmarks interrupt --code REV=CHECKOUT [--code REV2=.] --reps 6 --write-md",
        body,
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--code", action="append", default=[], metavar="LABEL=DIR")
    ap.add_argument("--command", action="append", choices=COMMANDS, default=[])
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--minutes", type=float, default=None, help="start no job after this many minutes")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args(argv)
    results = Results(args.results)
    if args.code:
        codes = [(label, Path(folder).resolve()) for label, _, folder in (c.partition("=") for c in args.code)]
        run_jobs(jobs(codes, args.command or list(COMMANDS), args.reps), results, args.minutes, lock=True)
    if args.write_md:
        write_section(section(results.rows()))
