"""The repository's top level: `configs/` holds experiment files a user copies, edits and passes by path, each
loaded here by the tool's own loader (a sweep file as `sweep` reads it, a --config file as every command does,
with the alias and persona files it names), so an example that rots fails here; the commands their headers show
parse with the real CLI. `data/` is where a user's corpus and studies go: git ignores what lands there. Neither
holds a second copy of a file the package ships."""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from pydantic import BaseModel

from wikihowagent.backends import load_aliases, resolve_spec
from wikihowagent.cli import app
from wikihowagent.config import Config, load_config
from wikihowagent.sweep.core import check_models, load_sweep, sweep_tutorials, write_task_files
from wikihowagent.workflow.personas import load_personas, select_personas
from wikihowagent.workflow.prompts import load_prompts

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
PACKAGE = REPO / "wikihowagent"


def unknown_keys(data: dict[str, Any], model: type[BaseModel], where: str = "") -> list[str]:
    """Keys of a --config file that no setting has (Config ignores them: a typo would change nothing)."""
    out = []
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            out.append(where + key)
        elif isinstance(value, dict) and isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            out += unknown_keys(value, field.annotation, f"{where}{key}.")
    return out


def check_aliases(path: Path) -> list[str]:
    """An alias file: every alias resolves to a provider and a model; -> the names."""
    names = list(load_aliases(path).aliases)
    assert names, f"{path}: no aliases"
    for name in names:
        resolve_spec(name, path)
    return names


def check_config(path: Path) -> Config:
    """A --config file, as a command loads it, every key a setting; the alias, persona and prompts files it names
    load with their own loaders, and its personas are found in its persona file."""
    assert not unknown_keys(yaml.safe_load(path.read_text(encoding="utf-8")), Config), path
    cfg = load_config(path)
    if cfg.models:
        check_aliases(Path(cfg.models))
    select_personas(cfg.workflow.learner_personas, cfg.personas or None)
    load_prompts(cfg.prompts or None)
    for spec in re.findall(r"--(?:teacher|learner|evaluator) (\S+)", path.read_text(encoding="utf-8")):
        resolve_spec(spec, Path(cfg.models) if cfg.models else None)  # the models its header runs
    return cfg


def check_personas(path: Path) -> list[str]:
    registry = load_personas(path)
    assert "paper" in registry  # the default learner, for a config that names no persona
    select_personas(list(registry), path)
    return list(registry)


def check_sweep(path: Path, out: Path) -> None:
    """A sweep file as `sweep plan|run|slurm` reads it: its cells, the config and aliases its tasks run with
    (every model of every cell resolves) and the tutorials they select."""
    sweep = load_sweep(path, runs_dir=out)
    check_models(sweep, write_task_files(sweep))
    cfg = load_config(Path(sweep.spec.config) if sweep.spec.config else None)
    assert sweep_tutorials(sweep, cfg)


LOADERS: dict[str, Callable[..., Any]] = {
    "paper-sweep.yaml": check_sweep,
    "ollama.yaml": check_config,
    "vllm.yaml": check_config,
    "vllm-models.yaml": check_aliases,
    "openai.yaml": check_config,
    "personas-example.yaml": check_personas,
    "local-prompt-cache.yaml": check_config,
}


def test_every_file_in_configs_has_a_loader_and_a_line_in_its_readme():
    files = {p.name for p in CONFIGS.iterdir()} - {"README.md"}
    assert files == set(LOADERS), "a new file in configs/ gets its loader in LOADERS (and a row in configs/README.md)"
    readme = (CONFIGS / "README.md").read_text(encoding="utf-8")
    assert not [f for f in files if f"| `{f}` |" not in readme]


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_every_example_in_configs_loads_with_the_tools_own_loader(name, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the examples' relative paths are from the clone's root, as their headers say
    check = LOADERS[name]
    path = Path("configs") / name
    check(path, tmp_path) if check is check_sweep else check(path)


def test_the_papers_sweep_runs_on_the_vllm_example_and_its_personas_with_any_backend_example(tmp_path, monkeypatch):
    """The paper's sweep with `config: configs/vllm.yaml`: every cell's model is in vllm-models.yaml; the commented
    `personas:` line of each backend example, uncommented, loads the persona example and the personas named."""
    monkeypatch.chdir(REPO)
    sweep = yaml.safe_load((CONFIGS / "paper-sweep.yaml").read_text(encoding="utf-8"))
    (tmp_path / "vllm-sweep.yaml").write_text(yaml.safe_dump({**sweep, "config": "configs/vllm.yaml"}))
    check_sweep(tmp_path / "vllm-sweep.yaml", tmp_path / "runs")
    personas = check_personas(CONFIGS / "personas-example.yaml")
    for name in ("ollama.yaml", "vllm.yaml", "openai.yaml"):
        text = (CONFIGS / name).read_text(encoding="utf-8")
        line = re.search(r"^# (personas: \S+)\s+# .*--learner-persona (\S+)\)$", text, re.M)
        assert line and line.group(2) in personas, f"configs/{name}: the commented personas line"
        (tmp_path / name).write_text(text.replace(line.group(0), line.group(1)))
        assert check_config(tmp_path / name).personas == "configs/personas-example.yaml"


def header_commands(text: str) -> list[list[str]]:
    """The `wikihowagent ...` commands a file's comments or code blocks show, as argv (pipes, `&&` and `\\`
    continuations followed)."""
    text = re.sub(r"\\\n\s*(?:#\s*)?", " ", text)
    out = []
    for m in re.finditer(r"(?:^|&&|\|)\s*#?\s*wikihowagent ([^#|&\n]+)", text, re.M):
        out.append(shlex.split(m.group(1)))
    return out


def parse(argv: list[str]) -> None:
    """argv as the CLI parses it (names, types, choices), without running anything."""
    cmd: Any = typer.main.get_command(app)
    words = list(argv)
    while hasattr(cmd, "commands"):  # a group: the next word is one of its commands
        name = words.pop(0) if words else ""
        assert name in cmd.commands, f"no command {name!r}"
        cmd = cmd.commands[name]
    cmd.make_context(cmd.name or "", words)


def test_the_commands_the_examples_and_the_data_readme_show_parse():
    files = [*sorted(CONFIGS.iterdir()), REPO / "data" / "README.md"]
    shown = [(f.relative_to(REPO), argv) for f in files for argv in header_commands(f.read_text(encoding="utf-8"))]
    assert len(shown) >= 15
    bad = []
    for where, argv in shown:
        try:
            parse(argv)
        except (typer.TyperException, AssertionError) as exc:
            bad.append(f"{where}: wikihowagent {shlex.join(argv)}: {exc}")
    assert not bad, bad


def test_the_configs_and_data_paths_the_docs_name_exist():
    """`configs/NAME` and `wikihowagent/configs/NAME` named anywhere in the README, the docs, the examples, the
    help texts and the code exist: a file that moved is not named where it was."""
    pages = [REPO / "README.md", *(REPO / "docs").rglob("*.md"), *CONFIGS.iterdir(), REPO / "data" / "README.md"]
    pages += [
        *PACKAGE.rglob("*.py"),
        *PACKAGE.rglob("*.yaml"),
        *(REPO / "tests").glob("*.py"),
        *(REPO / "tests").glob("*/test_*.py"),
    ]
    named = {
        (p.relative_to(REPO), m.group(0).replace("@", "wikihowagent/"))  # @configs/...: a preset's bundled file
        for p in pages
        if "pending" not in p.parts
        for m in re.finditer(r"(?<![\w/.-])(?:wikihowagent/|@)?configs/[\w./-]*\w\.yaml", p.read_text(encoding="utf-8"))
    }
    assert len(named) > 30
    missing = sorted(f"{where}: {path}" for where, path in named if not (REPO / path).is_file())
    assert not missing, missing


def test_no_file_in_configs_or_data_is_a_second_copy_of_a_package_file():
    def digest(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()

    shipped = {digest(p): p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    shipped_names = {p.name for p in (PACKAGE / "configs").rglob("*")} | {p.name for p in (PACKAGE / "data").iterdir()}
    ours = [p for d in (CONFIGS, REPO / "data") for p in d.rglob("*") if p.is_file()]
    assert not [f"{p} = {shipped[digest(p)]}" for p in ours if digest(p) in shipped]
    assert not [p.name for p in CONFIGS.iterdir() if p.name in shipped_names - {"README.md"}]


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="not a git checkout")
def test_git_ignores_what_lands_in_data_but_its_readme_and_keeps_configs():
    def ignored(path: str) -> bool:
        res = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=REPO, timeout=60)
        assert res.returncode in (0, 1), res
        return res.returncode == 0

    landed = [
        "data/wikihow/Health/How to Treat a Burn/How to Treat a Burn.json",
        "data/human-study/judge_1.csv",
        "data/released/T-llama3_L-llama3_E-llama3_7.json",
        "data/corpus.jsonl",
        "data/.cache",
    ]
    assert [p for p in landed if not ignored(p)] == []
    kept = ["data/README.md", "data/.gitignore", *(f"configs/{p.name}" for p in CONFIGS.iterdir())]
    assert [p for p in kept if ignored(p)] == []
