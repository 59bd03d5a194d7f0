"""The code's structure, measured the same way on any revision: lines per package and of the benchmark code,
definitions over 80 / 60 lines, function bodies over 60 lines, modules over 800 lines, the rooms (the package's
top-level modules and its folders), their floors and the arrows between them, module import cycles, imports
that run back up (a loop between rooms), the imports of evaluation/ from other stages, module names that more
than one folder has, and duplicated-code pairs.

    python -m benchmarks.structure                 # this checkout
    python -m benchmarks.structure --repo ../old   # another checkout (a git worktree of an older revision)

The import graph is the test suite's own (`tests/project/test_import_cycles.import_graph`); duplicated-code pairs
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


def module_graph(repo: Path) -> nx.DiGraph:
    """The package's imports, module to module: the test suite's own reading (`tests/project/test_import_cycles`)."""
    sys.path.insert(0, str(ROOT / "tests" / "project"))
    from test_import_cycles import import_graph

    return import_graph(repo / "wikihowagent")


def room_graph(repo: Path) -> nx.DiGraph:
    """The rooms (package folders and top-level modules, `room_of`) and the imports between them."""
    pkg = repo / "wikihowagent"
    rooms = nx.DiGraph()
    modules = module_graph(repo)
    rooms.add_nodes_from(r for r in (room_of(m, pkg) for m in modules.nodes) if r != "__init__")
    for a, b in modules.edges:
        ra, rb = room_of(a, pkg), room_of(b, pkg)
        if ra != rb and "__init__" not in (ra, rb):
            rooms.add_edge(ra, rb)
    return rooms


def floors(rooms: nx.DiGraph) -> int:
    """How many floors the rooms stack into: the longest chain of imports between rooms (loops counted as one
    room, so that a loop does not make the chain endless)."""
    return int(nx.dag_longest_path_length(nx.condensation(rooms))) + 1 if len(rooms) else 0


def module_cycles(repo: Path) -> int:
    """Import cycles between modules: groups of modules that import each other round a loop."""
    return sum(1 for c in nx.strongly_connected_components(module_graph(repo)) if len(c) > 1)


def imports_into(repo: Path, room: str) -> list[tuple[str, str]]:
    """(importer, imported) module pairs where a module of another room imports a module of `room`."""
    pkg = repo / "wikihowagent"
    return sorted(
        (a, b)
        for a, b in module_graph(repo).edges
        if room_of(b, pkg) == room and room_of(a, pkg) not in (room, "__init__")
    )


def colliding_names(repo: Path) -> list[tuple[str, int]]:
    """Module file names (not __init__.py) that more than one folder of the package has, and how many."""
    counts: dict[str, int] = {}
    for p in (repo / "wikihowagent").rglob("*.py"):
        if p.name != "__init__.py":
            counts[p.name] = counts.get(p.name, 0) + 1
    return sorted(((n, k) for n, k in counts.items() if k > 1), key=lambda t: (-t[1], t[0]))


def upward_arrows(repo: Path) -> list[tuple[str, str]]:
    """The fewest room-to-room imports whose removal leaves no loop between rooms (each loop between rooms
    means one import runs back up whatever order the rooms are stacked in)."""
    rooms = room_graph(repo)
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
    rooms = room_graph(repo)
    rows += [
        "",
        f"rooms: {len(rooms)} (folders and top-level modules), floors: {floors(rooms)}, "
        f"arrows between rooms: {rooms.number_of_edges()}, module import cycles: {module_cycles(repo)}",
    ]
    up = upward_arrows(repo)
    rows += [f"imports that run back up (room loops): {len(up)}", *(f"  {a} -> {b}" for a, b in up)]
    every = imports_into(repo, "evaluation/")
    pkg = repo / "wikihowagent"
    into = [(a, b) for a, b in every if room_of(a, pkg) != "cli"]  # cli registers the command: not a stage
    rows += [
        "",
        f"imports of evaluation/ from other stages: {len(into)} module pairs (cli registering it: "
        f"{len(every) - len(into)})",
    ]
    by_room: dict[str, int] = {}
    for a, _ in into:
        by_room[room_of(a, repo / "wikihowagent")] = by_room.get(room_of(a, repo / "wikihowagent"), 0) + 1
    rows += [f"  {r:24} {k}" for r, k in sorted(by_room.items(), key=lambda t: (-t[1], t[0]))]
    same = colliding_names(repo)
    rows += ["", f"module names in more than one folder: {len(same)}", *(f"  {n:24} x{k}" for n, k in same)]
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
