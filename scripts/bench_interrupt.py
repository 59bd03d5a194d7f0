"""Time from Ctrl-C (SIGINT) to exit of `generate` / `evaluate` on the embedded model, per code version.

Each repetition starts the command on the embedded model (`local`), waits until llama.cpp has started a
request (its log line "launch_slot_"; WIKIHOWAGENT_LLAMA_LOG=1), waits a little more so that the request is
mid-generation, sends SIGINT and times until the process exits; it also records the exit status, run.json's
status (generate) and whether every line written is whole JSON. One invocation holds the shared model lock
(/tmp/wikihowagent-model.lock, flock(2) as `flock` takes it) for its batch of repetitions (--budget-min).

Resumable: results go to a JSONL file (--results) one line per repetition; a rerun does only the repetitions
missing, and stops starting new ones after --budget-min minutes. Code versions are given as LABEL=DIR (the
DIR put first on PYTHONPATH), e.g. the base commit unpacked with `git archive BASE | tar -x -C /tmp/base`:

    python scripts/bench_interrupt.py --code before=/tmp/base --code after=. --command generate --reps 5
    python scripts/bench_interrupt.py --code before=/tmp/base --code after=. --command evaluate --reps 5
    python scripts/bench_interrupt.py --write-md   # the BENCHMARKS.md section from the results file
"""

from __future__ import annotations

import argparse
import fcntl
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
LOCK = "/tmp/wikihowagent-model.lock"
FIXTURE_RUN = ROOT / "tests" / "fixtures" / "evaluation" / "run_small"
SECTION = "interrupt: Ctrl-C on the embedded model"
START_MARK = "launch_slot_"
DELAYS = (1.0, 2.5, 4.0)  # seconds after the first request started, cycled over repetitions
STOP_WAIT_S = 600  # give up (and kill) after this long


def command_line(command: str, work: Path) -> list[str]:
    py = [sys.executable, "-m", "wikihowagent"]
    if command == "generate":
        return py + [
            "generate",
            "--teacher",
            "local",
            "--learner",
            "local",
            "--out",
            str(work / "run"),
            "--max-tutorials",
            "2",
            "--concurrency",
            "1",
        ]
    run = work / "run"
    shutil.copytree(FIXTURE_RUN, run)
    return py + ["evaluate", str(run), "--evaluator", "local", "--no-figures", "--judge-rationale"]


def lines_whole(path: Path) -> tuple[int, bool]:
    if not path.exists():
        return 0, True
    n, ok = 0, True
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            n += 1
            try:
                json.loads(line)
            except json.JSONDecodeError:
                ok = False
    return n, ok


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
        written, whole = lines_whole(run / ("conversations.jsonl" if command == "generate" else "scores.jsonl"))
        return {"seconds": round(seconds, 2), "rc": rc, "status": status, "lines": written, "whole": whole}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def read_results(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def run(args: argparse.Namespace) -> None:
    results = read_results(args.results)
    if args.lock_held:  # run as `flock /tmp/wikihowagent-model.lock python scripts/bench_interrupt.py --lock-held ...`
        _batch(args, results, time.monotonic() + args.budget_min * 60)
        return
    with open(LOCK, "a") as lock:  # one model process on the machine: held for this batch (<= --budget-min)
        fcntl.flock(lock, fcntl.LOCK_EX)
        _batch(args, results, time.monotonic() + args.budget_min * 60)


def _batch(args: argparse.Namespace, results: list[dict], deadline: float) -> None:
    for spec in args.code:
        label, _, folder = spec.partition("=")
        code = Path(folder).resolve()
        for command in args.command:
            have = [r for r in results if r["code"] == label and r["command"] == command and "seconds" in r]
            for rep in range(len(have), args.reps):
                if time.monotonic() > deadline:
                    print("budget used up; rerun to continue", flush=True)
                    return
                row = {"code": label, "command": command, "rep": rep, "delay_s": DELAYS[rep % len(DELAYS)]}
                row |= one(command, code, row["delay_s"])
                print(json.dumps(row), flush=True)
                with open(args.results, "a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")
                results.append(row)


def markdown(results: list[dict]) -> str:
    rows = [
        "| command | code | n | median s | range s | exit codes | run.json status | lines whole |",
        "|---|---|---|---|---|---|---|---|",
    ]
    medians: dict[tuple[str, str], float] = {}
    for command in ("generate", "evaluate"):
        for label in dict.fromkeys(r["code"] for r in results):
            got = [r for r in results if r["command"] == command and r["code"] == label and "seconds" in r]
            if not got:
                continue
            secs = [r["seconds"] for r in got]
            medians[(command, label)] = statistics.median(secs)
            statuses = ", ".join(sorted({str(r["status"]) for r in got})) if command == "generate" else "-"
            rows.append(
                f"| {command} | {label} | {len(got)} | {statistics.median(secs):.1f} | "
                f"{min(secs):.1f}–{max(secs):.1f} | {', '.join(sorted({str(r['rc']) for r in got}))} | "
                f"{statuses} | {'yes' if all(r['whole'] for r in got) else 'no'} |"
            )
    ratios = [
        f"{c}: {medians[(c, 'before')] / max(medians[(c, 'after')], 0.01):.0f}x faster"
        for c in ("generate", "evaluate")
        if (c, "before") in medians and (c, "after") in medians
    ]
    return (
        "Seconds from SIGINT to process exit, the embedded model (Qwen2.5-Coder-1.5B Q4_K_M, llama.cpp "
        "in-process, 1 slot) on a 2-core machine shared with other jobs. Each repetition: start the command, "
        "wait for llama.cpp's first request to start, wait 1, 2.5 or 4 s more (mid-request: its prompt or its reply), SIGINT. "
        "`generate`: 2 tutorials, concurrency 1 (a reply is up to 320 tokens); `evaluate`: the 6-conversation "
        "fixture run with `--judge-rationale` (up to 256 tokens a call). `before` = llama.cpp's default "
        "n_batch 2048 (a whole prompt decoded in one step, which neither a closed request nor the server's "
        "shutdown can interrupt), `after` = prompts decoded in steps of 64 tokens (`local.n_batch`, issue 28 "
        "item 15). Script: "
        "`scripts/bench_interrupt.py` (resumable; results JSONL).\n\n"
        + "\n".join(rows)
        + ("\n\nMedian ratio before/after: " + "; ".join(ratios) + "." if ratios else "")
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--code", action="append", default=[], metavar="LABEL=DIR")
    ap.add_argument("--command", action="append", choices=("generate", "evaluate"), default=[])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--budget-min", type=float, default=9.0, help="start no repetition after this many minutes")
    ap.add_argument("--results", type=Path, default=Path("/tmp/bench_interrupt.jsonl"))
    ap.add_argument("--lock-held", action="store_true", help="the caller holds the model lock (flock)")
    ap.add_argument("--write-md", action="store_true")
    args = ap.parse_args()
    if args.code:
        run(args)
    if args.write_md:
        from benchmarks_md import write_section

        write_section(SECTION, markdown(read_results(args.results)))


if __name__ == "__main__":
    main()
