"""`wikihowagent report`: the site's files and data, bad input, the output directory (no browser here;
see test_report_browser.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from helpers import HOSTILE_JSON, append_line, one_line_error
from typer.testing import CliRunner

from wikihowagent.cli import app
from wikihowagent.layout import OUTPUT_MANIFEST
from wikihowagent.outdir import OutputDirError
from wikihowagent.report.core import ReportError, build_report
from wikihowagent.report.sources import Problems, ReportInputError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "report"))
from report_builders import make_run  # noqa: E402

FIXTURE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation" / "run_small"


def _index(site: Path) -> dict:
    """data/index.js, with "rows": each conversation's [id, run, model, domain, persona, status, title, chunk,
    tokens, turns, metrics] from its columns and data/values.js (whose first page index.js also carries)."""
    text = (site / "data" / "index.js").read_text(encoding="utf-8")
    idx = json.loads(text[len("window.REPORT_INDEX = ") :].rstrip().rstrip(";"))
    text = (site / "data" / "values.js").read_text(encoding="utf-8")
    assert text.startswith("reportValues(") and text.endswith(");\n")
    values = json.loads(text[len("reportValues(") : -len(");\n")])
    c = idx["columns"]
    n = len(c["id"])
    assert all(len(col) == n for col in c.values()) and all(len(col) == n for col in values)
    keys = ("id", "run", "model", "domain", "persona", "status")
    idx["rows"] = [
        [
            *(c[k][i] for k in keys),
            idx["titles"][c["title"][i]],
            i // idx["chunk_size"],
            c["tokens"][i],
            c["turns"][i],
            [v[i] for v in values],
        ]
        for i in range(n)
    ]
    assert idx["first"] == [r[-1] for r in idx["rows"][: idx["page"]]]
    return idx


def _chunk(site: Path, k: int) -> dict:
    text = (site / "data" / f"conv-{k:04d}.js").read_text(encoding="utf-8")
    m = re.fullmatch(rf"reportChunk\({k}, (.*)\);\n", text, re.S)
    assert m, text[:80]
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    make_run(root, "T-qwen2_L-qwen2", 30, teacher="qwen2", tutorials=10)
    make_run(root, "T-gemma_L-gemma", 30, teacher="gemma", tutorials=10, seed=1, bias=-0.5)
    return root


def test_site_has_every_conversation_its_data_and_figures(sweep, tmp_path):
    res = build_report([sweep], tmp_path / "site", cases=2)
    site = res.out
    assert res.runs == 2 and res.conversations == 60
    idx = _index(site)
    assert idx["runs"] == ["T-gemma_L-gemma", "T-qwen2_L-qwen2"] and len(idx["rows"]) == 60
    assert "Clarity" in idx["metrics"] and "BLEU" in idx["metrics"]
    statuses = [idx["statuses"][r[5]] for r in idx["rows"]]
    conv_lines = [json.loads(x) for f in sweep.glob("*/conversations.jsonl") for x in f.read_text().splitlines()]
    assert statuses.count("failed") == sum(1 for c in conv_lines if c["error"])
    row = next(r for r in idx["rows"] if r[0] == "T-qwen2_L-qwen2-000003")
    conv = _chunk(site, row[7])["T-qwen2_L-qwen2-000003"]
    src = next(c for c in conv_lines if c["conversation_id"] == "T-qwen2_L-qwen2-000003")
    assert [t[1] for t in conv["turns"]] == [t["text"] for t in src["turns"]]
    assert [t[2] for t in conv["turns"]] == [t["step"] for t in src["turns"]]
    assert conv["steps"] == src["tutorial"]["steps"]
    asked = next(c for c in conv_lines if any(t.get("intent") for t in c["turns"]))
    row = next(r for r in idx["rows"] if r[0] == asked["conversation_id"])
    turns = _chunk(site, row[7])[asked["conversation_id"]]["turns"]
    assert [t[7] for t in turns] == [{"intent": t["intent"]} if t.get("intent") else {} for t in asked["turns"]]
    assert {o["run"] for o in conv["others"]} == {"T-qwen2_L-qwen2", "T-gemma_L-gemma"}  # same tutorial elsewhere
    assert conv["judge_raw"]["rubric"][0].startswith("Clarity:")
    for name in ("radar_rubrics.png", "radar_computational.png", "by_domain.png", "domain_bars.png"):
        assert (site / "figures" / name).stat().st_size > 1000
    html = (site / "index.html").read_text()
    assert "Table 1: homogeneous" in html and "Clarity" in html and "Computational metrics, %" in html
    assert "BLEU <span class='dir' title='higher is better'>↑</span>" in html
    # nothing remote: every src/href is relative
    for page in ("index.html", "conversation.html", "cases.html"):
        refs = re.findall(r"(?:src|href)=['\"]([^'\"]+)", (site / page).read_text())
        assert refs and not [r for r in refs if re.match(r"[a-z]+:|//", r)], refs
    cases = (site / "cases.md").read_text()
    scores = [json.loads(x) for f in sweep.glob("*/scores.jsonl") for x in f.read_text().splitlines()]
    best = max(s["metrics"]["BLEU"] for s in scores)
    assert (
        f"## BLEU\n\n### best\n\n| # | value | run | title | conversation |\n| --: | --: | :-- | :-- | :-- |\n| 1 | {best:.4f} |"
        in cases
    )


def test_run_without_scores_and_record_with_missing_field_still_build(tmp_path):
    run = make_run(tmp_path / "runs", "unscored", 5, scores=False)
    lines = (run / "conversations.jsonl").read_text().splitlines()
    rec = json.loads(lines[1])
    del rec["tutorial"]
    lines[1] = json.dumps(rec)
    lines.insert(3, "{not json")
    (run / "conversations.jsonl").write_text("\n".join(lines) + "\n")
    problems = Problems()
    res = build_report([run], tmp_path / "site", problems=problems)
    text = "\n".join(problems.lines)
    assert f"{run}: no scores.jsonl (not evaluated" in text
    assert (
        f'{run / "conversations.jsonl"}:2: record has no tutorial (expected {{"title", "steps"}}); shown without it'
        in text
    )
    assert f"{run / 'conversations.jsonl'}:4: malformed JSON" in text
    assert res.conversations == 5  # the malformed line is the only one left out
    partial = _chunk(res.out, 0)[rec["conversation_id"]]
    assert partial["missing"] == ["tutorial"] and [t[1] for t in partial["turns"]] == [t["text"] for t in rec["turns"]]
    assert (res.out / "problems.txt").read_text() == text + "\n"
    page = (res.out / "index.html").read_text()
    assert "What is missing" in page and "record has no tutorial" in page and "No figures: no run has scores" in page


def test_sweep_with_a_failed_cell_builds_and_says_so(sweep, tmp_path):
    import shutil

    root = tmp_path / "sweep"
    shutil.copytree(sweep, root)
    (root / "T-broken_L-broken").mkdir()
    (root / "T-broken_L-broken" / "run.json").write_text("{oops")
    problems = Problems()
    res = build_report([root], tmp_path / "site", problems=problems)
    assert res.runs == 2
    assert any(p.startswith(f"{root / 'T-broken_L-broken' / 'run.json'}: malformed JSON") for p in problems.lines)
    assert f"{root / 'T-broken_L-broken'}: nothing to show (no readable conversation or score record)" in problems.lines


def test_sweep_json_cells_failed_and_missing_cells_and_paper_tables(tmp_path):
    """A `wikihowagent sweep` directory: cells from sweep.json; a cell not generated yet and failed
    conversations are reported; Table 2 compares the heterogeneous run with its teacher's homogeneous run."""
    sweep = tmp_path / "sweeps" / "grid"
    make_run(sweep, "T-qwen2_L-qwen2_E-qwen2", 60, teacher="qwen2", tutorials=20)
    make_run(sweep, "T-qwen2_L-gemma_E-qwen2", 60, teacher="qwen2", learner="gemma", tutorials=20, seed=2)
    cells = [{"run": n} for n in ("T-qwen2_L-qwen2_E-qwen2", "T-qwen2_L-gemma_E-qwen2", "T-gemma_L-gemma_E-gemma")]
    (sweep / "sweep.json").write_text(json.dumps({"name": "grid", "cells": cells}))
    problems = Problems()
    res = build_report([sweep], tmp_path / "site", problems=problems)
    assert res.runs == 2
    assert (
        f"{sweep / 'T-gemma_L-gemma_E-gemma'}: sweep cell not generated (or its shards not merged) yet; left out"
        in problems.lines
    )
    failed = sum(
        1
        for x in (sweep / "T-qwen2_L-qwen2_E-qwen2" / "conversations.jsonl").read_text().splitlines()
        if json.loads(x)["error"]
    )
    assert failed and any(
        line.startswith(f"{sweep / 'T-qwen2_L-qwen2_E-qwen2'}: {failed} failed conversation(s)")
        for line in problems.lines
    )
    html = (res.out / "index.html").read_text()
    assert "Table 1: homogeneous" in html and "Table 2: heterogeneous" in html
    # as `evaluate --tables`: paired arrows (random scores of two seeds: no significant difference) and CIs
    # each cell's whole text (mean ± sd [CI] arrow) is its tooltip
    cells = re.findall(
        r"<td class='num[^']*' title='([^']*)'", html.split("Table 2: heterogeneous")[1].split("</table>")[0]
    )
    assert any(c.endswith(" ≈") for c in cells) and not any(c.endswith((" ↑", " ↓")) for c in cells)
    assert re.search(r"\d ± \d+\.\d\d \[\d", html) and "paired by tutorial" in html


def test_named_run_that_contributes_nothing_is_an_error(sweep, tmp_path):
    empty = tmp_path / "empty_run"
    empty.mkdir()
    (empty / "run.json").write_text(json.dumps({"name": "empty_run"}))
    with pytest.raises(ReportInputError, match=r"empty_run: nothing to show"):
        build_report([sweep / "T-qwen2_L-qwen2", empty], tmp_path / "site")
    assert not (tmp_path / "site").exists()


def test_out_dir_with_other_files_is_refused_and_a_previous_report_replaced(sweep, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(OutputDirError, match=r"holds files report did not write \(notes.txt\)"):
        build_report([sweep], out)
    assert (out / "notes.txt").read_text() == "keep me"
    site = tmp_path / "site"
    build_report([sweep / "T-qwen2_L-qwen2"], site)
    build_report([sweep / "T-gemma_L-gemma"], site)  # a rerun replaces the report as a whole
    assert _index(site)["runs"] == ["T-gemma_L-gemma"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp dirs left


def test_out_that_is_holds_or_lies_inside_an_input_is_refused_and_nothing_is_removed(tmp_path):
    """A run copied into an old report folder, then reported into that folder: refused in one line (exit 2);
    the run and the user's other files stay."""
    run = make_run(tmp_path / "runs", "r", 3)
    site = tmp_path / "site"
    assert CliRunner().invoke(app, ["report", str(run), "--out", str(site)]).exit_code == 0
    shutil.copytree(run, site / "inrun")
    (site / "notes.txt").write_text("mine")
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    for args, how in (
        ([str(site / "inrun"), "--out", str(site)], "holds the input"),
        ([str(run), "--out", str(run)], "is the input"),
        ([str(tmp_path / "runs"), "--out", str(run / "site")], "lies inside the input"),
        ([str(run), "--out", str(tmp_path / "link")], "is the input"),
    ):
        if args[-1].endswith("link"):
            (tmp_path / "link").symlink_to(run)
        res = CliRunner().invoke(app, ["report", *args])
        assert res.exit_code == 2, res.output
        one_line_error(res, f"--out {args[-1]}: {how}")
        (tmp_path / "link").unlink(missing_ok=True)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before
    assert (site / "notes.txt").read_text() == "mine" and (site / "inrun" / "run.json").is_file()
    # and without the input inside it: still the user's notes.txt and run copy, which report did not write
    res = CliRunner().invoke(app, ["report", str(run), "--out", str(site)])
    assert res.exit_code == 2
    one_line_error(res, f"--out {site} holds files report did not write (inrun/", "notes.txt")
    assert (site / "notes.txt").read_text() == "mine" and (site / "inrun" / "run.json").is_file()


def test_report_folder_without_a_manifest_is_refused(tmp_path):
    """Only the manifest tells what a report wrote: a folder without one (a version that kept none, with the
    report's marker and a notes.txt of the user's) is refused, not replaced, and said so."""
    run = make_run(tmp_path / "runs", "r", 3)
    site = tmp_path / "site"
    build_report([run], site)
    (site / OUTPUT_MANIFEST).unlink(missing_ok=True)  # as an older version left it
    (site / "notes.txt").write_text("mine")
    with pytest.raises(OutputDirError, match=f"holds files report did not write .*no {OUTPUT_MANIFEST} in it"):
        build_report([run], site)
    assert (site / "notes.txt").read_text() == "mine" and (site / "index.html").is_file()
    shutil.rmtree(site)
    res = build_report([run], site)
    assert res.files == len([p for p in site.rglob("*") if p.is_file()]) - 1  # not counting the manifest
    listed = json.loads((site / OUTPUT_MANIFEST).read_text())
    assert listed["tool"] == "report" and "index.html" in listed["files"] and "figures" in listed["folders"]


def test_rerun_spares_sibling_folders_it_did_not_make(tmp_path):
    """Fresh temporary names beside --out (mkdtemp): a `.site.old` or `.site.tmp` folder of the user's, or a
    stale one of an interrupted run, is never reused or removed."""
    run = make_run(tmp_path / "runs", "r", 3)
    out = tmp_path / "o"
    site = out / "site"
    build_report([run], site)
    for name in (".site.old", ".site.tmp", ".site.old-x", ".site.abc"):
        (out / name).mkdir()
        (out / name / "thesis.tex").write_text("mine")
    build_report([run], site)
    build_report([run], site)
    assert sorted(p.name for p in out.iterdir()) == [".site.abc", ".site.old", ".site.old-x", ".site.tmp", "site"]
    assert all((out / n / "thesis.tex").read_text() == "mine" for n in (".site.old", ".site.tmp", ".site.old-x"))
    mask = os.umask(0)
    os.umask(mask)
    assert site.stat().st_mode & 0o777 == 0o777 & ~mask  # a site to publish: not mkdtemp's 0700


def test_fixture_run_without_scores_and_alignment_dir(tmp_path):
    align = tmp_path / "alignment"
    (align / "figures").mkdir(parents=True)
    (align / "correlations.csv").write_text("metric,n,pearson_r\nClarity,25,0.41\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.plot([1, 2])
    plt.savefig(align / "figures" / "correlation_heatmap.png")
    plt.close("all")
    res = build_report([FIXTURE_RUN], tmp_path / "site", alignment=align)
    page = (res.out / "index.html").read_text()
    assert "Correlation heatmap (Fig. 7)" in page and "<td>0.41</td>" in page
    assert (res.out / "alignment" / "correlation_heatmap.png").is_file()
    with pytest.raises(ReportError, match="not an `align` output"):
        build_report([FIXTURE_RUN], tmp_path / "site2", alignment=tmp_path)


def test_cli_prints_problems_literally_and_fails_in_one_line(tmp_path):
    run = make_run(tmp_path / "runs", "odd[red]name", 3, scores=False)
    result = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    assert f"warning: {run}: no scores.jsonl" in result.output  # "[red]" shown, not taken as markup
    assert "index.html: 1 run(s), 3 conversations" in result.output
    result = CliRunner().invoke(app, ["report", str(tmp_path / "nope"), "--out", str(tmp_path / "site")])
    assert result.exit_code == 1
    assert result.output.strip() == f"error: {tmp_path / 'nope'}: no such run directory"


@pytest.mark.parametrize("name", ["conversations.jsonl", "scores.jsonl"])
@pytest.mark.parametrize(("line", "why"), HOSTILE_JSON)
def test_a_hostile_json_line_is_one_problem_and_every_other_line_is_used(tmp_path, name, line, why):
    run = make_run(tmp_path / "runs", "r", 5)
    lineno = append_line(run / name, line)
    res = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    problem = f"{run / name}:{lineno}: malformed JSON ({why})"
    assert (tmp_path / "site" / "problems.txt").read_text() == problem + "\n"
    assert f"warning: {problem}" in res.output.replace("\n", "") and "Traceback" not in res.output
    rows = _index(tmp_path / "site")["rows"]
    assert len(rows) == 5 and all(row[-1] for row in rows)  # every conversation, each with its scores


@pytest.mark.parametrize(("text", "why"), HOSTILE_JSON)
def test_a_hostile_calibration_file_is_refused_in_one_line(tmp_path, text, why):
    run = make_run(tmp_path / "runs", "r", 3)
    cal = tmp_path / "calibration.json"
    cal.write_text(text)
    res = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "site"), "--calibration", str(cal)])
    assert res.exit_code != 0 and not (tmp_path / "site").exists()  # report's code for any input it refuses
    one_line_error(res, f"{cal}: malformed JSON ({why})")


def test_persona_and_later_score_fields_are_shown_when_present(tmp_path, monkeypatch):
    """Personas (records that carry one) and score fields the typed record gains later (e.g. distributions)
    show up without the report knowing them by name."""
    import wikihowagent.runs as runs_mod
    from wikihowagent.records import ScoreRecord

    class LaterScoreRecord(ScoreRecord):
        distributions: dict[str, dict[str, float]] = {}

    monkeypatch.setattr(runs_mod, "ScoreRecord", LaterScoreRecord)
    run = make_run(tmp_path / "runs", "T-a_L-a", 4)
    convs = [json.loads(x) for x in (run / "conversations.jsonl").read_text().splitlines()]
    for i, c in enumerate(convs):
        c["persona"] = "novice" if i % 2 else "expert"
    (run / "conversations.jsonl").write_text("".join(json.dumps(c) + "\n" for c in convs))
    scores = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    scores[0]["distributions"] = {"Clarity": {"4": 0.7, "5": 0.3}}
    (run / "scores.jsonl").write_text("".join(json.dumps(s) + "\n" for s in scores))
    res = build_report([run], tmp_path / "site")
    idx = _index(res.out)
    assert idx["personas"] == ["expert", "novice"]
    assert [idx["personas"][r[4]] for r in idx["rows"]] == [c["persona"] for c in convs]
    assert "<td data-label='Persona'>expert, novice</td>" in (res.out / "index.html").read_text()
    conv = _chunk(res.out, 0)[scores[0]["conversation_id"]]
    assert conv["score_extra"] == {"distributions": {"Clarity": {"4": 0.7, "5": 0.3}}}
    assert _chunk(res.out, 0)[scores[1]["conversation_id"]]["score_extra"] == {}


def test_scores_only_directory_is_a_run_shown_without_text(tmp_path):
    run = make_run(tmp_path / "runs", "T-a_L-a", 3)
    (run / "conversations.jsonl").unlink()
    (run / "run.json").unlink()
    problems = Problems()
    res = build_report([run], tmp_path / "site", problems=problems)
    assert res.conversations == sum(1 for _ in (run / "scores.jsonl").open())
    assert f"{run}: no conversations.jsonl (the conversation text is missing)" in problems.lines
    assert any("score record(s) without a conversation in conversations.jsonl" in p for p in problems.lines)


def test_a_new_report_page_is_a_module_and_its_entry(sweep, tmp_path, monkeypatch):
    """The developer guide's extension points: a report page = a module with write_page(ctx) + its entry in report.core.PAGES."""
    import sys

    from wikihowagent.report import core

    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "extra_page.py").write_text(
        "def write_page(ctx):\n"
        "    ctx.page_path('extra').write_text(f'{len(ctx.convs)} conversations, {len(ctx.runs)} runs')\n"
        "    return \"<a href='extra.html'>Extra</a>\"\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    core.PAGES.add("extra", core.module_page("extra_page"))
    try:
        site = build_report([sweep], tmp_path / "site").out
    finally:
        core.PAGES.remove("extra")
        sys.modules.pop("extra_page", None)
    assert (site / "extra.html").read_text() == "60 conversations, 2 runs"
    assert "<a href='extra.html'>Extra</a>" in (site / "index.html").read_text()


def _table1(html: str) -> str:
    return html.split("Table 1: homogeneous", 1)[1].split("</section>", 1)[0]


def test_table1_is_a_row_per_metric_with_direction_scale_and_fixed_decimals(tmp_path):
    """Table 1 read as `79.21 ± 2.18 [77.57, 81.69]` cells in 18+ columns. Now a row per metric
    grouped by scale (% / 1-5) with ↑/↓, a column per run; each cell the mean (2 decimals, right-aligned),
    a small sd, the CI on its own small line and the whole cell as a tooltip."""
    make_run(tmp_path / "runs", "T-qwen2_L-qwen2", 40, teacher="qwen2", tutorials=20, full=True)
    t1 = _table1((build_report([tmp_path / "runs"], tmp_path / "site").out / "index.html").read_text())
    assert "table class='summary metric-rows'" in t1
    heads = re.findall(r"<th scope='row'>(.*?)</th>", t1)
    assert len(heads) == 18 + 8
    # under a head, how far the metric tracked people where it was measured (data/metric_validity.json)
    assert any(h.startswith("METEOR <span class='dir'") and "class='tracked'" in h for h in heads)
    heads = [h.split("<small class='tracked'", 1)[0] for h in heads]
    assert "Echo Rate <span class='dir' title='lower is better'>↓</span>" in heads
    assert "Extraneous <span class='dir' title='lower is better'>↓</span>" in heads
    assert "Clarity <span class='dir' title='higher is better'>↑</span>" in heads
    assert "Computational metrics, %</th>" in t1 and "Rubric scores (LLM judge), 1–5</th>" in t1
    cells = re.findall(r"<td class='num' title='([^']*)'>(.*?)</td>", t1)
    assert len(cells) == 18 + 8
    for tip, body in cells:
        mean, sd, lo, hi = re.fullmatch(
            r"<span class='m'>(-?\d+\.\d\d)</span><span class='sd'>±(\d+\.\d\d)</span>"
            r"<span class='ci'>\[(-?\d+\.\d\d), (-?\d+\.\d\d)\]</span>",
            body,
        ).groups()
        assert tip == f"{mean} ± {sd} [{lo}, {hi}]"
    assert "★" not in t1  # one run: no best run


def test_table1_marks_the_best_run_only_where_significant_and_many_runs_become_rows(tmp_path):
    for name, teacher, seed, bias in [
        ("T-qwen2_L-qwen2", "qwen2", 0, 0.0),
        ("T-gemma_L-gemma", "gemma", 1, 0.0),
        ("T-llama3_L-llama3", "llama3", 2, 1.5),
    ]:
        make_run(tmp_path / "three", name, 40, teacher=teacher, tutorials=20, seed=seed, bias=bias, full=True)
    t1 = _table1((build_report([tmp_path / "three"], tmp_path / "site3").out / "index.html").read_text())
    heads = re.findall(r"<th class='run'>(.*?)</th>", t1)
    assert [re.sub(r"<[^>]+>|\d+", "", h) for h in heads] == [
        "T-gemma L-gemman = ",
        "T-llama L-llaman = ",
        "T-qwen L-qwenn = ",
        "Overallmean ± sd over runsn = ",
    ]
    rows = re.findall(r"<tr><th scope='row'>(.*?)</th>(.*?)</tr>", t1)
    marked = {
        re.sub(" <span.*", "", head): [
            i for i, td in enumerate(re.findall(r"<td class='([^']*)'", tds)) if "best" in td
        ]
        for head, tds in rows
    }
    rubric_marks = [
        marked[m]
        for m in ("Clarity", "Truthfulness", "Engagement", "Coherence", "Depth", "Relevance", "Progress", "Naturalness")
    ]
    assert rubric_marks.count([1]) >= 6  # llama3 (column 1), 1.5 points above on a 1-5 scale: significant
    assert all(v in ([], [1]) for v in marked.values())  # never another run, never two
    assert "★ Bold on green" in t1
    # ten columns (9 runs + Overall): a row per run, the metrics as columns under their group's scale
    for i in range(9):
        make_run(tmp_path / "nine", f"T-m{i}_L-m{i}", 8, teacher=f"m{i}", tutorials=4, seed=i)
    t9 = _table1((build_report([tmp_path / "nine"], tmp_path / "site9").out / "index.html").read_text())
    assert t9.count("table class='summary run-rows many'") == 2 and "metric-rows" not in t9
    assert len(re.findall(r"<tr><th scope='row'>", t9)) == 2 * 10


def test_table2_arrows_are_green_for_the_better_and_red_for_the_worse():
    """↓ on Echo Rate (lower is better) is an improvement; ↓ on BLEU is not."""
    from wikihowagent.metrics.computational import better
    from wikihowagent.report.tables import _value_cell

    row = {
        "run": "r",
        "BLEU": (30.0, 5.0, 10),
        "Echo Rate": (10.0, 2.0, 10),
        "Clarity": (3.0, 1.0, 10),
        "arrows": {"BLEU": "↓", "Echo Rate": "↓", "Clarity": "≈"},
        "ci": {},
    }
    direction = {m: better(m) for m in ("BLEU", "Echo Rate", "Clarity")}
    assert "<span class='arrow bad'>↓</span>" in _value_cell(row, "BLEU", {}, direction)
    assert "<span class='arrow good'>↓</span>" in _value_cell(row, "Echo Rate", {}, direction)
    assert "<span class='arrow '>≈</span>" in _value_cell(row, "Clarity", {}, direction)


def test_the_site_data_names_no_path_of_this_machine(tmp_path):
    """The site is made to be shared: a conversation's source in its data files is `<run>/<file>:line`, never a
    path of the machine the report was made on."""
    make_run(tmp_path / "runs", "T-qwen2_L-qwen2", 4, teacher="qwen2", tutorials=2)
    site = build_report([tmp_path / "runs"], tmp_path / "site", cases=1).out
    data = sorted((site / "data").glob("*.js"))
    assert data
    for p in data:
        text = p.read_text(encoding="utf-8")
        assert str(tmp_path) not in text and str(tmp_path.resolve()) not in text, p.name
    where = {c["where"] for c in _chunk(site, 0).values()}
    assert where == {f"T-qwen2_L-qwen2/conversations.jsonl:{i}" for i in range(1, 5)}


PAPER_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "evaluation" / "T-llama3_L-llama3_E-llama3_123.json"


def _evaluate_paper_file(tmp_path: Path) -> tuple[Path, Path]:
    """The paper's run file (a copy) scored by `evaluate` into OUT/<its name>/ -> (the file, OUT)."""
    paper = tmp_path / "released" / PAPER_FILE.name
    paper.parent.mkdir()
    paper.write_bytes(PAPER_FILE.read_bytes())
    out = tmp_path / "scored"
    args = ["evaluate", str(paper), "--no-judge", "--metrics", "Question Ratio,Completion,Diversity", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--no-figures"])
    assert result.exit_code == 0, result.output
    return paper, out


def test_paper_run_file_scored_by_evaluate_is_shown_with_its_conversations(tmp_path):
    """The scores `evaluate` writes for one of the paper's run files were shown without text ("no
    conversations.jsonl"): the released dataset's report had no conversations to read. evaluate now names the
    file in run.json beside the scores, and the report reads the conversations from it."""
    paper, out = _evaluate_paper_file(tmp_path)
    records = json.loads(paper.read_text())["total_conversations"]
    problems = Problems()
    res = build_report([out], tmp_path / "site", problems=problems)
    assert problems.lines == []
    chunk = _chunk(res.out, 0)
    assert set(chunk) == {r["conversation_id"] for r in records}
    for r in records:
        conv = chunk[r["conversation_id"]]
        assert [f"{t[0].capitalize()}: {t[1]}" for t in conv["turns"]] == [x.strip() for x in r["conversation"]]
        assert conv["scored"] and dict(conv["metrics"])["Question Ratio"] is not None
        assert conv["run"] == paper.stem and conv["teacher"] == "llama3"
    # the file moved away: said in one line, the scores still shown
    paper.unlink()
    problems = Problems()
    res = build_report([out], tmp_path / "site", problems=problems)
    assert res.conversations == len(records)
    assert (
        f"{out / paper.stem}: its conversations file {paper} (run.json conversations_file) is missing"
        in (problems.lines[0])
    )


def test_memory_does_not_grow_with_the_conversations_text(tmp_path):
    """A report of the paper's 114,296 conversations peaked at 7.75 GB of memory: every record was held,
    texts and all. The records are streamed now (each text spooled to disk, then written into its chunk one
    conversation at a time), so the Python heap's peak (tracemalloc) grows by a small share of the bytes of
    conversations added, here from 100 to 400 long ones (about 100 kB each)."""
    import tracemalloc

    build_report([make_run(tmp_path / "warm", "T-w_L-w", 3, scores=False)], tmp_path / "site-warm")  # imports
    sizes, peaks = [], []
    for n in (100, 400):
        root = tmp_path / f"runs-{n}"
        make_run(root, "T-a_L-a", n // 2, teacher="a", tutorials=20, pad=600, scores=False)
        make_run(root, "T-b_L-b", n // 2, teacher="b", tutorials=20, seed=1, pad=600, scores=False)
        sizes.append(sum(p.stat().st_size for p in root.rglob("*.jsonl")))
        tracemalloc.start()
        try:
            build_report([root], tmp_path / f"site-{n}")
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    growth = (peaks[1] - peaks[0]) / (sizes[1] - sizes[0])
    assert growth < 0.1, f"the peak grew by {growth:.2f} bytes per byte of conversations ({peaks}, {sizes})"


def _site_files(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def test_runs_read_in_worker_processes_give_the_same_site_problems_and_progress(tmp_path):
    """`report --workers 2` reads the runs two at a time in processes of their own: the site, byte for byte, the
    problems in their order and the records counted for the progress bar are those of one process; a named run
    that yields nothing is still the error it is, and no spool file is left beside the output."""
    sweep = tmp_path / "sweep"
    make_run(sweep, "T-qwen2_L-qwen2", 40, teacher="qwen2", tutorials=10)
    make_run(sweep, "T-gemma_L-gemma", 30, teacher="gemma", tutorials=10, seed=1, bias=-0.5)
    make_run(sweep, "T-gemma_L-qwen2", 20, teacher="gemma", learner="qwen2", tutorials=10, seed=2, scores=False)
    append_line(sweep / "T-gemma_L-gemma" / "conversations.jsonl", "{not json")
    got = {}
    for n in (1, 2):
        problems, counted = Problems(), [0]

        def count(counted: list[int] = counted) -> None:
            counted[0] += 1

        res = build_report([sweep], tmp_path / f"site{n}", problems=problems, on_record=count, workers=n)
        got[n] = (_site_files(res.out), problems.lines, counted[0])
    assert got[2][1] == got[1][1] and any("T-gemma_L-gemma" in line for line in got[1][1])
    assert got[2][2] == got[1][2] == 90  # the records read (the line that is not JSON is a problem)
    assert got[2][0] == got[1][0] and len(got[1][0]) > 5
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".wikihowagent-report")]
    empty = tmp_path / "empty_run"
    empty.mkdir()
    with pytest.raises(ReportInputError, match="empty_run"):
        build_report([sweep, empty], tmp_path / "site3", workers=2)
