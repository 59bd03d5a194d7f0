"""What every benchmark needs, written once: the machine's one model lock, resumable jobs whose results are
JSONL lines, fresh-process timing (also of a process tree: worker processes' memory included), numbers with their CIs, Markdown tables, and writing a benchmark's section
of BENCHMARKS.md with its headline in the table at the top.

A benchmark (a module of this folder, registered in `benchmarks/__main__.py`) defines its jobs and what its
section says; the statistics, readers and tables are the library's (`wikihowagent.stats`, `wikihowagent.runs`,
`wikihowagent.markdown`).
"""

from __future__ import annotations

import fcntl
import os
import platform
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from wikihowagent.jsonlio import JsonlAppender, iter_jsonl
from wikihowagent.markdown import markdown_table
from wikihowagent.stats.paired import bootstrap_mean_ci

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"
MODEL_LOCK = Path("/tmp/wikihowagent-model.lock")
LOCK_HELD = "WIKIHOWAGENT_MODEL_LOCK_HELD"  # "1": the caller holds the model lock (`flock LOCK env ...=1 python ...`)
GLANCE = "## At a glance"
GLANCE_END = "<!-- end of the table: each row is written with its section -->"


# --------------------------------------------------------------------------- one model process at a time


@contextmanager
def model_lock(path: Path | None = None) -> Iterator[None]:
    """Hold the machine's model lock (flock(2) on the file the `flock` command takes) while the block runs: one
    model process on the machine at a time. Taken once: a nested call, or a process started with LOCK_HELD=1
    (its caller holds it), takes nothing."""
    if os.environ.get(LOCK_HELD) == "1":
        yield
        return
    with open(path or MODEL_LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        os.environ[LOCK_HELD] = "1"  # the children this process starts run under it
        try:
            yield
        finally:
            del os.environ[LOCK_HELD]
            fcntl.flock(fh, fcntl.LOCK_UN)


# --------------------------------------------------------------------------- resumable jobs


class Results:
    """A benchmark's results file: one JSON object a line, appended and fsynced as each job ends (`runs`'
    JsonlAppender); a torn last line (a kill) is dropped, so a rerun redoes only that job."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def rows(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [row for _, row in iter_jsonl(self.path, on_error=lambda _msg: None)]

    def add(self, row: dict[str, Any]) -> None:
        with JsonlAppender(self.path) as out:
            out.append(row)


@dataclass(frozen=True)
class Job:
    key: dict[str, Any]  # what identifies the job in the results file (its fields start the result row)
    run: Callable[[], dict[str, Any]]  # -> the measured fields


def run_jobs(
    jobs: Iterable[Job], results: Results, minutes: float | None = None, lock: bool = False, say: Callable = print
) -> bool:
    """Run the jobs whose key has no row in `results` yet, in the given order (interleave what is compared:
    A B A B ...), each row appended as it ends; start none after `minutes`; under the model lock if `lock`.
    -> True when every job has a row."""
    done = [row for row in results.rows()]
    todo = [j for j in jobs if not any(all(r.get(k) == v for k, v in j.key.items()) for r in done)]
    with model_lock() if lock else _nothing():
        deadline = None if minutes is None else time.monotonic() + minutes * 60  # from when the lock is held
        for n, job in enumerate(todo, start=1):
            if deadline is not None and time.monotonic() > deadline:
                say(f"{len(todo) - n + 1} jobs left after {minutes:g} minutes: rerun to continue")
                return False
            row = {**job.key, **job.run()}
            results.add(row)
            say(f"[{n}/{len(todo)}] " + ", ".join(f"{k} {v}" for k, v in row.items()))
    return True


@contextmanager
def _nothing() -> Iterator[None]:
    yield


# --------------------------------------------------------------------------- fresh processes


@dataclass(frozen=True)
class Process:
    seconds: float  # wall clock
    cpu_s: float  # user + system of the process and what it waited for
    peak_mb: float  # largest resident set
    returncode: int
    stderr: str


def timed(argv: Sequence[str], cwd: Path = ROOT, env: dict[str, str] | None = None, check: bool = True) -> Process:
    """Run one fresh process (stdout discarded) and take its time, CPU and peak memory from the kernel."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    proc.returncode = rc
    if check and rc:
        raise SystemExit(f"{' '.join(argv[:4])} ... failed ({rc}): {stderr[-500:]}")
    return Process(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, rc, stderr)


def files_digest(files: Sequence[Path], root: Path | None = None) -> str:
    """One sha256 over the files' bytes in the order given (with `root`: each file's name relative to it too)."""
    import hashlib

    h = hashlib.sha256()
    for f in files:
        if root is not None:
            h.update(f.relative_to(root).as_posix().encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def cli(*args: str) -> list[str]:
    """The command line of `wikihowagent ARGS` with this interpreter (the checkout first on PYTHONPATH)."""
    return [sys.executable, "-m", "wikihowagent", *args]


def _pss_kb(pid: int) -> int:
    """The proportional set size of a process (shared pages split among their users), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as fh:
            return next((int(line.split()[1]) for line in fh if line.startswith("Pss:")), 0)
    except (OSError, ValueError):
        return 0


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children", encoding="ascii") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except OSError:
            continue
    return out


def _cpu_s(pid: int) -> float | None:
    """The CPU seconds (user + system) a process has used so far, its own only; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class TreePeak(threading.Thread):
    """The largest summed PSS of a process and its descendants (worker processes included), and the CPU they
    used (each process's last sample, so a process that ends between samples loses at most `every_s`), sampled."""

    def __init__(self, pid: int, every_s: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.pid, self.every_s, self.peak_kb = pid, every_s, 0
        self._cpu: dict[int, float] = {}
        self._stop_event = threading.Event()

    @property
    def cpu_s(self) -> float:
        return sum(self._cpu.values())

    def run(self) -> None:
        while not self._stop_event.wait(self.every_s):
            tree = _tree(self.pid)
            self.peak_kb = max(self.peak_kb, sum(_pss_kb(p) for p in tree))
            for p in tree:
                if (used := _cpu_s(p)) is not None:
                    self._cpu[p] = used

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def measured(
    argv: Sequence[str], log: Path, env: dict[str, str] | None = None, cwd: Path = ROOT, check: bool = True
) -> dict[str, Any]:
    """Run one fresh process, its output appended to `log`: wall and CPU seconds (the larger of the process's own
    with its waited-for children and the sampled CPU of its process tree, worker processes included), peak
    memory in MiB ("peak_mb": the larger of the kernel's peak RSS of one process and the sampled PSS of the whole
    process tree), exit code (`check`: a failure ends the benchmark with the log's tail)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as fh:
        fh.write(f"\n$ {' '.join(map(str, argv))}\n".encode())
        fh.flush()
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(map(str, argv)), cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT)
        sampler = TreePeak(proc.pid)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        sampler.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak_mb = max(usage.ru_maxrss / 1024, sampler.peak_kb / 1024)
    if check and proc.returncode:
        tail = log.read_text(encoding="utf-8", errors="replace")[-800:]
        raise SystemExit(f"{' '.join(map(str, argv[:4]))} ... failed ({proc.returncode}); {log}:\n{tail}")
    cpu = max(usage.ru_utime + usage.ru_stime, sampler.cpu_s)
    return {"wall_s": wall, "cpu_s": cpu, "peak_mb": peak_mb, "returncode": proc.returncode}


# --------------------------------------------------------------------------- numbers and tables


def mean_ci(values: Sequence[float], seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its 95 % bootstrap CI, each value its own resampled unit (the library's
    `stats.paired.bootstrap_mean_ci`)."""
    groups = {str(i): (float(v), 1) for i, v in enumerate(values)}
    low, high = bootstrap_mean_ci([groups], seed=seed)
    return sum(values) / len(values), low, high


def within(met: bool) -> str:
    """A figure against its goal, as the sections say it."""
    return "within" if met else "**over**"


def with_ci(mean: float, low: float, high: float, digits: int = 2, unit: str = "") -> str:
    return f"{mean:.{digits}f}{unit} [{low:.{digits}f}, {high:.{digits}f}]"


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    return markdown_table(columns, [[str(c) for c in row] for row in rows])


def machine() -> str:
    return f"{platform.machine()} {len(os.sched_getaffinity(0))} cores (shared)"


def revision() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


# --------------------------------------------------------------------------- BENCHMARKS.md


@dataclass(frozen=True)
class Section:
    """A benchmark's section: its title, the command a user decides about, the headline (the figure, with its
    CI), how to reproduce it, and the body (setup and tables)."""

    title: str
    command: str
    headline: str
    reproduce: str
    body: str

    def markdown(self, day: str, rev: str, where: str) -> str:
        return (
            f"## {self.title}\n\n"
            f"_Measured {day} on revision {rev}, {where}. Reproduce: `{self.reproduce}`._\n\n"
            f"**{self.headline}**\n\n{self.body.strip()}\n"
        )


def anchor(title: str) -> str:
    """The anchor MkDocs gives a heading (lower case, punctuation dropped, spaces as hyphens)."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", title.lower()).strip())


def write_section(section: Section, path: Path = BENCHMARKS_MD, day: str | None = None, rev: str | None = None) -> None:
    """Put the section in BENCHMARKS.md (replacing the one of the same title, else before the history) and its
    row in the table at the top (command, headline, date, how to reproduce)."""
    day, rev = day or date.today().isoformat(), rev or revision()
    text = path.read_text(encoding="utf-8")
    new = section.markdown(day, rev, machine())
    pattern = re.compile(rf"^## {re.escape(section.title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _m: new + "\n", text)
    else:
        at = text.find("\n## History")
        text = text.rstrip() + "\n\n" + new if at < 0 else text[: at + 1] + new + "\n" + text[at + 1 :]
    row = (
        f"| {section.command} | [{section.title}](#{anchor(section.title)}) | {section.headline} | {day}, "
        f"{rev}, {machine()} | `{section.reproduce}` |"
    )
    head, end = text.index(GLANCE), text.index(GLANCE_END)
    rows = [r for r in text[head:end].splitlines() if r.startswith("| ") and f"](#{anchor(section.title)})" not in r]
    header, body_rows = rows[:1], sorted(rows[2:] + [row])
    glance = "\n".join([GLANCE, "", *header, "| :-- | :-- | :-- | :-- | :-- |", *body_rows, ""])
    text = text[:head] + glance + "\n" + text[end:]
    path.write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- figures quoted on other pages


def measured_block(label: str) -> re.Pattern[str]:
    """A page's generated block of figures from one data file: `<!-- measured: LABEL -->` ... `<!-- /measured -->`."""
    return re.compile(
        rf"(<!-- measured: {re.escape(label)} -->\n)((?:(?!<!-- /?measured).)*?)\n?(<!-- /measured -->)", re.S
    )


def sync_pages(label: str, statement: str, pages: Sequence[str], root: Path = ROOT) -> list[Path]:
    """Rewrite the `label` block of each page with `statement` (the figures as the data file has them);
    -> the pages changed. A page quotes a measured figure only inside such a block, so it cannot drift."""
    block, changed = measured_block(label), []
    for rel in pages:
        p = root / rel
        text = p.read_text(encoding="utf-8")
        new = block.sub(lambda mt: mt.group(1) + statement + "\n" + mt.group(3), text)
        if new != text:
            p.write_text(new, encoding="utf-8")
            changed.append(p)
    return changed
