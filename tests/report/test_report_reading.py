"""The report overview's "Reading these figures" (report/reading.py): a figure that looks wrong explained by what
the run itself measured (the pre-test) or what was measured for its judge (data/embedded_judge.json)."""

from __future__ import annotations

from pathlib import Path

from wikihowagent.report.reading import reading_html
from wikihowagent.report.sources import ReportRun
from wikihowagent.scoretable import ScoreTable


def run(name: str, rows: list[dict[str, float | None]], persona: str = "", evaluator: str = "", scoring: str = ""):
    table = ScoreTable.from_rows(({"run": name, "conversation_id": f"c{i}"}, m) for i, m in enumerate(rows))
    return ReportRun(
        name=name,
        path=Path(name),
        model="T-local L-local",
        persona=persona,
        evaluator=evaluator,
        scoring=scoring,
        scores=table,
    )


def test_a_small_gain_on_a_known_procedure_is_explained_by_the_pre_test():
    known = run("known", [{"Step Recall": 0.8, "Learning Gain": -0.1}, {"Step Recall": 0.9, "Learning Gain": 0.0}])
    new = run("invented", [{"Step Recall": 0.7, "Learning Gain": 0.6}], persona="curious")
    half = run("half", [{"Step Recall": 1.0, "Learning Gain": 0.5}])  # neither: the numbers only
    text = reading_html([known, new, half])
    assert (
        "half: Learning Gain +50.0 % = post-test Step Recall 100.0 % minus the pre-test&#x27;s 50.0 % (1 conversation).</li>"
        in text
    )
    assert "known: Learning Gain -5.0 % = post-test Step Recall 85.0 % minus the pre-test&#x27;s 90.0 %" in text
    assert "already recalled 90 % of the steps from the title alone" in text
    assert "invented: Learning Gain +60.0 %" in text and "recalled only 10 % of the steps" in text
    assert "validity/counterfactual" in text


def test_question_ratio_zero_is_explained_only_for_the_papers_learner():
    quiet = run("quiet", [{"Question Ratio": 0.0}])
    curious_but_silent = run("curious", [{"Question Ratio": 0.0}], persona="curious")
    asks = run("asks", [{"Question Ratio": 0.3}])
    text = reading_html([quiet, curious_but_silent, asks])
    assert "quiet: Question Ratio 0 %" in text and "--learner-persona curious" in text
    assert "curious: Question Ratio" not in text and "asks: Question Ratio" not in text


def test_the_embedded_judges_measured_agreement_is_stated_beside_its_scores():
    judged = run("demo", [{"Clarity": 4.0}], evaluator="local", scoring="checklist")
    twin = run("twin", [{"Clarity": 3.0}], evaluator="local", scoring="checklist")
    other = run("api", [{"Clarity": 4.0}], evaluator="openai:gpt-4", scoring="weighted")
    text = reading_html([judged, twin, other])
    assert text.count("the rubric scores are the embedded") == 1  # one note for the runs of one judge and mode
    assert "demo, twin: the rubric scores are the embedded" in text and "judge-check accuracy 0.84" in text
    assert "Pearson r with the people" in text and "not distinguishable from none" in text
    assert "api:" not in text


def test_no_note_no_section():
    assert reading_html([run("plain", [{"BLEU": 0.1}])]) == ""
