"""The code's structure, measured the same way on any revision: lines per package and of the benchmark code,
definitions over 80 / 60 lines, function bodies over 60 lines, modules over 800 lines, imports that run back up
(a loop between the package's rooms: its top-level modules and its folders), and duplicated-code pairs.

    python -m benchmarks.structure                 # this checkout
    python -m benchmarks.structure --repo ../old   # another checkout (a git worktree of an older revision)

The import graph is the test suite's own (`tests/test_import_cycles.import_graph`); duplicated-code pairs
come from the `duplicates` command where it is installed (else "not measured"). No model, a few seconds.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8", errors="replace").splitlines())


def package_lines(repo: Path) -> dict[str, int]:
    """Lines of each package folder and of the top-level modules, of scripts/ and benchmarks/ (source files)."""
    pkg = repo / "wikihowagent"
    out: dict[str, int] = {}
    for p in sorted(pkg.rglob("*.py")):
        rel = p.relative_to(pkg).parts
        key = f"wikihowagent/{rel[0]}/" if len(rel) > 1 else "wikihowagent/*.py"
        out[key] = out.get(key, 0) + line_count(p)
    for folder in ("scripts", "benchmarks"):
        files = [p for p in (repo / folder).rglob("*") if p.suffix in (".py", ".sh") and p.is_file()]
        out[f"{folder}/"] = sum(line_count(p) for p in files)
    return out


def long_definitions(repo: Path, over: int) -> list[tuple[str, int, int]]:
    """(file:name, whole definition's lines, body's lines) of every function longer than `over` lines (the
    whole definition, its signature included), in the package and the benchmark code, longest first."""
    found = []
    files = [*(repo / "wikihowagent").rglob("*.py"), *(repo / "scripts").rglob("*.py")]
    files += list((repo / "benchmarks").rglob("*.py"))
    for p in files:
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                whole = (node.end_lineno or node.lineno) - start + 1
                body = (node.end_lineno or node.lineno) - node.body[0].lineno + 1
                if whole > over:
                    found.append((f"{p.relative_to(repo)}:{node.name}", whole, body))
    return sorted(found, key=lambda t: -t[1])


def big_modules(repo: Path, over: int = 800) -> list[tuple[str, int]]:
    files = [*(repo / "wikihowagent").rglob("*.py"), *(repo / "scripts").rglob("*.py")]
    files += list((repo / "benchmarks").rglob("*.py"))
    sized = [(str(p.relative_to(repo)), line_count(p)) for p in files]
    return sorted([s for s in sized if s[1] > over], key=lambda s: -s[1])


def room_of(module: str, pkg: Path) -> str:
    """A package folder, or a top-level module, is one room."""
    parts = module.split(".")
    if len(parts) >= 2 and (pkg / parts[1]).is_dir():
        return parts[1] + "/"
    return ".".join(parts[1:]) or "__init__"


def upward_arrows(repo: Path) -> list[tuple[str, str]]:
    """The fewest room-to-room imports whose removal leaves no loop between rooms (each loop between rooms
    means one import runs back up whatever order the rooms are stacked in)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_import_cycles import import_graph

    pkg = repo / "wikihowagent"
    rooms = nx.DiGraph()
    for a, b in import_graph(pkg).edges:
        ra, rb = room_of(a, pkg), room_of(b, pkg)
        if ra != rb and "__init__" not in (ra, rb):
            rooms.add_edge(ra, rb)
    cut: list[tuple[str, str]] = []
    for scc in nx.strongly_connected_components(rooms):
        if len(scc) < 2:
            continue
        sub = rooms.subgraph(scc).copy()
        edges = list(sub.edges)
        for k in range(1, len(edges) + 1):
            hit = next(
                (c for c in itertools.combinations(edges, k) if nx.is_directed_acyclic_graph(_without(sub, c))), None
            )
            if hit:
                cut += list(hit)
                break
    return sorted(cut)


def _without(g: nx.DiGraph, edges: tuple[tuple[str, str], ...]) -> nx.DiGraph:
    h = g.copy()
    h.remove_edges_from(edges)
    return h


def duplicate_pairs(repo: Path) -> str:
    if not shutil.which("duplicates"):
        return "not measured (no `duplicates` command here)"
    out = subprocess.run(
        ["duplicates", "--repo", str(repo), "--most", "1", "--seconds", "180"], capture_output=True, text=True
    ).stdout
    first = out.splitlines()[0] if out else ""
    m = re.match(r"(\d+) pairs", first)
    return first if m else (first or "no output")


def measure(repo: Path) -> str:
    lines = package_lines(repo)
    over80, over60 = long_definitions(repo, 80), long_definitions(repo, 60)
    rows = [f"revision: {_revision(repo)}", "", "lines per package:"]
    rows += [f"  {k:32} {v:6}" for k, v in sorted(lines.items())]
    pkg_total = sum(v for k, v in lines.items() if k.startswith("wikihowagent"))
    rows.append(f"  {'wikihowagent total':32} {pkg_total:6}")
    rows.append(f"  {'scripts/ + benchmarks/':32} {lines['scripts/'] + lines['benchmarks/']:6}")
    for label, found in ((80, over80), (60, over60)):
        in_pkg = [f for f in found if f[0].startswith("wikihowagent")]
        rows += ["", f"definitions over {label} lines: {len(found)} ({len(in_pkg)} in the package)"]
        if label == 80:
            rows += [f"  {name} {whole} (body {body})" for name, whole, body in found]
    long_bodies = [f for f in over60 if f[2] > 60]  # what a reader must hold: the body, a command's options aside
    rows += ["", f"function bodies over 60 lines: {len(long_bodies)}"]
    rows += [f"  {name} (body {body})" for name, _, body in sorted(long_bodies, key=lambda t: -t[2])]
    mods = big_modules(repo)
    rows += ["", f"modules over 800 lines: {len(mods)}", *(f"  {n} {c}" for n, c in mods)]
    up = upward_arrows(repo)
    rows += ["", f"imports that run back up (room loops): {len(up)}", *(f"  {a} -> {b}" for a, b in up)]
    rows += ["", f"duplicated-code pairs: {duplicate_pairs(repo)}"]
    return "\n".join(rows) + "\n"


def _revision(repo: Path) -> str:
    done = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True)
    return done.stdout.strip() + (" (+ uncommitted changes)" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    args = ap.parse_args(argv)
    print(measure(args.repo.resolve()), end="")


if __name__ == "__main__":
    main()
