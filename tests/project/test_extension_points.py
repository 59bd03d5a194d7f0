"""The developer guide's table "where a new X goes" (docs/developer.md, "Extension points"), proved: each test adds
a toy one at run time (a fixture registers it and takes it out again) and checks it is picked up everywhere it
should be. The toy provider and the toy scoring mode are in test_registry.py; the last test checks that every
test the table names exists."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import run_copy
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.metrics import computational as M
from wikihowagent.report import core as report_core
from wikihowagent.scores.runner import select_metrics

REPO = Path(__file__).resolve().parents[2]
TOY_METRIC = "Toy Teacher Turns"
TOY_PAGE = "toy"


def toy_teacher_turns(x: M.MetricInput) -> float:
    """The teacher's generated turns, a tenth each, at most 1: a fraction, so shown as a percentage."""
    return min(1.0, len(M.teacher_messages(x.conv)) / 10)


@pytest.fixture
def toy_metric():
    metric = M.register(M.Metric(TOY_METRIC, "default", toy_teacher_turns))
    yield metric
    M.REGISTRY.remove(M.key("default", TOY_METRIC))
    assert TOY_METRIC not in M.computational_names()  # read from the registry on use: gone again everywhere


def write_toy_page(ctx: report_core.SiteContext) -> str:
    ctx.page_path(TOY_PAGE).write_text(f"<p>{len(ctx.runs)} run(s), {len(ctx.convs)} conversations</p>")
    return f"<a href='{TOY_PAGE}.html'>Toy page</a>"


@pytest.fixture
def toy_page():
    report_core.PAGES.add(TOY_PAGE, write_toy_page)
    yield write_toy_page
    report_core.PAGES.remove(TOY_PAGE)


def report_index(site: Path) -> tuple[dict, list[list]]:
    """The report's data: data/index.js's head and data/values.js's columns (one per metric)."""
    text = (site / "data" / "index.js").read_text(encoding="utf-8")
    index = json.loads(text[len("window.REPORT_INDEX = ") :].rstrip().rstrip(";"))
    text = (site / "data" / "values.js").read_text(encoding="utf-8")
    return index, json.loads(text[len("reportValues(") : -len(");\n")])


def test_a_toy_metric_is_scored_summarised_and_reported(toy_metric, tmp_path):
    """A metric is one registry entry (metrics/computational.py): `evaluate --no-judge` accepts and scores it, the
    summary (terminal, summary.csv) has its column on the % scale, and `report` has its column and its Tables row."""
    assert TOY_METRIC in M.computational_metrics("default") and TOY_METRIC in M.percent_metrics()
    assert TOY_METRIC in select_metrics("computational", "default", [])[0]
    assert M.better(TOY_METRIC) == "higher" and M.value_range(TOY_METRIC) == (0.0, 1.0)

    run = run_copy(tmp_path)  # 3 scorable conversations with 2, 2 and 3 teacher turns
    args = ["evaluate", str(run), "--no-judge", "--metrics", f"{M.QUESTION},{TOY_METRIC}", "--no-figures"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    assert sorted(r["metrics"][TOY_METRIC] for r in records) == pytest.approx([0.2, 0.2, 0.3])
    assert f"{TOY_METRIC} (%)" in res.output  # the terminal's summary table
    assert f"{TOY_METRIC} (%)" in (run / "summary.csv").read_text().splitlines()[0]

    res = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    index, values = report_index(tmp_path / "site")
    j = index["metrics"].index(TOY_METRIC)
    assert index["percent"][j] is True
    assert sorted(v for v in values[j] if v is not None) == pytest.approx([20.0, 20.0, 30.0])  # shown in %
    tables = (tmp_path / "site" / "index.html").read_text().split("Table 1", 1)[1]
    assert TOY_METRIC in tables  # a row of Tables 1/2


def test_a_toy_report_page_is_written_and_linked(toy_page, tmp_path):
    """A report page is a module with `write_page(ctx)` + its entry in PAGES (report/core.py): `report` writes
    `<name>.html` and the overview links it."""
    run = run_copy(tmp_path)
    res = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    site = tmp_path / "site"
    assert (site / f"{TOY_PAGE}.html").read_text() == "<p>1 run(s), 5 conversations</p>"
    assert f"<a href='{TOY_PAGE}.html'>Toy page</a>" in (site / "index.html").read_text()


def test_the_guide_table_names_tests_that_exist():
    """Each row of the extension table that names a proving test names one that exists."""
    guide = (REPO / "docs" / "developer.md").read_text(encoding="utf-8")
    section = guide.split("## Extension points", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", section)
    assert {f for f, _ in named} >= {"tests/project/test_extension_points.py", "tests/core/test_registry.py"}
    assert len(named) >= 4  # a metric, a provider, a scoring mode, a report page
    for path, test in named:
        assert re.search(rf"^def {test}\(", (REPO / path).read_text(encoding="utf-8"), re.M), f"{path}::{test}"
