"""Hostile input to `report`: unreadable or odd paths are one line naming the file, a hostile run name still
builds, titles, items, steps and turns stay text (cases.md, the site), values no metric can have are left out,
calibrated columns keep the rubric range, a tampered measured-figures file is one line in the trust box."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fake_servers import FakeOpenAI
from helpers import FIXTURE_RUN, _jsonl, one_line_error, run_copy
from typer.testing import CliRunner

from wikihowagent.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "report"))
from report_builders import make_run  # noqa: E402

runner = CliRunner()

XSS = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"


def _checklist_run(tmp_path: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from test_checklist import _yes_no_judge

    run = run_copy(tmp_path)
    with FakeOpenAI(logprobs=_yes_no_judge) as srv:
        res = runner.invoke(
            app,
            ["evaluate", str(run), "--evaluator", "openai:fake-model", "--base-url", srv.base_url, "--no-figures"]
            + ["--judge-scoring", "checklist", "--metrics", "Progress,Clarity"],
        )
        assert res.exit_code == 0, res.output
    return run


def _site_text(site: Path) -> dict[str, str]:
    return {
        str(p.relative_to(site)): p.read_text(encoding="utf-8") for p in site.rglob("*") if p.suffix in (".html", ".js")
    }


def _no_constant(name: str):
    pytest.fail(f"{name} in the report's data")


def _chunks(site: Path) -> dict:
    import re

    out = {}
    for p in sorted((site / "data").glob("conv-*.js")):
        m = re.fullmatch(r"reportChunk\(\d+, (.*)\);\n", p.read_text(encoding="utf-8"), re.S)
        out.update(json.loads(m.group(1), parse_constant=_no_constant))
    return out


def test_report_alignment_dir_not_utf8_or_png_directory_is_not_a_traceback(tmp_path):
    bad = tmp_path / "al"
    (bad / "figures").mkdir(parents=True)
    (bad / "correlations.csv").write_bytes(b"metric,n,pearson_r\nClarity\xff,25,0.41\n")
    res = runner.invoke(app, ["report", str(FIXTURE_RUN), "--out", str(tmp_path / "s1"), "--alignment", str(bad)])
    assert res.exit_code == 0, res.output
    assert f"{bad / 'correlations.csv'}: not UTF-8" in " ".join(res.output.split())
    dirpng = tmp_path / "al2"
    (dirpng / "figures" / "correlation_heatmap.png").mkdir(parents=True)
    (dirpng / "correlations.csv").write_text("metric,n,pearson_r\nClarity,25,0.41\n")
    res = runner.invoke(app, ["report", str(FIXTURE_RUN), "--out", str(tmp_path / "s2"), "--alignment", str(dirpng)])
    assert res.exit_code == 0, res.output
    assert "correlation_heatmap.png: not a file" in " ".join(res.output.split())
    assert "<td>0.41</td>" in (tmp_path / "s2" / "index.html").read_text()


def test_report_out_dot_and_run_json_directory_are_one_line(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    res = runner.invoke(app, ["report", str(FIXTURE_RUN), "--out", "."])
    assert res.exit_code == 2
    one_line_error(res, "--out .", "current directory")
    assert not any(empty.iterdir()) and not list(tmp_path.glob(".*"))
    run = make_run(tmp_path / "runs", "r", 2)
    (run / "run.json").unlink()
    (run / "run.json").mkdir()
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code in (0, 1)
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert f"{run / 'run.json'}: cannot read" in " ".join(res.output.split())


def test_cases_md_escapes_titles_runs_and_ids(tmp_path):
    from wikihowagent.report.core import build_report

    run = make_run(tmp_path / "runs", "r<b>", 4)
    recs = [json.loads(x) for x in (run / "conversations.jsonl").read_text().splitlines()]
    evil = [
        "<img src=x onerror=alert(1)>",
        "</script><script>alert(2)</script>",
        "[click](javascript:alert(3))",
        "a | b\n# heading",
    ]
    for rec, title in zip(recs, evil, strict=True):
        rec["title"] = title
    (run / "conversations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    scores = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    for s in scores:
        s["title"] = next(
            (t for r, t in zip(recs, evil, strict=False) if r["conversation_id"] == s["conversation_id"]), ""
        )
    (run / "scores.jsonl").write_text("".join(json.dumps(s) + "\n" for s in scores))
    res = build_report([run], tmp_path / "site", cases=4)
    md = (res.out / "cases.md").read_text()
    assert "<img" not in md and "<script" not in md and "</script" not in md and "<b>" not in md
    assert "&lt;img src=x onerror=alert\\(1\\)&gt;" in md and "r&lt;b&gt;" in md
    assert "](javascript:" not in md and "\\[click\\]" in md
    assert "\n# heading" not in md and "a \\| b # heading" in md
    for line in md.splitlines():
        if line.startswith("| ") and "conversation.html#" in line:
            assert line.count(" | ") == 4, line  # every row keeps its five cells


def test_report_reports_a_hostile_run_name_and_still_builds(tmp_path):
    run = run_copy(tmp_path, name="../../elsewhere")
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    problems = (tmp_path / "site" / "problems.txt").read_text()
    assert f"{run / 'run.json'}: field 'name': '../../elsewhere'" in problems


def test_calibrated_columns_have_the_rubric_range_in_the_report():
    import pandas as pd

    from wikihowagent.metrics.computational import value_range
    from wikihowagent.report.sources import Problems, drop_out_of_range
    from wikihowagent.scoretable import ScoreTable

    assert value_range("Clarity (cal.)", ["Clarity"]) == (1.0, 5.0)
    assert value_range("Nonsense (cal.)", ["Clarity"]) is None
    table = ScoreTable.from_rows(
        [
            ({"run": "r", "conversation_id": f"c{i}", "where": f"f:{i}"}, {"Clarity": 3.0, "Clarity (cal.)": v})
            for i, v in enumerate([2.5, 99.0])
        ]
    )
    problems = Problems()
    drop_out_of_range(table, problems, ["Clarity (cal.)"])
    assert problems.lines == ["f:1: Clarity (cal.) = 99 is outside 1 to 5; left out"]
    assert pd.isna(table.values["Clarity (cal.)"][1]) and table.values["Clarity (cal.)"][0] == 2.5


def test_report_compare_with_a_non_utf8_table_is_a_problem_not_a_traceback(tmp_path):
    cmp = tmp_path / "cmp"
    cmp.mkdir()
    (cmp / "pairwise.csv").write_text("tutorial_id,run_a,run_b,rubric,p_ab,p_ba,verdict\nt,a,b,Clarity,0.7,0.2,A\n")
    (cmp / "position.csv").write_bytes(b"rubric,n,position_consistency\nClarity\xff,1,1.0\n")
    (cmp / "summary.md").write_bytes(b"# Head to head: caf\xe9\n")
    res = runner.invoke(app, ["report", str(FIXTURE_RUN), "--out", str(tmp_path / "site"), "--compare", str(cmp)])
    assert res.exit_code == 0, res.output
    problems = (tmp_path / "site" / "problems.txt").read_text()
    assert f"{cmp / 'position.csv'}: not UTF-8 text" in problems
    assert f"{cmp / 'summary.md'}: not UTF-8 text" in problems
    page = (tmp_path / "site" / "head-to-head.html").read_text()
    assert "<td>0.7</td>" in page  # the readable verdicts are still shown


def test_report_keeps_negative_gains_and_leaves_out_impossible_ones(tmp_path):
    from report_builders import make_run

    run = make_run(tmp_path / "runs", "demo", 4)
    lines = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    gains = [(-0.0909091, -0.5, -0.25), (0.2, 0.1, 1.0), (-1.5, 0.0, 0.5), (0.0, 0.0, 0.0)]
    for rec, (dg, lg, order) in zip(lines, gains, strict=True):
        rec["metrics"].update({"Detail Gain": dg, "Learning Gain": lg, "Order": order})
    (run / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    problems = (tmp_path / "site" / "problems.txt").read_text()
    assert "Learning Gain" not in problems and "Order" not in problems
    assert problems.count("Detail Gain") == 1 and "Detail Gain = -1.5 is outside -1 to 1; left out" in problems


def test_html_and_script_in_items_steps_and_turns_stay_text_in_the_report(tmp_path):
    run = _checklist_run(tmp_path)
    lines = (run / "conversations.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            out.append(line)
            continue
        if "tutorial" in rec:
            rec["tutorial"]["steps"] = [XSS + s for s in rec["tutorial"]["steps"]]
        for t in rec.get("turns", []):
            t["text"] = XSS + t["text"]
        rec["title"] = XSS
        out.append(json.dumps(rec))
    (run / "conversations.jsonl").write_text("\n".join(out) + "\n")
    scores = _jsonl(run / "scores.jsonl")
    for r in scores:
        for it in r["judge"]["items"]:
            it["question"] = XSS + it["question"]
        r["judge"]["notes"] = [XSS]
    (run / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in scores))
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    site = tmp_path / "site"
    for name, text in _site_text(site).items():
        if name.endswith(".html"):
            assert "<script>alert" not in text and "<img src=x" not in text, name  # escaped where it is shown
    data = _chunks(site)  # the data files are JSON handed to a function (DOM text, never markup)
    assert any(XSS in row[2] for c in data.values() for row in c.get("checklist", []))
    for js in ("report.js", "conversation.js"):
        src = (site / js).read_text() if (site / js).exists() else next(iter(site.rglob(js))).read_text()
        assert "innerHTML" not in src and "insertAdjacentHTML" not in src and "document.write" not in src


def test_impossible_item_probabilities_are_left_out_of_the_report(tmp_path):
    run = _checklist_run(tmp_path)
    scores = _jsonl(run / "scores.jsonl")
    for r in scores:
        its = r["judge"]["items"]
        its[0]["p_yes"], its[1]["good"], its[2]["mass"] = float("nan"), 7.0, float("inf")
    (run / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in scores))  # NaN, Infinity as Python writes
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    data = _chunks(tmp_path / "site")  # fails on a NaN or Infinity in the page data
    for c in data.values():
        for row in c.get("checklist", []):
            assert all(v is None or (isinstance(v, (int, float)) and 0 <= v <= 1) for v in row[4:7]), row


def test_a_hundred_thousand_items_on_one_conversation(tmp_path):
    run = _checklist_run(tmp_path)
    scores = _jsonl(run / "scores.jsonl")
    item = scores[0]["judge"]["items"][0]
    scores[0]["judge"]["items"] = [{**item, "id": f"rubric:Clarity:x{i}"} for i in range(100_000)]
    (run / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in scores))
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    data = _chunks(tmp_path / "site")
    assert max(len(c.get("checklist", [])) for c in data.values()) <= 100_000


def test_a_tampered_measured_figures_file_is_one_line_in_the_trust_box(tmp_path, monkeypatch):
    from wikihowagent.report import measured

    run = _checklist_run(tmp_path)
    scores = run / "scores.jsonl"
    scores.write_text(scores.read_text().replace('"openai:fake-model"', '"local"'))  # as if judged by `local`
    good = json.loads(measured.measured_path().read_text())
    cases = {
        "html": lambda d: d["modes"]["checklist"][0].update(what=XSS[:190]),
        "huge mode": lambda d: d["modes"].update({"x" * 5000: d["modes"]["checklist"]}),
        "no figures": lambda d: d["modes"].update(checklist=[]),
        "no modes": lambda d: d.update(modes={}),
        "n huge": lambda d: d["modes"]["checklist"][0].update(n=10**400),
        "a list": lambda d: d.update(modes=[1, 2]),
    }
    for name, change in cases.items():
        data = json.loads(json.dumps(good))
        change(data)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        monkeypatch.setattr(measured, "measured_path", lambda p=path: p)
        site = tmp_path / f"site-{name}"
        res = runner.invoke(app, ["report", str(run), "--out", str(site)])
        assert res.exit_code == 0, (name, res.output)
        index = (site / "index.html").read_text()
        assert "<script>alert" not in index, name
        if name != "html":
            assert "measured figures are not available: " in index and f"{name}.json" in index, name


def test_report_leaves_out_values_no_metric_can_have(tmp_path):
    import json
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "report"))
    from report_builders import make_run

    from wikihowagent.report.core import build_report
    from wikihowagent.report.sources import Problems

    run = make_run(tmp_path / "runs", "T-a_L-a", 4)
    scores = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    scores[0]["metrics"]["Clarity"], scores[1]["metrics"]["Clarity"], scores[2]["metrics"]["BLEU"] = 99, 0, -7
    (run / "scores.jsonl").write_text("".join(json.dumps(s) + "\n" for s in scores))
    problems = Problems()
    res = build_report([run], tmp_path / "site", problems=problems)
    assert f"{run / 'scores.jsonl'}:1: Clarity = 99 is outside 1 to 5 (and 1 more); left out" in problems.lines, (
        problems.lines
    )
    assert f"{run / 'scores.jsonl'}:3: BLEU = -7 is outside 0 to 1; left out" in problems.lines
    page = (res.out / "index.html").read_text().replace(str(tmp_path), "")
    tables = page[: page.index("is outside")]  # the overview and summary tables, before the problems list
    assert "-700" not in tables and "99.0" not in tables and "-7.0" not in tables
    from test_report import _chunk

    chunk = _chunk(res.out, 0)
    assert dict(chunk[scores[0]["conversation_id"]]["metrics"])["Clarity"] is None
    assert dict(chunk[scores[3]["conversation_id"]]["metrics"])["Clarity"] == scores[3]["metrics"]["Clarity"]
