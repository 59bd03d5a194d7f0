"""The record contract: typed readers and writers in runs.py, the paper-format adapter, legacy score files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikihowagent import runs
from wikihowagent.paper_format import parse_run_stem, to_conversation
from wikihowagent.records import BEGIN_TEXT, FINISH_TEXT, Conversation, ConversationRecord, JudgeProvenance, ScoreRecord

FIX = Path(__file__).parent / "fixtures" / "evaluation"


def test_legacy_score_lines_read_into_the_judge_provenance(tmp_path):
    path = tmp_path / runs.SCORES
    legacy = {
        "conversation_id": "c1",
        "evaluator": "ollama:llama3",
        "metrics": {"BLEU": 0.1, "Depth": None},
        "judge_raw": {"conversation": ["Depth: ?"]},
        "judge_failures": ["Depth"],
        "notes": ["BERTScore: teacher text chunked (2 chunks)", "judge: Depth: no score found after 3 replies"],
    }
    new = ScoreRecord(
        conversation_id="c2",
        metrics={"Clarity": 4.0},
        judge=JudgeProvenance(evaluator="local", rubrics_sha256="ab", raw={"conversation": ["4"]}),
    )
    path.write_text(json.dumps(legacy) + "\n" + new.model_dump_json() + "\n")
    got = runs.read_scores(path)
    old = got["c1"]
    assert old.judge == JudgeProvenance(
        evaluator="ollama:llama3",
        raw={"conversation": ["Depth: ?"]},
        failures=["Depth"],
        notes=["Depth: no score found after 3 replies"],
    )
    assert old.notes == ["BERTScore: teacher text chunked (2 chunks)"]  # no "judge:" prefix left in notes
    assert old.evaluator == "ollama:llama3" and old.judge_failures == ["Depth"]
    assert got["c2"] == new
    written = json.loads(old.model_dump_json())
    assert "evaluator" not in written and "judge_raw" not in written and written["judge"]["failures"] == ["Depth"]
    # never judged (a --no-judge pass): no provenance
    assert ScoreRecord(conversation_id="x", metrics={"BLEU": 0.2}, notes=["a note"]).judge is None


def test_read_scores_reports_lines_that_are_not_score_records(tmp_path):
    path = tmp_path / runs.SCORES
    path.write_text(
        '{"conversation_id": "a", "metrics": {"BLEU": 0.5}}\n{"metrics": {}}\n'
        '{"conversation_id": "b", "metrics": {"BLEU": "high"}}\n{"conversation_id": "a", "metrics": {"BLEU": 0.7}}\n'
    )
    problems: list[str] = []
    got = runs.read_scores(path, on_error=problems.append)
    assert list(got) == ["a"] and got["a"].metrics["BLEU"] == 0.7  # the last line per id wins
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}:2", f"{path}:3"]


def test_run_info_round_trip_keeps_unknown_keys(tmp_path):
    info = runs.RunInfo(name="r", teacher="local", learner="local", fingerprint={"teacher": "local"})
    runs.write_run_info(tmp_path, info)
    data = json.loads((tmp_path / runs.RUN_INFO).read_text())
    assert "resumed_at" not in data and "shards" not in data  # only written when they happen
    data["sweep"] = {"point": 3}  # a key a later version (or another tool) adds
    (tmp_path / runs.RUN_INFO).write_text(json.dumps(data))
    back = runs.read_run_info(tmp_path)
    assert back.name == "r" and back.model_extra == {"sweep": {"point": 3}}
    runs.write_run_info(tmp_path, back)
    assert json.loads((tmp_path / runs.RUN_INFO).read_text())["sweep"] == {"point": 3}
    (tmp_path / runs.RUN_INFO).write_text('{"name": ["not", "a", "string"]}')
    with pytest.raises(runs.RunError, match=r"run\.json: field 'name'"):
        runs.read_run_info(tmp_path)


def test_paper_records_become_the_same_conversation_type():
    paper = list(runs.read_conversations(FIX / "T-llama3_L-llama3_E-llama3_123.json", "p"))
    ours = list(runs.read_conversations(FIX / "run_small", "r", on_error=lambda _m: None))  # it has bad lines
    assert all(type(c) is Conversation for c in paper + ours)
    assert all(isinstance(c, ConversationRecord) for c in paper + ours)
    p1 = paper[0]
    assert p1.paper_format and p1.completed is None and p1.where.endswith("total_conversations[0]")
    assert p1.messages[0].kind == "begin" and p1.lines[0].startswith("Teacher: ")
    assert p1.tutorial_key == f"{p1.title}|{p1.doc_id}|{p1.method_id}"
    assert not ours[0].paper_format and ours[0].completed is not None
    # run/where/paper_format are how it was read, not part of the record
    assert set(json.loads(p1.model_dump_json())) == set(ConversationRecord.model_fields)


def test_fixed_texts_are_recognised_from_the_one_definition():
    obj = {
        "conversation_id": "a",
        "tutorial": {"title": "Boil", "steps": ["s"]},
        "conversation": [
            "Teacher: " + BEGIN_TEXT.format(method_title="Boil an egg"),
            "Learner: ok",
            "Teacher: " + FINISH_TEXT,
        ],
    }
    kinds = [t.kind for t in to_conversation(obj, "r", "w").turns]
    assert kinds == ["begin", "model", "finish"]


def test_shipped_prompt_file_uses_the_fixed_texts_of_the_records():
    from wikihowagent.workflow.prompts import load_prompts

    prompts = load_prompts(None)
    assert (prompts.begin, prompts.finish) == (BEGIN_TEXT, FINISH_TEXT)


def test_paper_run_stem():
    assert parse_run_stem("T-qwen_L-gemma_E-gpt_12") == {
        "teacher": "qwen",
        "learner": "gemma",
        "evaluator": "gpt",
        "job": "12",
    }
    assert parse_run_stem("my-run") is None
