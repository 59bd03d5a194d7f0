"""One score table (wikihowagent.scoretable, built by runs.read_score_table): `evaluate`'s summary, `report` and
`align` give the same per-run values from it, on a mixed input (a weighted run, a json run, a paper run file)."""

from __future__ import annotations

import html
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "report"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "alignment"))
from builders import sheet_rows, write_sheet  # noqa: E402
from report_builders import RUBRICS, make_run  # noqa: E402

from wikihowagent.alignment.core import compute  # noqa: E402
from wikihowagent.alignment.problems import Problems as AlignProblems  # noqa: E402
from wikihowagent.report.core import _run_scores, build_report  # noqa: E402
from wikihowagent.report.sources import Problems, load_inputs  # noqa: E402
from wikihowagent.runs import read_score_table  # noqa: E402
from wikihowagent.scores.summary import cell, load_run_scores, summarize  # noqa: E402
from wikihowagent.scoretable import ScoreTable  # noqa: E402

PAPER = "T-llama_L-llama_E-gpt_9"


def _weighted(run_dir: Path) -> None:
    """Mark every judged record of a run as scored by the weighted judge (with its digit distributions)."""
    path = run_dir / "scores.jsonl"
    out = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        rec["judge"]["scoring"] = "weighted"
        rec["judge"]["dist"] = {m: [0.1, 0.2, 0.4, 0.2, 0.1] for m in RUBRICS}
        rec["persona"] = "curious"
        out.append(json.dumps(rec))
    path.write_text("\n".join(out) + "\n")


def _paper_file(root: Path, n: int = 9) -> Path:
    recs = []
    for i in range(n):
        ev = {m: (i + k) % 5 + 1 for k, m in enumerate(RUBRICS)}
        ev["Clarity"] = str(ev["Clarity"])  # the paper's files hold some scores as strings
        if i == 2:
            del ev["Depth"]  # not judged
        recs.append(
            {
                "conversation_id": f"p{i}",
                "title": f"How to P {i}",
                "doc_id": i,
                "method_id": 0,
                "categories": ["WikiHow", "Health"],
                "tutorial": {"title": f"P {i}", "steps": ["a", "b"]},
                "conversation": ["Teacher: Let's begin: P. BEGIN", "Learner: ok", "Teacher: a", "Learner: ok"],
                "evaluation": ev,
            }
        )
    path = root / f"{PAPER}.json"
    path.write_text(json.dumps({"total_conversations": recs}))
    return path


@pytest.fixture()
def mixed(tmp_path) -> list[Path]:
    runs = tmp_path / "runs"
    make_run(runs, "W", 20, teacher="qwen2", tutorials=10)
    _weighted(runs / "W")
    make_run(runs, "J", 16, teacher="gemma", tutorials=8, seed=3, bias=-0.4)
    return [runs / "W", runs / "J", _paper_file(runs)]


def _summary_rows(sources: list[Path]) -> dict[str, dict]:
    runs = [load_run_scores(p.stem, p.stem, p) for p in sources]
    s = summarize(runs, list(RUBRICS))
    return {row["run"]: row for row in s.table if row["run"] != "Overall"}


def test_one_table_reads_every_source_with_its_provenance(mixed):
    w, j, paper = (read_score_table(p) for p in mixed)
    assert w.scorings() == ["weighted"] and j.scorings() == ["json"] and paper.scorings() == []
    assert set(w.meta["persona"]) == {"curious"} and paper.modes() == ["paper"]
    assert paper.runs() == [PAPER] and set(paper.meta["teacher"]) == {"llama"}
    assert set(paper.meta["domain"]) == {"Health"} and paper.meta["tutorial_id"][0] == "How to P 0|0|0"
    assert paper.column("Clarity")[0] == 1.0  # "1" read as the number
    row2 = paper.row_metrics(2)
    assert "Depth" not in row2 and paper.judged(RUBRICS)[2] == 7  # absent = not judged, not a failure
    assert w.rubric_columns(["Depth", "Clarity", "Nope"]) == ["Depth", "Clarity"]
    both = ScoreTable.concat([w, paper])
    assert both.runs() == ["W", PAPER] and len(both) == len(w) + len(paper)
    assert both.present.loc[len(w) :, "BLEU"].sum() == 0  # the paper file has no BLEU
    means = w.tutorial_means(["Clarity"])
    assert len(means) == 10 and set(means["run"]) == {"W"}


def test_report_evaluate_summary_and_align_agree_per_run(mixed, tmp_path):
    expected = _summary_rows(mixed)
    assert expected["W"]["scoring"] == "weighted" and expected["J"]["scoring"] == "json"

    # report: the same runs through its own loader -> the same numbers, exactly
    loaded = load_inputs(mixed, Problems())
    runs = loaded.runs
    got = {
        r.name: row
        for r, row in zip(runs, summarize(_run_scores(runs, loaded.store), list(RUBRICS)).table, strict=False)
    }
    loaded.store.close()
    for name, row in expected.items():
        for m in (*RUBRICS, "BLEU"):
            if m in row:
                assert got[name][m] == row[m] or all(map(math.isnan, (got[name][m][0], row[m][0]))), (name, m)
        assert got[name]["judge_failure_pct"] == row["judge_failure_pct"] or math.isnan(row["judge_failure_pct"])

    # ... and as the report's site prints them (Table 1 cells, the overview's judge columns)
    site = build_report(mixed, tmp_path / "site").out
    page = html.unescape((site / "index.html").read_text(encoding="utf-8"))
    overview = {
        cells[0]: cells
        for cells in (
            re.findall(r"<td[^>]*>(.*?)</td>", tr)
            for tr in re.findall(r"<tr>(.*?)</tr>", page.split("id='runs'", 1)[1].split("</table>", 1)[0])
        )
        if cells
    }
    assert overview["W"][10:12] == ["default", "weighted"]  # Mode, Judge scoring
    assert overview["J"][11] == "json" and overview[PAPER][10:12] == ["paper", "–"]
    # Table 1: a column per run, a row per metric; each cell's whole text (mean ± sd [CI]) is its tooltip
    table1 = page.split("summary-tables", 1)[1].split("</table>", 1)[0]
    columns = [re.sub(r"<small>.*?</small>|<[^>]+>", "", h) for h in re.findall(r"<th class='run'>(.*?)</th>", table1)]
    shown = {}
    for head, tds in re.findall(r"<tr><th scope='row'>(.*?) <span class='dir'.*?</th>(.*?)</tr>", table1):
        for col, tip in zip(columns, re.findall(r"<td class='num[^']*' title='([^']*)'", tds), strict=False):
            shown[col, head] = re.sub(r" \[[^]]*\]", "", tip)  # its CI aside
    for name, row in expected.items():
        label = next(r.model for r in runs if r.name == name)
        assert [shown.get((label, m)) for m in RUBRICS if m in row] == [cell(row, m) for m in RUBRICS if m in row], name

    # align: every conversation rated by a person; per run, the LLM side's mean is the summary's mean
    ids, runs_of = [], []
    for p in mixed:
        t = read_score_table(p)
        ids += list(t.meta["conversation_id"])
        runs_of += list(t.meta["run"])
    sheet = write_sheet(tmp_path / "h.csv", sheet_rows(ids, np.full((len(ids), 8), 3.0)))
    res = compute([sheet], mixed, by="run", n_boot=0, problems=AlignProblems())
    groups = {g.group: g for g in res.groups}
    for name, row in expected.items():
        for m in RUBRICS:
            d = groups[name].descriptives[m]
            assert d.n == row[m][2], (name, m)
            assert d.llm_mean == pytest.approx(row[m][0], rel=1e-12, abs=1e-12), (name, m)


def test_report_says_the_judge_scoring_of_a_weighted_run(tmp_path):
    """The report printed "Scoring mode: default" for a run judged with `weighted`."""
    make_run(tmp_path / "runs", "W", 6, teacher="qwen2")
    _weighted(tmp_path / "runs" / "W")
    page = (build_report([tmp_path / "runs" / "W"], tmp_path / "site").out / "index.html").read_text(encoding="utf-8")
    heads = re.findall(r"<th[^>]*>(.*?)</th>", page.split("id='runs'", 1)[1].split("</thead>", 1)[0])
    [row] = [
        re.findall(r"<td[^>]*>(.*?)</td>", tr)
        for tr in re.findall(r"<tr>(.*?)</tr>", page.split("id='runs'", 1)[1].split("</table>", 1)[0])
        if "<td" in tr
    ]
    assert dict(zip(heads, row, strict=False))["Judge scoring"] == "weighted"


def test_judge_provenance_columns(mixed):
    w = read_score_table(mixed[0])
    assert set(w.meta["evaluator"]) == {"judge"} and w.meta["dist"][0]["Clarity"] == [0.1, 0.2, 0.4, 0.2, 0.1]
    j = read_score_table(mixed[1])
    assert j.meta["dist"][0] == {} and all(isinstance(f, tuple) for f in j.meta["failures"])
