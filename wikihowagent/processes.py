"""Worker processes the stages share: how many cores this process may use, how a `--workers` value is read, and
the start method of a pool (a fork server that has imported the heavy modules once, never a fork of a process
whose threads have started: a progress bar's, torch's).

`evaluate --workers N` scores conversations in N processes (`metrics.workers`); `report --workers N` reads N
runs at once (`report.sources.load_inputs`).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from typing import Any


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity: a Slurm allocation's, a container's), else all."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform (macOS, Windows)
        return os.cpu_count() or 1


def parse_workers(value: str | None) -> int:
    """`--workers N`: a whole number >= 1; None (not given) = the cores available. ValueError (one line) else."""
    if value is None:
        return available_cores()
    text = value.strip()
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"--workers: a whole number of processes, 1 or more, not {value!r}")
    return int(text)


def pool_context(preload: Sequence[str]) -> Any:
    """A fork server where the platform has one (Linux, macOS), the modules `preload` imported in it once (a
    process's fork server is started once, with the preloads of the first pool), else spawn."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(preload))
        return ctx
    return multiprocessing.get_context("spawn")
