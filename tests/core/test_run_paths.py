"""`runs.resolve_runs`, the one resolver of paths to runs, and the stages that use it: `evaluate`
(inputs + the sweep tables), `report` and `align` see a path as the same kind of thing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from wikihowagent.jsonlio import RunError
from wikihowagent.layout import CONVERSATIONS, RUN_INFO, SCORES, SWEEP_INFO
from wikihowagent.runs import RunPath, evaluated_runs, resolve_runs, runs_below


def _run(d: Path, conversations: bool = True, scores: bool = False) -> Path:
    d.mkdir(parents=True)
    (d / RUN_INFO).write_text(json.dumps({"name": d.name}))
    if conversations:
        (d / CONVERSATIONS).write_text("")
    if scores:
        (d / SCORES).write_text("")
    return d


def _sweep(d: Path, cells: list[str]) -> Path:
    d.mkdir(parents=True)
    (d / SWEEP_INFO).write_text(json.dumps({"cells": [{"run": c} for c in cells]}))
    return d


def test_each_kind_of_path(tmp_path):
    run = _run(tmp_path / "r1")
    f = tmp_path / "x.jsonl"
    f.write_text("")
    sweep = _sweep(tmp_path / "sw", ["a", "b"])
    _run(sweep / "a")
    (tmp_path / "many").mkdir()
    got = resolve_runs([run, f, tmp_path / "nope", sweep, tmp_path / "many"])
    assert got == [
        RunPath(run, "run"),
        RunPath(f, "file"),
        RunPath(tmp_path / "nope", "missing"),
        RunPath(sweep / "a", "cell", sweep),
        RunPath(sweep / "b", "cell", sweep),
        RunPath(tmp_path / "many", "runs"),
    ]
    assert [rp.generated for rp in got if rp.kind == "cell"] == [True, False]
    # without sweeps a sweep directory is a directory of runs like any other
    assert resolve_runs([sweep], sweeps=False) == [RunPath(sweep, "runs")]


def test_no_path_is_the_latest_run_and_a_bad_sweep_file_is_one_line(tmp_path):
    old, new = _run(tmp_path / "old"), _run(tmp_path / "new")
    os.utime(old / RUN_INFO, (1, 1))
    assert resolve_runs([], latest_in=tmp_path) == [RunPath(new, "run")]
    assert resolve_runs([]) == []
    with pytest.raises(RunError, match="no runs found"):
        resolve_runs([], latest_in=tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / SWEEP_INFO).write_text("[1")
    with pytest.raises(RunError, match="not a sweep file"):
        resolve_runs([bad])


def test_runs_below_and_evaluated_runs(tmp_path):
    a = _run(tmp_path / "a", scores=True)
    b = _run(tmp_path / "b")
    (tmp_path / "summary").mkdir()  # an output folder, not a run
    (tmp_path / ".hidden").mkdir()
    plain = tmp_path / "plain"
    plain.mkdir()
    res = _run(tmp_path / "rescored" / "p", scores=True)
    assert runs_below(tmp_path) == [a, b, plain]
    assert runs_below(tmp_path, skip=["plain"]) == [a, b]
    assert evaluated_runs(tmp_path) == [a, res]


def test_the_stages_expand_a_sweep_alike(tmp_path):
    """`evaluate` (its tables) and `report` take the same cells of a sweep, each wording the missing one."""
    from wikihowagent.report.sources import Problems, expand
    from wikihowagent.scores.paper_tables import expand_sweep_dirs

    sweep = _sweep(tmp_path / "sw", ["a", "b", "c"])
    _run(sweep / "a")
    _run(sweep / "c")
    warned: list[str] = []
    paths, any_sweep = expand_sweep_dirs([sweep], warned.append)
    problems = Problems()
    assert paths == expand([sweep], problems) == [sweep / "a", sweep / "c"] and any_sweep
    assert warned == [f"{sweep / 'b'}: cell not generated (or not merged) yet; left out of the tables"]
    assert problems.lines == [f"{sweep / 'b'}: sweep cell not generated (or its shards not merged) yet; left out"]


def test_report_and_evaluate_order_metrics_alike():
    """One metric order (`scores.summary.metric_order`): the report's is evaluate's."""
    from wikihowagent.judge.rubric_judge import load_rubrics
    from wikihowagent.report.core import _metric_order
    from wikihowagent.report.sources import ReportRun
    from wikihowagent.scores.summary import metric_order
    from wikihowagent.scoretable import ScoreTable

    metrics = {"Zeta": 3.0, "Clarity": 4.0, "BLEU": 0.1, "Step Recall": None, "Completion": 1.0, "Accuracy": 2.0}
    scores = ScoreTable.from_rows([({"conversation_id": "c", "run": "r"}, metrics)])
    run = ReportRun(name="r", path=Path("r"), model="m", scores=scores)
    order, rubrics = _metric_order([run])
    known = list(load_rubrics())
    assert order == metric_order(set(metrics), known, {"Step Recall"})
    assert order[:2] == ["BLEU", "Completion"] and order[-1] == "Zeta" and "Step Recall" not in order
    assert rubrics == [m for m in order if m not in ("BLEU", "Completion")]
    assert rubrics.index("Clarity") < rubrics.index("Zeta")


def test_outputs_read_back_as_written_and_unreadable_ones_are_one_line(tmp_path):
    """The CSVs a stage writes for people come back through runs.py with each cell as it was (the formula
    neutralisation undone); a file that cannot be read is one line naming it."""
    import pandas as pd

    from wikihowagent.csvcells import people_csv
    from wikihowagent.runs import OutputReadError, read_output_lines, read_people_rows, read_people_table

    people_csv(pd.DataFrame({"run": ["=HYPERLINK(1)", "plain"], "accuracy": [0.5, -0.25]}), tmp_path / "t.csv")
    assert "'=HYPERLINK" in (tmp_path / "t.csv").read_text()
    assert read_people_rows(tmp_path / "t.csv") == [["run", "accuracy"], ["=HYPERLINK(1)", "0.5"], ["plain", "-0.25"]]
    frame = read_people_table(tmp_path / "t.csv")
    assert frame["run"].tolist() == ["=HYPERLINK(1)", "plain"] and frame["accuracy"].tolist() == [0.5, -0.25]
    bad = tmp_path / "latin.csv"
    bad.write_bytes(b"a,b\n\xe9,1\n")
    with pytest.raises(OutputReadError) as err:
        read_people_rows(bad)
    assert str(err.value) == f"{bad}: not UTF-8 text (invalid continuation byte at byte 4)"
    assert err.value.reason == "not UTF-8 text (invalid continuation byte at byte 4)"
    with pytest.raises(OutputReadError, match="cannot read"):
        read_output_lines(tmp_path / "nope.md")
    (tmp_path / "s.md").write_text("# title\nnote\n")
    assert read_output_lines(tmp_path / "s.md") == ["# title", "note"]


def test_one_conversation_loop_and_the_lenient_typed_record(tmp_path):
    """`runs.conversation_items` is the loop both `read_conversations` and the report read a conversations file
    with; `paper_format.read_lenient` the typed record of each, failed and damaged ones included."""
    from wikihowagent.paper_format import read_lenient
    from wikihowagent.runs import conversation_items, read_conversations

    good = {
        "conversation_id": "c1",
        "tutorial_id": "t1",
        "title": "T",
        "tutorial": {"title": "M", "steps": ["a"]},
        "turns": [{"role": "teacher", "text": "hi"}, {"role": "learner", "text": "ok"}],
        "stop_reason": "finished",
        "persona": "curious",
    }
    failed = {"conversation_id": "c2", "tutorial_id": "t2", "error": "boom", "stop_reason": "error"}
    damaged = {"conversation_id": "c3", "tutorial_id": "t3", "turns": [{"role": "teacher", "text": "x"}]}
    f = tmp_path / "conversations.jsonl"
    f.write_text("\n".join(json.dumps(o) for o in (good, failed, damaged)) + "\n[1]\n")
    problems: list[str] = []
    items = list(conversation_items(tmp_path, on_error=problems.append))
    assert [w for w, _ in items] == [f"{f}:1", f"{f}:2", f"{f}:3"] and problems == [
        f"{f}:4: expected a JSON object, got list"
    ]
    recs = [read_lenient(o, "r", w) for w, o in items]
    assert recs[0].conversation is not None and recs[0].status == "finished" and recs[0].persona == "curious"
    assert (
        recs[1].conversation is None and recs[1].status == "failed" and recs[1].refused == ""
    )  # failed: not a problem
    assert "conversation" in recs[1].partial.missing
    assert recs[2].conversation is None and recs[2].refused and recs[2].partial.missing == ["tutorial"]
    assert read_lenient({"turns": []}, "r", "w") is None  # nothing names it
    errors: list[str] = []
    assert [c.conversation_id for c in read_conversations(tmp_path, "r", errors.append)] == ["c1"]
    assert errors == [
        f'{f}:3: record has no tutorial (expected {{"title", "steps"}})',
        f"{f}:4: expected a JSON object, got list",
    ]
