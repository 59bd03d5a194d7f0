"""Benchmark `sweep plan` and `sweep status` on large grids (k teachers x k learners = k^2 cells, no run
started), this checkout against an earlier commit (default: the one before plan/status became linear),
each as a fresh `python -m wikihowagent` process with its output piped (as a script or CI would read it).

    .venv/bin/python scripts/bench_sweep.py [--cells 2500 10000] [--repeats 3] [--before-repeats 1] [--write-md]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))


def _top_level_data(rev: str) -> list[str]:
    """`configs` and `data` of a revision from before they moved into the package (none after)."""
    return [
        d
        for d in ("configs", "data")
        if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}:{d}"], capture_output=True).returncode == 0
    ]


def checkout(rev: str, dest: Path) -> Path:
    """The `wikihowagent` package of `rev` (git archive) under `dest`; returns the PYTHONPATH entry."""
    dest.mkdir(parents=True, exist_ok=True)
    tar = dest / "src.tar"
    with tar.open("wb") as fh:
        subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "wikihowagent"] + _top_level_data(rev), stdout=fh, check=True
        )
    with tarfile.open(tar) as tf:
        tf.extractall(dest, filter="data")
    return dest


def grid_file(d: Path, cells: int) -> Path:
    k = math.isqrt(cells)
    assert k * k == cells, "--cells must be squares (k teachers x k learners)"
    f = d / f"grid{cells}.yaml"
    models = ", ".join(f"m{i}" for i in range(k))
    f.write_text(
        f"name: bench\nout: {d / f'sweep{cells}'}\nmax_tutorials: 1\ngrid: {{teachers: [{models}]}}\n", encoding="utf-8"
    )
    return f


def timed(pythonpath: Path, args: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, last output line) of one command in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "COLUMNS": "200"}
    t = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-m", "wikihowagent", *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)  # reaped here, with its own resource usage
    p.returncode = code = os.waitstatus_to_exitcode(status)
    p.stdout.close()
    wall = time.perf_counter() - t
    rss = usage.ru_maxrss / 1024
    if code != 0:
        raise SystemExit(f"{args}: exit {code}: {out[-500:]}")
    return wall, rss, (out.strip().splitlines() or [""])[-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, nargs="+", default=[2500, 10000])
    ap.add_argument("--before", default="e0b59ab~1", help="The commit to compare with (git revision).")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--before-repeats", type=int, default=1, help="The old status takes minutes at 10,000 cells.")
    ap.add_argument("--write-md", action="store_true")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        d = Path(tmp)
        old = checkout(a.before, d / "before")
        for cells in a.cells:
            f = grid_file(d, cells)
            for cmd in ("plan", "status"):
                res = {}
                for label, path, n in (("after", ROOT, a.repeats), ("before", old, a.before_repeats)):
                    runs = [timed(path, ["sweep", cmd, str(f)], d) for _ in range(n)]
                    res[label] = runs
                    print(
                        f"{cells} cells {cmd} {label}: "
                        + ", ".join(f"{w:.2f} s" for w, _, _ in runs)
                        + f"; peak {max(r for _, r, _ in runs):.0f} MB; {runs[0][2]}",
                        flush=True,
                    )
                rows.append((cells, cmd, res))
        refuse = d / "cube.yaml"
        ms = ", ".join(f"m{i}" for i in range(100))
        refuse.write_text(f"name: cube\ngrid: {{teachers: [{ms}], evaluators: [{ms}]}}\n", encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        t = time.perf_counter()
        p = subprocess.run(
            [sys.executable, "-m", "wikihowagent", "sweep", "plan", str(refuse)],
            env=env,
            cwd=d,
            capture_output=True,
            text=True,
        )
        refusal = (time.perf_counter() - t, p.returncode, " ".join(p.stderr.split()))
        print(f"100x100x100 grid: exit {refusal[1]} after {refusal[0]:.2f} s: {refusal[2]}")

    def med(runs):
        return statistics.median(w for w, _, _ in runs)

    def spread(runs):
        ws = [w for w, _, _ in runs]
        return f"{statistics.median(ws):.2f}" + (f" ({min(ws):.2f}-{max(ws):.2f})" if len(ws) > 1 else "")

    lines = [
        f"`python scripts/bench_sweep.py --cells {' '.join(map(str, a.cells))} --repeats {a.repeats} "
        f"--before-repeats {a.before_repeats}`: a k x k grid (no run started), each command a fresh process with its "
        f"output piped; *before* = `{a.before}` (the code before plan/status became linear), *after* = this "
        "checkout. Seconds, median (min-max) of n runs (after: n = "
        f"{a.repeats}, before: n = {a.before_repeats}); shared 2-core machine, other jobs running.",
        "",
        "| cells | command | before s | after s | before / after | peak RSS before / after MB |",
        "| --: | :-- | --: | --: | --: | --: |",
    ]
    for cells, cmd, res in rows:
        lines.append(
            f"| {cells:,} | {cmd} | {spread(res['before'])} | {spread(res['after'])} | "
            f"{med(res['before']) / med(res['after']):.1f}x | "
            f"{max(r for _, r, _ in res['before']):.0f} / {max(r for _, r, _ in res['after']):.0f} |"
        )
    by = {(c, cmd): res for c, cmd, res in rows}
    if len(a.cells) >= 2:
        c0, c1 = a.cells[0], a.cells[-1]
        for label in ("before", "after"):
            growth = ", ".join(
                f"{cmd} {med(by[(c1, cmd)][label]) / med(by[(c0, cmd)][label]):.1f}x" for cmd in ("plan", "status")
            )
            lines.append(f"\n{label}: time from {c0:,} to {c1:,} cells ({c1 / c0:.0f}x the cells): {growth}.")
    lines.append(
        "\nThe *after* times are mostly the process's start-up (imports, reading the tutorials), not the "
        "cells: the refused file below exits in about as long."
    )
    lines.append(
        f"\nA 100 x 100 x 100 grid (1,000,000 cells): exit {refusal[1]} after {refusal[0]:.2f} s "
        f"(whole process): `{refusal[2]}`"
    )
    text = "\n".join(lines)
    print(text)
    if a.write_md:
        from benchmarks_md import write_section

        write_section("sweep: plan and status at scale", text)


if __name__ == "__main__":
    main()
