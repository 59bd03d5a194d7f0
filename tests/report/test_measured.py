"""The embedded judge's measured figures (wikihowagent/data/embedded_judge.json, report/measured.py): read back validated,
shown in the report's "How far to trust the judge" for the embedded judge only, this run's scoring mode first."""

from __future__ import annotations

import json

import pytest

from wikihowagent.report.measured import MeasuredError, load_measured


def test_the_shipped_figures_load_and_name_the_run_scoring_first():
    m = load_measured()
    assert {"checklist", "weighted"} <= set(m.modes)
    lines = m.lines("checklist")
    assert "scoring checklist (this run's scoring): judge-check accuracy" in lines[0]
    assert "scoring weighted" in lines[1]
    assert m.lines("json")[0].endswith("nothing measured for scoring json; measured: checklist, weighted")


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda d: d["modes"]["checklist"][0].update(value=7), "value 7"),
        (lambda d: d["modes"]["checklist"][0].update(value=float("nan")), "not a number in [-1, 1]"),
        (lambda d: d["modes"]["checklist"][0].update(ci=[0.9, 0.95]), "holding the value"),
        (lambda d: d["modes"]["checklist"][0].update(n=0), "greater than or equal to 1"),
        (lambda d: d.update(extra="x"), "extra: Extra inputs are not permitted"),
        (lambda d: d["modes"]["checklist"][0].update(what=""), "at least 1 character"),
    ],
)
def test_a_figure_out_of_range_is_one_line_naming_the_file(tmp_path, change, says):
    data = json.loads(load_measured().model_dump_json())
    change(data)
    path = tmp_path / "embedded_judge.json"
    path.write_text(json.dumps(data))
    with pytest.raises(MeasuredError) as exc:
        load_measured(path)
    msg = str(exc.value)
    assert msg.startswith(str(path)) and says in msg and "\n" not in msg


def test_missing_or_not_json_is_one_line(tmp_path):
    with pytest.raises(MeasuredError, match="not found"):
        load_measured(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(MeasuredError, match="not readable JSON"):
        load_measured(tmp_path / "bad.json")


def test_report_states_the_figures_for_the_embedded_judge_only(tmp_path, monkeypatch):
    from fake_servers import FakeOpenAI
    from test_checklist import _evaluate, _run, _yes_no_judge

    from wikihowagent.report import measured
    from wikihowagent.report.core import build_report

    run = _run(tmp_path)
    with FakeOpenAI(logprobs=_yes_no_judge) as srv:
        args = [str(run), "--evaluator", "openai:fake-model", "--base-url", srv.base_url, "--no-figures"]
        res = _evaluate([*args, "--judge-scoring", "checklist", "--metrics", "Progress,Clarity"])
        assert res.exit_code == 0, res.output
    index = (build_report([run], tmp_path / "other").out / "index.html").read_text()
    assert "Measured for the embedded judge" not in index  # another judge: nothing measured is claimed
    scores = run / "scores.jsonl"
    scores.write_text(scores.read_text().replace('"openai:fake-model"', '"local"'))  # as if judged by `local`
    index = (build_report([run], tmp_path / "site").out / "index.html").read_text()
    assert "Measured for the embedded judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M" in index
    assert index.index("scoring checklist (this run&#x27;s scoring)") < index.index("scoring weighted")
    broken = tmp_path / "broken.json"
    broken.write_text('{"model": "m"}')
    monkeypatch.setattr(measured, "measured_path", lambda: broken)
    index = (build_report([run], tmp_path / "site2").out / "index.html").read_text()
    assert "measured figures are not available: " in index and "broken.json" in index


def test_align_evidence_carries_the_head_to_head_share_range_checked(tmp_path):
    from types import SimpleNamespace

    from wikihowagent.report.evidence import judge_evidence

    al = tmp_path / "alignment"
    al.mkdir()
    (al / "correlations.csv").write_text(
        "by,group,metric,n,pearson_r,pearson_ci_low,pearson_ci_high\nall,all,Overall,30,0.25,-0.1,0.55\n"
    )
    (al / "correlations.md").write_text("# Human alignment\n")
    (al / "pair_order.csv").write_text(
        "metric,pairs,tutorials,accuracy,ci_low,ci_high,ties,gap\nOverall,26,6,0.620,0.45,0.80,1,0.5\n"
    )
    run = SimpleNamespace(path=tmp_path)
    assert judge_evidence(run) == [
        "align (alignment/): Overall Pearson r with the people +0.25 [-0.10, +0.55], n 30; head to head: orders "
        "0.62 [0.45, 0.80] of the 26 same-tutorial pairs the people clearly ordered"
    ]
    (al / "pair_order.csv").write_text(
        "metric,pairs,tutorials,accuracy,ci_low,ci_high,ties,gap\nOverall,26,6,7,0,1,1,0.5\n"
    )
    assert judge_evidence(run) == ["alignment/correlations.csv: unreadable, left out"]
