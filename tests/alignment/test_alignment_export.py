"""`annotate export`: tutorial selection, the sheet layout, the HTML companion, round trip into `align`."""

from __future__ import annotations

import csv
import html
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
from builders import METRICS, SHEET, make_run  # noqa: E402

from wikihowagent.alignment.core import compute  # noqa: E402
from wikihowagent.alignment.export import export_sheet, select  # noqa: E402
from wikihowagent.alignment.problems import AlignInputError, Problems  # noqa: E402
from wikihowagent.config import resource_path  # noqa: E402


def flat(v):
    return {m: v for m in METRICS}


@pytest.fixture
def runs(tmp_path):
    """Two runs over tutorials a..f with known means:
    a: 5 & 5 -> 5.0;  b: 4 & 5 -> 4.5;  c: 4.5 & 4.5 -> 4.5 (tie with b);  d: 2 & 2 -> 2.0;
    e: only in r1 (3.0);  f: no usable score (all None) -> does not qualify."""
    root = tmp_path / "runs"
    s1 = {"a": flat(5.0), "b": flat(4.0), "c": flat(4.5), "d": flat(2.0), "e": flat(3.0), "f": flat(None)}
    s2 = {"a": flat(5.0), "b": flat(5.0), "c": {**flat(4.5), "Depth": None}, "d": flat(2.0), "f": flat(None)}
    make_run(root, "r1", list(s1), s1, teacher="qwen", learner="qwen")
    make_run(root, "r2", list(s2), s2, teacher="gemma", learner="gemma")
    return [root / "r1", root / "r2"]


def keys(sel):
    return [k for k, _, _ in sel.tutorials]


def test_top_bottom_ties_and_qualification(runs):
    p = Problems()
    sel = select(runs, p, mode="top", n=3)
    assert keys(sel) == ["a", "b", "c"]  # b and c tie at 4.5: broken by key
    assert [s for _, s, _ in sel.tutorials] == [5.0, 4.5, 4.5]
    assert sel.qualifying == 5  # f has no usable score
    assert [c.conversation_id for c in sel.conversations] == ["r1-a", "r2-a", "r1-b", "r2-b", "r1-c", "r2-c"]
    assert keys(select([runs[0].parent], Problems(), n=3)) == ["a", "b", "c"]  # a directory of runs
    sel = select(runs, p, mode="bottom", n=2)
    assert keys(sel) == ["d", "e"]
    sel = select(runs, p, mode="top", n=10, in_all_runs=True)
    assert keys(sel) == ["a", "b", "c", "d"]  # e is only in r1
    assert "only 4 tutorials qualify" in p.lines()[-1]


def test_random_selection_is_reproducible(runs):
    a = select(runs, Problems(), mode="random", n=3, seed=1)
    b = select(runs, Problems(), mode="random", n=3, seed=1)
    assert keys(a) == keys(b) and len(set(keys(a))) == 3
    others = {tuple(keys(select(runs, Problems(), mode="random", n=3, seed=s))) for s in range(2, 12)}
    assert len(others) > 1
    assert set(keys(a)) <= {"a", "b", "c", "d", "e"}


def test_sheet_layout_and_companion(runs, tmp_path):
    out = tmp_path / "sheets" / "sheet.csv"
    sel, sheet, companion = export_sheet(runs, out, Problems(), n=2, blind=False)
    assert not (tmp_path / "sheets" / "sheet.key.csv").exists()
    with open(sheet, newline="") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == (*SHEET, "tutorial_id")
    assert [r[0] for r in rows[1:]] == ["r1-a", "r2-a", "r1-b", "r2-b"]
    assert rows[1][1] == "r1" and rows[1][2] == "How to a — Part 1 of 1:a" and rows[1][-1] == "a"
    assert all(cell == "" for r in rows[1:] for cell in r[3:12])
    page = companion.read_text()
    assert companion == out.with_suffix(".html") and page.startswith("<!DOCTYPE html>")
    rubric = json.loads(resource_path("data", "rubrics.json").read_text(encoding="utf-8"))
    for m in METRICS:
        assert html.escape(rubric[m]["question"]) in page
        assert html.escape(rubric[m]["rubric"]["1"]) in page
    for cid in ("r1-a", "r2-a", "r1-b", "r2-b"):
        assert cid in page
    assert "&lt;b&gt;html&lt;/b&gt;" in page and "<b>html</b>" not in page  # escaped
    assert "Step one of a" in page and "Teacher:" in page


def test_export_refuses_to_overwrite_and_writes_nothing_on_error(runs, tmp_path):
    out = tmp_path / "sheet.csv"
    out.write_text("filled in by a judge")
    with pytest.raises(AlignInputError, match="already exists"):
        export_sheet(runs, out, Problems(), n=2)
    assert out.read_text() == "filled in by a judge" and not out.with_suffix(".html").exists()
    export_sheet(runs, out, Problems(), n=2, force=True)
    assert out.read_text().startswith("conversation_id,")
    with pytest.raises(AlignInputError):
        export_sheet([tmp_path / "nope"], tmp_path / "x.csv", Problems())
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "x.html").exists()
    assert not list(tmp_path.glob(".*tmp"))


def test_filled_sheet_reads_back_into_align(runs, tmp_path):
    out = tmp_path / "sheet.csv"
    export_sheet(runs, out, Problems(), n=4)
    rng = np.random.default_rng(0)
    for judge in ("ann1", "ann2"):
        with open(out, newline="") as fh:
            rows = list(csv.reader(fh))
        for r in rows[1:]:
            r[3:11] = [str(v) for v in rng.integers(1, 6, 8)]
        with open(tmp_path / f"{judge}.csv", "w", newline="") as fh:
            csv.writer(fh).writerows(rows)
    problems = Problems()
    res = compute(
        [tmp_path / "ann1.csv", tmp_path / "ann2.csv"], [], n_boot=0, problems=problems, runs_dir=runs[0].parent
    )
    assert len(res.ids) == 7 and res.matched.all()  # a, b, c in both runs; e only in r1
    assert not [p for p in problems if p.kind not in ("not annotated", "undefined", "agreement", "missing llm score")]
    assert res.groups[0].correlations["Clarity"].n == 7


def test_blind_sheet_hides_runs_and_key_maps_back(runs, tmp_path):
    out = tmp_path / "study" / "sheet.csv"
    sel, sheet, companion = export_sheet(runs, out, Problems(), n=4, seed=3)
    with open(sheet, newline="") as fh:
        rows = list(csv.reader(fh))
    with open(tmp_path / "study" / "sheet.key.csv", newline="") as fh:
        key = list(csv.DictReader(fh))
    real = [c.conversation_id for c in sel.conversations]
    assert sorted(k["conversation_id"] for k in key) == sorted(real)
    assert [r[0] for r in rows[1:]] == [k["blind_id"] for k in key]  # the key lists the sheet's order
    assert {k["run"] for k in key} == {"r1", "r2"}
    text = sheet.read_text() + companion.read_text()
    for leak in ("r1", "r2", "qwen", "gemma", *real):  # no run, model, file name or real id
        assert leak not in text, leak
    assert all(r[1] == "" for r in rows[1:])
    assert [k["conversation_id"] for k in key] != real  # shuffled, not in selection order
    # seeded: the same seed gives the same order and ids, another seed another order
    again = export_sheet(runs, tmp_path / "again.csv", Problems(), n=4, seed=3)[1]
    assert again.read_text() == sheet.read_text()
    with open(export_sheet(runs, tmp_path / "o.csv", Problems(), n=4, seed=4)[1]) as fh:
        other = [r[2] for r in csv.reader(fh)]
    assert other != [r[2] for r in rows]
    # a judge's filled copy elsewhere reads back with --key; without it, align says what is wrong
    judge_dir = tmp_path / "judges"
    judge_dir.mkdir()
    for r in rows[1:]:
        r[3:11] = ["4"] * 8
    with open(judge_dir / "alice.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    problems = Problems()
    res = compute([judge_dir / "alice.csv"], [], n_boot=0, problems=problems, runs_dir=runs[0].parent)
    assert not res.matched.any()
    assert any("ids look blind but no key file beside it knows them; pass --key" in line for line in problems.lines())
    res = compute(
        [judge_dir / "alice.csv"],
        [],
        n_boot=0,
        problems=Problems(),
        runs_dir=runs[0].parent,
        keys=[tmp_path / "study" / "sheet.key.csv"],
    )
    assert sorted(res.ids) == sorted(real) and res.matched.all()


def test_export_of_a_no_judge_run_says_no_judge_ran(tmp_path):
    """A run evaluated with --no-judge has no rubric keys at all: not "judge reply not parsed"."""
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    root = tmp_path / "runs"
    make_run(root, "r1", ["a", "b"], {"a": {"BLEU": 0.3, "METEOR": 0.2}, "b": {"BLEU": 0.1, "METEOR": 0.4}})
    result = CliRunner().invoke(app, ["annotate", "export", str(root / "r1"), "--out", str(tmp_path / "s.csv")])
    assert result.exit_code == 1
    assert "not parsed" not in result.output
    assert "no LLM score (not judged: evaluated without a judge, e.g. --no-judge) for: Clarity 2" in result.output
    assert (
        "error: no conversation has a rubric score in the given runs (evaluated with --no-judge? run "
        "`wikihowagent evaluate RUN` with a judge)"
    ) in result.output
    # a judge that ran but whose reply could not be parsed is still reported as such
    make_run(root, "r2", ["a"], {"a": {**flat(4.0), "Depth": None}})
    problems = Problems()
    select([root / "r2"], problems)
    assert any("no LLM score (judge reply not parsed) for: Depth 1 conversations" in line for line in problems.lines())


def test_cli_export_is_blind_by_default_and_unblind_keeps_the_old_layout(runs, tmp_path):
    from typer.testing import CliRunner

    from wikihowagent.cli import app

    out = tmp_path / "study" / "sheet.csv"
    result = CliRunner().invoke(app, ["annotate", "export", *map(str, runs), "--top", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    key = out.with_name("sheet.key.csv")
    assert f"key:       {key} (blind ids -> conversations; not for the judges)" in result.output
    assert key.is_file() and "r1" not in out.read_text()
    plain = tmp_path / "plain.csv"
    result = CliRunner().invoke(
        app, ["annotate", "export", *map(str, runs), "--top", "2", "--out", str(plain), "--unblind"]
    )
    assert result.exit_code == 0 and "key:" not in result.output
    assert not (tmp_path / "plain.key.csv").exists() and ",r1," in plain.read_text()
