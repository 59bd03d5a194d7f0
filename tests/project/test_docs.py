"""The documentation agrees with the code: the generated CLI reference in the built site names every command
and option; every bench script is either run by `make bench` or named as manual; the statistics page names
tests that exist; the version is single-sourced and matches CHANGELOG.md and CITATION.cff."""

from __future__ import annotations

import ast
import html
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from docs_site import REPO, site

from wikihowagent import __version__
from wikihowagent.clidoc import commands


@pytest.fixture(scope="module")
def built() -> Path:
    return site()


def test_cli_reference_in_the_built_site_has_every_command_and_option(built):
    page = html.unescape((built / "reference" / "cli.html").read_text(encoding="utf-8"))
    missing = []
    for cmd in commands():
        if f'id="{cmd.anchor}"' not in page:
            missing.append(f"command {cmd.name}")
        for param in cmd.params:
            for name in param.names:
                if param.kind == "option" and f"<code>{name}</code>" not in page:
                    missing.append(f"{cmd.name} {name}")
    assert not missing, "the built site's CLI reference lacks (rebuild it: make docs): " + ", ".join(missing)


def test_cli_reference_section_shows_an_options_help_and_default():
    gen = next(c for c in commands() if c.path == ("wikihowagent", "generate"))
    teacher = next(p for p in gen.params if p.names == ("--teacher",))
    assert teacher.default == "local" and teacher.help.startswith("Teacher model spec")
    posttest = next(p for p in gen.params if "--posttest" in p.names)
    assert posttest.names == ("--posttest", "--no-posttest") and posttest.type == "flag"
    align = next(c for c in commands() if c.path == ("wikihowagent", "align"))
    human = next(p for p in align.params if "--human" in p.names)
    assert human.required and human.multiple and "-H" in human.names
    paths = {c.path for c in commands()}
    assert {("wikihowagent", "annotate", "export"), ("wikihowagent", "sweep", "slurm")} <= paths


def _make_bench_benchmarks() -> list[str]:
    text = (REPO / "Makefile").read_text()
    recipe = text.split("\nbench:", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"-m benchmarks (\w+)", recipe)


def test_every_benchmark_is_in_make_bench_or_named_manual_in_the_docs():
    from benchmarks.__main__ import BENCHMARKS, MAKE_BENCH

    helpers = {"__init__", "__main__", "harness", "report_data"}  # report_data: the real-size runs report builds
    modules = {p.stem for p in (REPO / "benchmarks").glob("*.py")} - helpers
    assert modules == set(BENCHMARKS), "every benchmark module is registered in benchmarks/__main__.py, and only they"
    in_make = _make_bench_benchmarks()
    assert in_make == list(MAKE_BENCH), "the Makefile's bench target runs MAKE_BENCH, in its order"
    page = (REPO / "docs" / "benchmarks" / "index.md").read_text()
    manual_table = page.split("| benchmark (run by hand) | needs |", 1)[1].split("\n\n", 1)[0]
    manual = set(re.findall(r"`python -m benchmarks (\w+)`", manual_table))
    assert in_make and manual
    assert not (set(in_make) & manual), f"both in make bench and named manual: {sorted(set(in_make) & manual)}"
    assert set(BENCHMARKS) == set(in_make) | manual, (
        f"neither in `make bench` nor manual in docs/benchmarks/index.md: "
        f"{sorted(set(BENCHMARKS) - set(in_make) - manual)}; named but gone: {sorted((set(in_make) | manual) - set(BENCHMARKS))}"
    )
    listed = re.search(r"`make bench` runs the benchmarks.*?:(.*?)\. The others", page, re.S).group(1)
    assert re.findall(r"`(\w+)`", listed) == in_make  # the page's list is the Makefile's
    assert not list((REPO / "scripts").glob("bench_*.py")), "benchmarks live in benchmarks/ (docs/developer.md)"


def test_the_statistics_page_names_tests_that_exist():
    page = (REPO / "docs" / "methodology" / "statistics.md").read_text()
    refs = re.findall(r"`(tests/(?:\w+/)?test_\w+\.py)::(test_\w+)`", page)
    refs += [(None, name) for name in re.findall(r"`::(test_\w+)`", page)]
    assert len(refs) > 20
    defined: dict[str, set[str]] = {}
    for f in (REPO / "tests").glob("*/test_*.py"):
        tree = ast.parse(f.read_text())
        defined[f.relative_to(REPO).as_posix()] = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    every = set().union(*defined.values())
    gone = [f"{f or ''}::{n}" for f, n in refs if n not in (defined.get(f, set()) if f else every)]
    assert not gone, f"docs/methodology/statistics.md names tests that do not exist: {gone}"


def test_version_is_single_sourced_and_printed():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "wikihowagent.__version__"}
    done = subprocess.run(
        [sys.executable, "-m", "wikihowagent", "--version"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0 and done.stdout == f"wikihowagent {__version__}\n"
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(__version__)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)
    assert "## [Unreleased]" in changelog and "keepachangelog.com" in changelog
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["version"] == __version__ and citation["cff-version"] == "1.2.0"
    paper = citation["preferred-citation"]
    assert paper["title"].startswith("Conversational Education at Scale")
    assert [a["family-names"] for a in paper["authors"]][:2] == ["Pei", "Ye"]


def test_every_benchmarks_section_is_grouped_on_the_benchmarks_page():
    """BENCHMARKS.md's sections (written by the benchmarks) each have a line on docs/benchmarks/index.md
    saying what a user should take from them."""
    from markdown.extensions.toc import slugify

    sections = re.findall(r"^## (.+)$", (REPO / "BENCHMARKS.md").read_text(), re.M)
    page = (REPO / "docs" / "benchmarks" / "index.md").read_text()
    linked = set(re.findall(r"\(results\.md#([^)]+)\)", page))
    assert len(sections) > 8
    missing = [s for s in sections if slugify(s, "-") not in linked]
    assert not missing, f"BENCHMARKS.md sections without a line on docs/benchmarks/index.md: {missing}"


# Flags of other tools the pages mention (the benchmarks, vLLM, pip, mkdocs, sbatch, the backends module).
OTHER_TOOLS_FLAGS = {
    "--api-key",
    "--dir",  # python -m benchmarks paper_scale
    "--redo",  # python -m benchmarks paper_scale
    "--source",  # python -m benchmarks paper_scale_slurm
    "--input",  # python -m benchmarks evaluate_workers
    "--old",
    "--reps",
    "--results",
    "--dist",  # pytest-xdist (docs/developer.md, Tests)
    "--cpus-per-task",  # sbatch (the cluster layouts in the sweep and paper-scale guides)
    "--gres",
    "--mem",
    "--nodes",
    "--time",
    "--code",  # python -m benchmarks interrupt
    "--repo",  # python -m benchmarks structure
    "--study",  # python -m benchmarks judge_vs_people
    "--array",
    "--check-n",
    "--max-minutes",
    "--minutes",
    "--no-deps",
    "--per-tutorial",
    "--port",
    "--prepare",
    "--report-site",
    "--smoke",
    "--strict",
    "--synthetic",
    "--throughput",
    "--variants",
    "--write-md",
    "--check",  # ruff format --check (docs/developer.md)
    "--index-url",  # pip install torch --index-url ... (README, Getting started: the CPU build of torch)
    "--no-isolation",  # python -m build --no-isolation (docs/developer.md: the wheel test)
}
# Words after "wikihowagent " that are not commands: `make install`'s output, quoted on Getting started.
NOT_COMMANDS = {"into", "itself"}


def _doc_pages() -> list[Path]:
    pages = [p for p in (REPO / "docs").rglob("*.md") if "pending" not in p.parts]
    return [*pages, REPO / "README.md"]


def test_every_option_and_command_the_docs_name_exists():
    """A renamed or removed option still named in a guide fails here (the reference is generated; the guides
    are written by hand)."""
    known = {n for c in commands() for p in c.params for n in p.names if n.startswith("-")}
    names = {c.path[1] for c in commands() if len(c.path) > 1}
    stale = []
    for page in _doc_pages():
        text = page.read_text(encoding="utf-8")
        rel = page.relative_to(REPO)
        stale += [
            f"{rel}: {flag}"
            for flag in sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text)))
            if flag not in known and flag not in OTHER_TOOLS_FLAGS
        ]
        stale += [
            f"{rel}: wikihowagent {name}"
            for name in sorted(set(re.findall(r"wikihowagent ([a-z][a-z-]*)", text)))
            if name not in names | NOT_COMMANDS
        ]
    assert not stale, f"the docs name options or commands the CLI does not have: {stale}"


def test_cli_reference_groups_options_by_their_help_panel(monkeypatch):
    """Options given a Typer help panel (rich_help_panel) are grouped under it, in --help's order (console.PANELS,
    then Options with --help)."""
    from wikihowagent import clidoc
    from wikihowagent.console import PANELS

    gen = next(c for c in clidoc.commands() if c.path == ("wikihowagent", "generate"))
    monkeypatch.setattr(clidoc, "commands", lambda: [gen])
    page = clidoc.markdown()
    heads = re.findall(r'<th colspan="4">(.*?)</th>', page)
    assert heads == [p for p in PANELS if p in heads] + ["Options"] and len(heads) >= 5
    at = {h: page.index(f'<th colspan="4">{h}</th>') for h in heads}
    assert at["Model and judge"] < page.index("<code>--teacher</code>") < at["Conversation"]
    assert at["Post-test"] < page.index("<code>--posttest-prompt</code>") < at["Output"]
    assert page.index("<code>--help</code>") > at["Options"]


# "README 'Post-test'", 'README.md ("Metrics")', 'README, "Sweeps"', '(README: "Choosing the judge prompt")'
README_SECTION = re.compile(r"""README(?:\.md)?\s*(?:[,:]\s*|\(\s*)?["'“]([A-Z][^"'”\n]*)["'”]""")


def _readme_sections_named(text: str) -> set[str]:
    return {m.group(1).strip() for m in README_SECTION.finditer(text)}


def test_readme_section_pattern_finds_the_ways_code_names_a_section():
    named = _readme_sections_named("""help="...; README 'Post-test'." # see README 'Choosing the judge prompt'
        (README: "Choosing the judge prompt") README.md ("Metrics") README.md, "Metrics". README "Sweeps" """)
    assert named == {"Post-test", "Choosing the judge prompt", "Metrics", "Sweeps"}
    assert not _readme_sections_named("README.md stays short; the README's threshold is 'measured'.")


def test_no_help_text_or_comment_names_a_readme_section_that_is_gone():
    """The long README moved into the docs site: a --help text or a code comment that still sends the reader to
    a README section must name one README.md has (else point it to the docs page, e.g. "docs: Guides >
    Post-test")."""
    from wikihowagent.clidoc import commands

    headings = {
        h.strip().casefold() for h in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", (REPO / "README.md").read_text(), re.M)
    }
    files = [
        p
        for d in ("wikihowagent", "scripts")
        for p in sorted((REPO / d).rglob("*"))
        if p.suffix in {".py", ".sh", ".yaml", ".yml"} and p.is_file()
    ]
    assert len(files) > 50
    gone = [
        f"{p.relative_to(REPO)}: README {name!r}"
        for p in files
        for name in sorted(_readme_sections_named(p.read_text(encoding="utf-8")))
        if name.casefold() not in headings
    ]
    helps = [(c.name, p.names[0], p.help or "") for c in commands() for p in c.params]
    helps += [(c.name, "", c.help or "") for c in commands()]
    gone += [
        f"{cmd} {opt} --help: README {name!r}"
        for cmd, opt, text in helps
        for name in sorted(_readme_sections_named(text))
        if name.casefold() not in headings
    ]
    assert not gone, f"README.md has no such section (point to the docs page instead): {gone}"
