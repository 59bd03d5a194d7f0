"""Issue 29's size and start-time must-show: two git revisions of this repository side by side.

    .venv/bin/python scripts/bench_seams.py [--before 365ae34] [--after HEAD] [--n 10] [--write-md]

For each revision a temporary `git worktree` (detached; removed afterwards):

- size: the lines of wikihowagent/evaluation/, compare/, judgecheck/ and scripts/ (*.py), raw and after
  formatting both checkouts with this repository's ruff configuration (so a formatting change does not count);
  the functions whose body (after the docstring) is longer than 60 lines and the imports of the package's own modules inside functions (lazy
  imports), over the whole package and over those three folders (counted on the formatted code);
- start time: `wikihowagent --help` and `wikihowagent evaluate --help`, each a fresh process of this
  interpreter with PYTHONPATH=<checkout>, n runs interleaved (before, after, before, ...): the child's CPU
  time (user + system) and wall time, median and range, and the after / before ratio of the medians.

`--write-md` writes the "seams" section of BENCHMARKS.md (scripts/benchmarks_md.py).
"""

import argparse
import ast
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

PACKAGE = "wikihowagent"
SIZED = ("wikihowagent/evaluation", "wikihowagent/compare", "wikihowagent/judgecheck", "scripts")
SCOPED = SIZED[:3]  # the folders whose long functions and lazy imports are counted beside the package's
LONG = 60  # a function whose body is longer than this many lines is long (issue 29)
COMMANDS = (("--help",), ("evaluate", "--help"))


# --------------------------------------------------------------------------------------------------
# size
# --------------------------------------------------------------------------------------------------


def python_files(root: Path, folder: str) -> list[Path]:
    return sorted((root / folder).rglob("*.py"))


def line_count(files: list[Path]) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)


def body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of a function's body after its docstring (the signature, a typer command's option declarations,
    and the docstring do not count)."""
    body = fn.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return (fn.end_lineno or fn.lineno) - body[0].lineno + 1


def long_functions(path: Path, limit: int = LONG) -> list[str]:
    """'file:line name (n lines)' of every function (methods and nested ones too) whose body is longer than
    `limit` lines (`body_lines`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = body_lines(node)
            if n > limit:
                out.append(f"{path}:{node.lineno} {node.name} ({n} lines)")
    return out


def is_own_import(node: ast.AST, package: str = PACKAGE) -> bool:
    """An import of the package's own modules: relative, or naming the package."""
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == package
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == package for a in node.names)
    return False


def lazy_own_imports(path: Path, package: str = PACKAGE) -> list[str]:
    """'file:line' of every import of the package's own modules inside a function (each statement once, also
    in a function nested in another)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    seen: dict[int, str] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if is_own_import(node, package):
                    seen[id(node)] = f"{path}:{getattr(node, 'lineno', 0)}"
    return sorted(seen.values())


@dataclass
class Size:
    raw: dict[str, int] = field(default_factory=dict)  # folder -> lines
    formatted: dict[str, int] = field(default_factory=dict)
    long_package: int = 0
    long_scoped: int = 0
    lazy_package: int = 0
    lazy_scoped: int = 0


def measure_size(checkout: Path, config: Path) -> Size:
    """Lines raw, then after `ruff format --config CONFIG` (which rewrites the checkout's files in place), and
    the long functions and lazy imports of the formatted code."""
    size = Size(raw={f: line_count(python_files(checkout, f)) for f in SIZED})
    subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--quiet", "--no-cache", "--config", str(config), *SIZED],
        cwd=checkout,
        check=True,
    )
    size.formatted = {f: line_count(python_files(checkout, f)) for f in SIZED}
    for p in python_files(checkout, PACKAGE):
        scoped = any(p.is_relative_to(checkout / f) for f in SCOPED)
        n_long, n_lazy = len(long_functions(p)), len(lazy_own_imports(p))
        size.long_package += n_long
        size.lazy_package += n_lazy
        size.long_scoped += n_long if scoped else 0
        size.lazy_scoped += n_lazy if scoped else 0
    return size


# --------------------------------------------------------------------------------------------------
# start time
# --------------------------------------------------------------------------------------------------


def run_once(checkout: Path, args: tuple[str, ...]) -> tuple[float, float]:
    """(CPU seconds of the child: user + system, wall seconds) of `python -m wikihowagent ARGS` with
    PYTHONPATH=<checkout>, in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "COLUMNS": "100"}
    t = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-m", PACKAGE, *args],
        env=env,
        cwd=checkout,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(p.pid, 0)  # reaped here, with the child's own resource usage
    wall = time.perf_counter() - t
    p.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{checkout}: wikihowagent {' '.join(args)}: exit {code}")
    return usage.ru_utime + usage.ru_stime, wall


def imported_from(checkout: Path) -> Path:
    """Where `import wikihowagent` resolves with PYTHONPATH=<checkout> (must be the checkout, not the venv's)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run(
        [sys.executable, "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"],
        env=env,
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def measure_start(checkouts: dict[str, Path], n: int) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """{(label, command): [(cpu, wall)] * n}, the revisions and commands interleaved run by run."""
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for path in checkouts.values():
        run_once(path, COMMANDS[0])  # warm the file cache and the bytecode (.pyc) of each checkout once
    for _ in range(n):
        for args in COMMANDS:
            for label, path in checkouts.items():
                out.setdefault((label, " ".join(args)), []).append(run_once(path, args))
    return out


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} [{min(xs):.3f}–{max(xs):.3f}]"


# --------------------------------------------------------------------------------------------------
# the two checkouts
# --------------------------------------------------------------------------------------------------


@contextmanager
def worktree(rev: str, parent: Path) -> Iterator[Path]:
    """A detached `git worktree` of `rev` under `parent`, removed afterwards."""
    dest = parent / rev.replace("/", "_").replace("~", "-")
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(dest), rev], check=True)
    try:
        yield dest
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(dest)], check=False)
        shutil.rmtree(dest, ignore_errors=True)


def commit_of(rev: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True, check=True
    ).stdout.strip()


def report(revs: dict[str, str], sizes: dict[str, Size], times: dict[tuple[str, str], list], n: int) -> str:
    before, after = list(revs)
    head = f"| | {before} ({revs[before]}) | {after} ({revs[after]}) | after / before |"
    rule = "| :-- | --: | --: | --: |"

    def row(name: str, a: float, b: float) -> str:
        return f"| {name} | {a:,} | {b:,} | {b / a:.2f} |" if a else f"| {name} | {a:,} | {b:,} | – |"

    lines = [
        "Issue 29's size and start-time must-show: the seam pass (judge session, pairwise engine, read seam, "
        "floors, long functions split, own-module imports at the top) between two revisions. "
        "`scripts/bench_seams.py`; each revision a temporary git worktree, run with this interpreter.",
        "",
        "**Size** (lines of `*.py`; formatted: both checkouts formatted with this repository's ruff "
        "configuration first, so formatting does not count):",
        "",
        head,
        rule,
    ]
    b, a = sizes[before], sizes[after]
    for f in SIZED:
        lines.append(row(f"`{f}/` formatted", b.formatted[f], a.formatted[f]))
    lines.append(row("the four, formatted", sum(b.formatted.values()), sum(a.formatted.values())))
    lines.append(row("the four, raw", sum(b.raw.values()), sum(a.raw.values())))
    lines.append(row(f"functions with a body > {LONG} lines, package", b.long_package, a.long_package))
    lines.append(
        row(f"functions with a body > {LONG} lines, evaluation + compare + judgecheck", b.long_scoped, a.long_scoped)
    )
    lines.append(row("own-module imports inside functions, package", b.lazy_package, a.lazy_package))
    lines.append(
        row("own-module imports inside functions, evaluation + compare + judgecheck", b.lazy_scoped, a.lazy_scoped)
    )
    lines += [
        "",
        f"**Start time** (a fresh `python -m wikihowagent` process each, n = {n} per cell, the revisions "
        f"interleaved; seconds, median [min–max]; the child's CPU time = user + system; shared 2-core machine, "
        f"load average {os.getloadavg()[0]:.1f} at the end):",
        "",
        "| command | revision | CPU s | wall s |",
        "| :-- | :-- | --: | --: |",
    ]
    for args in COMMANDS:
        cmd = " ".join(args)
        for label in (before, after):
            cpu = [c for c, _ in times[(label, cmd)]]
            wall = [w for _, w in times[(label, cmd)]]
            lines.append(f"| `wikihowagent {cmd}` | {label} | {spread(cpu)} | {spread(wall)} |")
        ratio_cpu = statistics.median(c for c, _ in times[(after, cmd)]) / statistics.median(
            c for c, _ in times[(before, cmd)]
        )
        ratio_wall = statistics.median(w for _, w in times[(after, cmd)]) / statistics.median(
            w for _, w in times[(before, cmd)]
        )
        lines.append(f"| `wikihowagent {cmd}` | after / before | {ratio_cpu:.2f} | {ratio_wall:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="365ae34", help="revision before the seam pass (default: 365ae34)")
    ap.add_argument("--after", default="HEAD", help="revision after it (default: HEAD)")
    ap.add_argument("--n", type=int, default=10, help="runs of each command per revision (default: 10)")
    ap.add_argument("--write-md", action="store_true", help='write the "seams" section of BENCHMARKS.md')
    a = ap.parse_args()
    if a.n < 1:
        ap.error("--n must be at least 1")
    revs = {"before": commit_of(a.before), "after": commit_of(a.after)}
    with tempfile.TemporaryDirectory(prefix="bench-seams-") as tmp:
        with worktree(revs["before"], Path(tmp)) as b_dir, worktree(revs["after"], Path(tmp)) as a_dir:
            checkouts = {"before": b_dir, "after": a_dir}
            for label, path in checkouts.items():
                found = imported_from(path)
                if not found.is_relative_to(path):
                    raise SystemExit(f"{label}: PYTHONPATH={path} imports {found}, not the checkout")
            times = measure_start(checkouts, a.n)  # before formatting: the code as committed
            sizes = {label: measure_size(path, ROOT / "pyproject.toml") for label, path in checkouts.items()}
    text = report(revs, sizes, times, a.n)
    print(text)
    if a.write_md:
        from benchmarks_md import write_section

        write_section("seams", text)


if __name__ == "__main__":
    main()
