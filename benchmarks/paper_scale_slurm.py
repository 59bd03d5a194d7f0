"""The Slurm rehearsal of `paper_scale`: a few `evaluate` shards as an array job on a real single-node Slurm
(`make install-slurm`; its daemons run as root). One task is killed on its first attempt (SIGKILL, as a node
lost under it) after scoring and before its shard is recorded, and exits 1; `merge` must then refuse (a shard
is missing); the failed task alone is resubmitted (`sbatch --array=K` of the same script), resumes its shard, and the merged scores must equal
those of one unsharded `evaluate` of the same conversations.

    python -m benchmarks paper_scale_slurm [--source FILE] [--dir DIR] [--n 300] [--shards 3]

`--source`: a conversations JSONL (default: the sample `python -m benchmarks paper_scale` built). `paper_scale`
runs this as its last stage and writes the outcome into its section.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import ROOT, cli, measured


def array_script(run: Path, shards: int, python: str, logs: Path, fail: tuple[int, Path] | None, *args: str) -> str:
    """An sbatch array of `evaluate RUN --shard K/N ARGS`, one task per shard. `fail` = (task, marker): that
    task's first attempt (no marker yet) is killed (SIGKILL, as a node lost under it) once its shard's scores
    are written and before the shard is recorded as done (its shard.json): the latest moment a task can be
    lost, so the kill never races a task that finishes first. It exits 1; its next attempt resumes the shard."""
    q = shlex.quote
    tail = f"evaluate {q(str(run))} --shard $SLURM_ARRAY_TASK_ID/{shards} {' '.join(q(a) for a in args)}"
    lines = [
        "#!/bin/bash",
        f"#SBATCH --array=0-{shards - 1}",
        "#SBATCH --job-name=evaluate-shards",
        f"#SBATCH --output={q(str(logs))}/%A_%a.out",
        f"cd {q(str(ROOT))}",
    ]
    if fail is not None:
        task, mark = fail
        killed = (
            "import os, signal, sys; import wikihowagent.evaluation.core as core; "
            "core.write_shard_info = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL); "
            "sys.argv[0] = 'wikihowagent'; from wikihowagent.cli import main; main()"
        )
        lines += [
            f'if [ "$SLURM_ARRAY_TASK_ID" = "{int(task)}" ] && [ ! -e {q(str(mark))} ]; then',
            f"  touch {q(str(mark))}",
            f"  {q(python)} -c {q(killed)} {tail}",
            '  echo "task $SLURM_ARRAY_TASK_ID: killed before its shard was recorded (the rehearsed failure)" >&2',
            "  exit 1",
            "fi",
        ]
    return "\n".join([*lines, f"exec {q(python)} -m wikihowagent {tail}", ""])


def sbatch(env: dict[str, str], script: Path, *options: str) -> str:
    """Submit; -> the job id."""
    done = subprocess.run(["sbatch", "--parsable", *options, str(script)], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"sbatch {script}: {done.stderr.strip()}")
    return done.stdout.strip().split(";")[0]


def differences(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """How two score files (by id) differ: records, the metrics that differ and the largest difference."""
    ids = [k for k in b if a.get(k) != b[k]]
    names, largest = set(), 0.0
    for k in ids:
        ma, mb = (a.get(k) or {}).get("metrics") or {}, b[k].get("metrics") or {}
        for name in set(ma) | set(mb):
            x, y = ma.get(name), mb.get(name)
            if x != y:
                names.add(name)
                if isinstance(x, (int, float)) and isinstance(y, (int, float)):
                    largest = max(largest, abs(x - y))
    return {"records": len(ids), "metrics": sorted(names), "largest": largest}


def scores_by_id(path: Path) -> dict[str, dict[str, Any]]:
    from wikihowagent.jsonlio import iter_jsonl

    return {o["conversation_id"]: o for _, o in iter_jsonl(path)} if path.exists() else {}


def make_runs(source: Path, base: Path, n: int, names: tuple[str, ...] = ("array", "single")) -> int:
    """The first `n` conversations of `source` as run directories of one run name, one per name; -> how many."""
    from wikihowagent.runs import RunInfo, write_run_info

    with open(source, encoding="utf-8") as fh:
        lines = [line for _, line in zip(range(n), fh, strict=False)]
    for name in names:
        (base / name).mkdir(parents=True)
        (base / name / "conversations.jsonl").write_text("".join(lines), encoding="utf-8")
        write_run_info(base / name, RunInfo(name="rehearsal", status="complete"))
    return len(lines)


def rehearse(
    source: Path, base: Path, log: Path, env: dict[str, str], n: int = 300, shards: int = 3, task: int = 1
) -> dict[str, Any]:
    """The rehearsal in `base` (replaced); -> its outcome, or {"skipped": why} where no Slurm can start."""
    sys.path.insert(0, str(ROOT / "tests"))
    import slurm_cluster

    reason = slurm_cluster.available()
    if reason is not None:
        return {"skipped": reason}
    shutil.rmtree(base, ignore_errors=True)
    n = make_runs(source, base, n)
    single = measured(cli("evaluate", str(base / "single"), "--no-judge"), log, env)
    script = base / "evaluate.sbatch"
    (base / "logs").mkdir()
    mark = base / "failed-once"
    script.write_text(array_script(base / "array", shards, sys.executable, base / "logs", (task, mark), "--no-judge"))
    with slurm_cluster.SlurmCluster(base / "cluster") as cluster:
        cluster.env["PYTHONPATH"] = env.get("PYTHONPATH", str(ROOT))
        t0 = time.monotonic()
        cluster.wait(sbatch(cluster.env, script), timeout_s=3600)
        first = time.monotonic() - t0
        refused = subprocess.run(cli("merge", str(base / "array")), capture_output=True, text=True, env=env)
        t0 = time.monotonic()
        cluster.wait(sbatch(cluster.env, script, f"--array={task}"), timeout_s=3600)  # the failed task alone
        again = time.monotonic() - t0
    merged = subprocess.run(cli("merge", str(base / "array")), capture_output=True, text=True, env=env)
    a, b = scores_by_id(base / "array" / "scores.jsonl"), scores_by_id(base / "single" / "scores.jsonl")
    return {
        "conversations": n,
        "shards": shards,
        "failed_task": task,
        "failed_once": mark.exists(),
        "refused_before": f"exit {refused.returncode}: {' '.join(refused.stderr.split())}",
        "merged": f"exit {merged.returncode}: {' '.join((merged.stdout + merged.stderr).split())}",
        "identical": merged.returncode == 0 and a == b and len(a) == n,
        "differences": differences(a, b),
        "array_s": first,
        "resubmitted_s": again,
        "single_s": single["wall_s"],
    }


def main(argv: list[str] | None = None) -> None:
    from benchmarks.paper_scale import default_dir

    ap = argparse.ArgumentParser(prog="python -m benchmarks paper_scale_slurm", description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=default_dir() / "sample" / "sample" / "conversations.jsonl")
    ap.add_argument("--dir", type=Path, default=default_dir() / "slurm")
    ap.add_argument("--n", type=int, default=300, help="conversations (blocks of 64: 300 gives a task two blocks)")
    ap.add_argument("--shards", type=int, default=3)
    args = ap.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = rehearse(args.source, args.dir.resolve(), args.dir.resolve().parent / "slurm.log", env, args.n, args.shards)
    print(json.dumps(out, indent=2))
    if not out.get("skipped") and not out["identical"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
