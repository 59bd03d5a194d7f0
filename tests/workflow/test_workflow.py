"""Graph logic (Algorithm 1) with scripted agents."""

from __future__ import annotations

import asyncio

import pytest
from helpers import learner_says, make_tutorial, teacher_script

from wikihowagent.generation.core import to_record
from wikihowagent.records import ConversationRecord
from wikihowagent.testing import ScriptedChatModel
from wikihowagent.workflow.graph import (
    WorkflowOptions,
    asks_question,
    build_graph,
    initial_state,
    mermaid,
    recursion_limit,
)
from wikihowagent.workflow.prompts import load_prompts


def run(tutorial, learner_script, options=None, teacher=None):
    options = options or WorkflowOptions()
    teacher = teacher or ScriptedChatModel(script=teacher_script)
    learner = ScriptedChatModel(script=learner_script)
    graph = build_graph(teacher, learner, load_prompts(), options)
    state = asyncio.run(graph.ainvoke(initial_state(tutorial), config={"recursion_limit": recursion_limit(options)}))
    return state, teacher, learner


def texts(state):
    return [(t.role, t.text) for t in state["messages"]]


def test_begin_then_every_step_then_finished():
    tut = make_tutorial(3)
    state, teacher, learner = run(tut, learner_says("I'm ready."))
    msgs = texts(state)
    assert msgs[0] == ("teacher", "Let's begin: Part 1 of 1:Testing. BEGIN")
    assert state["messages"][0].kind == "begin"
    teacher_texts = [t for r, t in msgs if r == "teacher"]
    # BEGIN, the three steps in order, then the fixed closing turn.
    assert teacher_texts[1:4] == ["Teaching step 1.", "Teaching step 2.", "Teaching step 3."]
    assert teacher_texts[-1].endswith("FINISHED")
    assert state["finished"] is True
    # The learner says goodbye after FINISHED, and nothing follows.
    assert msgs[-1][0] == "learner" and msgs[-2][1].endswith("FINISHED")
    assert len(teacher.prompts) == 3  # BEGIN and FINISHED are fixed texts: no model call
    # Roles alternate, starting with the teacher.
    assert [r for r, _ in msgs] == ["teacher", "learner"] * (len(msgs) // 2)


def test_question_gets_clarification_without_advancing():
    tut = make_tutorial(2)
    state, teacher, _ = run(tut, learner_says("Ready.", "Why is step one important?", "Thanks, next step please."))
    turns = state["messages"]
    teacher_turns = [t for t in turns if t.role == "teacher"]
    assert [t.text for t in teacher_turns[1:3]] == ["Teaching step 1.", "Teaching step 1."]
    assert teacher_turns[2].kind == "clarification" and teacher_turns[2].step == 0
    # The clarification prompt carries the learner's question.
    assert "Why is step one important?" in teacher.prompts[1]
    assert teacher_turns[3].text == "Teaching step 2."
    assert state["finished"]


def test_question_mentioning_next_step_advances():
    tut = make_tutorial(2)
    state, _, _ = run(tut, learner_says("Ready.", "Can we go to the next step?"))
    teacher_texts = [t.text for t in state["messages"] if t.role == "teacher"]
    assert teacher_texts[1:3] == ["Teaching step 1.", "Teaching step 2."]


def test_question_after_begin_is_not_a_clarification():
    tut = make_tutorial(2)
    state, _, _ = run(tut, learner_says("What will we learn?"))
    teacher_turns = [t for t in state["messages"] if t.role == "teacher"]
    assert teacher_turns[1].text == "Teaching step 1." and teacher_turns[1].kind == "model"


def test_max_interactions_cut():
    tut = make_tutorial(5)
    always_asks = lambda prompt: "Could you explain that again?"  # noqa: E731
    opts = WorkflowOptions(max_interactions=7)
    state, _, _ = run(tut, always_asks, opts)
    assert len(state["messages"]) == 7
    assert not state["finished"]
    record = to_record(tut, state, "run", "t", "l", "2026-01-01T00:00:00+00:00", opts)
    assert record.stop_reason == "max_interactions" and record.error is None


def test_no_farewell_option_ends_on_finished():
    state, _, _ = run(make_tutorial(2), learner_says(), WorkflowOptions(learner_farewell=False))
    assert state["messages"][-1].text.endswith("FINISHED")


def test_history_window_shows_previous_messages():
    tut = make_tutorial(3)
    state, teacher, _ = run(tut, learner_says("Ready."), WorkflowOptions(history=4))
    assert "Conversation so far:" in teacher.prompts[1]
    assert "Teaching step 1." in teacher.prompts[1]
    # The paper's default: only the last utterance.
    _, teacher0, _ = run(tut, learner_says("Ready."))
    assert all("Conversation so far:" not in p for p in teacher0.prompts)


def test_model_error_is_recorded_with_partial_conversation():
    tut = make_tutorial(3)
    calls = {"n": 0}

    def flaky(prompt):
        calls["n"] += 1
        if calls["n"] == 2:
            raise TimeoutError("request timed out")
        return teacher_script(prompt)

    state, _, _ = run(tut, learner_says("Ready."), teacher=ScriptedChatModel(script=flaky))
    record = to_record(tut, state, "run", "t", "l", "2026-01-01T00:00:00+00:00", WorkflowOptions())
    assert record.stop_reason == "error"
    assert "TimeoutError: request timed out" in record.error
    assert len(record.turns) >= 3  # BEGIN, ack, step 1 kept


def test_record_format_is_paper_compatible():
    tut = make_tutorial(2)
    state, _, _ = run(tut, learner_says("Ready."))
    record = to_record(tut, state, "myrun", "local", "local", "2026-01-01T00:00:00+00:00", WorkflowOptions())
    data = record.model_dump(mode="json")
    for key in (
        "conversation_id",
        "doc_id",
        "method_id",
        "source_tutorial_path",
        "title",
        "categories",
        "summary",
        "tutorial",
        "conversation",
    ):
        assert key in data
    assert data["tutorial"] == {"title": "Part 1 of 1:Testing", "steps": tut.steps}
    assert data["conversation"][0] == "Teacher: Let's begin: Part 1 of 1:Testing. BEGIN"
    assert data["conversation"][1].startswith("Learner: ")
    assert data["finished"] and data["stop_reason"] == "finished" and data["error"] is None
    assert all({"role", "text", "step", "completion_tokens", "latency_s"} <= set(t) for t in data["turns"])
    assert ConversationRecord.model_validate(data) == record
    # Deterministic, uuid-shaped id.
    again = to_record(tut, state, "myrun", "local", "local", "x", WorkflowOptions())
    assert again.conversation_id == record.conversation_id and len(record.conversation_id) == 36


@pytest.mark.parametrize(
    "text,expected",
    [
        ("What does that mean?", True),
        ("Okay, next step?", False),
        ("OK. Next Step please?", False),
        ("I understand.", False),
    ],
)
def test_question_rule(text, expected):
    assert asks_question(text) is expected


def test_mermaid_names_the_nodes():
    diagram = mermaid()
    for node in ("teacher", "learner", "manager", "posttest"):
        assert node in diagram


def test_paper_prompts_are_sent_verbatim_as_one_user_message():
    from wikihowagent.config import resource_path

    paper = load_prompts(resource_path("configs", "prompts-paper.yaml"))
    msgs = paper.teacher_messages(
        summary="S.", step_index=2, num_steps=3, step_content="Do X.", user_utterance="Next step please."
    )
    assert len(msgs) == 1 and msgs[0].type == "human"
    assert msgs[0].content.startswith("You are an expert teacher")
    assert msgs[0].content.endswith("Tutorial Summary: S. Step 2 Do X. Learner: Next step please.; Teacher:")
    learner = paper.learner_messages(instruction="Let's begin: X. BEGIN")
    assert len(learner) == 1 and learner[0].content.endswith("Teacher: Let's begin: X. BEGIN; Learner:")


def test_default_prompts_put_the_step_in_the_system_message():
    p = load_prompts()
    teach = p.teacher_messages(summary="S.", step_index=1, num_steps=2, step_content="Do X.", user_utterance="Ready.")
    clarify = p.teacher_messages(
        summary="S.", step_index=1, num_steps=2, step_content="Do X.", user_utterance="Why?", clarification=True
    )
    assert [m.type for m in teach] == ["system", "human"]
    assert "Step 1 of 2: Do X." in teach[0].content and teach[1].content.startswith("Ready.")
    assert "teach Step 1 of 2" in teach[1].content and "answer the learner's question" in clarify[1].content


def test_prompt_file_with_unknown_placeholder_is_refused(tmp_path):
    from wikihowagent.config import ConfigError, resource_path

    bad = tmp_path / "p.yaml"
    bad.write_text(resource_path("configs", "prompts.yaml").read_text().replace("{summary}", "{summry}"))
    with pytest.raises(ConfigError, match="teacher_system.*summry"):
        load_prompts(bad)


def test_failed_farewell_keeps_the_conversation_finished():
    tut = make_tutorial(2)

    def learner(prompt):
        if "reached the end of the tutorial" in prompt:
            raise TimeoutError("slow")
        return "Okay, next step."

    state, _, _ = run(tut, learner)
    record = to_record(tut, state, "run", "t", "l", "2026-01-01T00:00:00+00:00", WorkflowOptions())
    assert record.finished and record.stop_reason == "finished" and record.error is None
    assert record.warnings == ["farewell not generated: learner: TimeoutError: slow"]
