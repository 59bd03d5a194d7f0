"""No import cycle inside the wikihowagent package.

Every `import` / `from ... import` counts, including imports deferred into functions (a lazy import
still ties the two modules together); only `if TYPE_CHECKING:` blocks are left out. A module importing
a submodule does not count as importing its parent package's __init__.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PKG = Path(__file__).resolve().parent.parent / "wikihowagent"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                stack.extend(child.orelse)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            stack.append(child)


def import_graph() -> nx.DiGraph:
    modules = {module_name(p): p for p in PKG.rglob("*.py")}
    g = nx.DiGraph()
    g.add_nodes_from(modules)
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                if node.level:
                    base = base[: len(base) - (node.level - 1)]
                    mod = ".".join([*base, node.module] if node.module else base)
                else:
                    mod = node.module or ""
                # `from pkg import sub` imports the submodule pkg.sub when there is one
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names]
            for t in targets:
                if t in modules and t != name:
                    g.add_edge(name, t)
    return g


def test_the_graph_sees_lazy_and_relative_imports():
    g = import_graph()
    assert g.has_edge("wikihowagent.cli", "wikihowagent.evaluation.command")  # module level
    assert g.has_edge("wikihowagent.backends.local", "wikihowagent.backends.model_files")  # relative
    assert g.has_edge("wikihowagent.backends", "wikihowagent.backends.model_files")  # inside a function


def test_no_import_cycle_in_the_package():
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join([*c, c[0]]) for c in cycles[:10])


def test_cli_only_registers_the_stages_commands():
    """cli.py parses and dispatches: it imports the stages' command modules, never their cores, the run files,
    the backends or the config (orchestration lives in each stage's core)."""
    allowed = {"wikihowagent.console", "wikihowagent.workflow.graph"}
    imported = set(import_graph().successors("wikihowagent.cli"))
    assert imported - allowed == {"wikihowagent.generation.command", "wikihowagent.judgecheck.command", "wikihowagent.evaluation.command",
                                  "wikihowagent.compare.command",
                                  "wikihowagent.alignment.command", "wikihowagent.corpus.command",
                                  "wikihowagent.report.command", "wikihowagent.chat.command",
                                  "wikihowagent.sweep.command"}


def test_stage_commands_reach_their_core_lazily():
    g = import_graph()
    for stage in ("generation", "evaluation", "alignment", "corpus", "report", "chat", "sweep", "compare"):
        assert g.has_edge(f"wikihowagent.{stage}.command", f"wikihowagent.{stage}.core")
        tree = ast.parse((PKG / stage / "command.py").read_text(encoding="utf-8"))
        top = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
        assert all((n.module or "") not in ("core", f"wikihowagent.{stage}.core") for n in top), stage


def test_readme_layout_names_every_module():
    readme = (PKG.parent / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    missing = [str(p.relative_to(PKG)) for p in sorted(PKG.rglob("*.py"))
               if p.name != "__init__.py" and p.name not in layout]
    missing += [d.name + "/" for d in sorted(PKG.iterdir()) if d.is_dir() and d.name != "__pycache__"
                and f"{d.name}/" not in layout]
    assert not missing, f"README Layout does not mention: {missing}"
